/**
 * The two timers of the liveness protocol on mocked clocks (node:test mock timers): the host's
 * `AgentLiveness` (client/liveness.ts) and the agent's `HostWatch` (remote-agent/hostLiveness.ts):
 * what is sent when, that a line heard resets the deadline, and that the silence fires once.
 * The real processes are in test/security/liveness.test.ts.
 */
import assert from 'node:assert/strict';
import { describe, test, type TestContext } from 'node:test';
import type { HostCommand } from '../../protocol/events';
import { AgentLiveness } from '../../client/liveness';
import { HostWatch } from '../../remote-agent/hostLiveness';

function mockClock(t: TestContext): (ms: number) => void {
  t.mock.timers.enable({ apis: ['setInterval', 'Date'], now: 0 });
  return (ms) => {
    // Step by 10 ms so that every interval's check runs at its own time.
    for (let i = 0; i < ms; i += 10) t.mock.timers.tick(10);
  };
}

describe('AgentLiveness (host side)', () => {
  test('a keepalive at start and every interval; silent once after the deadline, unless heard', (t) => {
    const tick = mockClock(t);
    const sent: HostCommand[] = [];
    const silences: number[] = [];
    const l = new AgentLiveness({ intervalMs: 100, deadlineMs: 400 }, (c) => sent.push(c), (ms) => silences.push(ms));
    tick(1000);
    assert.equal(sent.length, 0, 'nothing before start (the agent has not said hello)');
    l.start();
    assert.deepEqual(sent, [{ type: 'host/keepalive', intervalMs: 100, deadlineMs: 400 }]);
    tick(350);
    assert.equal(sent.length, 4);
    l.heard();
    tick(350);
    assert.deepEqual(silences, [], 'a line heard resets the deadline');
    tick(100);
    assert.equal(silences.length, 1);
    assert.ok(silences[0]! >= 400 && silences[0]! <= 430, `silent for ${silences[0]} ms`);
    const after = sent.length;
    tick(1000);
    assert.equal(silences.length, 1, 'fires once');
    assert.equal(sent.length, after, 'no keepalive after the agent was given up');
  });

  test('dispose stops both timers', (t) => {
    const tick = mockClock(t);
    const sent: HostCommand[] = [];
    let silent = 0;
    const l = new AgentLiveness({ intervalMs: 100, deadlineMs: 200 }, (c) => sent.push(c), () => silent++);
    l.start();
    l.dispose();
    tick(1000);
    assert.equal(sent.length, 1);
    assert.equal(silent, 0);
  });
});

describe('HostWatch (agent side)', () => {
  test('armed by the first keepalive: heartbeats every interval; the host silent for the deadline ends it once', (t) => {
    const tick = mockClock(t);
    let beats = 0;
    const silences: [number, number][] = [];
    const w = new HostWatch(() => beats++, (ms, deadline) => silences.push([ms, deadline]));
    tick(5000);
    assert.equal(beats, 0, 'no heartbeat and no deadline before a keepalive (an older host side)');
    assert.deepEqual(silences, []);
    w.keepalive({ type: 'host/keepalive', intervalMs: 100, deadlineMs: 500 });
    assert.equal(beats, 1, 'a heartbeat at once');
    tick(450);
    w.heard();
    w.keepalive({ type: 'host/keepalive', intervalMs: 100, deadlineMs: 500 });
    tick(450);
    assert.deepEqual(silences, [], 'each line from the host resets the deadline');
    assert.ok(beats >= 9, `${beats} heartbeats in 900 ms at 100 ms`);
    tick(100);
    assert.equal(silences.length, 1);
    assert.equal(silences[0]![1], 500);
    const b = beats;
    tick(1000);
    assert.equal(silences.length, 1, 'fires once');
    assert.equal(beats, b, 'no heartbeat after giving up');
  });
});
