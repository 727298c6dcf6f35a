// The catalogue operations of the native addon (shrink, grow, revoke, registration, windows,
// suspend, in-flight collectives, CUDA graphs, abortable init, connect mode) against the simulated
// NCCL with real rank processes. Build first: node native/build.mjs. Tolerances are wide: the
// simulated costs are sleeps and these tests must not flake on a loaded 2-core machine.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';

import {
  addonPath,
  initAll,
  loadSim,
  MiB,
  near,
  RankPool,
  rejection,
  simLegacyPath,
  simPath,
  sleep,
} from './fixtures/nativeHarness';

describe('native addon catalogue operations on the simulated NCCL', { timeout: 60_000 }, () => {
  const pool = new RankPool();
  before(() => {
    assert.ok(existsSync(addonPath) && existsSync(simPath) && existsSync(simLegacyPath), 'build first: node native/build.mjs');
  });
  after(() => pool.killAll());

  test('shrink excluding rank 1 (which does not call) gives rank 0 a 1-rank communicator', async () => {
    const rs = pool.spawn(2, { COMMCOST_SIM_SHRINK_MS: '150', COMMCOST_SIM_CONNECT_MS: '200' });
    await loadSim(rs);
    const { comms } = await initAll(rs);
    const before = await rs[0]!.call('memInfo');
    const s = await rs[0]!.call('commShrink', comms[0], [1], 0);
    near(s.ms, 150, 'commShrink');
    assert.equal(typeof s.comm, 'number');
    assert.equal(await rs[0]!.call('commCount', s.comm), 1);
    assert.equal(await rs[0]!.call('commUserRank', s.comm), 0);
    const after = await rs[0]!.call('memInfo');
    assert.equal(before.freeBytes - after.freeBytes, 200 * MiB);
    // 1-rank child: the first collective has no connect cost.
    const first = await rs[0]!.call('allReduce', s.comm, MiB);
    assert.ok(first.ms < 100, `first allreduce on the shrunk 1-rank comm: ${first.ms} ms`);
    // An excluded rank must not call: NCCL refuses it.
    const excluded = await rejection(rs[1]!.call('commShrink', comms[1], [1], 0));
    assert.equal(excluded.code, 'NCCL');
    assert.equal(excluded.result, 4);
    assert.match(excluded.lastError ?? '', /excluded ranks must not call/);
    await rs[0]!.call('commDestroy', s.comm);
  });

  test('shrink with NCCL_SHRINK_ABORT kills in-flight work on the parent and drains', async () => {
    const env = { COMMCOST_SIM_SHRINK_MS: '100', COMMCOST_SIM_ABORT_MS: '200', COMMCOST_SIM_GPUS: '3' };
    const rs = pool.spawn(3, env);
    await loadSim(rs);
    const { comms } = await initAll(rs);
    // Ranks 0 and 1 enqueue a collective that rank 2 (the failed one) never joins.
    const inflight = await Promise.all([0, 1].map((i) => rs[i]!.call('allReduce', comms[i], MiB, undefined, { sync: false })));
    for (const x of inflight) assert.ok(x.ms < 50, `enqueue only: ${x.ms} ms`);
    const res = await Promise.all([0, 1].map((i) => rs[i]!.call('commShrink', comms[i], [2], 1)));
    near(Math.min(...res.map((x) => x.ms)), 100 + 200 / 2, 'commShrink with NCCL_SHRINK_ABORT');
    for (const [i, x] of res.entries()) {
      assert.equal(await rs[i]!.call('commCount', x.comm), 2);
      assert.equal(await rs[i]!.call('commUserRank', x.comm), i);
    }
    // The stream is drained: synchronize returns at once; the child works.
    for (const i of [0, 1]) assert.ok((await rs[i]!.call('streamSynchronize')).ms < 50);
    await Promise.all([0, 1].map((i) => rs[i]!.call('allReduce', res[i]!.comm, MiB)));
    // The parent is not freed by shrink: the caller aborts it.
    for (const i of [0, 1]) await rs[i]!.call('commAbort', comms[i]);
  });

  test('revoke: ms until quiet ≈ REVOKE_MS, the call itself small; then destroy', async () => {
    const rs = pool.spawn(2, { COMMCOST_SIM_REVOKE_MS: '200' });
    await loadSim(rs);
    const { comms } = await initAll(rs);
    await Promise.all(rs.map((r, i) => r.call('allReduce', comms[i], MiB)));
    const rev = await Promise.all(rs.map((r, i) => r.call('commRevoke', comms[i])));
    for (const x of rev) {
      near(x.ms, 200, 'commRevoke until quiet');
      assert.ok(x.callMs < 20 && x.callMs <= x.ms, `revoke call ${x.callMs} ms`);
    }
    const coll = await rejection(rs[0]!.call('allReduce', comms[0], MiB));
    assert.equal(coll.code, 'NCCL');
    assert.equal(coll.result, 5); // ncclInvalidUsage on a revoked communicator
    const fin = await rejection(rs[0]!.call('commFinalize', comms[0]));
    assert.equal(fin.result, 4);
    const twice = await rejection(rs[0]!.call('commRevoke', comms[0]));
    assert.equal(twice.result, 4);
    const des = await Promise.all(rs.map((r, i) => r.call('commDestroy', comms[i])));
    for (const d of des) assert.ok(d.ms < 200);
  });

  test('register / deregister are cheap; the first collective using the buffer pays the extra', async () => {
    const env = { COMMCOST_SIM_REG_FIRST_MS: '150', COMMCOST_SIM_REGISTER_MS: '0.05', COMMCOST_SIM_CONNECT_MS: '0' };
    const rs = pool.spawn(2, env);
    await loadSim(rs);
    const { comms } = await initAll(rs);
    await Promise.all(rs.map((r, i) => r.call('allReduce', comms[i], MiB)));
    const bufs = await Promise.all(rs.map((r) => r.call('memAlloc', 8 * MiB, 'cuda')));
    const regs = await Promise.all(rs.map((r, i) => r.call('commRegister', comms[i], bufs[i].buffer, 8 * MiB)));
    for (const x of regs) {
      assert.ok(x.ms < 20, `register ${x.ms} ms`);
      assert.equal(typeof x.handle, 'number');
    }
    const first = await Promise.all(rs.map((r, i) => r.call('allReduce', comms[i], 4 * MiB, undefined, { buffer: bufs[i].buffer })));
    near(Math.min(...first.map((x) => x.ms)), 150, 'first collective on a registered buffer');
    const second = await Promise.all(rs.map((r, i) => r.call('allReduce', comms[i], 4 * MiB, undefined, { buffer: bufs[i].buffer })));
    assert.ok(Math.min(...second.map((x) => x.ms)) < 75, 'the extra is paid once');
    const tooBig = await rejection(rs[0]!.call('allReduce', comms[0], 9 * MiB, undefined, { buffer: bufs[0].buffer }));
    assert.equal(tooBig.code, 'ARG');
    const dereg = await Promise.all(rs.map((r, i) => r.call('commDeregister', comms[i], regs[i].handle)));
    for (const x of dereg) assert.ok(x.ms < 20);
    assert.equal((await rejection(rs[0]!.call('commDeregister', comms[0], regs[0].handle))).code, 'ARG');
    for (const [i, r] of rs.entries()) await r.call('memFree', bufs[i].buffer);
    assert.equal((await rejection(rs[0]!.call('memFree', bufs[0].buffer))).code, 'ARG');
    assert.equal((await rejection(rs[0]!.call('memFree', 0))).code, 'ARG');
  });

  test('ncclMemAlloc + window register (collective) / deregister', async () => {
    const rs = pool.spawn(2, { COMMCOST_SIM_WINDOW_MS: '120' });
    await loadSim(rs);
    const { comms } = await initAll(rs);
    const free0 = (await rs[0]!.call('memInfo')).freeBytes;
    const bufs = await Promise.all(rs.map((r) => r.call('memAlloc', 6 * MiB, 'nccl')));
    assert.ok(free0 - (await rs[0]!.call('memInfo')).freeBytes >= 6 * MiB, 'ncclMemAlloc charges device memory');
    // Rank 1 joins 400 ms late: the collective waits for it. Compared with rank 1's own call, not
    // with the sleep alone: each rank reads its request when it is scheduled, so on a loaded
    // machine rank 0 may start its call up to 200 ms after it was sent and still pass; a
    // collective that did not wait gives w0 ≈ w1.
    const p0 = rs[0]!.call('windowRegister', comms[0], bufs[0].buffer, 6 * MiB, 0);
    await sleep(400);
    const p1 = rs[1]!.call('windowRegister', comms[1], bufs[1].buffer, 6 * MiB, 0);
    const [w0, w1] = await Promise.all([p0, p1]);
    assert.ok(w0.ms > w1.ms + 200, `rank 0 waited for rank 1: ${w0.ms} ms, rank 1 ${w1.ms} ms`);
    near(w1.ms, 120, 'windowRegister');
    assert.equal(typeof w0.window, 'number');
    // A cuMemAlloc buffer is not cuMem memory.
    const plain = await rs[0]!.call('memAlloc', MiB, 'cuda');
    const bad = await rejection(rs[0]!.call('windowRegister', comms[0], plain.buffer, MiB, 0));
    assert.equal(bad.code, 'NCCL');
    assert.match(bad.lastError ?? '', /ncclMemAlloc/);
    for (const [i, w] of [w0, w1].entries()) assert.ok((await rs[i]!.call('windowDeregister', comms[i], w.window)).ms < 50);
    for (const [i, r] of rs.entries()) await r.call('memFree', bufs[i].buffer);
    await rs[0]!.call('memFree', plain.buffer);
    assert.equal((await rs[0]!.call('memInfo')).freeBytes, free0);
  });

  test('allReduce with sync=false returns at once; streamSynchronize waits for the queue', async () => {
    const rs = pool.spawn(2, { COMMCOST_SIM_BW_GBPS: '1', COMMCOST_SIM_CONNECT_MS: '0' });
    await loadSim(rs);
    const { comms } = await initAll(rs);
    const bytes = 48 * MiB; // 50 ms at 1 GB/s
    const enq = await Promise.all(
      rs.map(async (r, i) => {
        const out = [];
        for (let k = 0; k < 3; k++) out.push((await r.call('allReduce', comms[i], bytes, undefined, { sync: false })).ms);
        return out;
      }),
    );
    for (const list of enq) for (const ms of list) assert.ok(ms < 25, `enqueue took ${ms} ms`);
    const sync = await Promise.all(rs.map((r) => r.call('streamSynchronize')));
    const wire = (bytes / 1e9) * 1e3;
    assert.ok(Math.max(...sync.map((x) => x.ms)) > wire * 1.5, `synchronize waited: ${sync.map((x) => x.ms)}`);
    assert.ok(Math.max(...sync.map((x) => x.ms)) < wire * 3 * 2, 'and not much longer');
    assert.ok((await rs[0]!.call('streamSynchronize')).ms < 20);
  });

  test('graphAllReduce returns capture, instantiate and launch times', async () => {
    const env = { COMMCOST_SIM_GRAPH_MS: '100', COMMCOST_SIM_BW_GBPS: '1', COMMCOST_SIM_CONNECT_MS: '0' };
    const rs = pool.spawn(2, env);
    await loadSim(rs);
    const { comms } = await initAll(rs);
    await Promise.all(rs.map((r, i) => r.call('allReduce', comms[i], MiB)));
    const g = await Promise.all(rs.map((r, i) => r.call('graphAllReduce', comms[i], 32 * MiB)));
    for (const x of g) {
      assert.ok(x.captureMs < 25, `capture ${x.captureMs} ms (records, does not run)`);
      near(x.instantiateMs, 100, 'cuGraphInstantiateWithFlags');
      assert.ok(x.launchMs > 0);
      assert.ok(x.ms >= x.captureMs + x.instantiateMs + x.launchMs - 0.01 && x.ms <= x.captureMs + x.instantiateMs + x.launchMs + 5);
    }
    near(Math.min(...g.map((x) => x.launchMs)), (32 * MiB) / 1e6, 'graph launch (one 32 MiB allreduce)', 0.9);
    // The graph is gone: plain collectives still work.
    await Promise.all(rs.map((r, i) => r.call('allReduce', comms[i], MiB)));
  });

  test('commInitRankAbortable: the other rank never calls, aborted after the deadline; abortAll ends it early', async () => {
    const rs = pool.spawn(2, { COMMCOST_SIM_ABORT_MS: '20', COMMCOST_SIM_INIT_MS: '50' });
    await loadSim(rs);
    await Promise.all(rs.map((r, i) => r.call('initDevice', i, 8 * MiB)));
    const { id } = await rs[0]!.call('getUniqueId');
    const byDeadline = await rs[0]!.call('commInitRankAbortable', 2, id, 0, 300);
    assert.equal(byDeadline.aborted, true);
    assert.equal(byDeadline.comm, null);
    assert.ok(byDeadline.ms >= 300 && byDeadline.ms < 300 + 20 + 300, `aborted at ${byDeadline.ms} ms`);
    near(byDeadline.abortMs, 20, 'the ncclCommAbort call alone');
    assert.ok(byDeadline.abortMs < byDeadline.ms);

    const id2 = (await rs[0]!.call('getUniqueId')).id;
    let settled = false;
    const waiting = rs[0]!.call('commInitRankAbortable', 2, id2, 0, 30_000).finally(() => (settled = true));
    await sleep(300);
    assert.equal(settled, false);
    assert.equal(await rs[0]!.call('abortAll'), 0); // the pending init is not in the table
    const byAbortAll = await waiting;
    assert.equal(byAbortAll.aborted, true);
    assert.ok(byAbortAll.ms < 5_000, `abortAll ended the init at ${byAbortAll.ms} ms`);

    // Both ranks call: a normal communicator.
    const id3 = (await rs[0]!.call('getUniqueId')).id;
    const ok = await Promise.all(rs.map((r, i) => r.call('commInitRankAbortable', 2, id3, i, 10_000)));
    for (const x of ok) {
      assert.equal(x.aborted, false);
      assert.equal(x.abortMs, 0);
      assert.equal(typeof x.comm, 'number');
    }
    near(Math.min(...ok.map((x) => x.ms)), 50, 'non-blocking init');
    await Promise.all(rs.map((r, i) => r.call('allReduce', ok[i]!.comm, MiB)));
  });

  test('NCCL_RUNTIME_CONNECT=0 moves the connect cost and memory from the first collective into init', async () => {
    const env = { COMMCOST_SIM_INIT_MS: '100', COMMCOST_SIM_CONNECT_MS: '200', COMMCOST_SIM_SPLIT_MS: '50' };
    const lazy = pool.spawn(2, env);
    const eager = pool.spawn(2, { ...env, NCCL_RUNTIME_CONNECT: '0' });
    for (const [rs, initMs, firstMs, initBytes] of [
      [lazy, 100, 200, 200 * MiB],
      [eager, 300, 0, 260 * MiB],
    ] as const) {
      await loadSim(rs);
      await Promise.all(rs.map((r, i) => r.call('initDevice', i, 8 * MiB)));
      const free = (await rs[0]!.call('memInfo')).freeBytes;
      const { id } = await rs[0]!.call('getUniqueId');
      const init = await Promise.all(rs.map((r, i) => r.call('commInitRank', 2, id, i)));
      near(Math.min(...init.map((x) => x.ms)), initMs, `init (connect ${firstMs ? 'lazy' : 'at init'})`);
      assert.equal(free - (await rs[0]!.call('memInfo')).freeBytes, initBytes);
      const first = await Promise.all(rs.map((r, i) => r.call('allReduce', init[i].comm, 4096)));
      const f = Math.min(...first.map((x) => x.ms));
      if (firstMs) near(f, firstMs, 'first collective');
      // (without connect: well under half the 200 ms lazy connect even on a loaded machine)
      else assert.ok(f < 100, `first collective without connect: ${f} ms`);
      assert.equal(free - (await rs[0]!.call('memInfo')).freeBytes, 260 * MiB);
      // split (2 ranks stay together) behaves the same way
      const split = await Promise.all(rs.map((r, i) => r.call('commSplit', init[i].comm, 0, i)));
      near(Math.min(...split.map((x) => x.ms)), firstMs ? 50 : 250, 'split');
    }
  });

  test('grow (coordinator id, existing and new rank) and suspend / resume / memStats on 2.29.7', async () => {
    const env = { COMMCOST_SIM_VERSION: '22907', COMMCOST_SIM_GROW_MS: '80', COMMCOST_SIM_GPUS: '3' };
    const rs = pool.spawn(3, env);
    await loadSim(rs);
    const { comms } = await initAll(rs.slice(0, 2));
    await rs[2]!.call('initDevice', 2, 8 * MiB);
    const { id } = await rs[0]!.call('commGetUniqueId', comms[0]);
    assert.equal(id.length, 128);
    const grown = await Promise.all([
      rs[0]!.call('commGrow', comms[0], 3, null, -1),
      rs[1]!.call('commGrow', comms[1], 3, null, -1),
      rs[2]!.call('commGrow', null, 3, id, 2),
    ]);
    near(Math.min(...grown.map((x) => x.ms)), 80, 'commGrow');
    for (const [i, g] of grown.entries()) {
      assert.equal(await rs[i]!.call('commCount', g.comm), 3);
      assert.equal(await rs[i]!.call('commUserRank', g.comm), i);
    }
    await Promise.all(grown.map((g, i) => rs[i]!.call('allReduce', g.comm, MiB)));
    const badGrow = await rejection(rs[2]!.call('commGrow', null, 3, null, 2));
    assert.equal(badGrow.code, 'ARG');

    // suspend releases the connection buffers (60 MiB by default), resume restores them
    const c = grown[0]!.comm;
    const stats = rs[0]!.call('commMemStats', c);
    assert.deepEqual(await stats, { suspendableBytes: 60 * MiB, persistentBytes: 200 * MiB, totalBytes: 260 * MiB, suspended: false });
    const free = (await rs[0]!.call('memInfo')).freeBytes;
    await rs[0]!.call('commSuspend', c, 1);
    assert.equal((await rs[0]!.call('memInfo')).freeBytes - free, 60 * MiB);
    assert.equal((await rs[0]!.call('commMemStats', c)).suspended, true);
    assert.equal((await rejection(rs[0]!.call('allReduce', c, MiB))).result, 5);
    await rs[0]!.call('commResume', c);
    assert.equal((await rs[0]!.call('memInfo')).freeBytes, free);
  });

  test('a function newer than the loaded NCCL gives a clear ARG error', async () => {
    const [legacy] = pool.spawn(1);
    const info = await legacy!.call('load', { ncclPath: simLegacyPath, cudaPath: simLegacyPath });
    assert.equal(info.ncclVersion, '2.26.2');
    assert.equal(info.symbols.ncclCommShrink, false);
    assert.equal(info.symbols.ncclCommRevoke, false);
    assert.equal(info.symbols.ncclCommRegister, true);
    const { comms } = await initAll([legacy!]);
    const shrink = await rejection(legacy!.call('commShrink', comms[0], [], 0));
    assert.equal(shrink.code, 'ARG');
    assert.equal(shrink.call, 'ncclCommShrink');
    assert.ok(shrink.message.startsWith('ncclCommShrink is not in this NCCL (needs ≥ 2.27.3, loaded 2.26.2)'), shrink.message);
    assert.match((await rejection(legacy!.call('commRevoke', comms[0]))).message, /ncclCommRevoke is not in this NCCL \(needs ≥ 2\.28\.7/);
    assert.equal(await legacy!.call('commMemStats', comms[0]), undefined);

    // Exported by the simulated library but newer than its version (2.28.9 by default).
    const [current] = pool.spawn(1);
    await loadSim([current!]);
    const c = (await initAll([current!])).comms;
    const grow = await rejection(current!.call('commGetUniqueId', c[0]));
    assert.equal(grow.code, 'ARG');
    assert.match(grow.message, /^ncclCommGetUniqueId is not in this NCCL \(needs ≥ 2\.29\.2, loaded 2\.28\.9\)/);
    assert.equal((await rejection(current!.call('commSuspend', c[0], 1))).code, 'ARG');
    assert.equal(await current!.call('commMemStats', c[0]), undefined);
  });

  test('fault hooks reach the new functions', async () => {
    const [r] = pool.spawn(1, { COMMCOST_SIM_FAIL: 'ncclCommShrink:0' });
    await loadSim([r!]);
    const { comms } = await initAll([r!]);
    const err = await rejection(r!.call('commShrink', comms[0], [], 0));
    assert.equal(err.code, 'NCCL');
    assert.equal(err.lastError, 'simulated failure in ncclCommShrink on rank 0');
    const [h] = pool.spawn(1, { COMMCOST_SIM_HANG: 'ncclCommRevoke:0', COMMCOST_SIM_ABORT_MS: '10' });
    await loadSim([h!]);
    const hc = (await initAll([h!])).comms;
    let settled = false;
    const hung = h!.call('commRevoke', hc[0]).finally(() => (settled = true));
    hung.catch(() => {});
    await sleep(300);
    assert.equal(settled, false);
    assert.equal(await h!.call('abortAll'), 1);
    assert.equal((await rejection(hung)).code, 'NCCL');
  });
});

describe('in-flight window and drop check (armInFlight, memFill, readFloats) on the simulated NCCL', { timeout: 60_000 }, () => {
  const pool = new RankPool();
  after(() => pool.killAll());

  test('armed allreduces are enqueued right before the call and in flight as it begins; untilQuiet ends the span when they are done', async () => {
    // A slow simulated link (64 MiB = 64 ms of work): what is in flight stays in flight.
    const rs = pool.spawn(2, { COMMCOST_SIM_BW_GBPS: '1.048576' });
    await loadSim(rs);
    const { comms } = await initAll(rs);
    await Promise.all(rs.map((r, i) => r.call('allReduce', comms[i], MiB))); // connect first
    await Promise.all(rs.map((r, i) => r.call('armInFlight', [{ comm: comms[i], bytes: 64 * MiB }], { untilQuiet: true })));
    const fin = await Promise.all(rs.map((r, i) => r.call('commFinalize', comms[i])));
    for (const t of fin) {
      assert.equal(t.inFlight.atStart, true);
      assert.equal(t.inFlight.enqueued, 1);
      assert.ok(t.inFlight.callMs <= t.ms);
    }
    // The span ended with the stream quiet: nothing left to wait for.
    await Promise.all(rs.map((r) => r.call('armInFlight', [])));
    for (const t of await Promise.all(rs.map((r) => r.call('streamSynchronize')))) assert.deepEqual([t.inFlight.atStart, t.inFlight.enqueued], [false, 0]);
    // One-shot: the next op has no window.
    assert.equal((await rs[0]!.call('streamSynchronize')).inFlight, undefined);
    await Promise.all(rs.map((r, i) => r.call('commDestroy', comms[i])));
  });

  test('a completed allreduce writes the sum of the ranks; ncclCommRevoke drops the in-flight ones (nothing written)', async () => {
    const rs = pool.spawn(2, { COMMCOST_SIM_BW_GBPS: '1.048576' });
    await loadSim(rs);
    const { comms } = await initAll(rs);
    const src = await Promise.all(rs.map((r) => r.call('memAlloc', 4 * MiB, 'cuda')));
    const dst = await Promise.all(rs.map((r) => r.call('memAlloc', 8 * MiB, 'cuda')));
    await Promise.all(rs.map((r, i) => r.call('memFill', src[i].buffer, 1)));
    await Promise.all(rs.map((r, i) => r.call('memFill', dst[i].buffer, 0)));
    assert.deepEqual(await rs[0]!.call('readFloats', dst[0].buffer, [0, 8 * MiB - 4]), [0, 0]);
    // Completed: slice 0 holds 1 + 1 everywhere, slice 1 untouched.
    await Promise.all(rs.map((r, i) => r.call('armInFlight', [{ comm: comms[i], bytes: 4 * MiB, buffer: src[i].buffer, recvBuffer: dst[i].buffer, recvOffset: 0 }], { untilQuiet: true })));
    await Promise.all(rs.map((r) => r.call('streamSynchronize')));
    assert.deepEqual(await rs[1]!.call('readFloats', dst[1].buffer, [0, 2 * MiB, 4 * MiB - 4, 4 * MiB]), [2, 2, 2, 0]);
    // Revoked while in flight: neither slice is written.
    await Promise.all(rs.map((r, i) => r.call('memFill', dst[i].buffer, 0)));
    await Promise.all(
      rs.map((r, i) =>
        r.call('armInFlight', [0, 1].map((k) => ({ comm: comms[i], bytes: 4 * MiB, buffer: src[i].buffer, recvBuffer: dst[i].buffer, recvOffset: k * 4 * MiB }))),
      ),
    );
    const rev = await Promise.all(rs.map((r, i) => r.call('commRevoke', comms[i])));
    for (const t of rev) assert.deepEqual([t.inFlight.atStart, t.inFlight.enqueued], [true, 2]);
    await Promise.all(rs.map((r) => r.call('streamSynchronize')));
    for (const [i, r] of rs.entries()) assert.deepEqual(await r.call('readFloats', dst[i].buffer, [0, 4 * MiB - 4, 4 * MiB, 8 * MiB - 4]), [0, 0, 0, 0]);
    await Promise.all(rs.map((r, i) => r.call('commDestroy', comms[i])));
  });

  test('an allreduce revoked part way through its work (after its rendezvous) writes nothing either', async () => {
    // 4 MiB at 0.005 GB/s: 800 ms of simulated GPU work; the revoke comes 100 ms in (700 ms to
    // spare for a loaded machine's scheduling before the work would have ended on its own).
    const rs = pool.spawn(2, { COMMCOST_SIM_BW_GBPS: '0.00524288' });
    await loadSim(rs);
    const { comms } = await initAll(rs);
    await Promise.all(rs.map((r, i) => r.call('allReduce', comms[i], 4, undefined))); // connect first
    const src = await Promise.all(rs.map((r) => r.call('memAlloc', 4 * MiB, 'cuda')));
    const dst = await Promise.all(rs.map((r) => r.call('memAlloc', 4 * MiB, 'cuda')));
    await Promise.all(rs.map((r, i) => r.call('memFill', src[i].buffer, 1)));
    await Promise.all(rs.map((r, i) => r.call('memFill', dst[i].buffer, 0)));
    await Promise.all(rs.map((r, i) => r.call('armInFlight', [{ comm: comms[i], bytes: 4 * MiB, buffer: src[i].buffer, recvBuffer: dst[i].buffer }])));
    await Promise.all(rs.map((r) => r.call('nop'))); // the window: enqueued now
    await sleep(100);
    await Promise.all(rs.map((r, i) => r.call('commRevoke', comms[i])));
    await Promise.all(rs.map((r) => r.call('streamSynchronize')));
    for (const [i, r] of rs.entries()) assert.deepEqual(await r.call('readFloats', dst[i].buffer, [0, 4 * MiB - 4]), [0, 0]);
    await Promise.all(rs.map((r, i) => r.call('commDestroy', comms[i])));
  });

  test('bad input: a range that does not fit, offsets not on a float, an unknown comm', async () => {
    const [r] = pool.spawn(1);
    await loadSim([r!]);
    const { comms } = await initAll([r!]);
    const e1 = await rejection(r!.call('armInFlight', [{ comm: comms[0], bytes: 128 * MiB }]));
    assert.equal(e1.code, 'ARG');
    assert.match(e1.message, /does not fit buffer 0/);
    assert.equal((await rejection(r!.call('readFloats', 0, [2]))).code, 'ARG');
    assert.match((await rejection(r!.call('armInFlight', [{ comm: 999, bytes: 4 }]))).message, /unknown communicator handle 999/);
    assert.match((await rejection(r!.call('memFill', 0, 1, 6))).message, /multiple of 4/);
  });
});
