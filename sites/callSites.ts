/**
 * The call-site finder: parses Python and C/C++/CUDA with tree-sitter (web-tree-sitter + the
 * shipped `.wasm` grammars) and finds the NCCL communicator lifecycle calls of apiMap.ts as
 * real code writes them, with ranges and what the diagnostics need (inside a loop or a per-step
 * function, keyword arguments, the variable a group is assigned to, whether a warm-up collective
 * follows, whether the creation is eager, the NCCL call it ends in); the names are apiMap.ts's. The scans are
 * pythonSites.ts (names: pythonNames.ts; the default group's first collective: defaultGroup.ts;
 * a group's: groupFlow.ts) and cppSites.ts; the types are callSiteTypes.ts. This file is the
 * facade: the finder, incremental re-parsing, the grammars. No `vscode` import.
 *
 * Offsets and columns are UTF-16 code units (what web-tree-sitter reports for a JavaScript
 * string, and what VS Code uses).
 */
import { join } from 'node:path';
import type { Language as TsLanguage, Parser as TsParser, Query as TsQuery, Tree } from 'web-tree-sitter';
import type { Range, ScanOptions, ScanResult, SourceLanguage } from './callSiteTypes';
import { CPP_QUERY, scanCpp } from './cppSites';
import { PY_FLOW_QUERY } from './groupFlow';
import { PY_CALL_QUERY, PY_IMPORT_QUERY, scanPython, type PythonQueries } from './pythonSites';
import { probeIndexScale } from './rangedQuery';

export { isSourceLanguage } from './callSiteTypes';
export type {
  CallSite,
  FileFacts,
  GroupMakerCall,
  Position,
  Range,
  Repetition,
  ScanOptions,
  ScanResult,
  SourceLanguage,
  StatementInfo,
  WarmUpInfo,
} from './callSiteTypes';

/** Paths of the three `.wasm` files (runtime + grammars). */
export interface GrammarFiles {
  runtime: string;
  python: string;
  cpp: string;
}

/** The `.wasm` files as shipped in `dist/grammars/` (see scripts/build.mjs). */
export function shippedGrammars(dir: string): GrammarFiles {
  return { runtime: join(dir, 'tree-sitter.wasm'), python: join(dir, 'tree-sitter-python.wasm'), cpp: join(dir, 'tree-sitter-cpp.wasm') };
}

/** The `.wasm` files inside node_modules (tests and benchmarks). */
export function nodeModulesGrammars(root: string): GrammarFiles {
  const nm = join(root, 'node_modules');
  return {
    runtime: join(nm, 'web-tree-sitter', 'tree-sitter.wasm'),
    python: join(nm, 'tree-sitter-python', 'tree-sitter-python.wasm'),
    cpp: join(nm, 'tree-sitter-cpp', 'tree-sitter-cpp.wasm'),
  };
}

/** web-tree-sitter's module, loaded on first use. */
type WebTreeSitter = typeof import('web-tree-sitter');

/**
 * Parses and scans documents. Create with {@link CallSiteFinder.load} (loads the runtime and
 * both grammars once; ~tens of ms); then {@link parse} and {@link scan} are synchronous. With
 * `lazyCpp`, the C/C++ grammar (3.4 MB of WebAssembly and its query: the larger part of the load,
 * ~0.3–1 s of the extension host's thread when the machine is busy) loads on first need, the first
 * {@link ready}('cpp'): nothing of it is on the path to a Python file's first CodeLens.
 */
export class CallSiteFinder {
  private cpp: { parser: TsParser; query: TsQuery } | undefined;
  private cppLoad: Promise<void> | undefined;
  private disposed = false;

  private constructor(
    private readonly python: { parser: TsParser; queries: PythonQueries },
    loadCpp: () => Promise<{ parser: TsParser; query: TsQuery }>,
  ) {
    const start = (): Promise<void> =>
      (this.cppLoad ??= loadCpp().then((c) => {
        if (this.disposed) {
          c.parser.delete();
          c.query.delete();
        } else this.cpp = c;
      }));
    this.startCpp = start;
  }

  private readonly startCpp: () => Promise<void>;

  /**
   * Resolves once `language` can be parsed (C/C++: its grammar loaded).
   * @throws Error (rejects) when the C/C++ grammar cannot be loaded
   */
  async ready(language: SourceLanguage): Promise<void> {
    if (grammarOf(language) === 'cpp') await this.startCpp();
  }

  /**
   * Loads web-tree-sitter and the grammars from `files`.
   * @throws Error when a `.wasm` file is missing or not loadable
   */
  static async load(files: GrammarFiles, options: { lazyCpp?: boolean } = {}): Promise<CallSiteFinder> {
    const ts: WebTreeSitter = await import('web-tree-sitter');
    await ts.Parser.init({ locateFile: () => files.runtime });
    const py = await ts.Language.load(files.python);
    const parser = (lang: TsLanguage): TsParser => {
      const p = new ts.Parser();
      p.setLanguage(lang);
      return p;
    };
    const pyParser = parser(py);
    const calls = new ts.Query(py, PY_CALL_QUERY);
    const python: PythonQueries = {
      imports: new ts.Query(py, PY_IMPORT_QUERY),
      calls,
      flow: new ts.Query(py, PY_FLOW_QUERY),
      scale: probeIndexScale(pyParser, calls),
    };
    const loadCpp = async (): Promise<{ parser: TsParser; query: TsQuery }> => {
      const cpp = await ts.Language.load(files.cpp);
      return { parser: parser(cpp), query: new ts.Query(cpp, CPP_QUERY) };
    };
    const finder = new CallSiteFinder({ parser: pyParser, queries: python }, loadCpp);
    // Without lazyCpp (CLI, tests) both grammars are there at once; with it, the first ready('cpp') loads C/C++.
    if (!options.lazyCpp) await finder.ready('cpp');
    return finder;
  }

  /**
   * Parses `text`; with `oldTree` (already `edit`ed to match), re-parses incrementally.
   * @throws Error when tree-sitter returns no tree (it does so only when cancelled)
   */
  parse(language: SourceLanguage, text: string, oldTree?: Tree): Tree {
    const tree = (grammarOf(language) === 'python' ? this.python.parser : this.cppOrThrow().parser).parse(text, oldTree ?? null);
    if (!tree) throw new Error('tree-sitter returned no tree');
    return tree;
  }

  /**
   * Finds the call sites of `tree` (parsed from `text` in `language`); `options.groupMakers`
   * (Python): calls of wrappers that return a lazy group, whose first collectives are sites too.
   */
  scan(language: SourceLanguage, tree: Tree, text: string, options?: ScanOptions): ScanResult {
    const grammar = grammarOf(language);
    const q = this.python.queries;
    return grammar === 'python' ? scanPython(q, tree, text, options) : scanCpp(this.cppOrThrow().query, tree, text, q.scale);
  }

  /**
   * Parses and scans a few lines of Python once and drops the result, so that the work V8 does
   * on a WebAssembly function's first call (it compiles each function lazily, on the thread that
   * calls it) is done here, before the first document, not while a user waits for it. Call it in
   * the background after {@link load}; a document parsed without it is parsed the same.
   */
  warmUp(): void {
    const tree = this.python.parser.parse(WARM_UP_PYTHON);
    if (tree) {
      try {
        scanPython(this.python.queries, tree, WARM_UP_PYTHON);
      } finally {
        tree.delete();
      }
    }
  }

  /** The C/C++ grammar, or an error saying to await {@link ready}. */
  private cppOrThrow(): { parser: TsParser; query: TsQuery } {
    if (!this.cpp) throw new Error('the C/C++ grammar is not loaded yet: await CallSiteFinder.ready("cpp") first');
    return this.cpp;
  }

  dispose(): void {
    this.disposed = true;
    this.python.parser.delete();
    this.python.queries.imports.delete();
    this.python.queries.calls.delete();
    this.python.queries.flow.delete();
    this.cpp?.parser.delete();
    this.cpp?.query.delete();
    this.cpp = undefined;
  }
}

/** What {@link CallSiteFinder.warmUp} parses: the shapes of a training script (imports, a class, a loop, a group made and used). */
const WARM_UP_PYTHON = [
  'import torch.distributed as dist',
  'from torch import nn',
  '',
  'class Block(nn.Module):',
  '    def forward(self, x, *args, **kw):',
  '        return x @ self.w if kw.get("bias") is None else x + 1',
  '',
  'def main(ranks=[0, 1]):',
  '    dist.init_process_group("nccl", device_id=torch.device("cuda", 0))',
  '    group = dist.new_group(ranks=ranks, backend="nccl")',
  '    for step in range(10):',
  '        t = torch.ones(4)',
  '        dist.all_reduce(t, group=group)',
  '    with torch.no_grad():',
  '        pass',
  '    dist.destroy_process_group()',
  '',
].join('\n');

function grammarOf(language: SourceLanguage): 'python' | 'cpp' {
  return language === 'python' ? 'python' : 'cpp';
}

// ---------------------------------------------------------------------------------------------
// Incremental edits

/** One text change as VS Code reports it (relative to the text before the change). */
export interface TextChange {
  rangeOffset: number;
  rangeLength: number;
  range: Range;
  text: string;
}

/** The tree-sitter edit of `change` (UTF-16 offsets and columns, as web-tree-sitter uses). */
export function treeEditOf(change: TextChange): {
  startIndex: number;
  oldEndIndex: number;
  newEndIndex: number;
  startPosition: { row: number; column: number };
  oldEndPosition: { row: number; column: number };
  newEndPosition: { row: number; column: number };
} {
  const lines = change.text.split('\n');
  const lastLen = lines[lines.length - 1]?.length ?? 0;
  const start = change.range.start;
  const newEnd =
    lines.length === 1 ? { row: start.line, column: start.character + lastLen } : { row: start.line + lines.length - 1, column: lastLen };
  return {
    startIndex: change.rangeOffset,
    oldEndIndex: change.rangeOffset + change.rangeLength,
    newEndIndex: change.rangeOffset + change.text.length,
    startPosition: { row: start.line, column: start.character },
    oldEndPosition: { row: change.range.end.line, column: change.range.end.character },
    newEndPosition: newEnd,
  };
}

/**
 * One document's tree, kept for incremental re-parsing: {@link edit} applies changes to the old
 * tree at once (cheap); {@link reparse} re-parses against it.
 */
export class ParsedDocument {
  private tree: Tree | undefined;
  private edited = false;
  scan: ScanResult | undefined;

  constructor(
    private readonly finder: CallSiteFinder,
    readonly language: SourceLanguage,
  ) {}

  /** Records VS Code content changes (in event order) on the old tree. */
  edit(changes: readonly TextChange[]): void {
    if (!this.tree) return;
    for (const c of changes) this.tree.edit(treeEditOf(c));
    this.edited = true;
  }

  /** Parses `text` (incrementally when an edited tree is kept) and scans it. */
  reparse(text: string): ScanResult {
    const old = this.tree;
    const tree = this.finder.parse(this.language, text, this.edited ? old : undefined);
    old?.delete();
    this.tree = tree;
    this.edited = false;
    this.scan = this.finder.scan(this.language, tree, text);
    return this.scan;
  }

  dispose(): void {
    this.tree?.delete();
    this.tree = undefined;
  }
}
