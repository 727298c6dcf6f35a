/**
 * The verdict in the regimes the readings review (2026-12-01) broke it with: a zero figure, a
 * timed-out init or split, a suspend whose round trip and way back disagree, the plan's rebuild
 * against the verdict's, one recorded iteration, several nodes, units, one share rounded once, a
 * run without a stamp. Each test names the review's defect number and failed on the code before
 * its fix. Runs are built from the committed 2×H200 runs (docs/results) or synthetic ones
 * (verdictRuns.ts).
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { deriveVerdict, ms } from '../../readings/verdict';
import { aRanks, times } from '../../readings/verdict/format';
import { formatSummary, headerLine } from '../../cli/summary';
import { planReshape } from '../../readings/plan/planner';
import { poolSentence } from '../../readings/plan/sentences';
import type { RunFile } from '../../protocol/runFile';
import { asPlanRuns } from './planRuns';
import { experiment, load, synthetic, twoNodes as twoNodesOf, variant } from './verdictRuns';

const W = 'h200x2-2026-12-01/h200x2-nccl2.28.9-wheel.json';
const SRC = 'h200x2-2026-12-01/h200x2-nccl2.30.7-source.json';

const line = (run: RunFile, id: string): string => {
  const text = deriveVerdict(run).find((l) => l.id === id)?.text;
  assert.ok(text, `no ${id} line in:\n${deriveVerdict(run).map((l) => l.id).join(', ')}`);
  return text;
};
const all = (run: RunFile): string => deriveVerdict(run).map((l) => l.text).join('\n');
const NEVER = /NaN|Infinity|undefined|\b0×|0\.0 ms/;

/** The run with one step of a variant set to `value` (ms, or bytes for a memory point). */
function setStep(run: RunFile, experimentId: string, variantName: string, step: string, value: number): void {
  const v = run.experiments.find((e) => e.experiment === experimentId)!.variants.find((x) => x.variant === variantName)!;
  const s = v.steps.find((x) => x.step === step)!;
  s.stats = { ...s.stats, median: value, p90: value, min: value, max: value, mean: value };
}

describe('#6 a zero figure: no throw, no NaN/Infinity/0×, the sentence says what is true', () => {
  test('suspend, cold start and pool: a figure that reads 0 ms (or less) is named, never read as cheaper or costlier', () => {
    // destroy reads 0 ms: suspending is not "costlier than a finalize + destroy (302 ms vs 0 ms)", nor is the round trip judged.
    const run = structuredClone(load(SRC));
    setStep(run, 'destroy', 'default', 'total', 0);
    const suspend = line(run, 'suspend');
    assert.match(suspend, /suspending is not set against a finalize \+ destroy \(302 ms vs 0 ms: a figure below the timer's resolution\); resuming to the first collective costs more than a fresh init/, suspend);
    assert.doesNotMatch(suspend, /round trip|costs more than a finalize/, suspend);
    // A negative figure (a damaged file) is below the timer too: never "suspend/resume is the cheaper way here".
    const neg = structuredClone(load(SRC));
    for (const step of ['suspend', 'resume', 'first', 'total']) setStep(neg, 'suspend', 'default', step, -1);
    assert.doesNotMatch(line(neg, 'suspend'), /cheaper way|costs less than/);
    // Cold start: two negative figures both read 0 ms, so neither is "less" than the other.
    const cold = structuredClone(load(SRC));
    setStep(cold, 'cold-start', 'default', 'cold', -643);
    setStep(cold, 'cold-start', 'default', 'warm', -187);
    const c = line(cold, 'cold-start');
    assert.match(c, /: cold costs about the same as warm \(no ratio: both read 0 ms, below the timer's resolution\)\./, c);
    // Pool: "switching (0 ms) costs more than rebuilding it on demand (0 ms)" contradicted itself.
    const pool = structuredClone(load(SRC));
    setStep(pool, 'pool', 'tp2+1', 'switch', -0.032);
    setStep(pool, 'pool', 'tp2+1', 'rebuild', -31.4);
    const p = line(pool, 'pool');
    assert.match(p, /switching to its one-rank child and rebuilding it on demand both read 0 ms here, below the timer's resolution: neither is set against the other/, p);
    assert.doesNotMatch(p, /\(0 ms\) costs (more|less|about the same)/, p);
    setStep(pool, 'pool', 'tp2+1', 'switch', 0.032);
    assert.match(line(pool, 'pool'), /switching to its one-rank child takes 0\.032 ms; rebuilding it on demand reads 0 ms here, below the timer's resolution, so the two are not set against each other/);
  });
  test('init reads 0 ms: the share line says below the timer\'s resolution; the rebuilds are not divided by it', () => {
    const run = structuredClone(load(W));
    for (const step of ['call', 'first', 'total']) setStep(run, 'init', 'default', step, 0);
    assert.doesNotThrow(() => deriveVerdict(run));
    assert.doesNotThrow(() => formatSummary(run));
    assert.equal(
      line(run, 'first-collective-share'),
      "on 2× H200 NVLink (vm) with NCCL 2.28.9, a fresh communicator of 2 ranks reads 0 ms to its first collective (ncclCommInitRankConfig 0 ms, the first collective 0 ms): below the timer's resolution, no cost to divide or set beside the study's.",
    );
    const rebuild = line(run, 'rebuild-vs-init');
    assert.match(rebuild, /^To the first collective, not set against a fresh init \(it reads 0 ms, below the timer's resolution\): split of the same shape \(a 2-rank child\), splitShare 0: 175 ms \(141 ms of it in the first collective\);/, rebuild);
    assert.doesNotMatch(all(run), NEVER);
  });

  test('a rebuild that reads 0 ms: said below the timer\'s resolution, neither a share of a fresh init nor "cheaper"', () => {
    const run = synthetic(2, [
      experiment('init', [variant('default', { call: 30, first: 140, total: 170 })]),
      experiment('shrink', [variant('default', { call: 0, first: 0, total: 0 })]),
    ]);
    const text = line(run, 'rebuild-vs-init');
    assert.match(text, /^To the first collective, against a fresh init \(170 ms\): shrink \(to a one-rank child\): 0 ms, below the timer's resolution\. /, text);
    assert.doesNotMatch(text, /0% of a fresh init|cheaper|agrees|differs/, text);
  });

  test('a teardown floor that reads 0 ms: said so, not set beside the study\'s (no "no ratio … differs")', () => {
    const run = synthetic(2, [
      experiment('abort', [variant('default', { abort: 0, reinit: 17, first: 0.01, total: 17 })]),
      experiment('destroy', [variant('default', { finalize: 0.1, destroy: 500, total: 500 })]),
    ]);
    const text = line(run, 'teardown-floors');
    assert.match(text, /^Tearing a communicator of 2 ranks down costs: ncclCommAbort \(0 ms: below the timer's resolution\); ncclCommFinalize \+ ncclCommDestroy 500 ms\. Study .*: ncclCommFinalize \+ ncclCommDestroy 0\.16–0\.43 s vs 0\.500 s/, text);
    assert.doesNotMatch(text, /ncclCommAbort 485–534 ms vs|no ratio/, text);
  });

  test('a drain that reads 0 ms is not set beside the study\'s range (no "no ratio" end)', () => {
    const v = variant('finalize/16MiB', { finalize: 0, sync: 0, total: 0 });
    v.counts = { inFlightAtStart: { min: 1, max: 1, sum: 10, n: 10 } };
    const text = line(synthetic(2, [experiment('drain', [v])]), 'drain');
    assert.match(text, /ncclCommFinalize until quiet: 16 MiB alone 0 ms\. Study \(4× A40 PCIe, one node, NCCL version not stated\): until quiet with four 16–256 MB allreduces in flight 7–112 ms — not compared here: the drain here reads 0 ms, below the timer's resolution \(study: drain of four in-flight 16–256 MB messages, in docs\/METHOD\.md "The study's figures"\)\.$/, text);
  });

  test('a pool with no memory change: said so, never "0 MiB (0×)" or "Infinity× the pool without sharing"', () => {
    const run = structuredClone(load(W));
    const plain = run.experiments.find((e) => e.experiment === 'pool')!.variants.find((v) => v.variant === 'tp2+1')!;
    plain.memoryBytes = { 'pool after TP2': 0, 'pool after TP1': 0 };
    const text = line(run, 'pool');
    assert.match(text, /^A prewarmed pool of every TP shape \(tp2\+1, splitShare 0\) shows no memory change per GPU \(the free-memory delta reads 0 MiB\) and turns a 45\.5 ms rebuild/, text);
    assert.match(text, /With splitShare 1 \(every child sharing the parent's resources\) it takes 616 MiB per GPU \(0\.4% of its memory\), and turns/, text);
    assert.match(text, /a pool of every TP shape, per GPU 464 MB \(TP4 \+ 2×TP2 \+ 4×TP1\) — not compared here: the pool here shows no memory change/, text);
    assert.doesNotMatch(text, NEVER, text);
  });

  test('a switch that reads 0 ms: "below the timer\'s resolution", never "a 0.0 ms switch (… Infinity× the switch)"', () => {
    const run = structuredClone(load(W));
    setStep(run, 'pool', 'tp2+1', 'switch', 0);
    const text = line(run, 'pool');
    assert.match(text, /turns a 45\.5 ms rebuild of its one-rank child \(split \+ first collective\) into a switch below the timer's resolution \(it reads 0 ms\)\./, text);
    assert.doesNotMatch(text, NEVER, text);
  });

  test('the ratio and time helpers never write "0×", "Infinity×" or "0.0 ms"', () => {
    assert.equal(times(0), 'no ratio (one figure is 0)');
    assert.equal(times(Number.POSITIVE_INFINITY), 'no ratio (one figure is 0)');
    assert.equal(times(Number.NaN), 'no ratio (one figure is 0)');
    assert.equal(ms(0), '0 ms');
  });

  test('a line whose figures its code did not foresee is replaced by a line saying so; the other lines are kept', () => {
    const run = structuredClone(load(W));
    const broken = experiment('registration', []);
    Object.defineProperty(broken, 'variants', { get: () => { throw new Error('bad variants'); } });
    run.experiments.push(broken);
    let lines: ReturnType<typeof deriveVerdict> = [];
    assert.doesNotThrow(() => (lines = deriveVerdict(run)));
    assert.ok(lines.some((l) => l.id === 'first-collective-share'));
    assert.ok(lines.some((l) => l.id === 'pool'));
    assert.ok(lines.some((l) => l.id === 'unread:registration' && /^The registration reading could not be formed from this run's figures \(bad variants\)\.$/.test(l.text)));
  });

  test('a malformed stamp or nodes (as a live run may hold before validation): the verdict falls back to the run\'s host, never throws', () => {
    const run = structuredClone(load(W));
    (run.stamp as unknown as { gpus: unknown }).gpus = {};
    run.nodes = [{ index: 0, hostname: 'a', address: 'a', ranks: [0] }, { index: 1, hostname: 'b', address: 'b', ranks: [1] }] as never;
    assert.doesNotThrow(() => deriveVerdict(run));
    const broken = structuredClone(load(W));
    (broken.stamp as unknown as { gpus: unknown }).gpus = {};
    assert.doesNotThrow(() => deriveVerdict(broken));
    assert.match(line(broken, 'first-collective-share'), /vs here \(2 ranks on localhost\)/);
  });
});

describe('#7 a timeout: what timed out is said, every reading with its figures kept', () => {
  test('init whose first collective timed out: the call and the timeout; split and shrink still read, not set against a fresh init', () => {
    const run = structuredClone(load(W));
    const init = run.experiments.find((e) => e.experiment === 'init')!.variants[0]!;
    init.steps = init.steps.filter((s) => s.step === 'call');
    run.status = 'partial';
    run.errors = [
      {
        code: 'TIMEOUT',
        message: 'timed out at init default iteration 2, step first 1 MiB allreduce on rank 1: rank 0 waited 30.0 s in first 1 MiB allreduce; rank 1 never reached first 1 MiB allreduce',
        where: { host: 'vm', rank: 1, experiment: 'init', variant: 'default', iteration: 2, step: 'first' },
        fatal: false,
      },
    ];
    assert.equal(
      line(run, 'first-collective-share'),
      'on 2× H200 NVLink (vm) with NCCL 2.28.9, a fresh communicator of 2 ranks: ncclCommInitRankConfig 30.1 ms; its first collective has no figure in this run (timed out at init default iteration 2, step first 1 MiB allreduce on rank 1: rank 0 waited 30.0 s in first 1 MiB allreduce; rank 1 never reached first 1 MiB allreduce).',
    );
    const rebuild = line(run, 'rebuild-vs-init');
    assert.match(
      rebuild,
      /^To the first collective, not set against a fresh init \(the init's first collective has no figure in this run: it timed out\): split of the same shape \(a 2-rank child\), splitShare 0: 175 ms \(141 ms of it in the first collective\); the same with splitShare 1: 21\.7 ms \(its first collective negligible, 0\.10 ms\); shrink \(to a one-rank child\): 21\.1 ms/,
      rebuild,
    );
    // The split keeps the parent's 2 ranks: the study's split figures are named, not judged (issue #28).
    assert.match(rebuild, /ncclCommSplit 23 ms; first allreduce on a split child 54\.5 ms — not compared here: the split here keeps the parent's 2 ranks/, rebuild);
    assert.doesNotMatch(rebuild, /split against a fresh init|shrink against a fresh init/, rebuild);
  });

  test('a split that timed out before any figure, and a pool stopped the same way: each named with its timeout', () => {
    const run = synthetic(2, [
      experiment('init', [variant('default', { call: 88.7, first: 2.0, total: 90.7 })]),
      { ...experiment('split', []), state: 'stopped', done: 0, total: 12 },
      { ...experiment('pool', []), state: 'stopped', done: 0, total: 6 },
    ]);
    const split = 'timed out at split halves/splitShare=0 iteration 0, step ncclCommSplit on rank 1: rank 0 waited 3.1 s in ncclCommSplit; rank 1 waited 3.1 s in ncclCommSplit';
    const pool = 'timed out at pool tp2+1 iteration 0, step ncclCommSplit on rank 0: rank 0 waited 3.0 s in ncclCommSplit; rank 1 waited 3.0 s in ncclCommSplit';
    run.errors = [
      { code: 'TIMEOUT', message: split, where: { host: 'vm', rank: 1, experiment: 'split', variant: 'halves/splitShare=0', iteration: 0, step: 'call' }, fatal: false },
      { code: 'TIMEOUT', message: pool, where: { host: 'vm', rank: 0, experiment: 'pool', variant: 'tp2+1', iteration: 0, step: 'call/tp1' }, fatal: false },
    ];
    assert.equal(line(run, 'rebuild-vs-init'), `To the first collective, against a fresh init (90.7 ms): split of the same shape (a 2-rank child), splitShare 0: no figure in this run (${split}).`);
    assert.equal(line(run, 'pool'), `The prewarmed pool has no figure in this run (${pool}).`);
  });

  test('an experiment of the other lines that stopped before any figure (abort) is named with its timeout; one with figures is not', () => {
    const abort = 'timed out at abort default iteration 0, step ncclCommAbort on rank 1: rank 0 waited 30.0 s in ncclCommAbort; rank 1 waited 30.0 s in ncclCommAbort';
    const run = synthetic(2, [
      experiment('destroy', [variant('default', { finalize: 0.1, destroy: 500, total: 500 })]),
      { ...experiment('abort', []), state: 'stopped', done: 0, total: 5 },
    ]);
    run.errors = [{ code: 'TIMEOUT', message: abort, where: { host: 'vm', rank: 1, experiment: 'abort', variant: 'default', iteration: 0, step: 'abort' }, fatal: false }];
    assert.equal(line(run, 'stopped'), `No figure in this run for ncclCommAbort (${abort}).`);
    assert.match(line(run, 'teardown-floors'), /ncclCommFinalize \+ ncclCommDestroy 500 ms/);
    assert.equal(deriveVerdict(synthetic(2, [experiment('destroy', [variant('default', { total: 500 })])])).some((l) => l.id === 'stopped'), false);
  });
});

test('#12 suspend: a round trip that is cheaper with a way back that is longer is not "the cheaper way"; both facts said', () => {
  const text = line(load(SRC), 'suspend');
  assert.match(
    text,
    /resuming to the first collective costs more than a fresh init to its first collective \(257 ms vs 174 ms\); the round trip, suspend \+ resume, costs less than destroy \+ re-init \(559 ms vs 681 ms\), but the way back that a job waits for, resume to the first collective, is the longer one: neither way is the cheaper on both counts here\./,
    text,
  );
  assert.doesNotMatch(text, /the cheaper way here/, text);
  // A resume that is also the shorter way back: "the cheaper way" stands.
  const run = structuredClone(load(SRC));
  for (const step of ['resume', 'total']) setStep(run, 'suspend', 'default', step, 100);
  assert.match(line(run, 'suspend'), /\(402 ms vs 681 ms\): suspend\/resume is the cheaper way here\./);
  // A side past 1 s puts both sides of that comparison in seconds, never "1.20 s vs 681 ms".
  const slow = structuredClone(load(SRC));
  for (const step of ['resume', 'total']) setStep(slow, 'suspend', 'default', step, 1100);
  const t = line(slow, 'suspend');
  assert.match(t, /\(1\.10 s vs 0\.174 s\)/, t);
  assert.match(t, /\(1\.40 s vs 0\.681 s\)/, t);
  assert.doesNotMatch(t, /\d s vs [\d.]+ ms|ms vs [\d.]+ s\b/, t);
});

test('#16 the plan\'s rebuild and the verdict\'s pool rebuild each say what they are, and agree per shape (issue #28: 170 ms to TP2, the init total as the first page reads it; 45.5 ms to TP1)', () => {
  const run = load(W);
  const plan = poolSentence(planReshape(asPlanRuns(run), {}));
  // Like with like per shape (issue #28, audit FALSE 1): the pool's switch was timed to TP1 only.
  assert.match(plan, /to TP2 the on-demand rebuild is 170 ms \(ncclCommInitRankConfig TP2 \+ first collective TP2\) and the pool's switch is not measured/, plan);
  assert.match(plan, /to TP1 it turns a 45\.5 ms on-demand rebuild \(ncclCommSplit into TP1 \+ first collective TP1\) into a 0\.025 ms switch/, plan);
  assert.match(line(run, 'pool'), /turns a 45\.5 ms rebuild of its one-rank child \(split \+ first collective\) into a 0\.025 ms switch/);
});

describe('#17 fewer than 3 recorded iterations: every judgement carries the single-observation note', () => {
  const NOTE = '(here from one recorded iteration per step: each word rests on a single observation)';
  const one = (run: RunFile): RunFile => ({ ...run, options: { ...run.options, iterations: 1 } });
  test('connect mode and registration (no study figure) carry it', () => {
    const run = one(
      synthetic(2, [
        experiment('connect-mode', [
          variant('init/runtimeConnect=1', { call: 32.5, first: 142, total: 174 }),
          variant('init/runtimeConnect=0', { call: 195, first: 0.21, total: 195 }),
        ]),
        experiment('registration', [variant('register/64MiB', { register: 0.5, registerAgain: 0.01, firstUse: 0.4, secondUse: 0.3 })]),
      ]),
    );
    assert.equal(
      line(run, 'connect-mode'),
      `NCCL_RUNTIME_CONNECT=0 moves the first-collective cost into init here (init 195 ms with NCCL_RUNTIME_CONNECT=0 vs 32.5 ms with runtime connect, first collective 0.21 ms vs 142 ms); to the first collective it costs more than runtime connect (195 ms vs 174 ms) ${NOTE}. The study published no figure for this.`,
    );
    assert.ok(line(run, 'registration').endsWith(`${NOTE}. The study published no figure for this.`), line(run, 'registration'));
  });
  test('suspend, and a pool and rebuild whose study figures are only named (a one-rank child), carry it', () => {
    const run = one(structuredClone(load(SRC)));
    assert.ok(line(run, 'suspend').includes(`neither way is the cheaper on both counts here ${NOTE}.`), line(run, 'suspend'));
    const pool = one(structuredClone(load(W)));
    pool.experiments = pool.experiments.filter((e) => e.experiment === 'pool' || e.experiment === 'init');
    const p = pool.experiments.find((e) => e.experiment === 'pool')!;
    p.variants = p.variants.map((v) => ({ ...v, memoryBytes: { 'pool after TP2': 0, 'pool after TP1': 0 } }));
    assert.match(line(pool, 'pool'), /\(the rebuild costs 1813× the switch\)\. With splitShare 1 .* \(here from one recorded iteration per step: each word rests on a single observation\)\./);
    const rebuild = one(synthetic(2, [experiment('init', [variant('default', { call: 30, first: 140, total: 170 })]), experiment('shrink', [variant('default', { call: 21, first: 0.01, total: 21 })])]));
    // A one-rank child is given beside the 2-rank fresh init, not judged against it (defect 15):
    // no judgement, so no note; at 3 ranks the shrink is judged and the note comes with it.
    assert.match(line(rebuild, 'rebuild-vs-init'), /shrink \(to a one-rank child\): 21\.0 ms \(its first collective negligible, 0\.010 ms\), not set against the 2-rank fresh init \(a one-rank child has no peer to connect to\)\./);
    assert.doesNotMatch(line(rebuild, 'rebuild-vs-init'), /cheaper|single observation/);
    const rebuild3 = one(synthetic(3, [experiment('init', [variant('default', { call: 30, first: 140, total: 170 })]), experiment('shrink', [variant('default', { call: 21, first: 0.01, total: 21 })])]));
    assert.match(line(rebuild3, 'rebuild-vs-init'), /shrink \(to a 2-rank child\): 21\.0 ms \(12% of a fresh init, cheaper; its first collective negligible, 0\.010 ms\).*single observation/);
  });
});

describe('#19 a run over several nodes names every host', () => {
  const twoNodes = (): RunFile => twoNodesOf(W);
  test('header and verdict: both hosts, the node count; teardown judged against the study\'s floors, which it measured on one node and across nodes (issue #28)', () => {
    const run = twoNodes();
    assert.match(headerLine(run), /^2 nodes from localhost: gpu0 \(8 GPUs, ranks 0–7\), gpu1 \(8 GPUs, ranks 8–15\) · 16 GPUs NVIDIA H100 80GB HBM3 · 16 ranks · NCCL 2\.28\.9 .* \(stamp of vm\)$/);
    assert.match(line(run, 'first-collective-share'), /^on 16× H100 80GB HBM3 over 2 hosts, gpu0 and gpu1, with NCCL 2\.28\.9, a fresh communicator of 16 ranks/);
    assert.match(line(run, 'first-collective-share'), /vs here \(16× H100 80GB HBM3 over 2 hosts, gpu0 and gpu1\): a fresh init to its first collective 184 ms vs 170 ms/);
    assert.match(line(run, 'teardown-floors'), /Study \(NCCL 2\.28\.9 and 2\.32\.3, A40 and V100, one node and across nodes, 2–8 GPUs\) vs here \(16× H100 80GB HBM3 over 2 hosts, gpu0 and gpu1\): ncclCommAbort 485–534 ms vs 517 ms \(inside the study's range\): agrees/);
    assert.doesNotMatch(line(run, 'teardown-floors'), /measured on one/);
    // Without a stamp the nodes are still named (they come from the coordinator's plan).
    const bare = { ...run, stamp: undefined };
    assert.equal(headerLine(bare), '2 nodes from localhost: gpu0 (8 GPUs, ranks 0–7), gpu1 (8 GPUs, ranks 8–15): no environment stamp in this file (GPUs and NCCL version not recorded) · 16 ranks');
  });
  test('the study\'s one-host figures are named, not judged, in every line of a run over several nodes; its figures across nodes are judged', () => {
    const run = twoNodes();
    const rebuild = line(run, 'rebuild-vs-init');
    // Split has no study figure across nodes: its share and ratios were judged against the A40 host's.
    assert.doesNotMatch(rebuild, /split's first-collective share \d+%[^;]*: (agrees|differs)/, rebuild);
    assert.doesNotMatch(rebuild, /split against a fresh init [^;]*: (agrees|differs)/, rebuild);
    assert.match(rebuild, /Study \(4× A40 PCIe, one node, NCCL 2\.32\.3\): ncclCommSplit 23 ms; [^—]*— not compared here: this run spans 2 hosts, the study's figures were of one host/, rebuild);
    assert.match(rebuild, /Study \(2 nodes × 4 V100 over InfiniBand, NCCL version not stated\) vs here \(16× H100 80GB HBM3 over 2 hosts, gpu0 and gpu1\): shrink against a fresh init [^;]*: (agrees|differs)/, rebuild);
    const drain = line(run, 'drain');
    assert.match(drain, /Study \(4× A40 PCIe, one node, [^)]*\): [^—]*— not compared here: this run spans 2 hosts, the study's figures? (was|were) of one host/, drain);
    assert.doesNotMatch(drain, /agrees|differs/, drain);
    // The study's cold/warm anchor was measured across InfiniBand: judged across nodes, its setting named.
    assert.match(line(run, 'cold-start'), /Study \(A40 across InfiniBand, GPU count and NCCL version not stated\) vs here \(16× H100 80GB HBM3 over 2 hosts, gpu0 and gpu1\): cold/);
    // The same run on one host: set beside the study's InfiniBand figures, not judged (the transports differ).
    assert.match(line(load(W), 'cold-start'), /vs here \(2× H200 NVLink\): cold with its CUDA and library start 493–523 ms vs 864 ms \(1\.65× its upper end\); [^—]*— not judged: the transports differ/);
    // From one recorded iteration the line's own cost words ("cold costs more than warm") carry the note.
    const once = { ...twoNodes(), options: { ...twoNodes().options, iterations: 1 } };
    assert.match(line(once, 'drain'), /— not compared here: this run spans 2 hosts, the study's figures? (was|were) of one host \(study: [^)]*\) \(here from one recorded iteration per step: each word rests on a single observation\)\.$/);
  });
});

describe('#22 units and articles', () => {
  test('1000 ms and more in seconds; never "0.0 ms"', () => {
    assert.equal(ms(1000), '1.00 s');
    assert.equal(ms(1500), '1.50 s');
    assert.equal(ms(12_500), '12.5 s');
    assert.equal(ms(60_000_000), '60000 s');
    assert.equal(ms(999), '999 ms');
    // Where the shorter form would round up to the next: 999.6 ms is 1.00 s, 99.96 ms is 100 ms, 9.996 ms is 10.0 ms.
    assert.equal(ms(999.6), '1.00 s');
    assert.equal(ms(99.96), '100 ms');
    assert.equal(ms(9.996), '10.0 ms');
    assert.equal(ms(9996), '10.0 s');
    const run = synthetic(1, [experiment('abort', [variant('default', { abort: 1000, reinit: 17, first: 0.01, total: 17 })])]);
    // The floors are set side by side: one unit for the whole list, the min beside its median too.
    assert.match(line(run, 'teardown-floors'), /ncclCommAbort 1\.00 s \(min 0\.980 s\)/);
    // Three significant digits, trailing zeros kept: a 500.1 ms floor beside 0.987 s is "0.500 s", never "0.5 s".
    assert.match(line(load('h200x1-2026-12-01/h200x1-nccl2.30.7-source.json'), 'teardown-floors'), /ncclCommRevoke until quiet 0\.987 s; ncclCommFinalize \+ ncclCommDestroy 0\.500 s\./);
  });
  test('the teardown floors of a real 1-rank run (abort ≈ 1 s, destroy ≈ 0.5 s) in one unit: never "1.00 s (min 992 ms); … 499 ms"', () => {
    const text = line(load('h200x1-2026-12-01/h200x1-nccl2.28.3-system.json'), 'teardown-floors');
    assert.match(text, /^Tearing a communicator of 1 rank down costs: ncclCommAbort 1\.00 s \(min 0\.992 s\); ncclCommFinalize \+ ncclCommDestroy 0\.499 s\./, text);
    assert.doesNotMatch(text.split('. Study')[0]!, /\d ms/, text);
    // A 2-rank run whose floors are all under 1 s stays in ms.
    assert.match(line(load(W), 'teardown-floors'), /ncclCommAbort 517 ms \(min 506 ms\); ncclCommRevoke until quiet 505 ms; ncclCommFinalize \+ ncclCommDestroy 508 ms\./);
  });
  test('"an 8-rank child", "an 11-rank child", "a 2-rank child"', () => {
    assert.equal(aRanks(8, 'child'), 'an 8-rank child');
    assert.equal(aRanks(11, 'child'), 'an 11-rank child');
    assert.equal(aRanks(18, 'child'), 'an 18-rank child');
    assert.equal(aRanks(80, 'child'), 'an 80-rank child');
    assert.equal(aRanks(2, 'child'), 'a 2-rank child');
    assert.equal(aRanks(1, 'child'), 'a one-rank child');
    const run = synthetic(16, [
      experiment('init', [variant('default', { call: 30, first: 140, total: 170 })]),
      experiment('split', [variant('halves/splitShare=0', { call: 34, first: 0.02, total: 34 })]),
    ]);
    assert.match(line(run, 'rebuild-vs-init'), /split into halves \(an 8-rank child\), splitShare 0: 34\.0 ms/);
    // At an odd world size the halves (color rank < n/2) are 3 and 2 ranks: the figure, a MAX over
    // ranks, is the larger child's, as the annotations say (apiMap.ts splitChildRanks).
    const odd = synthetic(5, [
      experiment('init', [variant('default', { call: 30, first: 140, total: 170 })]),
      experiment('split', [variant('halves/splitShare=0', { call: 34, first: 120, total: 154 })]),
    ]);
    assert.match(line(odd, 'rebuild-vs-init'), /split into halves \(a 3-rank child\), splitShare 0: 154 ms/);
  });
  test('the table never prints "0.000" for a step above 0', () => {
    const run = synthetic(2, [experiment('init', [variant('default', { call: 30, first: 0.00038, total: 30 })])]);
    const row = formatSummary(run).split('\n').find((l) => l.includes('init default · first collective'))!;
    assert.match(row, /\s0\.00038\s/, row);
    assert.doesNotMatch(row, /0\.000\s/, row);
  });
  test('a memory line of no bytes reads "0 MiB per GPU", never "0.0 MiB"', () => {
    const run = synthetic(2, [experiment('init', [variant('default', { call: 30, first: 140, total: 170 }, { afterCall: 0, afterFirst: 484 })])]);
    const text = formatSummary(run);
    assert.match(text, /memory init default after the call: 0 MiB per GPU/, text);
    assert.match(text, /memory init default after the first collective: 484\.0 MiB per GPU/, text);
    assert.doesNotMatch(text, /\b0\.0 MiB/, text);
  });
});

test('#23 one share, one rounding: the first collective\'s share is the same in the sentence and the study clause', () => {
  const text = line(load(SRC), 'first-collective-share');
  assert.match(text, /most of it, 142 ms \(81%\), is paid by the first collective/, text);
  // The rule (METHOD, "Percentages"): of call + first, 142 of 174.6 ms is 81%; 82% was of the median total.
  assert.doesNotMatch(text, /82%/, text);
  assert.match(text, /vs 81% \(of the call \+ first collective, 32\.6 \+ 142 ms\)/, text);
});

test('#25 a run without a stamp but with figures: the header and the verdict say the stamp is missing, not that the agent stopped', () => {
  const run = structuredClone(load(W));
  delete run.stamp;
  assert.equal(headerLine(run), 'host localhost: no environment stamp in this file (GPUs and NCCL version not recorded) · 2 ranks');
  assert.match(line(run, 'first-collective-share'), /^on localhost \(2 ranks, GPUs not recorded\) with NCCL version not recorded, a fresh communicator of 2 ranks costs 170 ms/);
  assert.doesNotMatch(all(run), /NCCL \?/);
  const empty = { ...run, experiments: [] };
  assert.equal(headerLine(empty), 'host localhost: no environment stamp (the agent stopped before its plan)');
});

test('#5 (its verdict lines) 1 rank: connect mode and registration say there is no peer, and that the run does not show what they do for several ranks', () => {
  const run = synthetic(1, [
    experiment('connect-mode', [
      variant('init/runtimeConnect=1', { call: 19.6, first: 0.012, total: 19.6 }),
      variant('init/runtimeConnect=0', { call: 38.7, first: 0.0086, total: 38.7 }),
    ]),
    experiment('registration', [variant('register/64MiB', { register: 0.00076, registerAgain: 0.00019, firstUse: 0.0016, secondUse: 0.0011 })]),
  ]);
  assert.equal(
    line(run, 'connect-mode'),
    'A communicator of 1 rank has no peer to connect to, so this run does not show what NCCL_RUNTIME_CONNECT=0 does to the connect; to the first collective it costs more than runtime connect here (38.7 ms vs 19.6 ms; init 38.7 ms with NCCL_RUNTIME_CONNECT=0 vs 19.6 ms with runtime connect, first collective 0.0086 ms vs 0.012 ms). The study published no figure for this.',
  );
  assert.match(line(run, 'registration'), /\. A communicator of 1 rank has no peer to exchange the buffer with, so this does not show what registration saves a communicator of several ranks\. The study published no figure for this\.$/);
  // At 2 ranks neither note.
  const two = synthetic(2, [experiment('registration', [variant('register/64MiB', { register: 0.5, registerAgain: 0.01, firstUse: 0.4, secondUse: 0.3 })])]);
  assert.doesNotMatch(line(two, 'registration'), /1 rank/);
});

test('names: the verdict names the GPUs and their count where it names the run, the host after in parentheses, never "on vm" alone', () => {
  const text = line(load(W), 'first-collective-share');
  assert.match(text, /^on 2× H200 NVLink \(vm\) with NCCL 2\.28\.9, /, text);
  assert.doesNotMatch(text, /^on vm\b/, text);
});
