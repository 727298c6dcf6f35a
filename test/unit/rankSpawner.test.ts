/**
 * rankSpawner.ts: rank processes started on spawn threads. Checks what the rank session relies
 * on: output lines and the exit reach the callbacks, a spawn that fails is an exit 127 after a
 * line saying why, a kill reaches a process even when sent before it started, and no process is
 * left. No timing is asserted.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { before, describe, test } from 'node:test';
import { spawnHere, spawnRankProcess, spawnThreads, spawnThreadsOnline, warmSpawnThreads } from '../../remote-agent/rankSpawner';

interface Seen {
  lines: string[];
  exits: [number | null, string | null][];
}

let spawnWith = spawnRankProcess;

function start(file: string, args: string[], env: NodeJS.ProcessEnv = process.env): { seen: Seen; handle: ReturnType<typeof spawnRankProcess> } {
  const seen: Seen = { lines: [], exits: [] };
  const handle = spawnWith(file, args, env, { onLine: (l) => seen.lines.push(l), onExit: (c, s) => seen.exits.push([c, s]) });
  return { seen, handle };
}

/** Live processes whose command line contains `marker`. */
function alive(marker: string): string[] {
  return execFileSync('ps', ['-eo', 'stat=,args='], { encoding: 'utf8' })
    .split('\n')
    .filter((l) => l.includes(marker) && !l.trim().startsWith('Z') && !l.includes('ps -eo'));
}

// The same behaviour on a running spawn thread and on this thread (before any thread runs).
for (const where of ['on a spawn thread', 'on this thread'] as const) {
  describe(`rank processes started ${where}`, () => {
    before(async () => {
      if (where === 'on a spawn thread') {
        // Two threads whatever this host's CPU count (a host with fewer than 4 CPUs gets none).
        process.env.COMMCOST_SPAWN_THREADS = '2';
        await warmSpawnThreads();
        // Once warm, every thread takes spawns: spawnRankProcess no longer spawns on this thread.
        assert.equal(spawnThreadsOnline(), 2);
      }
      spawnWith = where === 'on a spawn thread' ? spawnRankProcess : spawnHere;
    });
    test('output lines and the exit code reach the callbacks; the environment is the one given', async () => {
      const { seen, handle } = start(process.execPath, ['-e', 'console.log("one\\ntwo"); console.error(process.env.RANK_SPAWNER_PROBE); process.exit(3)'], { ...process.env, RANK_SPAWNER_PROBE: 'probe-42' });
      assert.equal(handle.exited, false, 'the handle comes back before the process has exited');
      await handle.done;
      assert.equal(handle.exited, true);
      assert.deepEqual(seen.exits, [[3, null]]);
      for (const l of ['one', 'two', 'probe-42']) assert.ok(seen.lines.includes(l), `${l} in ${JSON.stringify(seen.lines)}`);
    });

    test('a spawn that fails (no such file) is an exit 127 after a line saying why', async () => {
      const { seen, handle } = start('/nonexistent/commcost-no-such-node', ['rank']);
      await handle.done;
      assert.deepEqual(seen.exits, [[127, null]]);
      assert.match(seen.lines.join('\n'), /cannot start a rank process: .*ENOENT/);
    });

    test('kills sent at once (before the processes started) end every one of them; none is left', async () => {
      const marker = `commcost-spawner-${process.pid}-${Date.now()}`;
      const runs = Array.from({ length: 5 }, () => start(process.execPath, ['-e', `setTimeout(() => {}, 60000) // ${marker}`]));
      for (const r of runs) r.handle.kill();
      await Promise.all(runs.map((r) => r.handle.done));
      for (const r of runs) assert.deepEqual(r.seen.exits, [[null, 'SIGKILL']]);
      assert.deepEqual(alive(marker), []);
    });

    test('several at once: each gets its own output and exit', async () => {
      const runs = Array.from({ length: 6 }, (_, i) => start(process.execPath, ['-e', `console.log("rank-${i}"); process.exit(${10 + i})`]));
      await Promise.all(runs.map((r) => r.handle.done));
      runs.forEach((r, i) => {
        assert.deepEqual(r.seen.lines, [`rank-${i}`]);
        assert.deepEqual(r.seen.exits, [[10 + i, null]]);
      });
    });
  });
}

describe('spawn threads', () => {
  test('an idle pool does not keep the process alive (threads warmed, a rank spawned here, then nothing left to do)', () => {
    // Before the fix, the unref() came before the 'message' listener, which refs the thread again: this child never exited.
    const script = `const s = require(${JSON.stringify(require.resolve('../../remote-agent/rankSpawner'))}); s.warmSpawnThreads(); s.spawnHere(process.execPath, ['-e', ''], process.env, { onLine() {}, onExit() { console.log('rank exited'); } });`;
    const out = execFileSync(process.execPath, ['--import', 'tsx', '-e', script], { encoding: 'utf8', timeout: 120_000, env: { ...process.env, COMMCOST_SPAWN_THREADS: '2' } });
    assert.match(out, /rank exited/);
  });

  test('pool size: COMMCOST_SPAWN_THREADS 0–64 overrides; otherwise none below 4 CPUs, one per CPU up to 8', () => {
    assert.equal(spawnThreads(undefined, 1), 0);
    assert.equal(spawnThreads(undefined, 2), 0);
    assert.equal(spawnThreads(undefined, 4), 4);
    assert.equal(spawnThreads(undefined, 6), 6);
    assert.equal(spawnThreads(undefined, 128), 8);
    assert.equal(spawnThreads('16', 2), 16);
    assert.equal(spawnThreads('0', 16), 0);
    for (const bad of ['-1', '65', '2.5', 'x', '', ' ']) assert.equal(spawnThreads(bad, 6), 6, bad);
  });
});
