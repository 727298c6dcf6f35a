// ncclCommMemStats and counts: combined across ranks (MAX per field, counts per rank), summarised
// per variant, kept by the run file's schema; and the run's own word on why they are absent.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { addExtras, combineExtras, summarizeExtras } from '../../remote-agent/iterationExtras';
import { memStatsNote } from '../../protocol/runFile';
import { validateRunFile } from '../../client/runFileSchema';
import { parseAgentEvent } from '../../protocol/events';

const MiB = 2 ** 20;
const stats = (s: number, p: number) => ({ suspendableBytes: s * MiB, persistentBytes: p * MiB, totalBytes: (s + p) * MiB });

describe('MemStats and counts across ranks and iterations', () => {
  test('each MemStats field is the MAX over the ranks that reported the point; counts stay per rank', () => {
    const c = combineExtras([
      { memStats: { afterFirst: stats(60, 200) }, counts: { inFlightAtStart: 1 } },
      { memStats: { afterFirst: stats(70, 190), afterCall: stats(0, 200) }, counts: { inFlightAtStart: 0, inFlightDropped: 4 } },
      {},
    ]);
    assert.deepEqual(c.memStats, { afterFirst: { suspendableBytes: 70 * MiB, persistentBytes: 200 * MiB, totalBytes: 260 * MiB }, afterCall: stats(0, 200) });
    assert.deepEqual(c.counts, { inFlightAtStart: [1, 0, null], inFlightDropped: [null, 4, null] });
  });

  test('nothing reported: nothing added, so older runs keep their shape', () => {
    assert.deepEqual(combineExtras([{}, { memStats: {}, counts: {} }]), {});
    assert.deepEqual(summarizeExtras(addExtras(undefined, {})), {});
    assert.deepEqual(summarizeExtras(undefined), {});
  });

  test('summary: MemStats median over iterations per field; counts min, max, sum and n over rank-iterations', () => {
    let r = addExtras(undefined, { memStats: { p: stats(1, 10) }, counts: { inFlightAtStart: [1, 1] } });
    r = addExtras(r, { memStats: { p: stats(3, 30) }, counts: { inFlightAtStart: [1, 0] } });
    r = addExtras(r, { memStats: { p: stats(2, 20) }, counts: { inFlightAtStart: [1, null] } });
    const s = summarizeExtras(r);
    assert.deepEqual(s.memStats, { p: stats(2, 20) });
    assert.deepEqual(s.counts, { inFlightAtStart: { min: 0, max: 1, sum: 4, n: 5 } });
  });

  test('the run file schema keeps them; the summary event is refused with a malformed one', () => {
    const file = JSON.parse(JSON.stringify({
      schema: 'commcost.run/1', id: 'x', host: 'h', simulated: true, status: 'complete', ranks: 2,
      options: { experiments: ['drain'], iterations: 1, warmup: 0, deadlineSeconds: 60 },
      experiments: [{ experiment: 'drain', done: 1, total: 1, samples: {}, state: 'finished', variants: [
        { variant: 'finalize', steps: [], memStats: { afterFirst: stats(60, 200) }, counts: { inFlightAtStart: { min: 1, max: 1, sum: 2, n: 2 } } },
      ] }],
      skipped: [], errors: [],
    }));
    assert.equal(validateRunFile(file).experiments[0]!.variants[0]!.counts!.inFlightAtStart!.sum, 2);
    file.experiments[0].variants[0].counts.inFlightAtStart = { min: 1 };
    assert.throws(() => validateRunFile(file));
    const line = (counts: unknown) => JSON.stringify({ type: 'experiment/summary', experiment: 'drain', variants: [{ variant: 'finalize', steps: [], counts }] });
    assert.doesNotThrow(() => parseAgentEvent(line({ inFlightAtStart: { min: 1, max: 1, sum: 2, n: 2 } })));
    assert.throws(() => parseAgentEvent(line({ inFlightAtStart: 'yes' })));
  });
});

describe('memStatsNote: the run says why it has no MemStats', () => {
  const stamp = (code: number, version: string, has: boolean) => ({ stamp: { ncclVersionCode: code, ncclVersion: version, ncclSymbols: { ncclCommMemStats: has } } });

  test('an NCCL older than 2.29.7, with or without the symbol', () => {
    // A library below 2.29.7 that exports the symbol: what commcost did, never that NCCL lacks it.
    assert.equal(memStatsNote(stamp(22809, '2.28.9', true)), 'ncclCommMemStats was not called: NCCL 2.28.9 exports it, but commcost calls it only from 2.29.7; memory is the free-memory delta only');
    assert.equal(memStatsNote(stamp(22603, '2.26.3', false)), 'ncclCommMemStats is not in NCCL 2.26.3 (the library does not export it; needs ≥ 2.29.7): memory is the free-memory delta only');
  });

  test('a simulated run speaks of the simulator, never of what NCCL of that version exports', () => {
    const sim = (code: number, version: string, has: boolean) => ({ simulated: true, stamp: { ...stamp(code, version, has).stamp, ncclSource: 'simulated' } });
    assert.equal(memStatsNote(sim(21803, '2.18.3', true)), "ncclCommMemStats was not called: the run simulates NCCL 2.18.3, and commcost calls it only from 2.29.7; memory is the simulator's free-memory delta only");
    assert.equal(memStatsNote(sim(21803, '2.18.3', false)), "ncclCommMemStats was not called: the run simulates NCCL 2.18.3, and commcost calls it only from 2.29.7; memory is the simulator's free-memory delta only");
    assert.equal(memStatsNote(sim(23007, '2.30.7', false)), "ncclCommMemStats was not called: the simulated library (as NCCL 2.30.7) does not provide it; memory is the simulator's free-memory delta only");
    assert.equal(memStatsNote(sim(23007, '2.30.7', true)), undefined);
  });

  test('a library that has it, or a run without a stamp: no note', () => {
    assert.equal(memStatsNote(stamp(23007, '2.30.7', true)), undefined);
    assert.equal(memStatsNote({}), undefined);
    assert.equal(memStatsNote(undefined), undefined);
    assert.equal(memStatsNote({ stamp: { ncclVersionCode: 'x' } }), undefined);
  });
});
