// Native addon against the simulated NCCL (dist/native/libnccl-sim.so), with real rank processes.
// Build first: node native/build.mjs. Timing tolerances are wide (±50%): the simulated costs are
// sleeps, and these tests must not flake on a loaded 2-core machine.
import assert from 'node:assert/strict';
import { chmodSync, existsSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import net from 'node:net';
import { after, before, describe, test } from 'node:test';
import { BarrierServer as ProductBarrier, ShmRelease } from '../../remote-agent/barrierServer';

import { addonPath, initAll, loadSim, MiB, near, Rank, rejection, simPath } from './fixtures/nativeHarness';

function ranks(n: number, env: Record<string, string> = {}): Rank[] {
  return Array.from({ length: n }, () => new Rank(env));
}

/** A star barrier like the coordinator's: releases gen when `n` ranks have arrived. */
class BarrierServer {
  readonly server: net.Server;
  private readonly arrived = new Map<bigint, net.Socket[]>();
  /** gen -> gen answered instead (to test mismatches). */
  readonly lie = new Map<bigint, bigint>();
  readonly seen: { rank: number; gen: bigint }[] = [];
  /** Each connection's hello: {rank, token}. */
  readonly hellos: { rank: number; token: string }[] = [];

  constructor(private readonly n: number) {
    this.server = net.createServer((sock) => {
      sock.setNoDelay(true);
      let buf = Buffer.alloc(0);
      let greeted = false;
      sock.on('data', (d) => {
        buf = Buffer.concat([buf, d]);
        if (!greeted) {
          if (buf.length < 40) return;
          if (buf.readUInt32LE(0) !== 0x48424343) {
            sock.destroy();
            return;
          }
          this.hellos.push({ rank: buf.readUInt32LE(4), token: buf.subarray(8, 40).toString('latin1') });
          buf = buf.subarray(40);
          greeted = true;
        }
        while (buf.length >= 16) {
          const magic = buf.readUInt32LE(0);
          const rank = buf.readUInt32LE(4);
          const gen = buf.readBigUInt64LE(8);
          buf = buf.subarray(16);
          if (magic !== 0x52424343) {
            sock.destroy();
            return;
          }
          this.seen.push({ rank, gen });
          const list = this.arrived.get(gen) ?? [];
          list.push(sock);
          this.arrived.set(gen, list);
          if (list.length === this.n) {
            this.arrived.delete(gen);
            const out = Buffer.alloc(8);
            out.writeBigUInt64LE(this.lie.get(gen) ?? gen);
            for (const s of list) s.write(out);
          }
        }
      });
      sock.on('error', () => {});
    });
  }

  listen(): Promise<number> {
    return new Promise((resolve) =>
      this.server.listen(0, '127.0.0.1', () => resolve((this.server.address() as net.AddressInfo).port)),
    );
  }

  close(): void {
    this.server.close();
    for (const list of this.arrived.values()) for (const s of list) s.destroy();
  }
}

describe('native addon on the simulated NCCL', { timeout: 60_000 }, () => {
  const spawned: Rank[] = [];
  const spawn = (n: number, env: Record<string, string> = {}) => {
    const rs = ranks(n, env);
    spawned.push(...rs);
    return rs;
  };

  before(() => {
    assert.ok(existsSync(addonPath) && existsSync(simPath), 'build first: node native/build.mjs');
  });
  after(() => {
    for (const r of spawned) r.kill();
  });

  test('load reports the simulated library, its version and optional symbols', async () => {
    const [r] = spawn(1, { COMMCOST_SIM_GPUS: '3' });
    const info = await r!.call('load', { ncclPath: simPath, cudaPath: simPath });
    assert.equal(info.simulated, true);
    assert.equal(info.ncclVersion, '2.28.9');
    assert.equal(info.ncclVersionCode, 22809);
    assert.equal(info.driverVersion, 13000);
    assert.equal(info.symbols.ncclCommShrink, true);
    assert.equal(info.symbols.ncclMemAlloc, true);
    assert.equal(info.symbols.cuGraphInstantiateWithFlags, true);
    assert.deepEqual(await r!.call('load', { ncclPath: simPath, cudaPath: simPath }), info);
    const other = await rejection(r!.call('load', { ncclPath: '/elsewhere/libnccl.so.2', cudaPath: simPath }));
    assert.equal(other.code, 'LOAD');
    assert.equal(await r!.call('deviceCount'), 3);
    const dev = await r!.call('deviceInfo', 2);
    assert.equal(dev.name, 'Simulated GPU');
    assert.equal(dev.totalBytes, 80 * 1024 * MiB);
    assert.match(dev.pciBusId, /^0000:[0-9A-F]{2}:00\.0$/);
  });

  test('loading a missing library throws LOAD naming the path', async () => {
    const [r] = spawn(1);
    const missing = '/nonexistent/dir/libnccl.so.2';
    const err = await rejection(r!.call('load', { ncclPath: missing, cudaPath: simPath }));
    assert.equal(err.code, 'LOAD');
    assert.ok(err.message.includes(missing), err.message);
    assert.match(err.where, /\.cc:\d+$/);
    const noDevice = await rejection(r!.call('memInfo'));
    assert.equal(noDevice.code, 'LOAD');
  });

  test('init, first and steady allreduce, split, finalize, destroy, abort with 2 ranks', async () => {
    const env = {
      COMMCOST_SIM_INIT_MS: '200',
      COMMCOST_SIM_CONNECT_MS: '300',
      COMMCOST_SIM_BW_GBPS: '1',
      COMMCOST_SIM_SPLIT_MS: '100',
      COMMCOST_SIM_FINALIZE_MS: '60',
      COMMCOST_SIM_DESTROY_MS: '40',
      COMMCOST_SIM_ABORT_MS: '150',
      COMMCOST_SIM_CUINIT_MS: '100',
    };
    const rs = spawn(2, env);
    await loadSim(rs);
    const start = await Promise.all(rs.map((r, i) => r.call('initDevice', i, 64 * MiB)));
    for (const t of start) near(t.ms, 100, 'initDevice');
    const before = await Promise.all(rs.map((r) => r.call('memInfo')));
    const uid = await rs[0]!.call('getUniqueId');
    assert.equal(uid.id.length, 128);
    const init = await Promise.all(rs.map((r, i) => r.call('commInitRank', 2, uid.id, i)));
    // The rank that arrives last waits least: its time is the init cost.
    near(Math.min(...init.map((x) => x.ms)), 200, 'commInitRank');
    const comms: number[] = init.map((x) => x.comm);
    for (const [i, r] of rs.entries()) {
      assert.equal(await r.call('commCount', comms[i]), 2);
      assert.equal(await r.call('commUserRank', comms[i]), i);
    }
    const afterInit = await Promise.all(rs.map((r) => r.call('memInfo')));
    for (let i = 0; i < 2; i++) assert.equal(before[i].freeBytes - afterInit[i].freeBytes, 200 * MiB);

    const bytes = 32 * MiB; // 33.5 ms at 1 GB/s
    const wire = (bytes / 1e9) * 1e3;
    const first = await Promise.all(rs.map((r, i) => r.call('allReduce', comms[i], bytes)));
    near(Math.min(...first.map((x) => x.ms)), 300 + wire, 'first allreduce');
    const second = await Promise.all(rs.map((r, i) => r.call('allReduce', comms[i], bytes)));
    const steady = Math.min(...second.map((x) => x.ms));
    near(steady, wire, 'steady allreduce');
    assert.ok(steady < Math.min(...first.map((x) => x.ms)) / 3);
    const afterConnect = await Promise.all(rs.map((r) => r.call('memInfo')));
    for (let i = 0; i < 2; i++) assert.equal(afterInit[i].freeBytes - afterConnect[i].freeBytes, 60 * MiB);
    const tooBig = await rejection(rs[0]!.call('allReduce', comms[0], 65 * MiB));
    assert.equal(tooBig.code, 'ARG');

    // Split into two single-rank communicators (color = rank).
    const split = await Promise.all(rs.map((r, i) => r.call('commSplit', comms[i], i, 0)));
    near(Math.min(...split.map((x) => x.ms)), 100, 'commSplit');
    const children: number[] = split.map((x) => x.comm);
    for (const [i, r] of rs.entries()) {
      assert.equal(typeof children[i], 'number');
      assert.equal(await r.call('commCount', children[i]), 1);
      assert.equal(await r.call('commUserRank', children[i]), 0);
      // A 1-rank communicator has nothing to connect: its first collective is only the wire time.
      const childFirst = (await r.call('allReduce', children[i], 4 * MiB)).ms;
      assert.ok(childFirst < 100, `1-rank first allreduce pays no connect: ${childFirst} ms`);
    }
    // A NOCOLOR split gives no communicator.
    const none = await Promise.all(rs.map((r, i) => r.call('commSplit', comms[i], -1, 0)));
    for (const x of none) assert.equal(x.comm, null);

    const fin = await Promise.all(rs.map((r, i) => r.call('commFinalize', comms[i])));
    near(Math.min(...fin.map((x) => x.ms)), 60, 'commFinalize');
    const des = await Promise.all(rs.map((r, i) => r.call('commDestroy', comms[i])));
    for (const d of des) near(d.ms, 40, 'commDestroy');
    const gone = await rejection(rs[0]!.call('commDestroy', comms[0]));
    assert.equal(gone.code, 'ARG');
    const ab = await Promise.all(rs.map((r, i) => r.call('commAbort', children[i])));
    for (const a of ab) near(a.ms, 150, 'commAbort');
    const end = await Promise.all(rs.map((r) => r.call('memInfo')));
    for (let i = 0; i < 2; i++) assert.equal(end[i].freeBytes, before[i].freeBytes);
  });

  test('a rank that never calls blocks the other; abortAll releases it with a NCCL error', async () => {
    const rs = spawn(2, { COMMCOST_SIM_HANG: 'ncclAllReduce:1', COMMCOST_SIM_ABORT_MS: '20' });
    await loadSim(rs);
    const { comms } = await initAll(rs);
    let settled = false;
    const blocked = rs[0]!.call('allReduce', comms[0], MiB).finally(() => (settled = true));
    void rs[1]!.call('allReduce', comms[1], MiB).catch(() => {});
    blocked.catch(() => {});
    await new Promise((r) => setTimeout(r, 700));
    assert.equal(settled, false, 'rank 0 must stay blocked while rank 1 hangs');
    assert.equal(await rs[0]!.call('abortAll'), 1);
    const err = await rejection(blocked);
    assert.equal(err.code, 'NCCL');
    assert.equal(err.call, 'ncclAllReduce');
    assert.equal(err.result, 6);
    assert.ok(err.libraryError && err.libraryError.length > 0);
    assert.equal(await rs[0]!.call('abortAll'), 0);
    rs[1]!.kill();
  });

  test('a failing call gives a NativeError with call, result, libraryError and lastError', async () => {
    const [r] = spawn(1, { COMMCOST_SIM_FAIL: 'ncclCommSplit:0' });
    await loadSim([r!]);
    const { comms } = await initAll([r!], { blocking: 0, splitShare: 1 });
    assert.equal(await r!.call('commCount', comms[0]), 1);
    const err = await rejection(r!.call('commSplit', comms[0], 0, 0, null));
    assert.equal(err.code, 'NCCL');
    assert.equal(err.call, 'ncclCommSplit');
    assert.equal(err.result, 3);
    assert.match(err.libraryError ?? '', /internal error/);
    assert.equal(err.lastError, 'simulated failure in ncclCommSplit on rank 0');
    assert.match(err.where, /^commLifecycle\.cc:\d+$/);
    assert.ok(err.message.includes('ncclCommSplit') && err.message.includes('simulated failure'), err.message);
    const bad = await rejection(r!.call('commSplit', comms[0], 0, 0, { blocking: 2 }));
    assert.equal(bad.code, 'ARG');
  });

  test('config counts: minCTAs/maxCTAs reach NCCL (fewer channels, less connect memory); a count below 1 or a field newer than the library is refused with ARG', async () => {
    const [r] = spawn(1, { COMMCOST_SIM_VERSION: '22809', NCCL_RUNTIME_CONNECT: '0' });
    await loadSim([r!]);
    await r!.call('initDevice', 0, 64 * MiB);
    const before = (await r!.call('memInfo')).freeBytes as number;
    const { id } = await r!.call('getUniqueId');
    await r!.call('commInitRank', 1, id, 0, { blocking: 1, minCTAs: 1, maxCTAs: 2 });
    // Simulated, connecting at creation: 200 MiB + 60 MiB of connect buffers × 2 channels / 16.
    assert.equal(before - ((await r!.call('memInfo')).freeBytes as number), (200 + 7.5) * MiB);
    const { id: id2 } = await r!.call('getUniqueId');
    const low = await rejection(r!.call('commInitRank', 1, id2, 0, { maxCTAs: 0 }));
    assert.equal(low.code, 'ARG');
    assert.match(low.message, /config\.maxCTAs must be a whole number >= 1/);
    const newer = await rejection(r!.call('commInitRank', 1, id2, 0, { maxP2pPeers: 1 }));
    assert.equal(newer.code, 'ARG');
    assert.match(newer.message, /config\.maxP2pPeers needs NCCL >= 2\.30\.3, loaded 2\.28\.9/);
  });

  test('barrier: ranks are released together, gen echoed, releaseNs recorded', async () => {
    const server = new BarrierServer(2);
    const port = await server.listen();
    try {
      const rs = spawn(2, { COMMCOST_SIM_INIT_MS: '50' });
      await loadSim(rs);
      const token = '0123456789abcdef'.repeat(2);
      await Promise.all(rs.map((r, i) => r.call('barrierConnect', '127.0.0.1', port, i, token)));
      // Each connection opens with its hello: the rank and the session's secret.
      for (let i = 0; i < 100 && server.hellos.length < 2; i++) await new Promise((r) => setTimeout(r, 20));
      assert.deepEqual([...server.hellos].sort((a, b) => a.rank - b.rank), [{ rank: 0, token }, { rank: 1, token }]);
      const short = await rejection(rs[0]!.call('barrierConnect', '127.0.0.1', port, 0, 'short'));
      assert.equal(short.code, 'BARRIER');
      assert.match(short.message, /the session secret must be 32 characters, got 5/);
      // Rank 1 arrives 300 ms late: rank 0 waits in the barrier, not in the timed call.
      const p0 = rs[0]!.call('nop', 1);
      await new Promise((r) => setTimeout(r, 300));
      const p1 = rs[1]!.call('nop', 1);
      const [n0, n1] = await Promise.all([p0, p1]);
      for (const n of [n0, n1]) {
        assert.equal(typeof n.releaseNs, 'number');
        assert.ok(n.ms < 5, `nop took ${n.ms} ms`);
      }
      assert.ok(Math.abs(n0.releaseNs - n1.releaseNs) < 50e6, 'release skew under 50 ms');
      const waits = await Promise.all(rs.map((r) => r.call('barrierWait', 2)));
      for (const w of waits) {
        assert.equal(w.ms, 0);
        assert.ok(w.releaseNs > n0.releaseNs);
      }
      // A timed library call behind the barrier.
      await Promise.all(rs.map((r, i) => r.call('initDevice', i, MiB, 3)));
      // Every rank must arrive at every gen: rank 1 only waits while rank 0 makes the id.
      const [{ id }] = await Promise.all([rs[0]!.call('getUniqueId', 4), rs[1]!.call('barrierWait', 4)]);
      const init = await Promise.all(rs.map((r, i) => r.call('commInitRank', 2, id, i, undefined, 5)));
      for (const x of init) {
        assert.equal(typeof x.releaseNs, 'number');
        near(x.ms, 50, 'commInitRank after the barrier', 0.9);
      }
      assert.deepEqual(
        server.seen.filter((s) => s.gen === 5n).map((s) => s.rank).sort(),
        [0, 1],
      );
      // The coordinator answers another gen: BARRIER.
      server.lie.set(6n, 7n);
      const mismatch = await Promise.all(rs.map((r) => rejection(r.call('barrierWait', 6))));
      for (const e of mismatch) {
        assert.equal(e.code, 'BARRIER');
        assert.match(e.message, /mismatch/);
      }
      // The coordinator goes away: BARRIER.
      const waiting = rejection(rs[0]!.call('nop', 8));
      await new Promise((r) => setTimeout(r, 100));
      server.close();
      const closed = await waiting;
      assert.equal(closed.code, 'BARRIER');
      assert.match(closed.message, /closed/);
    } finally {
      server.close();
    }
  });

  test('one-host release: ranks release each other through shared memory, the server hears notices only', async () => {
    const token = 'fedcba9876543210'.repeat(2);
    const errors: string[] = [];
    const server = new ProductBarrier({ worldSize: 2, token, onProtocolError: (m) => errors.push(m) });
    const port = await server.listen();
    const shm = ShmRelease.create(2, tmpdir())!;
    try {
      const rs = spawn(2, { COMMCOST_BARRIER_SPIN_US: '50' });
      await loadSim(rs);
      await Promise.all(rs.map((r, i) => r.call('barrierConnect', '127.0.0.1', port, i, token)));
      // Not this session's file: another world size, a file others can read.
      const world = await rejection(rs[0]!.call('barrierAttachShm', shm.path, 3));
      assert.equal(world.code, 'BARRIER');
      assert.match(world.message, /does not match this session/);
      const open = join(tmpdir(), `commcost-open-${process.pid}`);
      writeFileSync(open, Buffer.alloc(4096));
      chmodSync(open, 0o644);
      const loose = await rejection(rs[0]!.call('barrierAttachShm', open, 2));
      assert.match(loose.message, /mode 0600/);
      for (const r of rs) assert.equal(await r.call('barrierAttachShm', shm.path, 2), 50);
      // Mapped by both: the name can go.
      shm.unlink();
      assert.equal(existsSync(shm.path), false);
      // Rank 1 arrives 300 ms late: rank 0 sleeps on the futex, and wakes at the release.
      const p0 = rs[0]!.call('nop', 1);
      await new Promise((r) => setTimeout(r, 300));
      const [n0, n1] = await Promise.all([p0, rs[1]!.call('nop', 1)]);
      assert.ok(Math.abs(n0.releaseNs - n1.releaseNs) < 20e6, `skew ${Math.abs(n0.releaseNs - n1.releaseNs)} ns`);
      // Many generations back to back, each seen by both at once (within 20 ms on a busy machine).
      for (let gen = 2; gen < 200; gen++) {
        const [a, b] = await Promise.all(rs.map((r) => r.call('barrierWait', gen)));
        assert.ok(Math.abs(a.releaseNs - b.releaseNs) < 20e6);
      }
      // The arrivals reached the server as notices: hang messages still name the missing rank.
      // A rank's notice may still be on its way to the server when the generation has released: wait for both ranks' (up to 5 s).
      for (let i = 0; i < 250 && (server.lastArrival(0) !== 199 || server.lastArrival(1) !== 199); i++) await new Promise((r) => setTimeout(r, 20));
      assert.equal(server.lastArrival(0), 199);
      assert.equal(server.lastArrival(1), 199);
      const one = rs[0]!.call('barrierWait', 200);
      for (let i = 0; i < 250 && server.lastArrival(0) !== 200; i++) await new Promise((r) => setTimeout(r, 20));
      assert.deepEqual(server.missing(200), [1]);
      await rs[1]!.call('barrierWait', 200);
      await one;
      // A generation already released: BARRIER, at once.
      const stale = await rejection(rs[0]!.call('barrierWait', 150));
      assert.equal(stale.code, 'BARRIER');
      assert.match(stale.message, /mismatch/);
      assert.deepEqual(errors.filter((e) => !/arrived at generation 150/.test(e)), []);
    } finally {
      shm.unlink();
      server.close();
    }
  });
});
