// ncclCommInitRankScalable through the native addon on the simulated NCCL (issue #29): several
// unique ids, each made by its own rank, the same on every rank; the library checks that every
// rank passed the same ids in the same order; bad input and an older library give a clear ARG
// error. Build first: node native/build.mjs. Figures are the simulator's: checked for shape only.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';

import { addonPath, loadSim, MiB, RankPool, rejection, simLegacyPath, simPath } from './fixtures/nativeHarness';

describe('ncclCommInitRankScalable on the simulated NCCL', { timeout: 60_000 }, () => {
  const pool = new RankPool();
  before(() => {
    assert.ok(existsSync(addonPath) && existsSync(simPath) && existsSync(simLegacyPath), 'build first: node native/build.mjs');
  });
  after(() => pool.killAll());

  test('3 ranks, 2 ids made by ranks 0 and 2: one communicator of 3 ranks that runs a collective', async () => {
    const rs = pool.spawn(3, { COMMCOST_SIM_GPUS: '3' });
    await loadSim(rs);
    await Promise.all(rs.map((r, i) => r.call('initDevice', i, 64 * MiB)));
    const ids = [(await rs[0]!.call('getUniqueId')).id, (await rs[2]!.call('getUniqueId')).id];
    const made = await Promise.all(rs.map((r, i) => r.call('commInitRankScalable', 3, ids, i, { blocking: 1 })));
    for (const [i, m] of made.entries()) {
      assert.ok(m.ms > 0, `rank ${i} timed the call`);
      assert.equal(await rs[i]!.call('commCount', m.comm), 3);
      assert.equal(await rs[i]!.call('commUserRank', m.comm), i);
    }
    await Promise.all(made.map((m, i) => rs[i]!.call('allReduce', m.comm, MiB)));
    await Promise.all(made.map((m, i) => rs[i]!.call('commDestroy', m.comm)));
  });

  test('a rank given other ids after the first (here: fewer) fails the init on every rank (ncclInvalidUsage), none hangs', async () => {
    const rs = pool.spawn(2);
    await loadSim(rs);
    await Promise.all(rs.map((r, i) => r.call('initDevice', i, 64 * MiB)));
    const a = (await rs[0]!.call('getUniqueId')).id;
    const b = (await rs[1]!.call('getUniqueId')).id;
    const errs = await Promise.all([rejection(rs[0]!.call('commInitRankScalable', 2, [a, b], 0)), rejection(rs[1]!.call('commInitRankScalable', 2, [a], 1))]);
    for (const e of errs) {
      assert.equal(e.code, 'NCCL');
      assert.equal(e.result, 5);
      assert.match(e.lastError ?? '', /passed other unique ids than rank/);
    }
  });

  test('bad input: no ids, more ids than ranks, an id of the wrong size', async () => {
    const [r] = pool.spawn(1);
    await loadSim([r!]);
    await r!.call('initDevice', 0, 8 * MiB);
    const { id } = await r!.call('getUniqueId');
    const none = await rejection(r!.call('commInitRankScalable', 1, [], 0));
    assert.equal(none.code, 'ARG');
    assert.match(none.message, /ids must hold 1 to nranks unique ids/);
    assert.match((await rejection(r!.call('commInitRankScalable', 1, [id, id], 0))).message, /at most one per rank/);
    assert.match((await rejection(r!.call('commInitRankScalable', 1, [Buffer.alloc(5)], 0))).message, /ids\[0\] must be a Buffer of 128 bytes/);
    assert.match((await rejection(r!.call('commInitRankScalable', 1, id, 0))).message, /ids must be an array/);
    // One id at one rank is a valid call (NCCL: nId 1 is ncclCommInitRankConfig).
    const one = await r!.call('commInitRankScalable', 1, [id], 0);
    assert.equal(await r!.call('commCount', one.comm), 1);
  });

  test('older than 2.23.4 or without the symbol: ARG naming the version it needs', async () => {
    const [old] = pool.spawn(1, { COMMCOST_SIM_VERSION: '22303' });
    await loadSim([old!]);
    await old!.call('initDevice', 0, 8 * MiB);
    const { id } = await old!.call('getUniqueId');
    const tooOld = await rejection(old!.call('commInitRankScalable', 1, [id], 0));
    assert.equal(tooOld.code, 'ARG');
    assert.match(tooOld.message, /^ncclCommInitRankScalable is not in this NCCL \(needs ≥ 2\.23\.4, loaded 2\.23\.3\)/);
    const [legacy] = pool.spawn(1);
    const info = await legacy!.call('load', { ncclPath: simLegacyPath, cudaPath: simLegacyPath });
    assert.equal(info.symbols.ncclCommInitRankScalable, false);
    await legacy!.call('initDevice', 0, 8 * MiB);
    const lid = (await legacy!.call('getUniqueId')).id;
    assert.match((await rejection(legacy!.call('commInitRankScalable', 1, [lid], 0))).message, /^ncclCommInitRankScalable is not in this NCCL/);
  });
});
