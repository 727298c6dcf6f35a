// First uses other than an allreduce (issue #32): the addon's broadcast and send/recv pair, timed like
// allReduce, against the simulated NCCL's ncclBroadcast / ncclSend / ncclRecv with real rank processes.
// Build first: node native/build.mjs. Simulated costs are sleeps: tolerances are wide (±50%).
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';

import { addonPath, initAll, loadSim, MiB, near, Rank, rejection, simPath } from './fixtures/nativeHarness';

describe('broadcast and send/recv on the simulated NCCL', { timeout: 60_000 }, () => {
  const spawned: Rank[] = [];
  const spawn = (n: number, env: Record<string, string> = {}) => {
    const rs = Array.from({ length: n }, () => new Rank(env));
    spawned.push(...rs);
    return rs;
  };
  before(() => assert.ok(existsSync(addonPath) && existsSync(simPath), 'build first: node native/build.mjs'));
  after(() => {
    for (const r of spawned) r.kill();
  });

  test('the first broadcast pays the connect, a second one does not; the library lists the symbols', async () => {
    const rs = spawn(2, { COMMCOST_SIM_CONNECT_MS: '300', COMMCOST_SIM_BW_GBPS: '1' });
    const infos = await loadSim(rs);
    for (const name of ['ncclBroadcast', 'ncclSend', 'ncclRecv']) assert.equal(infos[0].symbols[name], true, name);
    const { comms } = await initAll(rs);
    const bytes = 8 * MiB;
    const wire = (bytes / 1e9) * 1e3;
    const first = await Promise.all(rs.map((r, i) => r.call('broadcast', comms[i], bytes, 0)));
    near(Math.min(...first.map((x) => x.ms)), 300 + wire, 'first broadcast');
    const warm = await Promise.all(rs.map((r, i) => r.call('broadcast', comms[i], bytes, 0)));
    near(Math.min(...warm.map((x) => x.ms)), wire, 'warm broadcast');
    // The broadcast connected the communicator: its first allreduce has nothing left to connect.
    const ar = await Promise.all(rs.map((r, i) => r.call('allReduce', comms[i], bytes)));
    assert.ok(Math.min(...ar.map((x) => x.ms)) < 150, 'allreduce after a broadcast pays no connect');
    const badRoot = await rejection(rs[0]!.call('broadcast', comms[0], bytes, 2));
    assert.equal(badRoot.code, 'NCCL');
  });

  test('a send/recv pair connects its peer lazily, even with NCCL_RUNTIME_CONNECT=0; a second pair does not', async () => {
    const rs = spawn(2, { COMMCOST_SIM_CONNECT_MS: '300', COMMCOST_SIM_P2P_CONNECT_MS: '200', COMMCOST_SIM_BW_GBPS: '1', NCCL_RUNTIME_CONNECT: '0' });
    await loadSim(rs);
    const { comms, ms } = await initAll(rs);
    // The rings were connected inside the init (NCCL_RUNTIME_CONNECT=0); the peers are not.
    assert.ok(Math.min(...ms) >= 300 * 0.5, `init paid the ring connect: ${ms.join(', ')}`);
    const bytes = 4 * MiB;
    const wire = (bytes / 1e9) * 1e3;
    const first = await Promise.all(rs.map((r, i) => r.call('sendRecv', comms[i], 1 - i, bytes)));
    // A send and a recv on one stream: the peer's connect once, the wire twice.
    near(Math.min(...first.map((x) => x.ms)), 200 + 2 * wire, 'first send/recv pair');
    const warm = await Promise.all(rs.map((r, i) => r.call('sendRecv', comms[i], 1 - i, bytes)));
    near(Math.min(...warm.map((x) => x.ms)), 2 * wire, 'warm send/recv pair');
    const tooBig = await rejection(rs[0]!.call('sendRecv', comms[0], 1, 40 * MiB));
    assert.equal(tooBig.code, 'ARG', 'the send and the receive halves must both fit in the buffer');
  });

  test('a send/recv pair with itself on one rank pays no connect', async () => {
    const [r] = spawn(1, { COMMCOST_SIM_P2P_CONNECT_MS: '300' });
    await loadSim([r!]);
    const { comms } = await initAll([r!]);
    const t = await r!.call('sendRecv', comms[0], 0, MiB);
    assert.ok(t.ms < 100, `send/recv with oneself: ${t.ms} ms`);
  });
});
