/**
 * Malformed and hostile messages on every port of the agent, before and after authentication
 * (issue #21, item 2): the JSON lines `null`, `42`, `[]`, `{"t":null}`, a report with
 * `steps: null`, an error naming `experiment: 42` or an experiment that is not the session's.
 * None may crash the agent; each is refused or logged, and the run goes on to its `run/done`.
 *
 * Ports: the rank control channel (a real agent whose rank 1 is a hostile process that holds
 * the session's secret: COMMCOST_AGENT_SCRIPT points rank processes at a wrapper), the node
 * server (in process, and a launched rank 0 listening on 0.0.0.0), the barrier server, and
 * the agent's stdin.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, describe, test } from 'node:test';
import { coordinatorToNodeProblem, nodeMessageProblem, rankMessageProblem } from '../../protocol/agentWire';
import { BarrierServer, barrierHello } from '../../remote-agent/barrierServer';
import { tokenProof } from '../../remote-agent/nodes';
import { NodeServer } from '../../remote-agent/nodeServer';
import { NOT_BUILT, distDir, is, startAgent, trackedRuns } from '../support/agentHarness';
import { freePort, waitListening } from '../support/ports';

/** Lines that are JSON but not messages, and messages with a field of the wrong type. */
const HOSTILE = [
  'null',
  '42',
  '[]',
  '"hello"',
  'true',
  '{}',
  '{"t":null}',
  '{"t":42}',
  '{"t":"__proto__"}',
  '{"t":"constructor"}',
  '{"t":"hello","rank":null,"pid":1}',
  '{"t":"begin","op":null,"experiment":"init","variant":"v","iteration":0}',
  '{"t":"iteration","rank":1,"experiment":"init","variant":"v","iteration":0,"warmup":false,"steps":null,"releaseNs":{},"memory":{},"libraryMs":1}',
  '{"t":"iteration","rank":1,"experiment":"init","variant":"v","iteration":0,"warmup":false,"steps":{"a":"x"},"releaseNs":{},"memory":null,"libraryMs":1}',
  '{"t":"error","code":"NCCL_ERROR","message":"m","experiment":42}',
  '{"t":"error","code":"NCCL_ERROR","message":null}',
  '{"t":"id/publish","key":-1,"id":"x"}',
  '{"t":"id/request","key":"1"}',
  '{"t":"finished","libraryMs":null}',
  '{"t":"ready","rank":1,"cudaInitMs":"fast"}',
];

describe('message shape validators (protocol/agentWire.ts)', () => {
  test('every hostile line is refused by the rank and node validators, with a bounded problem', () => {
    for (const line of HOSTILE) {
      const msg: unknown = JSON.parse(line);
      const p = rankMessageProblem(msg);
      assert.ok(p, `rank message accepted: ${line}`);
      assert.ok(p.length < 300, p);
      if (!/"t":"node\//.test(line)) assert.ok(nodeMessageProblem(msg), `node message accepted: ${line}`);
      assert.ok(coordinatorToNodeProblem(msg), `coordinator message accepted: ${line}`);
    }
  });

  test('valid messages pass', () => {
    for (const m of [
      { t: 'hello', rank: 1, pid: 2, token: 'x' },
      { t: 'begin', op: 'ncclCommInitRank', experiment: 'init', variant: 'v', iteration: 0, step: 's' },
      { t: 'iteration', rank: 0, experiment: 'init', variant: 'v', iteration: 0, warmup: true, steps: { a: 1 }, releaseNs: {}, memory: {}, libraryMs: 1, timedMs: 1 },
      { t: 'error', code: 'NCCL_ERROR', message: 'm', experiment: 'init' },
      { t: 'finished', libraryMs: 3 },
    ]) assert.equal(rankMessageProblem(m), undefined, JSON.stringify(m));
    assert.equal(nodeMessageProblem({ t: 'node/exit', rank: 1, code: null, signal: 'SIGKILL' }), undefined);
    assert.equal(coordinatorToNodeProblem({ t: 'node/spawn', rank: 1, env: { COMMCOST_RANK: '1' } }), undefined);
    assert.ok(coordinatorToNodeProblem({ t: 'node/spawn', rank: 1, env: { A: 1 } }));
  });
});

/** A rank process wrapper: rank HOSTILE_RANK is hostile, the others run the real agent. */
const HOSTILE_RANK_JS = `
const net = require('net');
const real = process.env.REAL_AGENT;
if (process.env.COMMCOST_RANK !== process.env.HOSTILE_RANK) {
  require(real);
} else {
  const [host, port] = process.env.COMMCOST_COORDINATOR.split(':');
  const token = process.env.COMMCOST_SESSION_TOKEN;
  const rank = Number(process.env.COMMCOST_RANK);
  const lines = JSON.parse(process.env.HOSTILE_LINES);
  const hello = JSON.stringify({ t: 'hello', rank, pid: process.pid, token });
  const done = JSON.stringify({ t: 'error', code: 'INTERNAL', message: 'hostile rank done' });
  const finish = () => {
    const s = net.connect(Number(port), host, () => s.write(hello + '\\n' + done + '\\n'));
    s.on('error', () => process.exit(0));
    s.on('close', () => process.exit(0));
  };
  if (process.env.HOSTILE_PHASE === 'pre') {
    const s = net.connect(Number(port), host, () => s.write(lines.join('\\n') + '\\n'));
    s.on('error', () => undefined);
    let next = false;
    const go = () => { if (!next) { next = true; s.destroy(); finish(); } };
    s.on('close', go);
    setTimeout(go, 1500);
  } else {
    const s = net.connect(Number(port), host, () => s.write(hello + '\\n' + lines.join('\\n') + '\\n' + done + '\\n'));
    s.on('error', () => process.exit(0));
    s.on('close', () => process.exit(0));
  }
}
`;

describe('control channel: a hostile connection and a hostile rank holding the secret', { skip: NOT_BUILT }, () => {
  const runs = trackedRuns();
  after(() => runs.cleanup());

  for (const phase of ['pre', 'post'] as const) {
    test(`${phase === 'pre' ? 'before' : 'after'} the hello: ${HOSTILE.length} hostile lines; the agent logs them and ends the run with run/done`, { timeout: 60_000 }, async () => {
      const wrapperDir = fs.mkdtempSync(path.join(os.tmpdir(), 'commcost-hostile-'));
      const wrapper = path.join(wrapperDir, 'rank.js');
      fs.writeFileSync(wrapper, HOSTILE_RANK_JS);
      const r = runs.track(
        startAgent(
          { ranks: 2, iterations: 1, warmup: 0, deadlineSeconds: 10 },
          { COMMCOST_AGENT_SCRIPT: wrapper, HOSTILE_RANK: '1', HOSTILE_PHASE: phase, HOSTILE_LINES: JSON.stringify(HOSTILE), REAL_AGENT: path.join(distDir, 'agent.js') },
        ),
      );
      const done = await r.waitFor(is('run/done'), 40_000);
      const stderr = r.stderr.join('');
      assert.doesNotMatch(stderr, /TypeError|Cannot read properties/, 'the agent crashed on a message');
      const err = r.events.find(is('run/error'));
      assert.ok(err, `no run/error; stderr: ${stderr.slice(-1500)}`);
      assert.match(err.message, /hostile rank done/, `the agent did not go on to the hostile rank's last message: ${err.message}`);
      assert.equal(done.status, 'failed');
      if (phase === 'pre') assert.match(stderr, /without a hello sent a malformed message/);
      else assert.match(stderr, /rank 1 sent a malformed message: "iteration" with a bad "steps" \(null\)/);
      assert.equal(await r.exited, 0);
    });
  }
});

/**
 * Connects to `port` and writes `lines`; resolves with what came back when the peer closes, when
 * what came back matches `answer` (then closes), or after `ms`.
 */
function probe(port: number, lines: string[], ms = 1500, answer?: RegExp): Promise<{ text: string; closed: boolean }> {
  return new Promise((resolve) => {
    let text = '';
    const s = net.connect(port, '127.0.0.1', () => s.write(lines.join('\n') + '\n'));
    s.on('data', (d) => {
      text += d.toString();
      if (answer?.test(text)) s.destroy();
    });
    s.on('error', () => undefined);
    const t = setTimeout(() => {
      s.destroy();
      resolve({ text, closed: false });
    }, ms);
    s.on('close', () => {
      clearTimeout(t);
      resolve({ text, closed: true });
    });
  });
}

describe('node server (in process): hostile lines before and after the token is proved', () => {
  test('each hostile line before the hello closes that connection; the server still answers a hello', async () => {
    const logs: string[] = [];
    const server = new NodeServer({ expected: 2, token: 'tok', port: 0, bindAddress: '127.0.0.1', log: (l) => logs.push(l) });
    const port = await server.listen();
    try {
      for (const line of HOSTILE) {
        const got = await probe(port, [line]);
        assert.ok(got.closed, `${line}: the connection stayed open`);
      }
      const hello = { t: 'node/hello', nonce: randomBytes(16).toString('hex'), hostname: 'h', pid: 1, index: 1, slots: 1, devices: [0], gpus: ['G'], ncclVersion: '2', simulated: true };
      // Waited for (up to 10 s), not given 500 ms: a loaded machine may run this process late.
      const got = await probe(port, [JSON.stringify(hello)], 10_000, /node\/challenge/);
      assert.match(got.text, /node\/challenge/);
    } finally {
      server.close();
    }
  });

  test('after the token is proved, hostile lines are logged and the node stays joined', async () => {
    const logs: string[] = [];
    const token = 'tok2';
    const server = new NodeServer({ expected: 2, token, port: 0, bindAddress: '127.0.0.1', log: (l) => logs.push(l) });
    const port = await server.listen();
    const s = net.connect(port, '127.0.0.1');
    try {
      await new Promise<void>((r) => s.once('connect', () => r()));
      let buf = '';
      const next = (): Promise<Record<string, unknown>> =>
        new Promise((resolve) => {
          const take = (): boolean => {
            const nl = buf.indexOf('\n');
            if (nl < 0) return false;
            const line = buf.slice(0, nl);
            buf = buf.slice(nl + 1);
            resolve(JSON.parse(line) as Record<string, unknown>);
            return true;
          };
          if (take()) return;
          const on = (d: Buffer): void => {
            buf += d.toString();
            if (take()) s.off('data', on);
          };
          s.on('data', on);
        });
      const nonce = randomBytes(16).toString('hex');
      s.write(JSON.stringify({ t: 'node/hello', nonce, hostname: 'h', pid: 1, index: 1, slots: 1, devices: [0], gpus: ['G'], ncclVersion: '2', simulated: true }) + '\n');
      const challenge = await next();
      assert.equal(challenge.t, 'node/challenge');
      s.write(JSON.stringify({ t: 'node/auth', proof: tokenProof(token, 'node', String(challenge.nonce)) }) + '\n');
      assert.equal((await next()).t, 'node/welcome');
      s.write([...HOSTILE, '{"t":"node/exit","rank":null,"code":1,"signal":null}', '{"t":"node/log","rank":0,"line":null}'].join('\n') + '\n');
      // Until the server has read them all (up to 10 s), not a fixed 300 ms.
      const malformed = (): number => logs.filter((l) => /sent a malformed message/.test(l)).length;
      for (const until = Date.now() + 10_000; malformed() < HOSTILE.length + 2 && Date.now() < until; ) await new Promise((r) => setTimeout(r, 20));
      await new Promise((r) => setTimeout(r, 50)); // a drop would follow the last line at once
      assert.ok(!s.destroyed, 'the joined node was dropped');
      assert.equal(server.nodes.length, 1);
      assert.ok(logs.filter((l) => /sent a malformed message/.test(l)).length >= HOSTILE.length, logs.join('\n'));
    } finally {
      s.destroy();
      server.close();
    }
  });
});

describe('launched rank 0 on 0.0.0.0 with COMMCOST_TOKEN set', { skip: NOT_BUILT }, () => {
  test('hostile lines before the token is proved never crash it: it still answers a hello', { timeout: 30_000 }, async () => {
    const port = await freePort();
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'commcost-launched-'));
    const agent = path.join(__dirname, '..', '..', 'dist', 'agent.js');
    const rank0 = spawn(process.execPath, [agent, 'rank', '--simulate', '--experiments', 'init', '--deadline', '20', '--out', path.join(dir, 'run.jsonl')], {
      env: { ...process.env, COMMCOST_RANK: '0', COMMCOST_WORLD_SIZE: '2', COMMCOST_PORT: String(port), COMMCOST_TOKEN: 'launched-secret', COMMCOST_SIM_INIT_MS: '5' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    rank0.stderr.on('data', (d) => (stderr += d.toString()));
    const exited = new Promise<number | null>((r) => rank0.on('exit', (c) => r(c)));
    try {
      // Wait until it listens (its start-up line comes before the listen: a fixed sleep after it
      // was too short on a loaded machine).
      await waitListening(rank0.pid!, port, 20_000, () => rank0.exitCode !== null).catch((e: Error) => {
        throw new Error(`${e.message}: ${stderr.slice(-1500)}`);
      });
      for (const line of HOSTILE) await probe(port, [line], 300);
      const hello = { t: 'node/hello', nonce: randomBytes(16).toString('hex'), hostname: 'h', pid: 1, fixedRank: 1, worldSize: 2, slots: 1, devices: [0], gpus: ['G'], ncclVersion: '2', simulated: true };
      const got = await probe(port, [JSON.stringify(hello)], 10_000, /node\/challenge/);
      assert.equal(rank0.exitCode, null, `rank 0 exited: ${stderr.slice(-1500)}`);
      assert.match(got.text, /node\/challenge/, stderr.slice(-1500));
      assert.doesNotMatch(stderr, /TypeError|Cannot read properties/);
    } finally {
      rank0.kill('SIGTERM');
      await exited;
    }
  });
});

describe('barrier server: hostile frames', () => {
  test('junk, a wrong secret and a rank out of range close the connection; a good hello still arrives', async () => {
    const errors: string[] = [];
    const token = randomBytes(16).toString('hex');
    const b = new BarrierServer({ worldSize: 2, token, onProtocolError: (m) => errors.push(m) });
    const port = await b.listen();
    try {
      for (const frame of [Buffer.from('null\n'), Buffer.alloc(64, 0xff), barrierHello(0, 'x'.repeat(32)), barrierHello(7, token)]) {
        const closed = await new Promise<boolean>((resolve) => {
          const s = net.connect(port, '127.0.0.1', () => s.write(frame));
          s.on('error', () => undefined);
          const t = setTimeout(() => (s.destroy(), resolve(false)), 1000);
          s.on('close', () => (clearTimeout(t), resolve(true)));
        });
        assert.ok(closed, `frame ${frame.subarray(0, 8).toString('hex')} left the connection open`);
      }
      assert.ok(errors.length >= 4, errors.join('\n'));
    } finally {
      b.close();
    }
  });
});

describe('stdin commands', { skip: NOT_BUILT }, () => {
  test('null, 42, [] and {"t":null} on stdin are BAD_COMMAND errors, and the agent still runs a run', { timeout: 60_000 }, async () => {
    const runs = trackedRuns();
    try {
      const r = runs.track(startAgent({ iterations: 1, warmup: 0 }));
      for (const line of ['null', '42', '[]', '{"t":null}', '{"type":null}', '{"type":"run/start","options":null}']) r.child.stdin!.write(line + '\n');
      const done = await r.waitFor(is('run/done'), 40_000);
      assert.equal(done.status, 'complete');
      assert.ok(r.events.filter((e) => e.type === 'run/error' && e.code === 'BAD_COMMAND').length >= 5);
    } finally {
      runs.cleanup();
    }
  });
});
