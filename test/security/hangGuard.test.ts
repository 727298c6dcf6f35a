/**
 * The hang guard's rules, pure (remote-agent/hangGuard.ts): every wait has a deadline, and the
 * message names who waited where. Data-driven: a session state → hung or not, and the words.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { findHang, type HangState, type OpInFlight } from '../../remote-agent/hangGuard';

const T0 = 1_000_000;
const op = (name: string, since: number): OpInFlight => ({ op: name, since, experiment: 'init', variant: 'default', iteration: 0 });
function state(over: Partial<HangState>): HangState {
  return {
    now: T0,
    ranks: 2,
    deadlineMs: 2000,
    ready: new Set([0, 1]),
    readyDeadline: T0 - 10_000,
    current: new Map(),
    lastDone: new Map(),
    lastBegin: new Map([[0, op('ncclCommInitRankConfig', T0 - 5000)], [1, op('ncclCommInitRankConfig', T0 - 5000)]]),
    finished: new Set(),
    idWaits: new Map(),
    lastHeard: T0 - 100,
    silentNodes: [],
    ...over,
  };
}

const cases: [string, Partial<HangState>, RegExp | undefined][] = [
  ['all quiet but heard recently', {}, undefined],
  ['start-up past its deadline', { ready: new Set([0]), readyDeadline: T0 - 1 }, /timed out at startup: rank 1 did not start CUDA and NCCL within 2 s/],
  ['start-up within its deadline', { ready: new Set([0]), readyDeadline: T0 + 1 }, undefined],
  ['a call past the deadline', { current: new Map([[0, op('first allreduce', T0 - 2500)]]) }, /step first allreduce on rank 1: rank 0 waited 2\.5 s in first allreduce; rank 1 never reached first allreduce/],
  ['a call within the deadline, nothing heard for longer', { current: new Map([[0, op('x', T0 - 1500)], [1, op('x', T0 - 1500)]]), lastHeard: T0 - 5000 }, undefined],
  ['rank 0 stalled between operations', { lastHeard: T0 - 2100, lastDone: new Map([[0, 'ncclCommDestroy']]) }, /between operations on rank 0: rank 0 stalled between operations: nothing heard for 2\.1 s since it finished ncclCommDestroy/],
  ['rank 1 waiting for a unique id rank 0 never publishes', { lastHeard: T0 - 3000, idWaits: new Map([[7, { ranks: [1], since: T0 - 3000 }]]) }, /on rank 0: rank 0 stalled .*; rank 1 waited 3\.0 s for unique id #7, which no rank published/],
  ['a finished rank does not count as stalled', { lastHeard: T0 - 3000, finished: new Set([0, 1]) }, undefined],
  ['a silent node is named first', { current: new Map([[1, op('x', T0 - 3000)]]), silentNodes: ['node 1 (b at 10.0.0.2, ranks 1) has not been heard from for 3.0 s: its link may be cut'] }, /: node 1 \(b at 10\.0\.0\.2, ranks 1\) has not been heard from/],
];

for (const [name, over, expected] of cases) {
  test(`hang guard: ${name}`, () => {
    const hang = findHang(state(over));
    if (expected === undefined) assert.equal(hang, undefined, hang?.message);
    else {
      assert.ok(hang, 'not found hung');
      assert.match(hang.message, expected);
      assert.match(hang.hint, /deadline|raise the deadline/);
    }
  });
}
