/** The summary's accounting lines (cli/wallSplit.ts): the wall split with its ratios, old files, the release skew. */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { releaseSkewLines, wallSplitLines } from '../../cli/wallSplit';
import { parseAgentEvent } from '../../protocol/events';
import type { RunFile } from '../../protocol/runFile';

describe('wall split and release skew lines', () => {
  const check = (run: Partial<RunFile>, expected: RegExp[] | []): void => {
    const lines = wallSplitLines(run as RunFile);
    assert.equal(lines.length, expected.length, lines.join('\n'));
    expected.forEach((re, i) => assert.match(lines[i]!, re));
  };

  test('a split run: each part with its share, the two target ratios', () => {
    check({ wallMs: 10_000, wallSplit: { timedMs: 4000, setupMs: 1000, processStartMs: 2000, processExitMs: 500, harnessMs: 2500 } }, [
      /^wall 10\.0 s = timed calls 4\.00 s \(40%\) \+ setup the method needs 1\.00 s \(10%\) \+ rank process starts 2\.00 s \(20%\) \+ exits 0\.50 s \(5%\) \+ harness 2\.50 s \(25%\)$/,
      /^ {2}commcost's efficiency targets: wall \/ \(timed \+ setup\) = 2\.00 \(target ≤ 1\.25\); process starts 20% of the wall \(target < 10%\): the wall ratio and the process starts not met: the run took longer than the method needs, which costs time, not accuracy/,
    ]);
  });

  test('met or not is read from the figures, not their rounding: 9.6% of the wall in starts is met, 10.4% is not', () => {
    const split = (starts: number) => ({ wallMs: 10_000, wallSplit: { timedMs: 5000, setupMs: 3500, processStartMs: starts, processExitMs: 100, harnessMs: 1400 - (starts - 960) } });
    check(split(960), [/^wall/, /process starts 10% of the wall \(target < 10%\): both met$/]);
    check(split(1040), [/^wall/, /process starts 10% of the wall \(target < 10%\): the process starts not met/]);
  });

  test('older files: libraryMs, else measuredMs; nothing without a wall or a figure', () => {
    check({ wallMs: 3000, libraryMs: 1500 }, [/^wall 3\.00 s, of it 1\.50 s inside the NCCL and CUDA calls/]);
    check({ wallMs: 3000, measuredMs: 1200 }, [/of it 1\.20 s inside/]);
    check({ wallMs: 3000 }, []);
    check({ libraryMs: 3 }, []);
    // A hostile split (not numbers) falls back instead of printing NaN.
    check({ wallMs: 3000, measuredMs: 1200, wallSplit: { timedMs: 'x' } as never }, [/of it 1\.20 s inside/]);
  });

  test('a run/done recorded before the rename: measuredMs is read as libraryMs', () => {
    const old = parseAgentEvent(JSON.stringify({ type: 'run/done', status: 'complete', wallMs: 10, measuredMs: 4, endedAt: 'x' }));
    assert.deepEqual(old, { type: 'run/done', status: 'complete', wallMs: 10, libraryMs: 4, endedAt: 'x' });
    assert.throws(() => parseAgentEvent(JSON.stringify({ type: 'run/done', status: 'complete', wallMs: 10, endedAt: 'x' })), /numeric "wallMs" and "libraryMs"/);
  });

  test('release skew over every generation of the run', () => {
    const experiments = [
      { experiment: 'init', releaseSkewUs: { default: { call: [1, 2, 3], first: [4] } } },
      { experiment: 'split', releaseSkewUs: { a: { call: [100] } } },
      { experiment: 'abort' },
    ] as unknown as RunFile['experiments'];
    const [line] = releaseSkewLines({ experiments });
    assert.match(line!, /^barrier release skew over 5 generations: p50 3\.0 µs, p99 100\.0 µs, max 100\.0 µs/);
    assert.deepEqual(releaseSkewLines({ experiments: [] }), []);
  });
});
