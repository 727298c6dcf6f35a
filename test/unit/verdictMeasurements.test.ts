/**
 * The verdict on the newer measurements, data-driven on the committed 1×H200 runs
 * (docs/results/h200x1-2026-12-01: NCCL 2.28.9, 2.28.3, 2.30.7) and on synthetic runs of the
 * regimes those do not reach: drain only with work in flight at every rank-iteration, the revoke
 * drop check from its counts, the pool without and with sharing, NCCL's Init timings beside the
 * cold start, ncclCommMemStats beside the free-memory delta at suspend, and the practical floor
 * of "about the same".
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { CountSummary, VariantSummary } from '../../protocol/events';
import type { RunFile } from '../../protocol/runFile';
import { deriveVerdict } from '../../readings/verdict';
import { experiment, load, synthetic, variant } from './verdictRuns';

const W = 'h200x1-2026-12-01/h200x1-nccl2.28.9-wheel.json';
const SYS = 'h200x1-2026-12-01/h200x1-nccl2.28.3-system.json';
const SRC = 'h200x1-2026-12-01/h200x1-nccl2.30.7-source.json';

const line = (run: RunFile, id: string): string | undefined => deriveVerdict(run).find((l) => l.id === id)?.text;
const must = (run: RunFile, id: string): string => {
  const text = line(run, id);
  assert.ok(text, `no ${id} line`);
  return text;
};
const count = (min: number, max: number, sum: number, n: number): CountSummary => ({ min, max, sum, n });
const withCounts = (v: VariantSummary, counts: Record<string, CountSummary>): VariantSummary => ({ ...v, counts });

describe('drain: a drain figure only where the work was in flight at every rank-iteration', () => {
  for (const name of [W, SYS, SRC]) {
    test(`${name}: every variant's work had finished before the call: not a drain figure, not compared`, () => {
      const run = load(name);
      const text = must(run, 'drain');
      const drain = run.experiments.find((e) => e.experiment === 'drain')!;
      for (const v of drain.variants) assert.equal(v.counts?.inFlightAtStart?.max, 0, `${v.variant} would need another sentence`);
      assert.match(text, /^Drain \(16 MiB, 64 MiB, 128 MiB, 256 MiB alone and the 4 together, enqueued right before the call\): in every variant the work had finished before the call in 5 of 5 rank-iterations: not a drain figure \(ncclCommFinalize until quiet [\d.]+–[\d.]+ ms, a stream synchronize alone [\d.]+–[\d.]+ ms, with the work already done\)\. Study \(4× A40 PCIe, one node, NCCL version not stated\): until quiet with four 16–256 MB allreduces in flight 7–112 ms — not compared here: this run has no drain figure \(study: drain of four in-flight 16–256 MB messages, in docs\/METHOD\.md "The study's figures"\)\.$/);
      // Named, not compared: no verdict word, no figure set against the study's.
      assert.doesNotMatch(text, /agrees|differs|With four allreduces|7–112 ms vs/);
    });
  }

  const sweep = (atStart: (size: string) => CountSummary): RunFile => {
    const sizes = ['16MiB', '64MiB', '128MiB', '256MiB', ''];
    const ms = [7.2, 21, 40, 80, 112];
    const label = (size: string): string => (size ? `ncclCommFinalize, one ${size.replace('MiB', ' MiB')} allreduce in flight` : 'ncclCommFinalize, 4 allreduces in flight (16 MiB, 64 MiB, 128 MiB, 256 MiB)');
    const variants = sizes.flatMap((size, i) => {
      const fin = variant(size ? `finalize/${size}` : 'finalize', { finalize: 0.1, sync: ms[i]! - 0.1, total: ms[i]! });
      fin.steps[0]!.label = label(size);
      const sync = variant(size ? `stream-sync/${size}` : 'stream-sync', { sync: ms[i]! - 0.2 });
      sync.steps[0]!.label = label(size).replace('ncclCommFinalize', 'stream synchronize');
      return [withCounts(fin, { inFlightAtStart: atStart(size), inFlightEnqueued: count(1, 1, 20, 20) }), withCounts(sync, { inFlightAtStart: atStart(size) })];
    });
    return synthetic(2, [experiment('drain', variants)]);
  };

  test('in flight everywhere (2 ranks × 10 iterations): the sweep per size, the four with their parts, beside the study', () => {
    const text = must(sweep(() => count(1, 1, 20, 20)), 'drain');
    assert.match(text, /^Drain, with the work in flight at every rank-iteration as the call began: ncclCommFinalize until quiet: 16 MiB alone 7\.2 ms, 64 MiB alone 21\.0 ms, 128 MiB alone 40\.0 ms, 256 MiB alone 80\.0 ms, the 4 together \(16 MiB, 64 MiB, 128 MiB, 256 MiB\) 112 ms \(finalize 0\.10 ms \+ stream synchronize 112 ms\); a stream synchronize alone: 16 MiB alone 7\.0 ms/);
    // Like with like: the study's drain had four in flight; one allreduce alone is said not set beside it.
    assert.match(text, /Not set beside the study's: the drains here with one allreduce in flight \(16 MiB alone, 64 MiB alone, 128 MiB alone, 256 MiB alone\), the study's with 4\. /);
    assert.match(text, /until quiet, the 4 together 7–112 ms vs 112 ms \(inside the study's range\): agrees \(within commcost's 0\.32–3\.2× band\) \(study: [^)]+\)\.$/);
    assert.doesNotMatch(text, /not a drain figure/);
  });

  test('in flight in some rank-iterations only: that variant is not a drain figure, with its count; the others are', () => {
    const text = must(sweep((size) => (size === '256MiB' ? count(0, 1, 14, 20) : count(1, 1, 20, 20))), 'drain');
    assert.match(text, /Not drain figures: finalize 256 MiB alone, stream synchronize 256 MiB alone: the work had finished before the call in 6 of 20 rank-iterations \(ncclCommFinalize until quiet 80\.0 ms, a stream synchronize alone 79\.8 ms\)\./);
    assert.doesNotMatch(text, /ncclCommFinalize until quiet: [^;]*256 MiB alone/);
    assert.match(text, /until quiet, the 4 together 7–112 ms vs 112 ms/);
  });

  test('a drain far from the study: the four together against the study range', () => {
    const run = sweep(() => count(1, 1, 20, 20));
    for (const v of run.experiments[0]!.variants) for (const s of v.steps) s.stats = { ...s.stats, median: s.stats.median / 100 };
    assert.match(must(run, 'drain'), /until quiet, the 4 together 7–112 ms vs 1\.1 ms \(0\.16× its lower end\): differs \(outside commcost's 0\.32–3\.2× band\) \(study: [^)]+\)\.$/);
  });

  test('a run without the count (2×H200 catalogue, before inFlightAtStart existed): not known to be a drain figure, not compared', () => {
    const text = must(load('h200x2-nccl2.28.9-wheel.catalogue.json'), 'drain');
    assert.match(text, /^Drain: ncclCommFinalize until quiet 1\.5 ms \(finalize 1\.4 ms \+ stream synchronize 0\.0060 ms\) with 4 allreduces enqueued before the call; a stream synchronize alone 1\.3 ms with 4 allreduces enqueued before the call: this run has no inFlightAtStart count/);
    assert.match(text, /not known to be a drain figure\. Study \(4× A40 PCIe, one node, NCCL version not stated\): until quiet with four 16–256 MB allreduces in flight 7–112 ms — not compared here: this run has no drain figure \(study: drain of four in-flight 16–256 MB messages, in docs\/METHOD\.md "The study's figures"\)\.$/);
  });
});

describe('the drop check: from the counts, only when the run has them', () => {
  test('1×H200 (2.28.9, 2.30.7): 4 allreduces in flight at every rank-iteration, none dropped', () => {
    for (const name of [W, SRC]) {
      assert.equal(
        must(load(name), 'drop-check'),
        'Drop check (each in-flight allreduce\'s slice read back after the call): ncclCommRevoke (then ncclCommDestroy) with 4 allreduces enqueued right before the call: in flight as the revoke began in 5 of 5 rank-iterations; read back after it, 4 completed and none dropped on every rank (5 rank-iterations). The study published no figure for this.',
      );
    }
  });
  test('2.28.3 has no revoke; the 2×H200 runs have revoke without counts: no line', () => {
    assert.equal(line(load(SYS), 'drop-check'), undefined);
    assert.equal(line(load('h200x2-nccl2.28.9-wheel.catalogue.json'), 'drop-check'), undefined);
  });
  const dropRun = (dropped: CountSummary, completed: CountSummary, atStart = count(1, 1, 2, 2)): RunFile =>
    synthetic(2, [
      experiment('revoke', [withCounts(variant('inflight/shrink-abort', { revoke: 500 }), { inFlightAtStart: atStart, inFlightEnqueued: count(4, 4, 8, 2), inFlightDropped: dropped, inFlightCompleted: completed })]),
      experiment('shrink', [withCounts(variant('abort/inflight', { call: 25, first: 0.01 }), { inFlightAtStart: count(1, 1, 1, 1), inFlightEnqueued: count(4, 4, 4, 1), inFlightDropped: count(4, 4, 4, 1), inFlightCompleted: count(0, 0, 0, 1) })]),
    ]);
  test('work dropped: "d dropped, c completed on every rank"; varying counts give the range and the sums', () => {
    const text = must(dropRun(count(3, 3, 6, 2), count(1, 1, 2, 2)), 'drop-check');
    assert.match(text, /ncclCommRevoke \(then ncclCommShrink with NCCL_SHRINK_ABORT\) with 4 allreduces enqueued right before the call: in flight as the revoke began in 2 of 2 rank-iterations; read back after it, 3 dropped, 1 completed on every rank \(2 rank-iterations\); ncclCommShrink with NCCL_SHRINK_ABORT with 4 allreduces enqueued right before the call: in flight as the shrink began in 1 of 1 rank-iteration; read back after it, 4 dropped, 0 completed on every rank \(1 rank-iteration\)\./);
    assert.doesNotMatch(text, /nothing was dropped/);
    assert.match(must(dropRun(count(0, 4, 4, 2), count(0, 4, 4, 2)), 'drop-check'), /0–4 dropped and 0–4 completed per rank-iteration \(4 dropped and 4 completed over 2 rank-iterations\)/);
  });
  test('work finished before the call: said, and nothing is called dropped or kept', () => {
    const text = must(dropRun(count(0, 0, 0, 2), count(4, 4, 8, 2), count(0, 0, 0, 2)), 'drop-check');
    assert.match(text, /with 4 allreduces enqueued right before the call: the work had finished before the call in 2 of 2 rank-iterations, so nothing was left to drop \(4 completed\)/);
    assert.doesNotMatch(text.split(';')[0]!, /took effect/);
  });
});

describe('the pool without and with sharing', () => {
  for (const name of [W, SYS, SRC]) {
    test(`${name}: one shape, no child to share, the study's pool named but not compared`, () => {
      const text = must(load(name), 'pool');
      assert.match(text, /^The pool here has one shape \(TP1\) and no child to share: it is the one communicator, 388 MiB per GPU \(0\.3% of its memory(, the free-memory delta; NCCL's own count, ncclCommMemStats summed over the pool's communicators, 388 MiB, within 10% of the free-memory delta)?\), built in [\d.]+ ms with its first collective [\d.]+ ms; there is no switch or rebuild to time and no splitShare 1 pool\. Study \(4× A40 PCIe, one node, NCCL version not stated\): a pool of every TP shape, per GPU 464 MB \(TP4 \+ 2×TP2 \+ 4×TP1\); one TP2 child, per GPU ~76 MB — not compared here: one shape, no child \(study: pool TP4 \+ 2×TP2 \+ 4×TP1; pool: one TP2 child, in docs\/METHOD\.md "The study's figures"\)\.$/);
      assert.equal(/ncclCommMemStats summed over the pool's communicators, 388 MiB/.test(text), name === SRC, 'NCCL\'s count only where the run has MemStats');
    });
  }
  test('4 ranks, both ways: memory (with NCCL\'s count), one TP2 child, switch and rebuild each way; the study against the plain pool', () => {
    const mem = (a: number, b: number, c: number) => ({ 'pool after TP4': a, 'pool after TP2': b, 'pool after TP1': c });
    const plain = variant('tp4+2+1', { switch: 0.5, rebuild: 80, 'steady/child': 3.3, 'steady/fresh': 3.3 }, mem(400, 480, 700));
    plain.memStats = { 'pool after TP1': { suspendableBytes: 600 * 2 ** 20, persistentBytes: 60 * 2 ** 20, totalBytes: 660 * 2 ** 20 } };
    const shared = variant('tp4+2+1/splitShare=1', { switch: 0.4, rebuild: 30 }, mem(400, 420, 450));
    const text = must(synthetic(4, [experiment('pool', [plain, shared])]), 'pool');
    assert.match(text, /^A prewarmed pool of every TP shape \(tp4\+2\+1, splitShare 0\) takes 700 MiB per GPU \(0\.5% of its memory, the free-memory delta; NCCL's own count, ncclCommMemStats summed over the pool's communicators, 660 MiB, within 10% of the free-memory delta\) and turns a 80\.0 ms rebuild of its TP2 child \(split \+ first collective\) into a 0\.50 ms switch \(the rebuild costs 160× the switch\)\. With splitShare 1 \(every child sharing the parent's resources\) it takes 450 MiB per GPU \(0\.3% of its memory\), 0\.64× the pool without sharing, and turns a 30\.0 ms rebuild of its TP2 child \(split \+ first collective\) into a 0\.40 ms switch \(the rebuild costs 75× the switch\)\. One TP2 child takes 80 MiB per GPU \(20 MiB with splitShare 1\)\./);
    assert.match(text, /pool per GPU \(here tp4\+2\+1\) 464 MB \(TP4 \+ 2×TP2 \+ 4×TP1\) vs 734 MB \(1\.58×\): same order as the study \(within commcost's 0\.32–3\.2× band\); one TP2 child per GPU ~76 MB vs 84 MB \(1\.1×\): agrees \(within commcost's 0\.32–3\.2× band\); switch ≈ 0\.2 ms collective \+ 0\.28 ms capturing and instantiating one allreduce in a CUDA Graph vs 0\.50 ms \(1\.04×\): agrees \(within commcost's 0\.32–3\.2× band\)/);
  });
});

describe("cold start: NCCL's own view beside the figures", () => {
  test('1×H200 2.30.7: the ratios and NCCL\'s Init timings (kernels of the cold and the warm init, ms, 10 ms resolution)', () => {
    const text = must(load(SRC), 'cold-start');
    assert.match(text, /cold costs more than warm \(19×; the init call alone 19×\)\. NCCL's own Init timings \(seconds with two decimals, so a 10 ms resolution\): the cold init 340 ms, 280 ms of it in "kernels"; the warm one 20 ms, "kernels" below that resolution\. Study/);
    assert.match(must(load(W), 'cold-start'), /the cold init 350 ms, 310 ms of it in "kernels"/);
    assert.match(must(load(SYS), 'cold-start'), /the cold init 300 ms, 260 ms of it in "kernels"/);
  });
  test('NCCL\'s view missing: the note says why; read in fewer iterations: said', () => {
    const run = synthetic(1, [experiment('cold-start', [{ ...variant('default', { cold: 300, warm: 20 }), ncclInit: { medians: {}, iterations: {}, malformedLines: 0, note: 'NCCL 2.21.5 predates the Init timings line (2.23.4)' } }])]);
    assert.match(must(run, 'cold-start'), /cold costs more than warm \(15×\)\. NCCL's own view \(Init timings\) is missing: NCCL 2\.21\.5 predates the Init timings line \(2\.23\.4\)\. Study/);
    const partial = synthetic(1, [experiment('cold-start', [{ ...variant('default', { cold: 300, warm: 20 }), ncclInit: { medians: { cold: { total: 290, kernels: 250 } }, iterations: { cold: 7 }, malformedLines: 1 } }])]);
    assert.match(must(partial, 'cold-start'), /the cold init 290 ms, 250 ms of it in "kernels" \(read in 7 of 10 iterations\)\. 1 unreadable Init timings line was skipped\./);
  });
});

describe('suspend: ncclCommMemStats beside the free-memory delta, both as measured', () => {
  test('1×H200 2.30.7: MemStats still counts 384 MiB suspendable after suspend; the free-memory delta drops to 4 MiB', () => {
    const text = must(load(SRC), 'suspend');
    assert.match(text, /^ncclCommSuspend \(NCCL_SUSPEND_MEM\) takes 219 ms and releases 384 MiB of the communicator's 388 MiB per GPU; ncclCommResume takes 67\.6 ms and the first collective after it 0\.012 ms \(67\.7 ms back to the first collective\)\. ncclCommMemStats still counts 384 MiB suspendable after suspend, as before it \(388 MiB in all\); the free-memory delta drops to 4 MiB\. In this run, suspending costs less than a finalize \+ destroy \(219 ms vs 500 ms\); resuming to the first collective costs more than a fresh init to its first collective \(67\.7 ms vs 16\.0 ms\); the round trip, suspend \+ resume, costs less than destroy \+ re-init \(287 ms vs 516 ms\), but the way back that a job waits for, resume to the first collective, is the longer one: neither way is the cheaper on both counts here\./);
  });
  test('a count that falls is said with both figures', () => {
    const v = variant('default', { suspend: 200, resume: 60, first: 0.01 }, { warm: 388, afterSuspend: 4 });
    v.memStats = {
      warm: { suspendableBytes: 384 * 2 ** 20, persistentBytes: 4 * 2 ** 20, totalBytes: 388 * 2 ** 20 },
      afterSuspend: { suspendableBytes: 0, persistentBytes: 4 * 2 ** 20, totalBytes: 4 * 2 ** 20 },
    };
    assert.match(must(synthetic(1, [experiment('suspend', [v])]), 'suspend'), /ncclCommMemStats counts 384 MiB suspendable before suspend and 0 MiB after it \(388 MiB and 4 MiB in all\); the free-memory delta drops to 4 MiB\./);
  });
});

describe('"about the same" has the practical floor: µs-level steps are never cheaper or costlier', () => {
  test('registration on the H200 runs (2 µs against 0.2 µs): no "registration cache" read into it', () => {
    for (const name of [W, SYS, SRC, 'h200x2-nccl2.28.9-wheel.catalogue.json']) {
      const text = must(load(name), 'registration');
      assert.match(text, /again on the same range [\d.]+ ms, (about the same as|within 0\.05 ms \(commcost's floor for a difference\) of) the first; the first collective on the buffer (costs about the same as|is within 0\.05 ms \(commcost's floor for a difference\) of) the second/, name);
      assert.doesNotMatch(text, /cache|pays/);
    }
  });
});
