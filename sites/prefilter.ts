/**
 * Which files are worth parsing: a text test, cheaper than tree-sitter by two orders of magnitude,
 * that a file can hold a call site of the finder (callSites.ts) only if it passes. It is a
 * superset: every word the Python and C/C++ scans start from (pythonNames.ts, cppSites.ts) is one of
 * its words, so a file it turns away has no site by construction, never by guess. What it does not
 * know is a project's wrappers: a file that only calls one of them is parsed once the wrapper index
 * (wrapperIndex.ts) knows the wrapper's name ({@link wrapperNamesRegExp}). No `vscode` import.
 */
import { NCCL_APIS } from './apiTypes';
import { PY_COLLECTIVES, PY_QUALIFIED } from './pythonNames';
import { escapeRegExp } from './scanShared';

/** The last names of the collectives: alone, a collective is no site (its group's creation, or a wrapper's call, is in the file too). */
const COLLECTIVE_NAMES = new Set([...PY_COLLECTIVES].map((q) => q.slice(q.lastIndexOf('.') + 1)));

/**
 * Python words that make a file a candidate: the last names of the qualified APIs (not those of
 * nccl4py's and CuPy's modules, whose import is its own word below, nor the collectives), NCCL's
 * functions (ctypes, also after a prefix), vLLM's communicator classes, the methods that count on
 * any receiver, and the imports that make library methods count (`torchcomms`, `torchft`, `cupy`).
 */
const PY_WORDS: readonly string[] = [
  ...new Set([
    ...[...PY_QUALIFIED.keys()]
      .filter((q) => !/^(nccl|cupy)/.test(q))
      .map((q) => q.slice(q.lastIndexOf('.') + 1))
      .filter((n) => !COLLECTIVE_NAMES.has(n) && n !== 'abort' && n !== 'shutdown'),
    ...NCCL_APIS,
    'PyNcclCommunicator',
    'NCCLCommunicator',
    'eager_connect_single_device',
    // `x.abort()` / `x.shutdown()` count on a receiver bound to `_get_backend(torch.device("cuda"))`.
    '_get_backend',
    'torchcomms',
    'torchft',
    'cupy',
    // torch's DeviceMesh methods that make groups (pythonNames.ts MESH_METHODS), on a receiver the finder checks.
    '_flatten',
    '_unflatten',
  ]),
].sort((a, b) => b.length - a.length);

/**
 * A Python file can hold a site when one of these matches: a candidate word; `.abort()` /
 * `.shutdown()` on a receiver named like a group (pythonNames.ts GROUP_RECEIVER: `pg`, `…group`);
 * nccl4py imported (`import nccl`, `from nccl…`, `import a, nccl`), whose methods then count.
 */
const PY_CANDIDATE = new RegExp(
  [
    `(?:${PY_WORDS.map(escapeRegExp).join('|')})(?![A-Za-z0-9_])`,
    '(?:pg|group)\\s*\\.\\s*(?:abort|shutdown)(?![A-Za-z0-9_])',
    '^[ \\t]*(?:from[ \\t]+nccl(?![A-Za-z0-9_])|import[ \\t][^\\n#]*(?<![A-Za-z0-9_.])nccl(?![A-Za-z0-9_]))',
  ].join('|'),
  'im',
);

/**
 * The candidate words of both languages as one plain alternation (no lookaround), for a text search
 * outside the finder: the benchmark's floor, `rg -l` over the same files (test/bench/scanRepo.ts).
 */
export const CANDIDATE_WORDS: string = [...new Set([...PY_WORDS, ...NCCL_APIS])].map(escapeRegExp).join('|');

/** C/C++/CUDA: every site's callee holds an NCCL lifecycle function's name (cppSites.ts `NAMES_IN_TEXT`). */
const CPP_CANDIDATE = new RegExp(NCCL_APIS.join('|'));

/**
 * Whether the finder can find a call site in `text` by itself (without the project's wrappers):
 * false only when it certainly cannot, so the file need not be parsed for its own sites.
 */
export function mayHaveSites(language: 'python' | 'c' | 'cpp' | 'cuda', text: string): boolean {
  return (language === 'python' ? PY_CANDIDATE : CPP_CANDIDATE).test(text);
}

/** A wrapper as the wake test reads it: the name its callers write, and its class for a method or a constructor. */
export interface WrapperName {
  callName: string;
  /** The class of a method (`callName` is the method's) or of a constructor (`callName` is the class's). */
  cls?: string;
  isConstructor?: boolean;
  /**
   * For a method: the other names its callers may write before it — its class's subclasses
   * (which inherit it) and the module-level holders of an instance of either (`_TP`).
   */
  reachedAs?: readonly string[];
}

/** {@link TextCalls.calls} bits: the name is called bare (`f(…)`). */
export const CALLED_BARE = 1;
/** {@link TextCalls.calls} bits: the name is called after a name the file imports, other than `self` / `cls` (`m.f(…)`, `ps._TP.f(…)`). */
export const CALLED_ON_IMPORTED = 2;
/** {@link TextCalls.calls} bits: the name is called after any first name but `cls` (`x.f(…)`, `self.f(…)`, `super().f(…)`). */
export const CALLED_ON_RECEIVER = 4;

/**
 * What the text of a file not parsed says about its calls, as the wrapper index could resolve them
 * (wrapperFacts.ts keeps calls of dotted names; wrapperResolve.ts resolves them): each called name
 * with how it is called ({@link CALLED_BARE} | {@link CALLED_ON_IMPORTED} | {@link CALLED_ON_RECEIVER},
 * read from the first part of its dotted callee), the names its import statements mention, and
 * whether it has a star import. Read once per text ({@link textCalls}); compact (a number per name,
 * names shared between files), as the index keeps one per file not parsed.
 */
export interface TextCalls {
  calls: Map<string, number>;
  imported: Set<string>;
  star: boolean;
}

const isWordCode = (c: number): boolean => (c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c === 95;
const isDigitCode = (c: number): boolean => c >= 48 && c <= 57;
const isSpaceCode = (c: number): boolean => c === 32 || c === 9 || c === 10 || c === 13;
/** The start of an import statement (at the start of a line, maybe indented). */
const IMPORT = /^[ \t]*(?:from[ \t][^\n]*?(?<![A-Za-z0-9_])import|import)(?![A-Za-z0-9_])/gm;
const WORD = /[A-Za-z_][A-Za-z0-9_]*/g;

/**
 * The identifier ending just before `end` (spaces skipped first) and where it starts, or undefined
 * (none, or a number).
 */
function identifierBefore(text: string, end: number): { start: number; name: string } | undefined {
  let e = end;
  while (e > 0 && isSpaceCode(text.charCodeAt(e - 1))) e--;
  let s = e;
  while (s > 0 && isWordCode(text.charCodeAt(s - 1))) s--;
  return s === e || isDigitCode(text.charCodeAt(s)) ? undefined : { start: s, name: text.slice(s, e) };
}

/**
 * `names` with each name as one flat string of its own (an object key is internalized: it keeps no
 * file's text alive, and the same name in many files is one string).
 */
function interned(names: Record<string, number>): Map<string, number> {
  const out = new Map<string, number>();
  for (const k of Object.keys(names)) out.set(k, names[k]!);
  return out;
}

/** The calls, imported names and star imports of `text` ({@link TextCalls}). */
export function textCalls(text: string): TextCalls {
  const imported: Record<string, number> = Object.create(null) as Record<string, number>;
  let star = false;
  const eol = (i: number): number => {
    const e = text.indexOf('\n', i);
    return e < 0 ? text.length : e;
  };
  IMPORT.lastIndex = 0;
  for (let m = IMPORT.exec(text); m; m = IMPORT.exec(text)) {
    // The statement: to the end of its line, through a parenthesised list or backslash continuations.
    const from = m.index + m[0].length;
    let stop = eol(from);
    const open = text.indexOf('(', from);
    if (open >= 0 && open < stop) {
      const close = text.indexOf(')', open);
      stop = close < 0 ? text.length : close;
    } else while (stop < text.length && /\\\r?$/.test(text.slice(Math.max(0, stop - 2), stop))) stop = eol(stop + 1);
    const statement = text.slice(m.index, stop);
    if (statement.includes('*')) star = true;
    for (const w of statement.match(WORD) ?? []) imported[w] = 1;
  }
  const calls: Record<string, number> = Object.create(null) as Record<string, number>;
  // Each `(` after a dotted name `a . b . name`, read backwards (whitespace allowed around the
  // dots, as Python does); `f().g(` and `x[0].m(` are no dotted names.
  for (let p = text.indexOf('('); p >= 0; p = text.indexOf('(', p + 1)) {
    const last = identifierBefore(text, p);
    if (!last) continue;
    let head = '';
    let at = last.start;
    let dotted = true;
    for (;;) {
      let k = at;
      while (k > 0 && isSpaceCode(text.charCodeAt(k - 1))) k--;
      if (k === 0 || text.charCodeAt(k - 1) !== 46) break;
      const part = identifierBefore(text, k - 1);
      if (!part) {
        // `super().m(`, `get_group().m(`, `ps.get_group(x).m(`: a method on what a call returns
        // (wrapperClasses.ts), headed by the call's first name.
        const returned = /(?<![A-Za-z0-9_.])([A-Za-z_][A-Za-z0-9_]*)(?:\s*\.\s*[A-Za-z_][A-Za-z0-9_]*)*\s*\([^()]*\)\s*$/.exec(
          text.slice(Math.max(0, k - 120), k - 1),
        );
        dotted = returned !== null;
        if (returned) head = returned[1]!;
        break;
      }
      head = part.name;
      at = part.start;
    }
    if (!dotted) continue;
    const how =
      head === ''
        ? CALLED_BARE
        : (head !== 'cls' ? CALLED_ON_RECEIVER : 0) | (head !== 'self' && head !== 'cls' && imported[head] === 1 ? CALLED_ON_IMPORTED : 0);
    calls[last.name] = (calls[last.name] ?? 0) | how;
  }
  return { calls: interned(calls), imported: new Set(interned(imported).keys()), star };
}

/** A wake test ({@link wrapperWakeTest}): the file's calls, and its text (or how to read it again, for a file whose text is not kept). */
export type WakeTest = (facts: TextCalls, text: string | (() => string)) => boolean;

/**
 * A test that a file not parsed yet (no lifecycle name of its own) may call one of `wrappers`
 * where the wrapper index resolves calls (wrapperResolve.ts); undefined for none. A wrapper in
 * another file is reached only by a call of its own name: a function or a class called bare when
 * the file imports that name or has a star import, a bare call of another imported name when the
 * file imports a wrapper's name (`from m import f as g`), or after a name the file imports (`m.f(…)`,
 * `pkg.m.f(…)`); a method only on an instance of its class (`x = C(…)` … `x.m(…)`: a dotted call of
 * the method — `super().m(…)` too — and in the text the class's name, a subclass's or a holder's,
 * {@link WrapperName.reachedAs}), or a dotted call of the method on a name the file imports (a
 * holder, or a module holding one). `self.f(…)` and `cls.f(…)` reach the file's own class.
 */
export function wrapperWakeTest(wrappers: Iterable<WrapperName>): WakeTest | undefined {
  const bare = new Set<string>();
  const methods = new Map<string, Set<string>>();
  for (const w of wrappers) {
    if (w.cls === undefined || w.isConstructor) bare.add(w.callName);
    else {
      let classes = methods.get(w.callName);
      if (!classes) methods.set(w.callName, (classes = new Set()));
      classes.add(w.cls);
      for (const n of w.reachedAs ?? []) classes.add(n);
    }
  }
  if (bare.size === 0 && methods.size === 0) return undefined;
  // Per method name: its classes (and the names they are reached as) in one expression, made once.
  const classWords = new Map<string, RegExp>();
  for (const [name, classes] of methods) classWords.set(name, new RegExp(`(?<![A-Za-z0-9_])(?:${[...classes].join('|')})(?![A-Za-z0-9_])`));
  return (facts, text) => {
    // A wrapper's name imported, maybe under another (`from m import create_group as make`), and
    // a bare call of an imported name other than a wrapper's own.
    const importsWrapper = [...bare].some((b) => facts.imported.has(b));
    for (const [name, how] of facts.calls) {
      if (importsWrapper && !bare.has(name) && how & CALLED_BARE && facts.imported.has(name)) return true;
      if (bare.has(name) && ((how & CALLED_BARE && (facts.star || facts.imported.has(name))) || how & CALLED_ON_IMPORTED)) return true;
      const classes = classWords.get(name);
      if (!classes) continue;
      // On a name the file imports: a holder of an instance, or a module holding one (`ps._TP.destroy()`).
      if (how & CALLED_ON_IMPORTED) return true;
      if (how & CALLED_ON_RECEIVER && classes.test(typeof text === 'string' ? text : text())) return true;
    }
    return false;
  };
}
