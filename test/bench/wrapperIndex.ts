/**
 * Wrapper index benchmark (section 3 of npm run bench; alone: node --import tsx
 * test/bench/wrapperIndex.ts): figures printed as distributions, never asserted. Targets
 * (DESIGN.md): the index of a ~1,000-file repository builds in < 10 s, and is up to date < 50 ms
 * after an edit of one file.
 *
 * The repository: $COMMCOST_BENCH_REPO when set (e.g. a Megatron-LM checkout), else a generated
 * tree of 1,000 Python files in a temp folder: 50 packages of 20 modules, made of the wrapper
 * fixtures (test/fixtures/callsites/wrappers: Megatron-LM's parallel_state.py and initialize.py when
 * materialized from its manifest.json, else the synthetic `mesh` package's parallel_state.py and
 * launch.py, much smaller) and modules that import each other and call the wrappers two and three
 * hops deep.
 *
 * 1. build: walk + read + parse + scan + facts of every file, then the wrappers derived;
 * 2. update after an edit of one file, as the editor does it (the model's incremental re-parse
 *    and scan are measured apart; the index re-parses its kept tree, re-derives the wrappers the
 *    edit can change and lists the file's sites through wrappers): an edit inside a function body, an edit that
 *    removes a wrapper's lifecycle call, an edit that renames a function (the memoised
 *    resolutions that looked into this file are re-done);
 * 3. a file changed on disk (a full parse, no kept tree).
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CallSiteFinder, nodeModulesGrammars, ParsedDocument, shippedGrammars, type GrammarFiles, type TextChange } from '../../sites/callSites';
import { walkSources } from '../../client/sourceWalk';
import { WrapperIndex } from '../../sites/wrapperIndex';

const root = process.cwd();
const FIXTURES = join(root, 'test', 'fixtures', 'callsites', 'wrappers');

function dist(values: number[], unit = 'ms'): string {
  const s = [...values].sort((a, b) => a - b);
  const q = (p: number): string => (s[Math.min(s.length - 1, Math.floor(p * s.length))] ?? NaN).toFixed(2);
  return `p50 ${q(0.5)}  p90 ${q(0.9)}  p99 ${q(0.99)}  max ${(s[s.length - 1] ?? NaN).toFixed(2)} ${unit}  (n=${s.length})`;
}

/** The grammars of node_modules in the repository, else the shipped ones of dist/grammars (a bundled copy on a GPU host). */
function benchGrammars(root: string): GrammarFiles {
  const nm = nodeModulesGrammars(root);
  return existsSync(nm.runtime) ? nm : shippedGrammars(join(root, 'dist', 'grammars'));
}

/** A module of package `p`, number `m`: imports from other modules, a wrapper, callers of wrappers one and two hops away. */
function module(p: number, m: number, packages: number, modules: number): string {
  const other = (dp: number, dm: number): string => `pkg${(p + dp) % packages}.mod${(m + dm) % modules}`;
  const lines = [
    'import torch',
    'import torch.distributed as dist',
    `from ${other(1, 3)} import make_group_${(m + 3) % modules}, Trainer${(m + 3) % modules}`,
    `import ${other(2, 5)} as peer`,
    `from .mod${(m + 1) % modules} import warm_up_${(m + 1) % modules}`,
    '',
    '',
    `def make_group_${m}(ranks, backend=None):`,
    `    """Builds the group of stage ${m}."""`,
    m % 4 === 0
      ? '    return dist.new_group(ranks=ranks, backend=backend)'
      : `    return make_group_${(m + 3) % modules}(ranks, backend=backend)`,
    '',
    '',
    `def warm_up_${m}(group):`,
    '    x = torch.ones(1, device="cuda")',
    '    dist.all_reduce(x, group=group)',
    '    return x',
    '',
    '',
    `class Trainer${m}:`,
    '    def __init__(self, ranks):',
    '        self.ranks = ranks',
    `        self.group = make_group_${m}(ranks)`,
    '',
    '    def rebuild(self):',
    `        self.group = peer.make_group_${(m + 5) % modules}(self.ranks, backend="nccl")`,
    `        warm_up_${(m + 1) % modules}(self.group)`,
    '',
    '    def step(self, batch):',
    '        loss = self.forward(batch)',
    '        loss.backward()',
    '        return loss.item()',
    '',
    '    def forward(self, batch):',
    '        h = torch.nn.functional.relu(batch @ batch.T)',
    '        return h.mean()',
    '',
  ];
  // Body text like a real module's: helpers that call each other and the library.
  for (let k = 0; k < 25; k++)
    lines.push(
      '',
      `def helper_${k}(values, scale=1.0):`,
      `    """Helper ${k}."""`,
      '    out = []',
      '    for v in values:',
      `        out.append(torch.tensor(v) * scale + ${k})`,
      k > 0 ? `    return helper_${k - 1}(out, scale)` : '    return out',
      '',
    );
  return `${lines.join('\n')}\n`;
}

/** The two large files of the generated tree: Megatron-LM's when materialized, else the synthetic ones. */
function largeFiles(log: (line: string) => void): { state: string; init: string } {
  const real = ['megatron/megatron/core/parallel_state.py', 'megatron/megatron/training/initialize.py'];
  const synthetic = ['synthetic/mesh/core/parallel_state.py', 'synthetic/mesh/training/launch.py'];
  const materialized = real.every((rel) => existsSync(join(FIXTURES, rel)));
  if (!materialized)
    log(
      '   (Megatron-LM files not materialized: the synthetic mesh package stands in, smaller files; ' +
        'node test/fixtures/callsites/corpus/materialize.mjs --manifest test/fixtures/callsites/wrappers/manifest.json)',
    );
  const [state, init] = (materialized ? real : synthetic).map((rel) => readFileSync(join(FIXTURES, rel), 'utf8'));
  return { state: state!, init: init! };
}

/** A generated repository of `packages` × `modules` files plus the wrapper fixtures in each tenth package. */
function generate(packages: number, modules: number, log: (line: string) => void): string {
  const dir = mkdtempSync(join(tmpdir(), 'commcost-wrapbench-'));
  const { state, init } = largeFiles(log);
  for (let p = 0; p < packages; p++) {
    mkdirSync(join(dir, `pkg${p}`), { recursive: true });
    writeFileSync(join(dir, `pkg${p}`, '__init__.py'), '');
    for (let m = 0; m < modules - 1; m++) writeFileSync(join(dir, `pkg${p}`, `mod${m}.py`), module(p, m, packages, modules));
    // One large file per package, every tenth package the entry point (initialize.py / launch.py) in its place.
    writeFileSync(join(dir, `pkg${p}`, `mod${modules - 1}.py`), p % 10 === 0 ? init : state);
  }
  return dir;
}

/** The figures of one run, ms: the build, and each kind of update after an edit of one file. */
export interface WrapperIndexFigures {
  files: number;
  buildMs: number;
  /** An edit inside a function body. */
  body: number[];
  /** A wrapper's lifecycle call removed or put back. */
  wrapperCall: number[];
  /** A function renamed. */
  rename: number[];
  /** The file changed on disk (a full parse). */
  disk: number[];
}

/** Runs the benchmark, printing with `log`. @returns its figures (bench.ts makes the target rows of them) */
export async function wrapperIndexBench(log: (line: string) => void): Promise<WrapperIndexFigures> {
  const given = process.env.COMMCOST_BENCH_REPO;
  const repo = given ?? generate(50, 20, log);
  try {
    const finder = await CallSiteFinder.load(benchGrammars(root));
    const index = await WrapperIndex.create(finder);
    const t0 = performance.now();
    const walked = await walkSources([repo]);
    const python = walked.files.filter((f) => f.language === 'python');
    const perFile: number[] = [];
    let bytes = 0;
    for (const f of python) {
      const t = performance.now();
      const text = readFileSync(f.path, 'utf8');
      bytes += text.length;
      index.setFile(f.path, 'python', text);
      perFile.push(performance.now() - t);
    }
    const t1 = performance.now();
    const wrappers = index.wrappers();
    const t2 = performance.now();
    let callers = 0;
    for (const f of python) callers += index.callerSites(f.path).length;
    const t3 = performance.now();
    log(`   repository: ${given ? given : 'generated'} — ${python.length} Python files, ${(bytes / 1e6).toFixed(1)} M characters`);
    log(
      `   build: ${((t2 - t0) / 1000).toFixed(2)} s (walk + read + parse + scan + facts ${((t1 - t0) / 1000).toFixed(2)} s, wrappers derived ${(t2 - t1).toFixed(0)} ms) — target < 10 s`,
    );
    log(`     per file (read + parse + scan + facts): ${dist(perFile)}`);
    log(
      `   ${wrappers.length} functions reach a lifecycle call; ${callers} call sites through them (listed in ${(t3 - t2).toFixed(0)} ms)`,
    );

    // The largest file that defines a wrapper: the edits go there.
    const target = python
      .map((f) => ({ path: f.path, text: readFileSync(f.path, 'utf8') }))
      .filter((f) => /def create_group\(|def make_group_0\(/.test(f.text))
      .sort((a, b) => b.text.length - a.text.length)[0];
    if (!target) throw new Error('no wrapper in the repository to edit');
    let text = target.text;
    const doc = new ParsedDocument(finder, 'python');
    doc.reparse(text);
    index.setFile(target.path, 'python', text, { keepTree: true, scan: doc.scan! });
    index.callerSites(target.path);

    const edit = (at: number, remove: number, insert: string): { model: number; index: number } => {
      const before = text.slice(0, at);
      const line = before.split('\n').length - 1;
      const character = at - (before.lastIndexOf('\n') + 1);
      const endBefore = text.slice(0, at + remove);
      const end = { line: endBefore.split('\n').length - 1, character: at + remove - (endBefore.lastIndexOf('\n') + 1) };
      const change: TextChange = { rangeOffset: at, rangeLength: remove, range: { start: { line, character }, end }, text: insert };
      text = text.slice(0, at) + insert + text.slice(at + remove);
      const a = performance.now();
      doc.edit([change]);
      const scan = doc.reparse(text);
      const b = performance.now();
      index.editFile(target.path, [change]);
      index.setFile(target.path, 'python', text, { keepTree: true, scan });
      index.wrappers();
      index.callerSites(target.path);
      return { model: b - a, index: performance.now() - b };
    };
    const body: number[] = [];
    const model: number[] = [];
    for (let i = 0; i < 40; i++) {
      const r = edit(
        text.indexOf(
          '"""',
          text.indexOf('def create_group(') >= 0 ? text.indexOf('def create_group(') : text.indexOf('def make_group_0('),
        ) + 3,
        0,
        'x',
      );
      body.push(r.index);
      model.push(r.model);
    }
    const call = /torch\.distributed\.new_group\(|dist\.new_group\(/;
    const removeAdd: number[] = [];
    for (let i = 0; i < 20; i++) {
      // Remove the wrapper's lifecycle call, then put it back.
      const m = call.exec(text);
      if (!m) break;
      removeAdd.push(edit(m.index, m[0].length, 'no_group(').index);
      removeAdd.push(edit(text.indexOf('no_group('), 'no_group('.length, m[0]).index);
    }
    const rename: number[] = [];
    for (let i = 0; i < 20; i++) {
      const at = text.indexOf('def helper_') >= 0 ? text.indexOf('def helper_') + 4 : text.indexOf('def ') + 4;
      rename.push(edit(at, 0, 'r').index);
    }
    log("   update after an edit of one file (the index: incremental re-parse, facts, wrappers, the file's sites) — target < 50 ms");
    log(`     inside a function body: ${dist(body)}`);
    log(`     a wrapper's lifecycle call removed / put back: ${dist(removeAdd)}`);
    log(`     a function renamed (the resolutions that looked into this file re-done): ${dist(rename)}`);
    log(`     (the editor's own re-parse and scan of that file, apart: ${dist(model)})`);
    const disk: number[] = [];
    for (let i = 0; i < 20; i++) {
      const t = performance.now();
      index.setFile(target.path, 'python', `${text}\n# ${i}\n`);
      index.wrappers();
      disk.push(performance.now() - t);
    }
    log(`   a file changed on disk (full parse, ${Math.round(text.length / 1000)} k characters): ${dist(disk)}`);
    doc.dispose();
    index.dispose();
    finder.dispose();
    return { files: python.length, buildMs: t2 - t0, body, wrapperCall: removeAdd, rename, disk };
  } finally {
    if (!given) rmSync(repo, { recursive: true, force: true });
  }
}

if (/wrapperIndex\.ts$/.test(process.argv[1] ?? '')) {
  console.log('Wrapper index');
  void wrapperIndexBench((l) => console.log(l));
}
