// Diagnostics and quick fixes from the real 2.28.9 run: each finding cites the run's figure,
// each fix is applied to the text and the result re-parsed (valid, and the finding is gone).
import { runName } from '../../readings/runName';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { applyEdits, findings, type Finding } from '../../readings/advice';
import { formatMs } from '../../readings/annotationText';
import type { ApiName } from '../../sites/apiMap';
import { resolveAnnotation } from '../../readings/figures';
import type { ProfileStore } from '../../client/profileStore';
import type { RunFile } from '../../protocol/runFile';
import { CALLSITES, rawRun, runFolder, scanText, storeOf } from '../support/annotationFixtures';

const wheel = rawRun('2.28.9-wheel');
const rules = { now: Date.parse(wheel.stamp?.startedAt ?? ''), staleAfterDays: 30, expectedNcclVersion: '' };
const stats = (run: RunFile, experiment: string, variant: string, stepId: string) => {
  const s = run.experiments
    .find((e) => e.experiment === experiment)
    ?.variants.find((v) => v.variant === variant)
    ?.steps.find((x) => x.step === stepId)?.stats;
  assert.ok(s);
  return s;
};

async function findingsOf(text: string, store: ProfileStore, language: 'python' | 'cpp' = 'python'): Promise<Finding[]> {
  const scan = await scanText(language, text);
  return findings(scan, (api: ApiName) => resolveAnnotation(api, store.active, store.profiles, rules), text);
}

const label = (r: RunFile) => runName(r);

async function wheelStore(run: RunFile = wheel): Promise<ProfileStore> {
  return (await storeOf(runFolder([run]))).store;
}

test("a group created in a loop or per step: the diagnostic cites the run's figure and host", async () => {
  const store = await wheelStore();
  const text = readFileSync(join(CALLSITES, 'train_alias.py'), 'utf8');
  const loop = (await findingsOf(text, store)).filter((f) => f.code === 'commcost.creationInLoop');
  const init = stats(wheel, 'init', 'default', 'total');
  // split_group headlines the split that pays the lazy connect: at 2 ranks the whole (2-rank) child.
  const split = stats(wheel, 'split', 'whole/splitShare=0', 'total');
  assert.deepEqual(
    loop.map((f) => [f.range.start.line + 1, f.message.split(': ')[0]]),
    [
      // new_group on a default group without device_id (answered by the NCCL init beneath): the total is paid at its first
      // collective; the device_id is the default group's, never new_group's (#28).
      [21, `each new group made here (inside a for loop (line 20)) costs ~${formatMs(init.median)} from creation to first collective on localhost, paid only when a collective first runs on it (the default group was created without device_id)`],
      [26, `creating a group here (in train_step, which is called in a loop at line 39) costs ~${formatMs(split.median)} to first collective each time on localhost`],
    ],
  );
  assert.match(loop[0]?.message ?? '', /; build it once or prewarm a pool$/);
  const c = readFileSync(join(CALLSITES, 'comm.cc'), 'utf8');
  const cLoop = (await findingsOf(c, store, 'cpp')).filter((f) => f.code === 'commcost.creationInLoop');
  assert.deepEqual(
    cLoop.map((f) => f.range.start.line + 1),
    [35],
  );
});

// [case, source, the fix's expected effect]
const warmUpCases: [string, string][] = [
  ['per-step method, torch not imported', readFileSync(join(CALLSITES, 'elastic_class.py'), 'utf8')],
  ['groups returned as a tuple', readFileSync(join(CALLSITES, 'group_flow_tuple.py'), 'utf8')],
  ['groups kept on self and in a global', readFileSync(join(CALLSITES, 'group_flow_class.py'), 'utf8')],
  [
    'statement on the last line, no newline at the end',
    'import torch\nimport torch.distributed as dist\n\ndef make():\n    g = dist.new_group([0, 1])',
  ],
  [
    'tab-indented, first use later',
    'import torch\nfrom torch.distributed import new_group, all_reduce\n\ndef make(x):\n\tg = new_group([0, 1])\n\ty = x + 1\n\tall_reduce(y, group=g)\n',
  ],
];
for (const [name, text] of warmUpCases) {
  test(`warm-up quick fix (${name}): valid code, indentation kept, the group is then warm`, async () => {
    const store = await wheelStore();
    const first = stats(wheel, 'init', 'default', 'first');
    const call = stats(wheel, 'init', 'default', 'call');
    const total = stats(wheel, 'init', 'default', 'total');
    const cold = (await findingsOf(text, store)).filter((f) => f.code === 'commcost.coldGroup');
    assert.ok(cold.length > 0);
    for (const f of cold) {
      assert.ok(f.fix);
      // No c10d figures: a group made without device_id pays the NCCL init beneath's call + first collective in its first collective.
      assert.equal(f.fix.title, `Insert a warm-up collective after creation (moves ~${formatMs(total.median)} here)`);
      assert.ok(
        f.message.includes(`pays ~${formatMs(total.median)} (no init_process_group in this file passes device_id: the init ${formatMs(call.median)} plus the NCCL communicator's first collective ${formatMs(first.median)}, from the NCCL init beneath: this run has no c10d figures) on localhost`),
        f.message,
      );
      const fixed = applyEdits(text, f.fix.edits);
      const scan = await scanText('python', fixed);
      assert.equal(scan.hasError, false, fixed);
      const variable = (await scanText('python', text)).sites.find((x) => x.nameRange.start.line === f.range.start.line)?.warmUp?.variable;
      const site = scan.sites.find((x) => x.warmUp?.variable === variable);
      assert.ok(site?.warmUp, fixed);
      assert.equal(site.warmUp.warm, true, fixed);
      const inserted = fixed.split('\n').find((l) => l.includes('# commcost: warm-up'));
      assert.equal(inserted?.match(/^\s*/)?.[0], site.statement?.indent);
      assert.ok(scan.facts.torchName, 'torch is bound after the fix');
      assert.equal(
        (await findingsOf(fixed, store)).filter((x) => x.code === 'commcost.coldGroup' && x.range.start.line === site.range.start.line)
          .length,
        0,
      );
    }
  });
}

test('the cold-group diagnostic names the first collective on the group in another function, never its return or a mention', async () => {
  const store = await wheelStore();
  const first = stats(wheel, 'init', 'default', 'first');
  const cold = async (file: string): Promise<Map<number, string>> =>
    new Map(
      (await findingsOf(readFileSync(join(CALLSITES, file), 'utf8'), store))
        .filter((f) => f.code === 'commcost.coldGroup')
        .map((f) => [f.range.start.line + 1, f.message]),
    );
  const tuple = await cold('group_flow_tuple.py');
  // tp and dp are returned at line 10 (`return tp, dp, ep`): their first collectives are in main.
  assert.equal(
    tuple.get(7),
    `the first collective on tp pays ~${formatMs(stats(wheel, 'init', 'default', 'total').median)} (no init_process_group in this file passes device_id: the init ${formatMs(stats(wheel, 'init', 'default', 'call').median)} plus the NCCL communicator's first collective ${formatMs(first.median)}, from the NCCL init beneath: this run has no c10d figures) on localhost (the first one in this file: dist.broadcast at line 22, in main); warm it up right after creation`,
  );
  assert.match(tuple.get(8)!, /\(the first one in this file: dist\.all_reduce at line 21, in main\)/);
  assert.match(tuple.get(28)!, /\(the first one in this file: dist\.barrier at line 35, in uses_single\)/);
  // ep reaches no collective: the message names no line.
  assert.doesNotMatch(tuple.get(9)!, /line|first used/);
  for (const m of tuple.values()) assert.doesNotMatch(m, /line (10|19|24|29)\b/);
  const cls = await cold('group_flow_class.py');
  assert.match(cls.get(10)!, /on self\.tp_group .*\(the first one in this file: all_reduce at line 20, in sync\)/);
  assert.match(cls.get(11)!, /on self\.pp_group .*\(the first one in this file: dist\.all_reduce at line 24, in pipeline\)/);
  assert.match(cls.get(29)!, /on WORLD .*\(the first one in this file: dist\.all_reduce at line 33, in use_world\)/);
  // The per-step method of elastic_class.py returns its group and no collective uses it.
  const elastic = await cold('elastic_class.py');
  assert.doesNotMatch(elastic.get(9)!, /line/);
});

test('no "warm it up" when the first collective is already the next statement after the creation (the finder\'s lines), only when code runs between', async () => {
  const store = await wheelStore();
  const head = 'import torch\nimport torch.distributed as dist\n\ndef make(x):\n';
  const cold = async (body: string) => (await findingsOf(head + body, store)).filter((f) => f.code === 'commcost.coldGroup');
  // On the creation's own line, after a semicolon.
  assert.deepEqual(await cold('    g = dist.new_group([0, 1]); dist.all_reduce(x, group=g)\n'), []);
  // Made in an if block, its first collective the next statement after the block (a blank line and a comment between).
  assert.deepEqual(await cold('    if x is not None:\n        g = dist.new_group([0, 1])\n\n    # sync\n    dist.all_reduce(x, group=g)\n'), []);
  // Code runs between the creation and the first collective: the warm-up is offered.
  const between = await cold('    if x is not None:\n        g = dist.new_group([0, 1])\n    y = x + 1\n    dist.all_reduce(y, group=g)\n');
  assert.equal(between.length, 1);
  assert.match(between[0]!.message, /warm it up right after creation/);
});

test('no warm-up fix when the run shows a first collective not worth moving (split halves, splitShare=0)', async () => {
  // A run whose split has only the halves (one-rank children at 2 ranks): those answer split_group.
  const halves: RunFile = structuredClone(wheel);
  for (const e of halves.experiments) if (e.experiment === 'split') e.variants = e.variants.filter((v) => v.variant.startsWith('halves/'));
  const store = await wheelStore(halves);
  const text = 'import torch\nimport torch.distributed as dist\n\ndef make(p):\n    g = dist.split_group(p, [[0]])\n    return g\n';
  const first = stats(wheel, 'split', 'halves/splitShare=0', 'first');
  const total = stats(wheel, 'split', 'halves/splitShare=0', 'total');
  const worth = first.median >= 1 && first.median >= 0.1 * total.median;
  assert.equal(
    (await findingsOf(text, store)).some((f) => f.code === 'commcost.coldGroup'),
    worth,
  );
});

const eagerCases: [string, string][] = [
  [
    'keyword arguments',
    'import torch\nimport torch.distributed as dist\ndist.init_process_group(backend="nccl")\ndist.all_reduce(torch.ones(1))\n',
  ],
  ['no arguments, only dist imported', 'import torch.distributed as dist\ndist.init_process_group()\ndist.barrier()\n'],
  [
    'multi-line with a trailing comma',
    'import torch\nfrom torch.distributed import init_process_group, all_reduce\n\ndef setup():\n    init_process_group(\n        "nccl",\n        world_size=2,\n    )\n    all_reduce(torch.ones(1))\n',
  ],
];
for (const [name, text] of eagerCases) {
  test(`eager-init quick fix (${name}): says what the run shows, adds device_id, stays valid`, async () => {
    const store = await wheelStore();
    const call = stats(wheel, 'init', 'default', 'call');
    const first = stats(wheel, 'init', 'default', 'first');
    const f = (await findingsOf(text, store)).find((x) => x.code === 'commcost.lazyInit');
    assert.ok(f?.fix);
    const total = stats(wheel, 'init', 'default', 'total');
    // The run has no c10d figures: what it shows is the NCCL init beneath, said so; never c10d behaviour as its finding.
    assert.equal(
      f.message,
      `the run ${label(wheel)} has no c10d figures; from the NCCL init beneath (experiment init), without device_id the first collective pays the init (${formatMs(call.median)}) plus the NCCL communicator's first collective (${formatMs(first.median)}), ${formatMs(total.median)} in all`,
    );
    assert.doesNotMatch(f.message, /builds the NCCL communicator lazily/);
    const fixed = applyEdits(text, f.fix.edits);
    const scan = await scanText('python', fixed);
    assert.equal(scan.hasError, false, fixed);
    assert.ok(scan.sites.find((s) => s.api === 'init_process_group')?.keywords.includes('device_id'), fixed);
    assert.equal(
      (await findingsOf(fixed, store)).some((x) => x.code === 'commcost.lazyInit'),
      false,
    );
  });
}

test('no eager-init advice with device_id, without collectives after, or when the run shows nothing to move', async () => {
  const store = await wheelStore();
  const has = async (text: string, s = store) => (await findingsOf(text, s)).some((f) => f.code === 'commcost.lazyInit');
  assert.equal(
    await has(
      'import torch\nimport torch.distributed as dist\ndist.init_process_group(device_id=torch.device("cuda", 0))\ndist.barrier()\n',
    ),
    false,
  );
  assert.equal(await has('import torch.distributed as dist\ndist.init_process_group()\n'), false);
  // The same run with the init call shrunk to 1% of its total: nothing worth moving, so no advice.
  const total = stats(wheel, 'init', 'default', 'total');
  const tiny: RunFile = structuredClone(wheel);
  const callStep = tiny.experiments.find((e) => e.experiment === 'init')?.variants[0]?.steps.find((s) => s.step === 'call');
  assert.ok(callStep);
  callStep.stats.median = total.median * 0.01;
  assert.equal(await has('import torch.distributed as dist\ndist.init_process_group()\ndist.barrier()\n', await wheelStore(tiny)), false);
});

test('no advice without figures: an empty workspace gives no findings', async () => {
  const { store } = await storeOf(runFolder([]));
  assert.deepEqual(await findingsOf(readFileSync(join(CALLSITES, 'train_alias.py'), 'utf8'), store), []);
});
