/**
 * The wake tests of the wrapper index's dormant files (wrapperIndex.ts): from the derived wrappers
 * (wrapperDerive.ts), the tests a file not parsed yet passes when its text may call one of them
 * (prefilter.ts `wrapperWakeTest` for Python, cppWrapperFacts.ts `cppWakeTest` for C/C++). Pure; no `vscode` import.
 */
import { wrapperWakeTest, type TextCalls } from './prefilter';
import { cppWakeTest } from './cppWrapperFacts';
import { namesOf, type WrapperTable } from './wrapperDerive';
import type { FileEntry } from './wrapperFacts';
import { reachedAs } from './wrapperNames';

/** The wake tests of table `t` over `files` (the parsed files), `aliases` the derivation's; undefined where no wrapper of that language. */
export function wakeTests(
  files: ReadonlyMap<string, FileEntry>,
  t: WrapperTable,
  aliases: ReadonlyMap<string, ReadonlySet<string>>,
): { python?: (facts: TextCalls, text: string) => boolean; cpp?: (text: string) => boolean } {
  const reached = reachedAs(files.values());
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
        return names.map((callName) => ({ callName, cls: def.cls, isConstructor, ...(also.length > 0 ? { reachedAs: also } : {}) }));
      }),
  );
  const cpp = cppWakeTest(wrappers.filter((w) => w.f.language !== 'python').map(({ def }) => def.callName));
  return { ...(python ? { python } : {}), ...(cpp ? { cpp } : {}) };
}
