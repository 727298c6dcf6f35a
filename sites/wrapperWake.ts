/**
 * The wake tests of the wrapper index's dormant files (wrapperIndex.ts): from the derived wrappers
 * (wrapperDerive.ts), the tests a file not parsed yet passes when its text may call one of them
 * (prefilter.ts `wrapperWakeTest` for Python, cppWrapperFacts.ts `cppWakeTest` for C/C++). Pure; no `vscode` import.
 */
import type { SourceLanguage } from './callSites';
import { textCalls, wrapperWakeTest, type TextCalls, type WakeTest, type WrapperName } from './prefilter';
import { cppWakeTest } from './cppWrapperFacts';
import { namesOf, type WrapperTable } from './wrapperDerive';
import type { FileEntry } from './wrapperFacts';
import { reachedAs } from './wrapperNames';

/**
 * The wake tests of table `t` over `files` (the parsed files), `aliases` the derivation's, `reached`
 * the other names of a class (wrapperNames.ts `reachedAs` of `files`); undefined where no wrapper of that language.
 */
export function wakeTests(
  files: ReadonlyMap<string, FileEntry>,
  t: WrapperTable,
  aliases: ReadonlyMap<string, ReadonlySet<string>>,
  reached: (cls: string) => string[] = reachedAs(files.values()),
): { python?: WakeTest; cpp?: (text: string) => boolean } {
  const wrappers = [...t.wrappers.values()].map((w) => {
    const f = files.get(w.path)!;
    return { f, def: f.defs[w.def]! };
  });
  const python = wrapperWakeTest(
    wrappers
      .filter((w) => w.f.language === 'python')
      .flatMap(({ def }) => {
        const also = def.cls ? reached(def.cls) : [];
        const isConstructor = def.key.endsWith('.__init__');
        // A function or a constructor is also called by its aliases (imports, subclasses).
        const names = def.cls === undefined || isConstructor ? namesOf(def.callName, aliases) : [def.callName];
        return names.map((callName): WrapperName => ({ callName, cls: def.cls, isConstructor, ...(also.length > 0 ? { reachedAs: also } : {}) }));
      })
      // C/C++ free functions, called from Python through the project's compiled module
      // (`_C.create_comm(…)`: wrapperResolve.ts `ownCompiledModule`).
      .concat(wrappers.filter((w) => w.f.language !== 'python' && w.def.cls === undefined).map(({ def }) => ({ callName: def.callName }))),
  );
  const cpp = cppWakeTest(wrappers.filter((w) => w.f.language !== 'python').map(({ def }) => def.callName));
  return { ...(python ? { python } : {}), ...(cpp ? { cpp } : {}) };
}

/** What the wake tests read of a parsed file (wrapperNames.ts `reachedAs`): its classes' bases and its module-level holders of instances; none for no file. */
export function reachKey(f: FileEntry | undefined): string {
  if (!f) return '|';
  const bases = [...f.bases].filter(([, b]) => b.length > 0).map(([c, b]) => `${c}(${b.join(',')})`);
  const holders = [...f.instances].filter(([k]) => f.moduleNames.has(k)).map(([k, l]) => `${k}=${l.map((i) => i.ctor).join('/')}`);
  return `${bases.join(',')}|${holders.join(',')}`;
}

/** A file not parsed yet, as the index keeps it. */
export interface DormantFile {
  language: SourceLanguage;
  /** Its text; absent for a Python file the index was told how to read again ({@link reread}): it keeps its {@link calls} only. */
  text?: string;
  /** Reads its text again (the CLI: from disk, cli/scan.ts). @throws Error when it cannot be read */
  reread?: () => string;
  /** Memo of its calls and imports (prefilter.ts `textCalls`). */
  calls?: TextCalls;
}

/** The text of dormant file `d`: kept, or read again. @throws Error when it is not kept and cannot be read again */
export function dormantText(d: DormantFile): string {
  if (d.text !== undefined) return d.text;
  if (!d.reread) throw new Error('no text kept and no way to read it again');
  return d.reread();
}

/**
 * The text of dormant file `d` to parse when it wakes; '' when it cannot be read again (taken as
 * empty), with why set in `lost` under `path` (cli/scan.ts lists it as not scanned).
 */
export function wokenText(d: DormantFile, path: string, lost: Map<string, string>): string {
  try {
    return dormantText(d);
  } catch (e) {
    lost.set(path, e instanceof Error ? e.message : String(e));
    return '';
  }
}

/**
 * The wake tests of the last derivation, made again only when what they are made of changes (the
 * caller's `key`: which defs are wrappers, the aliases, the classes' bases and holders, {@link reachKey});
 * while it stays, only the files made dormant since are tested again.
 */
export class WakeTests {
  python: WakeTest | undefined;
  cpp: ((text: string) => boolean) | undefined;
  private key: string | undefined;
  private readonly unscanned = new Set<string>();
  private reach: { version: number; of: (cls: string) => string[] } | undefined;

  /**
   * wrapperNames.ts `reachedAs` of `files`, made again when `version` (the caller's count of changes
   * of classes' bases and holders, {@link reachKey}) changed; each class's names memoised.
   */
  reachedAs(version: number, files: ReadonlyMap<string, FileEntry>): (cls: string) => string[] {
    if (this.reach?.version !== version) {
      const of = reachedAs(files.values());
      const memo = new Map<string, string[]>();
      this.reach = {
        version,
        of: (cls) => {
          let names = memo.get(cls);
          if (!names) memo.set(cls, (names = of(cls)));
          return names;
        },
      };
    }
    return this.reach.of;
  }

  /** The file at `path` was made dormant: tested at the next {@link refresh}. */
  madeDormant(path: string): void {
    this.unscanned.add(path);
  }

  /**
   * After a derivation: the tests, made again by `make` when `key` changed. @returns the paths of
   * `dormant` to test: all of them when the tests were made again, else those made dormant since
   */
  refresh(key: string, make: () => ReturnType<typeof wakeTests>, dormant: ReadonlyMap<string, DormantFile>): string[] {
    const scan = key === this.key ? [...this.unscanned].filter((p) => dormant.has(p)) : [...dormant.keys()];
    if (key !== this.key) {
      const made = make();
      this.python = made.python;
      this.cpp = made.cpp;
      this.key = key;
    }
    this.unscanned.clear();
    return scan;
  }

  /**
   * Whether dormant file `d` passes its language's test (its calls memoised on it). A text not kept
   * is read again only if the test needs it ('' when it cannot be), and then kept when the file
   * wakes, for its parse.
   */
  wakes(d: DormantFile): boolean {
    if (d.language !== 'python') return this.cpp?.(dormantText(d)) === true;
    let read: string | undefined;
    const text =
      d.text ??
      ((): string => {
        try {
          return (read ??= dormantText(d));
        } catch {
          return '';
        }
      });
    const woke = this.python?.((d.calls ??= textCalls(dormantText(d))), text) === true;
    if (woke && read !== undefined) d.text = read;
    return woke;
  }
}
