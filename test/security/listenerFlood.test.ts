/**
 * A flood delays a real rank into failure (issue #21, item 6): 80 reconnecting connections that
 * never say a word fill a listener's cap of unauthenticated connections. Before the fix the real
 * peer that came next was closed on accept, did not try again, and its log said the coordinator
 * had died. Now a full listener closes its OLDEST unauthenticated connection to take the new one
 * (remote-agent/listenerGuard.ts), a connection that sent a well-formed hello is out of reach of
 * silent ones, and a node closed before it joined tries again until its deadline, saying why
 * when it gives up (remote-agent/nodeHost.ts).
 *
 * Every wait is on an event (a connect, a close, a join, a log line), never a fixed sleep.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { describe, test } from 'node:test';
import { ListenerGuard, PRE_AUTH_CONNECTIONS } from '../../remote-agent/listenerGuard';
import { NodeHostError, runNodeHost } from '../../remote-agent/nodeHost';
import { NodeServer } from '../../remote-agent/nodeServer';
import { distDir, NOT_BUILT } from '../support/agentHarness';
import { freePort, waitListening } from '../support/ports';

const FLOOD = 80;
const hello = { slots: 1, devices: [0], gpus: ['G'], ncclVersion: '2.28.9', simulated: true, fixedRank: 1, worldSize: 2 };

/**
 * `n` connections to 127.0.0.1:`port` that send nothing and, when closed, connect again at once,
 * until stopped. `saturated` resolves once all `n` have connected and the listener has closed at
 * least one of them (so its cap is reached).
 */
function reconnectingFlood(port: number, n: number): { saturated: Promise<void>; stop(): void; closes(): number } {
  let stopped = false;
  let connected = 0;
  let closed = 0;
  const live = new Set<net.Socket>();
  let fire!: () => void;
  const saturated = new Promise<void>((r) => (fire = r));
  const check = (): void => {
    if (connected >= n && closed > 0) fire();
  };
  const open = (first: boolean): void => {
    if (stopped) return;
    const s = net.connect(port, '127.0.0.1', () => {
      if (first) connected++;
      check();
    });
    live.add(s);
    s.on('error', () => undefined);
    s.on('close', () => {
      live.delete(s);
      if (stopped) return;
      closed++;
      check();
      open(false);
    });
  };
  for (let i = 0; i < n; i++) open(true);
  return {
    saturated,
    closes: () => closed,
    stop: () => {
      stopped = true;
      for (const s of live) s.destroy();
    },
  };
}

/** Resolves when `socket` (the client end) closes; `closed` says whether it has. */
function watchClose(socket: net.Socket): { closed: () => boolean; done: Promise<void> } {
  let c = false;
  const done = new Promise<void>((r) => socket.once('close', () => ((c = true), r())));
  return { closed: () => c, done };
}

describe('a flood of unauthenticated connections cannot lock expected peers out', () => {
  test('a full listener closes its oldest unauthenticated connection, not the newcomer; one past its hello is out of reach of silent ones', async () => {
    const logs: string[] = [];
    const guard = new ListenerGuard('test listener', 2, (l) => logs.push(l), 60_000);
    const accepted: net.Socket[] = [];
    let onAccept: (() => void) | undefined;
    const server = net.createServer((s) => {
      guard.admit(s);
      accepted.push(s);
      onAccept?.();
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as net.AddressInfo).port;
    const clients: net.Socket[] = [];
    /** Opens one client and waits until the server has accepted it. */
    const openOne = async (): Promise<net.Socket> => {
      const want = accepted.length + 1;
      const seen = new Promise<void>((r) => (onAccept = () => accepted.length >= want && r()));
      const c = net.connect(port, '127.0.0.1');
      c.on('error', () => undefined);
      clients.push(c);
      await seen;
      return c;
    };
    try {
      // The first connection says a well-formed hello (the node server's progressed()).
      const talker = watchClose(await openOne());
      guard.progressed(accepted[0]!);
      // Then the cap of silent connections, all admitted.
      assert.equal(guard.cap, 2 + PRE_AUTH_CONNECTIONS);
      const silent = [];
      for (let i = 0; i < guard.cap; i++) silent.push(watchClose(await openOne()));
      assert.equal(guard.pendingCount, guard.cap + 1);
      assert.ok(silent.every((w) => !w.closed()));
      // Five more: each closes the oldest silent one; the newcomers and the talker stay.
      const late = [];
      for (let i = 0; i < 5; i++) late.push(watchClose(await openOne()));
      await Promise.all(silent.slice(0, 5).map((w) => w.done));
      assert.equal(guard.pendingCount, guard.cap + 1);
      assert.ok(!talker.closed(), 'the connection past its hello was closed by silent ones');
      assert.ok(late.every((w) => !w.closed()), 'a newcomer was turned away');
      assert.ok(silent.slice(5).every((w) => !w.closed()));
      assert.match(logs.join('\n'), /test listener: closed \d+ connection\(s\): too many connections without a hello \(the oldest closed to make room\)/);
    } finally {
      for (const c of clients) c.destroy();
      server.close();
    }
  });

  test(`${FLOOD} reconnecting silent connections fill the node server; the real node still joins within its deadline`, { timeout: 60_000 }, async () => {
    const server = new NodeServer({ expected: 2, token: 'run-secret', port: 0, bindAddress: '127.0.0.1', log: () => undefined });
    const port = await server.listen();
    const flood = reconnectingFlood(port, FLOOD);
    const logs: string[] = [];
    try {
      // The cap (2 + 64) is full and the listener is closing connections before the node comes.
      await flood.saturated;
      let joined!: () => void;
      const joinedP = new Promise<void>((r) => (joined = r));
      const node = runNodeHost({ addresses: ['127.0.0.1'], port, token: 'run-secret', connectDeadlineMs: 30_000, log: (l) => logs.push(l), hello, onJoined: () => joined() });
      // Before the fix the node was closed on accept and ended at once, 'lost'.
      const first = await Promise.race([joinedP.then(() => 'joined' as const), node.then((r) => `ended ${r}`, (e: Error) => `failed: ${e.message}`)]);
      assert.equal(first, 'joined', `the node did not join under the flood: ${first}; its log: ${logs.join(' | ')}`);
      assert.equal(server.nodes.length, 1);
      assert.equal(server.nodes[0]!.hello.fixedRank, 1);
      assert.ok(flood.closes() > 0, 'the flood filled the listener');
      server.close('complete');
      assert.equal(await node, 'complete');
    } finally {
      flood.stop();
      server.close();
    }
  });

  test('a node the coordinator keeps closing before it joins tries again until its deadline, then says what happened (not "the coordinator died")', { timeout: 30_000 }, async () => {
    let accepted = 0;
    // A listener that closes every connection on accept: a listener forever full.
    const full = net.createServer((s) => {
      accepted++;
      s.destroy();
    });
    await new Promise<void>((r) => full.listen(0, '127.0.0.1', r));
    const port = (full.address() as net.AddressInfo).port;
    const logs: string[] = [];
    try {
      const outcome = await runNodeHost({ addresses: ['127.0.0.1'], port, token: 't', connectDeadlineMs: 1500, coordinatorName: 'rank 0 (the coordinator)', log: (l) => logs.push(l), hello }).then(
        (r) => `resolved ${r}`,
        (e: unknown) => e,
      );
      assert.ok(outcome instanceof NodeHostError, `expected a NodeHostError, got ${String(outcome)}`);
      assert.equal(outcome.code, 'NODE_UNREACHABLE');
      const m = /rank 0 \(the coordinator\) at 127\.0\.0\.1:\d+ closed the connection before this node could join, (\d+) time\(s\) \(a listener full of unauthenticated connections/.exec(outcome.message);
      assert.ok(m, outcome.message);
      assert.ok(Number(m[1]) >= 2, `tried again: ${m[1]} time(s), ${accepted} accepted`);
      assert.doesNotMatch(outcome.message, /died/);
      assert.match(logs.join('\n'), /closed the connection before this node could join \(its listener full of unauthenticated connections\?\): trying again for up to \d+ s/);
    } finally {
      full.close();
    }
  });
});

describe('the launched job under a flood', { skip: NOT_BUILT }, () => {
  test(`rank 0's port flooded by ${FLOOD} reconnecting connections: rank 1 still joins and the run completes`, { timeout: 120_000 }, async () => {
    const port = await freePort();
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'commcost-lflood-'));
    const args = [path.join(distDir, 'agent.js'), 'rank', '--simulate', '--experiments', 'init', '--iterations', '2', '--warmup', '0', '--deadline', '30'];
    const env = (rank: number): NodeJS.ProcessEnv => ({ ...process.env, COMMCOST_RANK: String(rank), COMMCOST_WORLD_SIZE: '2', COMMCOST_LOCAL_RANK: String(rank), COMMCOST_PORT: String(port), COMMCOST_TOKEN: 'lflood-secret', COMMCOST_SIM_INIT_MS: '10', COMMCOST_SIM_CUINIT_MS: '10' });
    /** Starts rank `rank`; `until(re)` resolves when its stderr matches `re`, rejects when it exits first. */
    const start = (rank: number) => {
      const child = spawn(process.execPath, [...args, ...(rank === 0 ? ['--out', path.join(dir, 'run.jsonl')] : [])], { env: env(rank), stdio: ['ignore', 'ignore', 'pipe'] });
      let err = '';
      const waiters: (() => void)[] = [];
      child.stderr!.on('data', (d: Buffer) => {
        err += d.toString();
        for (const w of waiters) w();
      });
      const exit = new Promise<number | null>((r) => child.on('close', (c) => r(c)));
      return {
        child,
        exit,
        stderr: () => err,
        until: (re: RegExp) =>
          new Promise<void>((resolve, reject) => {
            const check = (): void => void (re.test(err) && resolve());
            waiters.push(check);
            check();
            void exit.then((c) => reject(new Error(`rank ${rank} exited (${c}) before its log matched ${re}: ${err.slice(-1500)}`)));
          }),
      };
    };
    const rank0 = start(0);
    let flood: ReturnType<typeof reconnectingFlood> | undefined;
    let rank1: ReturnType<typeof start> | undefined;
    try {
      await waitListening(rank0.child.pid!, port, 30_000, () => rank0.child.exitCode !== null);
      flood = reconnectingFlood(port, FLOOD);
      await flood.saturated;
      rank1 = start(1);
      // Joined under the flood, then the flood stops: the run itself is not under test.
      await rank1.until(/joined the coordinator/);
      flood.stop();
      const [c0, c1] = await Promise.all([rank0.exit, rank1.exit]);
      assert.deepEqual([c0, c1], [0, 0], `rank 0: ${rank0.stderr().slice(-1200)}\n--- rank 1: ${rank1.stderr().slice(-1200)}`);
      assert.match(fs.readFileSync(path.join(dir, 'run.jsonl'), 'utf8'), /"type":"run\/done".*"status":"complete"/);
      assert.match(rank0.stderr(), /node server: closed \d+ connection\(s\): too many connections without a hello/);
    } finally {
      flood?.stop();
      rank0.child.kill('SIGKILL');
      rank1?.child.kill('SIGKILL');
      await Promise.all([rank0.exit, rank1?.exit]);
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
