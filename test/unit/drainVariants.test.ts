// drain's variants (each of the study's sizes alone, then the four), the counts of what was in
// flight, and the drop check's reading of the slices.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { countInFlight, drainSizes, drainVariants } from '../../remote-agent/experiments/drain';
import { completedSlices } from '../../remote-agent/experiments/dropCheck';

const MiB = 2 ** 20;

describe('drain variants and in-flight counts', () => {
  test('each of 16, 64, 128 and 256 MiB alone, then the four, for finalize and the stream synchronize', () => {
    const names = drainVariants().map((v) => v.variant);
    assert.deepEqual(names, ['finalize/16MiB', 'finalize/64MiB', 'finalize/128MiB', 'finalize/256MiB', 'finalize', 'stream-sync/16MiB', 'stream-sync/64MiB', 'stream-sync/128MiB', 'stream-sync/256MiB', 'stream-sync']);
    assert.deepEqual(drainSizes('finalize/128MiB'), { mode: 'finalize', sizes: [128 * MiB] });
    assert.deepEqual(drainSizes('stream-sync').sizes, [16 * MiB, 64 * MiB, 128 * MiB, 256 * MiB]);
    const fin = drainVariants().find((v) => v.variant === 'finalize/16MiB')!;
    assert.deepEqual(fin.steps.map((s) => [s.step, s.sumOf]), [['finalize', undefined], ['sync', undefined], ['total', ['finalize', 'sync']]]);
    assert.equal(fin.steps[0]!.label, 'ncclCommFinalize, one 16 MiB allreduce in flight');
  });

  test('an unknown variant is named with the sizes there are', () => {
    assert.throws(() => drainSizes('finalize/32MiB'), /drain has no variant "finalize\/32MiB" \(sizes: 16MiB, 64MiB, 128MiB, 256MiB\)/);
    assert.throws(() => drainSizes('destroy'), /drain has no variant "destroy"/);
  });

  test('counts: in flight only when the window saw it; a call without a window counts nothing in flight', () => {
    const got: Record<string, number> = {};
    const rc = { count: (n: string, v: number) => void (got[n] = v) };
    countInFlight(rc, { ms: 5, inFlight: { atStart: true, enqueued: 4, enqueueMs: 0.1, callMs: 1 } });
    assert.deepEqual(got, { inFlightAtStart: 1, inFlightEnqueued: 4 });
    countInFlight(rc, { ms: 5 });
    assert.deepEqual(got, { inFlightAtStart: 0, inFlightEnqueued: 0 });
  });

  test('drop check: a slice completed only when its three floats all hold the number of ranks', () => {
    assert.equal(completedSlices([2, 2, 2, 0, 0, 0, 2, 0, 2, 2, 2, 1], 2), 1);
    assert.equal(completedSlices([4, 4, 4, 4, 4, 4], 4), 2);
    assert.equal(completedSlices([1, 1, 1], 2), 0);
  });
});
