/**
 * Reading NCCL's debug log is linear in its size (issue #21, item 7: a 2 MB line took 79 s). The
 * log is written by NCCL into a folder a rank process, or anything else on the host, can write to;
 * `commcost trace` and the cold-start experiment read it.
 *
 * Not timed against the clock: the first test checks the structure that makes the reading linear
 * (no pattern ever runs on more than MAX_LOG_LINE_CHARS characters: every call of
 * RegExp.prototype.exec is recorded while the reader works) and what long lines come out as; the
 * second reads 4 MB of each hostile shape, as one line and as lines at the cap, in a child process
 * whose budget (40 s, start-up included) the linear reader meets with more than an order of
 * magnitude to spare even on a loaded machine (well under a second of reading), while the
 * quadratic one needed hours for the one line alone.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import * as path from 'node:path';
import { describe, test } from 'node:test';
import { MAX_LOG_LINE_CHARS, parseInitCreations, parseInitTimings } from '../../protocol/ncclInitLog';

const MB = 1024 * 1024;
const TIMINGS = 'h:1:7 [0] NCCL INFO Init timings - ncclCommInitRankConfig: rank 0 nranks 2 total 0.37 (kernels 0.35, alloc 0.00, bootstrap 0.01, rest 0.01)';
const COMPLETE = 'h:1:7 [0] NCCL INFO ncclCommInitRankConfig comm 0x55 rank 0 nranks 2 cudaDev 0 nvmlDev 0 busId 1000 commId 0xabc - Init COMPLETE';

/** Runs `fn` with every RegExp.prototype.exec call recorded: @returns its result and the longest input a pattern saw. */
function withExecRecorded<T>(fn: () => T): { result: T; longest: number; calls: number } {
  const exec = RegExp.prototype.exec;
  let longest = 0;
  let calls = 0;
  RegExp.prototype.exec = function (this: RegExp, s: string) {
    calls++;
    longest = Math.max(longest, String(s).length);
    return exec.call(this, s);
  };
  try {
    return { result: fn(), longest, calls };
  } finally {
    RegExp.prototype.exec = exec;
  }
}

describe('reading NCCL\'s debug log is linear', () => {
  for (const size of [2 * MB, 4 * MB]) {
    test(`a ${size / MB} MB line: no pattern runs on it; a long Init line is counted unreadable, the lines around it are read`, () => {
      const long = (marker: string): string => `h:1:7 [0] NCCL INFO ${marker} ${'x'.repeat(size)}`;
      const log = [COMPLETE, TIMINGS, long('Init timings'), long('ncclCommInitRank comm 0x1 rank 0 nranks 2 - Init COMPLETE'), long('no marker'), COMPLETE.replace('0xabc', '0xdef'), TIMINGS].join('\n');
      const creations = withExecRecorded(() => parseInitCreations(log));
      assert.ok(creations.longest <= MAX_LOG_LINE_CHARS, `a pattern ran on ${creations.longest} characters`);
      assert.ok(creations.calls > 0, 'the recording saw the reader');
      assert.equal(creations.result.malformed, 2, 'the long Init timings and Init COMPLETE lines');
      assert.deepEqual(creations.result.creations.map((c) => [c.commId, c.parts?.kernels]), [['abc', 350], ['def', 350]]);
      const timings = withExecRecorded(() => parseInitTimings(log));
      assert.ok(timings.longest <= MAX_LOG_LINE_CHARS, `a pattern ran on ${timings.longest} characters`);
      assert.equal(timings.result.malformed, 1);
      assert.equal(timings.result.lines.length, 2);
    });
  }

  test('a line of MAX_LOG_LINE_CHARS is still read; one character more is not', () => {
    const pad = (n: number): string => TIMINGS.replace('rest 0.01)', `rest 0.01${' '.repeat(n - TIMINGS.length)})`);
    assert.equal(parseInitTimings(pad(MAX_LOG_LINE_CHARS)).lines.length, 1);
    assert.equal(parseInitTimings(pad(MAX_LOG_LINE_CHARS + 1)).malformed, 1);
  });

  test('4 MB of each hostile shape, as one line and as lines at the cap, read within a budget the quadratic reader overran by hours', { timeout: 90_000 }, () => {
    // The shapes the quadratic reader choked on: a part that is a run of spaces, a lifecycle-like
    // head with no Init START/COMPLETE after it, repeated; and a few more that backtrack naively.
    const script = `
      const m = await import(${JSON.stringify(path.resolve(__dirname, '../../protocol/ncclInitLog.ts'))});
      // tsx hands a TypeScript module to import() as CommonJS: its exports are the default.
      const { parseInitCreations, parseInitTimings, MAX_LOG_LINE_CHARS } = m.default ?? m;
      const shapes = {
        spacesInParts: (n) => ('h:1:2 [0] NCCL INFO Init timings - f: rank 0 nranks 1 total 0.37 (a' + ' '.repeat(n)).slice(0, n - 2) + 'x)',
        lifecycleRepeat: (n) => 'a comm b rank 1 nranks 1 '.repeat(Math.ceil(n / 25)).slice(0, n),
        headRepeat: (n) => 'Init timings - '.repeat(Math.ceil(n / 15)).slice(0, n),
        tokenAfterComm: (n) => ('x comm ' + 'y'.repeat(n)).slice(0, n),
        dashesAfterHead: (n) => ('a comm b rank 1 nranks 1 ' + '- '.repeat(n)).slice(0, n),
      };
      const out = {};
      for (const [name, make] of Object.entries(shapes)) {
        const one = make(4 * 1024 * 1024);
        const line = make(MAX_LOG_LINE_CHARS);
        const many = Array(Math.ceil(4 * 1024 * 1024 / line.length)).fill(line).join('\\n');
        out[name] = [parseInitCreations(one).malformed, parseInitTimings(one).malformed, parseInitCreations(many).creations.length, parseInitTimings(many).lines.length];
      }
      process.stdout.write(JSON.stringify(out));
    `;
    const r = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { encoding: 'utf8', timeout: 40_000, killSignal: 'SIGKILL' });
    assert.equal(r.signal, null, `the reader did not finish 5 × 8 MB within 40 s (killed); stderr: ${r.stderr.slice(-500)}`);
    assert.equal(r.status, 0, r.stderr.slice(-1000));
    const got = JSON.parse(r.stdout) as Record<string, number[]>;
    // One line naming Init timings over the cap: unreadable, counted. Lines at the cap are read:
    // the spaces-in-parts line has a readable head (its total; the part is not a part).
    const lines = Math.ceil((4 * MB) / MAX_LOG_LINE_CHARS);
    assert.deepEqual(got, {
      spacesInParts: [1, 1, lines, lines],
      lifecycleRepeat: [0, 0, 0, 0],
      headRepeat: [1, 1, 0, 0],
      tokenAfterComm: [0, 0, 0, 0],
      dashesAfterHead: [0, 0, 0, 0],
    });
  });
});
