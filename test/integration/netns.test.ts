// Several "hosts" on one machine: Linux network namespaces on a bridge (test/support/netns.ts),
// each with its own address, an OpenSSH server per namespace, and the simulated NCCL's rendezvous
// across namespaces (COMMCOST_SIM_ADDR). Needs root and iproute2; skipped with the reason otherwise.
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { connect } from 'node:net';
import { join, resolve } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { resolveTarget, type SshTarget } from '../../client/hosts';
import { SshSession } from '../../client/sshSession';
import { createNetnsHosts, netnsMissingReason, type NetnsLab } from '../support/netns';
import { sshdMissingReason, startSshServer, type SshServer } from '../support/sshServer';

const root = resolve(__dirname, '..', '..');
const addonPath = join(root, 'dist', 'native', 'commcost.node');
const simPath = join(root, 'dist', 'native', 'libnccl-sim.so');
const netnsSupport = join(root, 'test', 'support', 'netns.ts');

const missing = netnsMissingReason();
const skip = missing ? `skipped: ${missing}` : false;
if (missing) process.stderr.write(`netns integration tests ${skip}\n`);
const sshMissing = sshdMissingReason();
const skipSsh = skip || (sshMissing ? `skipped: ${sshMissing}` : false);
const notBuilt = existsSync(addonPath) && existsSync(simPath) ? undefined : `${addonPath} or ${simPath} is missing (node native/build.mjs)`;
const skipNative = skip || (notBuilt ? `skipped: ${notBuilt}` : false);

type Probe = 'open' | 'timeout' | `error:${string}`;

/** TCP connect to host:port; 'open' only when an SSH banner comes back within `timeoutMs`. */
function probe(host: string, port: number, timeoutMs: number): Promise<Probe> {
  return new Promise((done) => {
    const s = connect(port, host);
    const timer = setTimeout(() => finish('timeout'), timeoutMs);
    function finish(r: Probe): void {
      clearTimeout(timer);
      s.destroy();
      done(r);
    }
    s.once('data', (d) => finish(d.toString().startsWith('SSH-') ? 'open' : 'error:not ssh'));
    s.once('error', (e: NodeJS.ErrnoException) => finish(`error:${e.code ?? e.message}`));
  });
}

async function waitOpen(host: string, port: number, withinMs: number): Promise<Probe> {
  const until = Date.now() + withinMs;
  let last: Probe = 'timeout';
  while (Date.now() < until) {
    last = await probe(host, port, 1_000);
    if (last === 'open') return last;
    await new Promise((r) => setTimeout(r, 100));
  }
  return last;
}

/** Same probe, run by Node inside a namespace: prints open / timeout / error:CODE. */
const probeScript = `
const s = require('net').connect(Number(process.argv[2]), process.argv[1]);
const t = setTimeout(() => { console.log('timeout'); process.exit(0); }, 3000);
s.once('data', (d) => { console.log(d.toString().startsWith('SSH-') ? 'open' : 'error:not ssh'); process.exit(0); });
s.once('error', (e) => { console.log('error:' + (e.code || e.message)); process.exit(0); });
`;

/** One rank: load the simulated NCCL, rank 0 makes the id (stdout "ID <base64>"), rank 1 reads it from stdin. */
const rankScript = `
const a = require(process.env.CC_ADDON);
const sim = process.env.CC_SIM;
const rank = Number(process.env.CC_RANK);
async function readId() {
  let buf = '';
  for await (const chunk of process.stdin) {
    buf += chunk;
    const nl = buf.indexOf('\\n');
    if (nl >= 0) return Buffer.from(buf.slice(0, nl), 'base64');
  }
  throw new Error('stdin closed before the unique id came');
}
(async () => {
  a.load({ ncclPath: sim, cudaPath: sim });
  await a.initDevice(0, 1 << 20);
  let id;
  if (rank === 0) {
    id = (await a.getUniqueId()).id;
    process.stdout.write('ID ' + id.toString('base64') + '\\n');
  } else {
    id = await readId();
  }
  const { comm } = await a.commInitRank(2, id, rank);
  const r = await a.allReduce(comm, 4096);
  process.stdout.write('DONE ' + JSON.stringify({ rank, ms: r.ms }) + '\\n');
  process.exit(0);
})().catch((e) => {
  process.stderr.write('RANK_ERROR ' + JSON.stringify({ message: e.message, code: e.code, call: e.call, result: e.result, lastError: e.lastError }) + '\\n');
  process.exit(1);
});
`;

interface RankProc {
  child: ChildProcess;
  stdout: () => string;
  stderr: () => string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Resolves with the first stdout line starting with `prefix` (rejects on exit or after `ms`). */
  line(prefix: string, ms: number): Promise<string>;
}

function startRank(lab: NetnsLab, host: number, rank: number, env: Record<string, string>): RankProc {
  const child = lab.exec(host, process.execPath, ['-e', rankScript], {
    env: {
      ...process.env,
      CC_ADDON: addonPath,
      CC_SIM: simPath,
      CC_RANK: String(rank),
      UV_THREADPOOL_SIZE: '1',
      COMMCOST_SIM_JITTER: '0.02',
      ...env,
    },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  child.stdin!.on('error', () => {});
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((res) =>
    child.once('close', (code, signal) => res({ code, signal })),
  );
  return {
    child,
    stdout: () => out,
    stderr: () => err,
    exited,
    line(prefix, ms) {
      return new Promise((res, rej) => {
        const check = (): boolean => {
          const l = out.split('\n').find((x) => x.startsWith(prefix));
          if (l === undefined) return false;
          cleanup();
          res(l);
          return true;
        };
        const onData = (): void => void check();
        const onClose = (): void => {
          if (!check()) {
            cleanup();
            rej(new Error(`rank ${rank} exited before "${prefix}": ${err}`));
          }
        };
        const timer = setTimeout(() => {
          cleanup();
          rej(new Error(`rank ${rank}: no "${prefix}" within ${ms} ms: ${err}`));
        }, ms);
        function cleanup(): void {
          clearTimeout(timer);
          child.stdout!.off('data', onData);
          child.off('close', onClose);
        }
        if (check()) return;
        child.stdout!.on('data', onData);
        child.once('close', onClose);
      });
    },
  };
}

async function killRank(r: RankProc | undefined): Promise<void> {
  if (!r) return;
  if (r.child.exitCode === null && r.child.signalCode === null) r.child.kill('SIGKILL');
  await r.exited;
}

/** The address and port a simulated unique id carries (IdLayout in native/sim/ncclsim_internal.h). */
function idAddress(id: Buffer): { magic: number; address: string; port: number } {
  return { magic: id.readUInt32LE(0), address: [...id.subarray(4, 8)].join('.'), port: id.readUInt16LE(8) };
}

/** True when `pid` is gone or a zombie. */
function gone(pid: number): boolean {
  try {
    return readFileSync(`/proc/${pid}/stat`, 'utf8').replace(/^.*\) /s, '').startsWith('Z');
  } catch {
    return true;
  }
}

async function waitGone(pids: number[], ms: number): Promise<number[]> {
  const until = Date.now() + ms;
  let alive = pids.filter((p) => !gone(p));
  while (alive.length > 0 && Date.now() < until) {
    await new Promise((r) => setTimeout(r, 50));
    alive = alive.filter((p) => !gone(p));
  }
  return alive;
}

function ipOut(args: string[]): Promise<string> {
  return new Promise((res, rej) => {
    const c = spawn('ip', args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    c.stdout.on('data', (d: Buffer) => (out += d.toString()));
    c.stderr.on('data', (d: Buffer) => (err += d.toString()));
    c.once('error', rej);
    c.once('close', (code) => (code === 0 ? res(out) : rej(new Error(`ip ${args.join(' ')}: ${err}`))));
  });
}

function labNames(lab: NetnsLab): { netns: string[]; links: string[] } {
  return { netns: lab.hosts.map((h) => h.netns), links: [lab.bridge, ...lab.hosts.map((h) => h.veth)] };
}

async function assertLabGone(names: { netns: string[]; links: string[] }): Promise<void> {
  const nsList = (await ipOut(['netns', 'list'])).split('\n').map((l) => l.split(/\s+/)[0]);
  for (const ns of names.netns) assert.ok(!nsList.includes(ns), `namespace ${ns} still listed: ${nsList.join(', ')}`);
  const links = await ipOut(['-o', 'link', 'show']);
  for (const l of names.links) assert.ok(!new RegExp(`^\\d+: ${l}[:@]`, 'm').test(links), `link ${l} still there`);
  // The namespace ends of the veths (…p<i>) must not have leaked into the root namespace either.
  for (const l of names.links) {
    const peer = l.replace(/v(\d+)$/, 'p$1');
    assert.ok(!new RegExp(`^\\d+: ${peer}[:@]`, 'm').test(links), `link ${peer} still there`);
  }
}

describe('network-namespace hosts', { skip }, () => {
  let lab: NetnsLab | undefined;
  const servers: SshServer[] = [];
  const sessions: SshSession[] = [];

  before(async () => {
    lab = await createNetnsHosts(3);
    if (!sshMissing) {
      for (const h of lab.hosts) servers.push(await startSshServer({ netns: h.netns, listenAddress: h.address }));
    }
  });

  after(async () => {
    for (const s of sessions) s.dispose();
    for (const s of servers) await s.stop();
    lab?.destroy();
  });

  test('each host has its own address; the root namespace and every host reach each other', { skip: skipSsh, timeout: 60_000 }, async () => {
    const l = lab!;
    assert.equal(l.hosts.length, 3);
    assert.equal(new Set(l.hosts.map((h) => h.address)).size, 3);
    assert.equal(new Set(l.hosts.map((h) => h.netns)).size, 3);
    for (const h of l.hosts) assert.ok(h.veth.length <= 15 && h.peer.length <= 15 && l.bridge.length <= 15, h.veth);
    for (let i = 0; i < 3; i++) {
      assert.equal(await probe(servers[i]!.address, servers[i]!.port, 3_000), 'open', `root -> host${i}`);
      // From host i to the other two hosts (namespace to namespace, across the bridge).
      for (let j = 0; j < 3; j++) {
        if (j === i) continue;
        const r = await l.run(i, process.execPath, ['-e', probeScript, servers[j]!.address, String(servers[j]!.port)], { timeoutMs: 15_000 });
        assert.equal(r.code, 0, r.stderr);
        assert.equal(r.stdout.trim(), 'open', `host${i} -> host${j}`);
      }
    }
  });

  test('an sshd in each namespace: ssh2 reaches each one and the command runs inside that namespace', { skip: skipSsh, timeout: 60_000 }, async () => {
    const l = lab!;
    for (let i = 0; i < 3; i++) {
      const h = l.hosts[i]!;
      const server = servers[i]!;
      assert.equal(server.address, h.address);
      assert.match(readFileSync(server.sshConfigPath, 'utf8'), new RegExp(`HostName ${h.address.replace(/\./g, '\\.')}\\n`));
      assert.equal(readFileSync(server.knownHostsPath, 'utf8').split(' ')[0], `[${h.address}]:${server.port}`);
      const target = (await resolveTarget(server.alias, { sshConfigPath: server.sshConfigPath })) as SshTarget;
      assert.equal(target.hostname, h.address);
      const session = await SshSession.connect(target, { knownHostsPath: server.knownHostsPath, agentSocket: '' });
      sessions.push(session);
      const r = await session.run(['sh', '-c', 'ip -4 -o addr show; readlink /proc/self/ns/net']);
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stdout, new RegExp(`inet ${h.address.replace(/\./g, '\\.')}/24 `));
      for (const other of l.hosts) if (other !== h) assert.ok(!r.stdout.includes(`inet ${other.address}/`), r.stdout);
      // The very namespace: /proc/self/ns/net of the remote shell is the inode behind /run/netns/<name>.
      const inode = statSync(`/run/netns/${h.netns}`).ino;
      assert.ok(r.stdout.includes(`net:[${inode}]`), `expected net:[${inode}] in ${r.stdout}`);
    }
  });

  test('the simulated NCCL rendezvous crosses namespaces with COMMCOST_SIM_ADDR, and not without it', { skip: skipNative, timeout: 60_000 }, async () => {
    const l = lab!;
    const h0 = l.hosts[0]!;
    let r0: RankProc | undefined;
    let r1: RankProc | undefined;
    try {
      // With COMMCOST_SIM_ADDR: rank 0 in host0 serves the rendezvous on host0's address.
      r0 = startRank(l, 0, 0, { COMMCOST_SIM_ADDR: h0.address });
      const idLine = await r0.line('ID ', 20_000);
      const id = Buffer.from(idLine.slice(3), 'base64');
      assert.equal(id.length, 128);
      const carried = idAddress(id);
      assert.equal(carried.magic, 0x4d495343);
      assert.equal(carried.address, h0.address);
      assert.ok(carried.port > 0);
      r1 = startRank(l, 1, 1, {});
      r1.child.stdin!.end(idLine.slice(3) + '\n');
      const [e0, e1] = await Promise.all([r0.exited, r1.exited]);
      assert.deepEqual(e0, { code: 0, signal: null }, r0.stderr());
      assert.deepEqual(e1, { code: 0, signal: null }, r1.stderr());
      for (const [r, n] of [[r0, 0], [r1, 1]] as const) {
        const done = JSON.parse((await r.line('DONE ', 1_000)).slice(5)) as { rank: number; ms: number };
        assert.equal(done.rank, n);
        assert.ok(done.ms > 0);
      }
    } finally {
      await killRank(r0);
      await killRank(r1);
    }

    // Without it: the id carries 127.0.0.1, which in host1 is host1's own loopback.
    r0 = r1 = undefined;
    try {
      r0 = startRank(l, 0, 0, {});
      const idLine = await r0.line('ID ', 20_000);
      const carried = idAddress(Buffer.from(idLine.slice(3), 'base64'));
      assert.equal(carried.address, '127.0.0.1');
      r1 = startRank(l, 1, 1, {});
      r1.child.stdin!.end(idLine.slice(3) + '\n');
      const deadline = new Promise<'deadline'>((res) => setTimeout(() => res('deadline'), 10_000).unref());
      const e1 = await Promise.race([r1.exited, deadline]);
      assert.notEqual(e1, 'deadline', `rank 1 neither joined nor failed within 10 s: ${r1.stderr()}`);
      if (e1 !== 'deadline') assert.deepEqual(e1, { code: 1, signal: null }, 'rank 1 must not join a rendezvous it cannot reach');
      const errLine = r1.stderr().split('\n').find((x) => x.startsWith('RANK_ERROR '));
      assert.ok(errLine, r1.stderr());
      const err = JSON.parse(errLine.slice(11)) as { call: string; result: number; lastError: string };
      assert.equal(err.call, 'ncclCommInitRank');
      assert.equal(err.result, 6); // ncclRemoteError
      assert.ok(err.lastError.includes(`cannot reach the rendezvous server 127.0.0.1:${carried.port}: Connection refused`), err.lastError);
      // Rank 0 waits forever for rank 1: it must still be blocked (no DONE), then it is killed.
      assert.equal(r0.child.exitCode, null);
      assert.ok(!r0.stdout().includes('DONE'), r0.stdout());
    } finally {
      await killRank(r0);
      await killRank(r1);
    }
    assert.deepEqual(await waitGone([r0!.child.pid!, r1!.child.pid!], 2_000), []);
  });

  test('COMMCOST_SIM_ADDR that is not an address of this namespace fails ncclGetUniqueId with ncclInvalidArgument', { skip: skipNative, timeout: 30_000 }, async () => {
    const l = lab!;
    for (const [value, text] of [
      [l.hosts[1]!.address, 'cannot start the rendezvous server on COMMCOST_SIM_ADDR="' + l.hosts[1]!.address + '"'],
      ['10.0.0.256', 'COMMCOST_SIM_ADDR="10.0.0.256" is not an IPv4 dotted address'],
    ] as const) {
      const r = startRank(l, 0, 0, { COMMCOST_SIM_ADDR: value });
      try {
        const e = await r.exited;
        assert.equal(e.code, 1, r.stdout());
        const line = r.stderr().split('\n').find((x) => x.startsWith('RANK_ERROR '));
        assert.ok(line, r.stderr());
        const err = JSON.parse(line.slice(11)) as { call: string; result: number; lastError: string };
        assert.equal(err.call, 'ncclGetUniqueId');
        assert.equal(err.result, 4); // ncclInvalidArgument
        assert.ok(err.lastError.includes(text), err.lastError);
      } finally {
        await killRank(r);
      }
    }
  });

  test('cut(i) makes host i unreachable within a short deadline; restore(i) brings it back', { skip: skipSsh, timeout: 60_000 }, async () => {
    const l = lab!;
    const [s0, s1] = [servers[0]!, servers[1]!];
    assert.equal(await probe(s1.address, s1.port, 3_000), 'open');
    l.cut(1);
    try {
      const t0 = Date.now();
      const r = await probe(s1.address, s1.port, 1_500);
      assert.notEqual(r, 'open');
      assert.ok(Date.now() - t0 < 3_000);
      // From another namespace as well, while host0 stays reachable.
      const fromHost0 = await l.run(0, process.execPath, ['-e', probeScript, s1.address, String(s1.port)], { timeoutMs: 15_000 });
      assert.notEqual(fromHost0.stdout.trim(), 'open');
      assert.equal(await probe(s0.address, s0.port, 3_000), 'open');
    } finally {
      l.restore(1);
    }
    assert.equal(await waitOpen(s1.address, s1.port, 10_000), 'open');
  });
});

describe('network-namespace lab teardown', { skip }, () => {
  test('destroy() kills what runs inside and removes namespaces, veths and bridge; twice is fine', { timeout: 60_000 }, async () => {
    const lab = await createNetnsHosts(2);
    const names = labNames(lab);
    let server: SshServer | undefined;
    try {
      // Our own child, a grandchild we never see, and (when available) an sshd.
      const direct = lab.exec(0, 'sleep', ['300'], { stdio: 'ignore' });
      const directExit = new Promise((r) => direct.once('exit', r));
      lab.exec(1, 'sh', ['-c', 'sleep 300 & wait'], { stdio: 'ignore' });
      if (!sshMissing) server = await startSshServer({ netns: lab.hosts[1]!.netns, listenAddress: lab.hosts[1]!.address });
      let pids: number[] = [];
      for (let tries = 0; tries < 40 && pids.length < (server ? 4 : 3); tries++) {
        await new Promise((r) => setTimeout(r, 50));
        pids = [];
        for (const h of lab.hosts) pids.push(...(await ipOut(['netns', 'pids', h.netns])).split(/\s+/).filter(Boolean).map(Number));
      }
      assert.ok(pids.length >= (server ? 4 : 3), `processes in the lab: ${pids.join(' ')}`);
      lab.destroy();
      await directExit;
      assert.deepEqual(await waitGone(pids, 3_000), [], 'processes left in the namespaces');
      await assertLabGone(names);
      lab.destroy(); // idempotent
      assert.throws(() => lab.exec(0, 'true'), /destroyed/);
    } finally {
      lab.destroy();
      await server?.stop();
    }
  });

  for (const how of ['uncaught exception', 'SIGTERM'] as const) {
    test(`a process that dies by ${how} leaves no namespace, link or process behind`, { timeout: 60_000 }, async () => {
      const script = `
        const { createNetnsHosts } = require(${JSON.stringify(netnsSupport)});
        createNetnsHosts(2).then((lab) => {
          const sleeper = lab.exec(0, 'sleep', ['300'], { stdio: 'ignore' });
          sleeper.once('spawn', () => {
            console.log(JSON.stringify({ netns: lab.hosts.map((h) => h.netns), links: [lab.bridge, ...lab.hosts.map((h) => h.veth)], sleeper: sleeper.pid }));
            if (${JSON.stringify(how)} === 'uncaught exception') setTimeout(() => { throw new Error('boom'); }, 50);
            else setInterval(() => {}, 1000);
          });
        });`;
      const child = spawn(process.execPath, ['--import', 'tsx', '-e', script], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
      let out = '';
      let err = '';
      child.stdout.on('data', (d: Buffer) => (out += d.toString()));
      child.stderr.on('data', (d: Buffer) => (err += d.toString()));
      const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((r) => child.once('close', (code, signal) => r({ code, signal })));
      try {
        const until = Date.now() + 30_000;
        while (!out.includes('\n') && child.exitCode === null && Date.now() < until) await new Promise((r) => setTimeout(r, 50));
        const info = JSON.parse(out.split('\n')[0]!) as { netns: string[]; links: string[]; sleeper: number };
        assert.equal(info.netns.length, 2, err);
        if (how === 'SIGTERM') child.kill('SIGTERM');
        const e = await exited;
        if (how === 'SIGTERM') assert.deepEqual(e, { code: null, signal: 'SIGTERM' }, err);
        else {
          assert.equal(e.code, 1);
          assert.match(err, /boom/);
        }
        assert.deepEqual(await waitGone([info.sleeper], 3_000), [], 'the sleeper survived');
        await assertLabGone(info);
      } finally {
        if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
        await exited;
      }
    });
  }
});
