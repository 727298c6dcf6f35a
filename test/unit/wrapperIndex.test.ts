// The wrapper index (sites/wrapperIndex.ts) on synthetic packages written for these
// tests in the shapes of Megatron-LM, OpenRLHF and RL weight-sync helpers, and on the real files
// when materialized (test/fixtures/callsites/wrappers/README.md): callers of functions that make a
// lifecycle call become call sites across files, with their chain; cycles end; an edit re-parses
// only the edited file and its callers' sites follow; the hover names the chain.
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, test } from 'node:test';
import { AnnotationModel, type WrapperCallers } from '../../extension/annotations/annotationModel';
import { chainLine, hoverLinks, hoverMarkdown } from '../../readings/annotationText';
import { ProfileStore } from '../../client/profileStore';
import type { CallSite, CallSiteFinder } from '../../sites/callSites';
import { addImport, emptyImports, ModuleTable, qualifyCallee } from '../../sites/pythonModules';
import { WrapperIndex, type WrapperCallSite } from '../../sites/wrapperIndex';
import { CALLSITES, loadFinder } from '../support/annotationFixtures';

const WRAPPERS = join(CALLSITES, 'wrappers');
const SYNTHETIC = join(WRAPPERS, 'synthetic');
// Third-party files (wrappers/manifest.json), not committed: present once materialized.
const MEGATRON = join(WRAPPERS, 'megatron');
const OPENRLHF = join(WRAPPERS, 'openrlhf');
const thirdParty = JSON.parse(readFileSync(join(WRAPPERS, 'manifest.json'), 'utf8')) as { files: { file: string }[] };
const notMaterialized = thirdParty.files.filter((f) => !existsSync(join(WRAPPERS, f.file))).map((f) => f.file);
const REAL_SKIP =
  notMaterialized.length > 0 &&
  `third-party corpus not materialized (${notMaterialized.length} of ${thirdParty.files.length} files missing): ` +
    'node test/fixtures/callsites/corpus/materialize.mjs --manifest test/fixtures/callsites/wrappers/manifest.json';

function pythonFiles(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir).sort()) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) out.push(...pythonFiles(p));
    else if (name.endsWith('.py')) out.push(p);
  }
  return out;
}

/** An index of every Python file under `dir`, with a count of the finder's parses. */
async function indexOf(dir: string): Promise<{ index: WrapperIndex; parses: () => number }> {
  const finder = await loadFinder();
  let parses = 0;
  const counting = Object.create(finder) as CallSiteFinder;
  counting.parse = (...args: Parameters<CallSiteFinder['parse']>) => {
    parses++;
    return finder.parse(...args);
  };
  const index = await WrapperIndex.create(counting);
  for (const f of pythonFiles(dir)) index.setFile(f, 'python', readFileSync(f, 'utf8'));
  return { index, parses: () => parses };
}

const isWrapperSite = (s: CallSite): s is WrapperCallSite => Array.isArray((s as Partial<WrapperCallSite>).chain);
/** "line callee api chain" of every site through wrappers of `file` (lines 1-based). */
function callers(index: WrapperIndex, file: string): string[] {
  return index.callerSites(file).map((s) => `${s.range.start.line + 1} ${s.written} ${s.api} ${s.chain.join(' > ')}`);
}
/** The text of the call starting on 1-based `line`, up to its closing parenthesis. */
function callText(text: string, line: number): string {
  const from = text
    .split('\n')
    .slice(line - 1)
    .join('\n');
  const open = from.indexOf('(');
  let depth = 0;
  for (let i = open; i < from.length; i++) {
    if (from[i] === '(') depth++;
    else if (from[i] === ')' && --depth === 0) return from.slice(0, i + 1);
  }
  return from;
}

/** 1-based lines of `text` matching `re`. */
function linesMatching(text: string, re: RegExp): number[] {
  return text.split('\n').flatMap((l, i) => (re.test(l) ? [i + 1] : []));
}

/**
 * How many calls of `names` the body of top-level function `fn` makes, by the text, leaving out
 * those passing backend="gloo" (the lifecycle calls through wrappers the index counts for it).
 */
function ncclCallsIn(text: string, fn: string, names: string[]): number {
  const lines = text.split('\n');
  const from = lines.findIndex((l) => l.startsWith(`def ${fn}(`));
  assert.ok(from >= 0, `def ${fn}`);
  let to = lines.findIndex((l, i) => i > from && /^\S/.test(l));
  if (to < 0) to = lines.length;
  const call = new RegExp(`(?<![\\w.])(${names.join('|')})\\(`);
  let n = 0;
  for (let i = from + 1; i < to; i++) if (call.test(lines[i]!) && !/backend="gloo"/.test(callText(text, i + 1))) n++;
  return n;
}

describe('imports and modules (pythonModules.ts)', () => {
  test('import statements bind local names as Python does', () => {
    const facts = emptyImports();
    for (const s of [
      'import torch.distributed as dist',
      'import megatron.core.parallel_state',
      'from .utils import (\n    init_custom_process_group,  # the helper\n    describe as d,\n)',
      'from .. import comm',
      'from torch.distributed.distributed_c10d import _new_process_group_helper',
      'from x import *',
    ])
      addImport(s, facts);
    assert.deepEqual(Object.fromEntries(facts.bindings), {
      dist: { kind: 'module', ref: { level: 0, dotted: 'torch.distributed' } },
      megatron: { kind: 'module', ref: { level: 0, dotted: 'megatron' } },
      init_custom_process_group: { kind: 'member', ref: { level: 1, dotted: 'utils' }, name: 'init_custom_process_group' },
      d: { kind: 'member', ref: { level: 1, dotted: 'utils' }, name: 'describe' },
      comm: { kind: 'member', ref: { level: 2, dotted: '' }, name: 'comm' },
      _new_process_group_helper: {
        kind: 'member',
        ref: { level: 0, dotted: 'torch.distributed.distributed_c10d' },
        name: '_new_process_group_helper',
      },
    });
    assert.deepEqual(facts.stars, [{ level: 0, dotted: 'x' }]);
    assert.equal(qualifyCallee('dist.new_group', facts), 'torch.distributed.new_group');
    assert.equal(qualifyCallee('_new_process_group_helper', facts), 'torch.distributed.distributed_c10d._new_process_group_helper');
    assert.equal(qualifyCallee('d', facts), 'd', 'relative imports are left as written');
  });

  test('an absolute import names the file ending in that module path, the nearest one when several do', () => {
    const t = new ModuleTable();
    for (const p of ['/w/a/pkg/mod.py', '/w/b/pkg/mod.py', '/w/a/pkg/__init__.py', '/w/a/app/main.py']) t.add(p);
    assert.equal(t.resolve('/w/a/app/main.py', { level: 0, dotted: 'pkg.mod' }), '/w/a/pkg/mod.py');
    assert.equal(t.resolve('/w/b/x.py', { level: 0, dotted: 'pkg.mod' }), '/w/b/pkg/mod.py');
    assert.equal(t.resolve('/w/a/app/main.py', { level: 0, dotted: 'pkg' }), '/w/a/pkg/__init__.py');
    assert.equal(t.resolve('/w/a/pkg/mod.py', { level: 1, dotted: '' }), '/w/a/pkg/__init__.py');
    assert.equal(t.resolve('/w/a/app/main.py', { level: 2, dotted: 'pkg.mod' }), '/w/a/pkg/mod.py');
    assert.equal(t.resolve('/w/a/app/main.py', { level: 0, dotted: 'missing' }), undefined);
    t.remove('/w/a/pkg/mod.py');
    assert.equal(t.resolve('/w/a/app/main.py', { level: 0, dotted: 'pkg.mod' }), '/w/b/pkg/mod.py');
  });
});

describe('create_group and its callers (synthetic `mesh` package, the shape of Megatron-LM)', () => {
  const stateFile = join(SYNTHETIC, 'mesh', 'core', 'parallel_state.py');
  const launchFile = join(SYNTHETIC, 'mesh', 'training', 'launch.py');
  const state = readFileSync(stateFile, 'utf8');

  test('every NCCL create_group(...) call in parallel_state.py is a new_group site via create_group; gloo ones are not', async () => {
    const { index } = await indexOf(SYNTHETIC);
    // By the text: the calls of create_group, and those passing backend="gloo" within their call
    // (one spread over several lines; backend="nccl" and backend=<a name> stay NCCL).
    const calls = linesMatching(state, /(?<!def )\bcreate_group\(/);
    const gloo = calls.filter((line) => /backend="gloo"/.test(callText(state, line)));
    assert.equal(calls.length, 16);
    assert.equal(gloo.length, 4);
    const viaCreateGroup = index.callerSites(stateFile).filter((s) => s.written === 'create_group');
    assert.deepEqual(
      viaCreateGroup.map((s) => s.range.start.line + 1),
      calls.filter((l) => !gloo.includes(l)),
    );
    for (const s of viaCreateGroup) {
      assert.deepEqual(s.chain, ['create_group', 'torch.distributed.new_group']);
      assert.equal(s.api, 'new_group');
      assert.equal(s.role, 'create');
      assert.equal(s.wrapper.line + 1, linesMatching(state, /^def create_group\(/)[0]);
      assert.equal(s.wrapper.calls, 1);
    }
    // Functions of the file that call create_group are wrappers too: their callers in the file are
    // sites two hops deep, and each counts the NCCL create_group calls of its body.
    for (const name of ['_nested_groups', 'create_expert_groups']) {
      const sites = index.callerSites(stateFile).filter((s) => s.written === name);
      assert.deepEqual(
        sites.map((s) => s.range.start.line + 1),
        linesMatching(state, new RegExp(`^\\s+${name}\\(`)),
        name,
      );
      for (const s of sites) {
        assert.deepEqual(s.chain, [name, 'create_group', 'torch.distributed.new_group']);
        assert.equal(s.wrapper.line + 1, linesMatching(state, new RegExp(`^def ${name}\\(`))[0]);
        assert.equal(s.wrapper.calls, ncclCallsIn(state, name, ['create_group']), name);
      }
    }
    assert.equal(index.callerSites(stateFile).length, calls.length - gloo.length + 2);
    // The definition's own call stays a call site.
    const inner = index.directSites(stateFile).filter((s) => s.written === 'torch.distributed.new_group');
    assert.deepEqual(
      inner.map((s) => s.range.start.line + 1),
      linesMatching(state, /torch\.distributed\.new_group\(/),
    );
    assert.ok(index.sites(stateFile).some((s) => !isWrapperSite(s) && s.written === 'torch.distributed.new_group'));
  });

  test('across files, two hops deep, through `mpu = parallel_state` in mesh/core/__init__.py; backend="mpi" is not NCCL', async () => {
    const { index } = await indexOf(SYNTHETIC);
    const text = readFileSync(launchFile, 'utf8');
    const line = linesMatching(text, /mpu\.initialize_model_parallel\(/)[0];
    const outer = linesMatching(text, /^\s+setup_distributed\(/)[0];
    assert.ok(line && outer);
    assert.deepEqual(callers(index, launchFile), [
      `${line} mpu.initialize_model_parallel new_group initialize_model_parallel > create_group > torch.distributed.new_group`,
      `${outer} setup_distributed new_group setup_distributed > initialize_model_parallel > create_group > torch.distributed.new_group`,
    ]);
    const site = index.callerSites(launchFile).find((s) => s.written === 'mpu.initialize_model_parallel');
    assert.ok(site);
    assert.equal(relative(SYNTHETIC, site.wrapper.file), join('mesh', 'core', 'parallel_state.py'));
    assert.equal(site.wrapper.line + 1, linesMatching(state, /^def initialize_model_parallel\(/)[0]);
    // Its body's NCCL calls of create_group and of the file's other wrappers (gloo twins left out).
    const body = ncclCallsIn(state, 'initialize_model_parallel', ['create_group', '_nested_groups', 'create_expert_groups']);
    assert.equal(body, 9);
    assert.equal(site.wrapper.calls, body);
    // `create_group(backend="mpi", …)`, imported by name, makes an MPI group: not an NCCL call site,
    // and the function around it is no wrapper.
    const mpi = linesMatching(text, /create_group\(backend="mpi"/)[0];
    assert.ok(mpi);
    assert.ok(!index.callerSites(launchFile).some((s) => s.range.start.line + 1 === mpi));
    assert.ok(!index.wrappers().some((w) => w.key === '_bootstrap_overlap'));
    // Without `mpu = parallel_state` in mesh/core/__init__.py, `mpu` names nothing here.
    const pkg = join(SYNTHETIC, 'mesh', 'core', '__init__.py');
    const pkgText = readFileSync(pkg, 'utf8');
    index.setFile(pkg, 'python', pkgText.replace('mpu = parallel_state', 'mpu = None'));
    assert.deepEqual(callers(index, launchFile), []);
    index.setFile(pkg, 'python', pkgText);
    assert.equal(callers(index, launchFile).length, 2);
    // The hover names the chain and says the figures are of one call.
    assert.equal(
      chainLine(site),
      'via `initialize_model_parallel` → `create_group` → `torch.distributed.new_group` (parallel\\_state\\.py:' +
        `${site.wrapper.line + 1}) — \`initialize_model_parallel\` makes ${body} lifecycle calls in its body: these figures are of one`,
    );
  });
});

describe('stateless_init_process_group (synthetic `tuner` package, the shape of OpenRLHF)', () => {
  const dir = join(SYNTHETIC, 'tuner');
  const helper = join(dir, 'utils', 'comm.py');
  const worker = join(dir, 'engine', 'worker_ext.py');
  const trainer = join(dir, 'trainer', 'policy.py');
  const chain = 'stateless_init_process_group > vllm.distributed.device_communicators.pynccl.PyNcclCommunicator';

  test('a call after an import inside the method, and one after a module-level import reached through self.', async () => {
    const { index } = await indexOf(SYNTHETIC);
    const at = (file: string, re: RegExp): number => {
      const lines = linesMatching(readFileSync(file, 'utf8'), re);
      assert.equal(lines.length, 1, `${file}: ${re}`);
      return lines[0]!;
    };
    assert.deepEqual(callers(index, worker), [
      `${at(worker, /= stateless_init_process_group\(/)} stateless_init_process_group PyNcclCommunicator ${chain}`,
    ]);
    assert.deepEqual(callers(index, trainer), [
      `${at(trainer, /self\._open_weight_sync\(/)} self._open_weight_sync PyNcclCommunicator PolicyTrainer._open_weight_sync > ${chain}`,
      `${at(trainer, /= stateless_init_process_group\(/)} stateless_init_process_group PyNcclCommunicator ${chain}`,
    ]);
    for (const s of [...index.callerSites(worker), ...index.callerSites(trainer)]) {
      assert.equal(s.role, 'create');
      assert.equal((s as CallSite & { callsInto?: string }).callsInto, 'ncclCommInitRank');
    }
    const direct = index.callerSites(worker)[0]!;
    assert.deepEqual(
      [direct.wrapper.file, direct.wrapper.line + 1, direct.wrapper.calls],
      [helper, at(helper, /^def stateless_init_process_group\(/), 1],
    );
    // The store rendezvous (StatelessProcessGroup.create) makes no communicator: one call in the helper.
    assert.deepEqual(
      index.directSites(helper).map((s) => s.written),
      ['PyNcclCommunicator'],
    );
  });

  test('the import inside the method is what names the helper there: without it the call is no site', async () => {
    const { index } = await indexOf(SYNTHETIC);
    const text = readFileSync(worker, 'utf8');
    const without = text.replace('from tuner.utils.comm import stateless_init_process_group', 'pass');
    assert.notEqual(without, text);
    index.setFile(worker, 'python', without);
    assert.deepEqual(callers(index, worker), []);
    index.setFile(worker, 'python', text);
    assert.equal(callers(index, worker).length, 1);
  });
});

describe('real Megatron-LM and OpenRLHF files (materialized from wrappers/manifest.json)', () => {
  test(
    "Megatron-LM: create_group's NCCL callers in parallel_state.py, and mpu.initialize_model_parallel two hops across files",
    { skip: REAL_SKIP },
    async () => {
      const { index } = await indexOf(MEGATRON);
      const stateFile = join(MEGATRON, 'megatron', 'core', 'parallel_state.py');
      const initFile = join(MEGATRON, 'megatron', 'training', 'initialize.py');
      const state = readFileSync(stateFile, 'utf8');
      const calls = linesMatching(state, /(?<!def )\bcreate_group\(/);
      const gloo = calls.filter((line) => /backend="gloo"/.test(callText(state, line)));
      assert.deepEqual([calls.length, gloo.length], [34, 5]);
      const viaCreateGroup = index.callerSites(stateFile).filter((s) => s.written === 'create_group');
      assert.deepEqual(
        viaCreateGroup.map((s) => s.range.start.line + 1),
        calls.filter((l) => !gloo.includes(l)),
      );
      for (const s of viaCreateGroup) assert.deepEqual([s.chain, s.wrapper.calls], [['create_group', 'torch.distributed.new_group'], 1]);
      const text = readFileSync(initFile, 'utf8');
      const site = index.callerSites(initFile).find((s) => s.written === 'mpu.initialize_model_parallel');
      assert.ok(site, 'mpu.initialize_model_parallel(...) is a call site');
      assert.equal(site.range.start.line + 1, linesMatching(text, /mpu\.initialize_model_parallel\(/)[0]);
      assert.deepEqual(site.chain, ['initialize_model_parallel', 'create_group', 'torch.distributed.new_group']);
      assert.equal(relative(MEGATRON, site.wrapper.file), join('megatron', 'core', 'parallel_state.py'));
      assert.ok(site.wrapper.calls > 20, `initialize_model_parallel makes many lifecycle calls (${site.wrapper.calls})`);
      const mpi = linesMatching(text, /create_group\(backend='mpi'/)[0];
      assert.ok(mpi);
      assert.ok(!index.callerSites(initFile).some((s) => s.range.start.line + 1 === mpi));
    },
  );

  test('OpenRLHF: stateless_init_process_group imported inside a method and at module level', { skip: REAL_SKIP }, async () => {
    const dir = join(OPENRLHF, 'openrlhf');
    const { index } = await indexOf(dir);
    const chain = ['stateless_init_process_group', 'vllm.distributed.device_communicators.pynccl.PyNcclCommunicator'];
    for (const rel of [join('trainer', 'ray', 'vllm_worker_wrap.py'), join('trainer', 'ray', 'ppo_actor.py')]) {
      const file = join(dir, rel);
      const lines = linesMatching(readFileSync(file, 'utf8'), /= stateless_init_process_group\(/);
      assert.equal(lines.length, 1, rel);
      const site = index.callerSites(file).find((s) => s.written === 'stateless_init_process_group');
      assert.ok(site, `${rel}: the call is a site`);
      assert.equal(site.range.start.line + 1, lines[0]);
      assert.deepEqual(site.chain, chain);
      assert.equal(site.api, 'PyNcclCommunicator');
      assert.equal((site as CallSite & { callsInto?: string }).callsInto, 'ncclCommInitRank');
    }
  });
});

describe('a made-up workspace (relative imports, import … as, self. methods, cycles)', () => {
  const utils = join(SYNTHETIC, 'rl', 'comm', 'utils.py');
  const weights = join(SYNTHETIC, 'rl', 'comm', 'weights.py');
  const loop = join(SYNTHETIC, 'rl', 'trainer', 'loop.py');
  const cycle = join(SYNTHETIC, 'rl', 'cycle.py');

  test('callers through `from .utils import`, `import rl.comm.utils as cu` and self. methods', async () => {
    const { index } = await indexOf(SYNTHETIC);
    assert.deepEqual(callers(index, weights), [
      '6 init_custom_process_group new_group init_custom_process_group > torch.distributed.new_group',
      '9 self.init_weights_update_group new_group WeightSync.init_weights_update_group > init_custom_process_group > torch.distributed.new_group',
      // `sync = WeightSync()` … `sync.setup(…)`: a method called on an instance of the class.
      '15 sync.setup new_group WeightSync.setup > WeightSync.init_weights_update_group > init_custom_process_group > torch.distributed.new_group',
    ]);
    // backend="gloo" (line 10) is not NCCL.
    assert.deepEqual(callers(index, loop), [
      '6 cu.init_custom_process_group new_group init_custom_process_group > torch.distributed.new_group',
      '14 weights.start new_group start > WeightSync.setup > WeightSync.init_weights_update_group > init_custom_process_group > torch.distributed.new_group',
    ]);
    assert.deepEqual(callers(index, utils), []);
    assert.equal(index.directSites(utils).length, 1);
  });

  test('cycles end: mutual recursion gives one chain per function, no name twice', async () => {
    const { index } = await indexOf(SYNTHETIC);
    assert.deepEqual(callers(index, cycle), [
      '6 pong new_group pong > ping > torch.distributed.new_group',
      '11 ping new_group ping > torch.distributed.new_group',
      '23 pong new_group pong > ping > torch.distributed.new_group',
    ]);
    const chains = index.wrappers().filter((w) => w.file === cycle);
    assert.deepEqual(chains.map((w) => `${w.key}: ${w.chains.map((c) => c.chain.join(' > ')).join('; ')}`).sort(), [
      'caller: caller > pong > ping > torch.distributed.new_group',
      'ping: ping > torch.distributed.new_group',
      'pong: pong > ping > torch.distributed.new_group',
    ]);
    for (const w of index.wrappers()) for (const c of w.chains) assert.equal(new Set(c.chain).size, c.chain.length, c.chain.join(' > '));
  });

  test('an edit re-parses only that file: a wrapper removed takes its callers with it, restored brings them back', async () => {
    const { index, parses } = await indexOf(SYNTHETIC);
    const before = { weights: callers(index, weights), loop: callers(index, loop) };
    assert.equal(before.weights.length, 3);
    const original = readFileSync(utils, 'utf8');
    const n = parses();
    index.setFile(utils, 'python', original.replace('group = dist.new_group(ranks=ranks, backend=backend)', 'group = None'));
    // At most the edited file (none when it no longer holds a lifecycle name: prefilter.ts).
    assert.ok(parses() <= n + 1, 'one parse at most: the edited file');
    assert.deepEqual(callers(index, weights), []);
    assert.deepEqual(callers(index, loop), []);
    assert.deepEqual(
      index.wrappers().filter((w) => w.file.startsWith(join(SYNTHETIC, 'rl')) && w.file !== cycle),
      [],
    );
    index.setFile(utils, 'python', original);
    assert.ok(parses() <= n + 2);
    assert.deepEqual({ weights: callers(index, weights), loop: callers(index, loop) }, before);
    // Removing the file does the same.
    index.removeFile(utils);
    assert.deepEqual(callers(index, loop), []);
  });

  test("renaming the wrapper (another file's import no longer resolves) takes its callers in other files; renaming back restores them", async () => {
    const { index } = await indexOf(SYNTHETIC);
    const before = { weights: callers(index, weights), loop: callers(index, loop) };
    const original = readFileSync(utils, 'utf8');
    index.setFile(utils, 'python', original.replace('def init_custom_process_group(', 'def init_group('));
    assert.deepEqual({ weights: callers(index, weights), loop: callers(index, loop) }, { weights: [], loop: [] });
    index.setFile(utils, 'python', original);
    assert.deepEqual({ weights: callers(index, weights), loop: callers(index, loop) }, before);
  });

  test('an open document: edits re-parse its kept tree incrementally, with the same sites as a fresh parse', async () => {
    const { index } = await indexOf(SYNTHETIC);
    const text = readFileSync(weights, 'utf8');
    index.setFile(weights, 'python', text, { keepTree: true });
    // Rename the method the self. call names: that caller is no longer a site.
    const at = text.indexOf('init_weights_update_group(self');
    const pos = { line: text.slice(0, at).split('\n').length - 1, character: at - text.lastIndexOf('\n', at - 1) - 1 };
    const edited = `${text.slice(0, at)}x${text.slice(at)}`;
    index.editFile(weights, [{ rangeOffset: at, rangeLength: 0, range: { start: pos, end: pos }, text: 'x' }]);
    index.setFile(weights, 'python', edited, { keepTree: true });
    assert.deepEqual(callers(index, weights), [
      '6 init_custom_process_group new_group init_custom_process_group > torch.distributed.new_group',
    ]);
    index.dropTree(weights);
  });
});

test('the hover line escapes and names the file of the first wrapper; a direct call has none', () => {
  const base = {
    api: 'new_group',
    role: 'create',
    language: 'python',
    written: 'x',
    keywords: [],
    hasArguments: false,
  } as unknown as CallSite;
  assert.equal(chainLine(base), undefined);
  const site = {
    ...base,
    chain: ['make`group', 'torch.distributed.new_group'],
    wrapper: { file: '/w/a_b/utils.py', line: 4, calls: 1 },
  } as CallSite;
  assert.equal(chainLine(site), "via `make'group` → `torch.distributed.new_group` (utils\\.py:5)");
});

test('the editor model shows sites through wrappers, and refreshes other open documents after an edit', async () => {
  const finder = await loadFinder();
  const { index } = await indexOf(SYNTHETIC);
  const utils = join(SYNTHETIC, 'rl', 'comm', 'utils.py');
  const weights = join(SYNTHETIC, 'rl', 'comm', 'weights.py');
  // What wrapperWatch.ts does, with file paths as URIs.
  const adapter: WrapperCallers = {
    update: (uri, language, text, scan) => {
      index.setFile(uri, language, text, { scan, keepTree: true });
      return index.callerSites(uri);
    },
    edit: (uri, changes) => index.editFile(uri, changes),
    callers: (uri) => index.callerSites(uri),
    closed: (uri) => index.dropTree(uri),
  };
  const model = new AnnotationModel(finder, new ProfileStore(() => undefined), () => ({
    now: Date.now(),
    staleAfterDays: 30,
    expectedNcclVersion: '',
  }));
  model.setWrapperCallers(adapter);
  const utilsText = readFileSync(utils, 'utf8');
  model.open(utils, 'python', utilsText, 1);
  const state = model.open(weights, 'python', readFileSync(weights, 'utf8'), 1);
  const via = state.scan.sites.filter(isWrapperSite);
  assert.deepEqual(
    via.map((s) => s.range.start.line + 1),
    [6, 9, 15],
  );
  const found = model.at(weights, { line: 8, character: 12 });
  assert.ok(found && isWrapperSite(found.site));
  const md = hoverMarkdown(found.annotation, found.site, hoverLinks(found.annotation));
  assert.match(
    md,
    /via `WeightSync\.init_weights_update_group` → `init_custom_process_group` → `torch\.distributed\.new_group` \(weights\\\.py:5\)/,
  );
  // No advice on a call through a wrapper: the finder's facts (keywords, collectives after, warm-up) are the inner call's.
  assert.deepEqual(model.findings(weights), []);
  // Removing the wrapper's own call in utils.py: weights.py, open beside it, loses its sites.
  assert.deepEqual(model.refreshCallers(), []);
  model.reparse(utils, utilsText.replace('group = dist.new_group(ranks=ranks, backend=backend)', 'group = None'), 2);
  assert.deepEqual(model.refreshCallers(), [weights]);
  assert.deepEqual(model.state(weights)?.scan.sites.filter(isWrapperSite), []);
  model.dispose();
});
