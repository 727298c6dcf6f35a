/**
 * A run over several hosts on one machine: three network namespaces (test/support/netns.ts), each
 * with its own OpenSSH server, two simulated GPUs each, reached from here over SSH exactly as
 * real hosts are. The coordinator runs on the first; the others join it over TCP across the
 * namespaces; the simulated NCCL's rendezvous crosses them too. Then a link is cut mid-run.
 * Needs root, iproute2 and sshd; skipped with the reason otherwise.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { RunOptions } from '../../protocol/events';
import type { RunFile } from '../../protocol/runFile';
import { runMeasurement } from '../../client/runSession';
import { NOT_BUILT, privateAgentCopy } from '../support/agentHarness';
import { createNetnsHosts, netnsMissingReason, type NetnsLab } from '../support/netns';
import { sshdMissingReason, startSshServer, type SshServer } from '../support/sshServer';

const reason = NOT_BUILT || netnsMissingReason() || sshdMissingReason();
const skip = reason ? String(reason) : false;

let lab: NetnsLab | undefined;
const servers: SshServer[] = [];
let sshConfigPath = '';
let knownHostsPath = '';
let agentDir = '';
const aliases: string[] = [];

/** Agent processes (deployed agent.js) living in the lab's namespaces. */
function agentsInLab(): string[] {
  const found: string[] = [];
  for (const h of lab?.hosts ?? []) {
    let pids: string[] = [];
    try {
      pids = execFileSync('ip', ['netns', 'pids', h.netns], { encoding: 'utf8' }).split('\n').filter(Boolean);
    } catch {
      continue;
    }
    for (const pid of pids) {
      try {
        const cmd = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ');
        if (cmd.includes('agent.js')) found.push(`${h.name}: ${pid} ${cmd.trim()}`);
      } catch {
        /* gone */
      }
    }
  }
  return found;
}

async function noAgentsWithin(ms: number): Promise<string[]> {
  const until = Date.now() + ms;
  let left = agentsInLab();
  while (left.length > 0 && Date.now() < until) {
    await new Promise((r) => setTimeout(r, 200));
    left = agentsInLab();
  }
  return left;
}

const OPTIONS: RunOptions = { experiments: ['init', 'split'], iterations: 2, warmup: 0, deadlineSeconds: 10, simulate: true, ranks: 2 };

function measure(options: RunOptions, logs: string[], signal?: AbortSignal, onRun?: (r: RunFile) => void): Promise<RunFile> {
  return runMeasurement(
    { target: aliases[0]!, moreTargets: aliases.slice(1), options, sshConfigPath, knownHostsPath, agentDir },
    { onRun: (r) => onRun?.(r), onLog: (l) => logs.push(l) },
    signal,
  );
}

describe('a run over three SSH hosts (network namespaces), two simulated GPUs each', { skip }, () => {
  before(async () => {
    lab = await createNetnsHosts(3);
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'commcost-multihost-'));
    let config = '';
    let known = '';
    for (const [i, h] of lab.hosts.entries()) {
      const s = await startSshServer({ netns: h.netns, listenAddress: h.address });
      servers.push(s);
      aliases.push(`ns-host${i}`);
      config += `Host ns-host${i}\n  HostName ${s.address}\n  Port ${s.port}\n  User ${s.user}\n  IdentityFile ${s.keyPath}\n`;
      known += fs.readFileSync(s.knownHostsPath, 'utf8');
    }
    sshConfigPath = path.join(dir, 'config');
    knownHostsPath = path.join(dir, 'known_hosts');
    fs.writeFileSync(sshConfigPath, config);
    fs.writeFileSync(knownHostsPath, known);
    agentDir = privateAgentCopy();
  });
  after(async () => {
    for (const s of servers) await s.stop();
    lab?.destroy();
    if (agentDir) fs.rmSync(agentDir, { recursive: true, force: true });
  });

  test('6 ranks on 3 hosts: placed in host order, split reports intra-node vs inter-node, nothing left on any host', { timeout: 120_000 }, async () => {
    const logs: string[] = [];
    const run = await measure(OPTIONS, logs);
    assert.equal(run.status, 'complete', `${JSON.stringify(run.errors)}\n${logs.slice(-30).join('\n')}`);
    assert.equal(run.ranks, 6);
    assert.equal(run.host, aliases.join('+'), 'the run is named by its hosts, as an entry of commcost.hosts would name them');
    assert.equal(run.simulated, true);
    assert.deepEqual(run.nodes?.map((n) => n.ranks), [[0, 1], [2, 3], [4, 5]]);
    // The address each node is reached at is its namespace's own.
    assert.deepEqual(run.nodes?.map((n) => n.address), lab!.hosts.map((h) => h.address));
    const split = run.experiments.find((e) => e.experiment === 'split');
    assert.deepEqual(split?.variants.map((v) => v.variant).sort(), ['halves/splitShare=0', 'halves/splitShare=1', 'inter-node/splitShare=0', 'inter-node/splitShare=1', 'intra-node/splitShare=0', 'intra-node/splitShare=1', 'whole/splitShare=0', 'whole/splitShare=1']);
    for (const v of split!.variants) assert.ok(v.steps.find((s) => s.step === 'total')!.stats.median > 0, v.variant);
    assert.ok(logs.some((l) => /ns-host1 \(.*\) joined the coordinator at \d+\.\d+\.\d+\.\d+ with 2 rank\(s\)/.test(l)), logs.join('\n'));
    assert.deepEqual(await noAgentsWithin(10_000), []);
  });

  test('a link cut mid-run: the run ends partial naming the lost host, what was measured is kept, no agent is left anywhere', { timeout: 120_000 }, async () => {
    const logs: string[] = [];
    let cut = false;
    const started = Date.now();
    let cutAt = 0;
    const run = await measure({ ...OPTIONS, experiments: ['init', 'split', 'destroy'], iterations: 30 }, logs, undefined, (r) => {
      const init = r.experiments.find((e) => e.experiment === 'init');
      if (!cut && init && init.done >= 3) {
        cut = true;
        cutAt = Date.now();
        lab!.cut(2);
      }
    });
    const took = Date.now() - cutAt;
    assert.ok(cut, `the run never reached 3 iterations: ${logs.slice(-20).join('\n')}`);
    assert.equal(run.status, 'partial', JSON.stringify(run.errors));
    const error = run.errors.find((e) => e.code === 'NODE_LOST' || e.code === 'TIMEOUT');
    assert.ok(error, `errors: ${JSON.stringify(run.errors)}`);
    // The user is told which host went quiet: the cut one, by its address.
    assert.match(error.message, new RegExp(`${lab!.hosts[2]!.address.replace(/\./g, '\\.')}`), error.message);
    assert.ok(run.experiments.some((e) => Object.values(e.samples).some((v) => Object.values(v).some((s) => s.length > 0))), 'samples measured before the cut are kept');
    process.stderr.write(`link cut: run ended ${took} ms after the cut (${error.code}: ${error.message}); whole run ${Date.now() - started} ms\n`);
    lab!.restore(2);
    // The cut host's agent hears no coordinator and ends itself (its ranks with it).
    assert.deepEqual(await noAgentsWithin(20_000), []);
  });

  test('a host killed mid-run (every agent process on it SIGKILLed): the run ends partial naming it, nothing left', { timeout: 120_000 }, async () => {
    const logs: string[] = [];
    let killed = false;
    let killedAt = 0;
    const host = lab!.hosts[1]!;
    const run = await measure({ ...OPTIONS, experiments: ['init', 'split'], iterations: 30 }, logs, undefined, (r) => {
      const init = r.experiments.find((e) => e.experiment === 'init');
      if (!killed && init && init.done >= 3) {
        killed = true;
        killedAt = Date.now();
        for (const line of execFileSync('ip', ['netns', 'pids', host.netns], { encoding: 'utf8' }).split('\n').filter(Boolean)) {
          try {
            if (fs.readFileSync(`/proc/${line}/cmdline`, 'utf8').includes('agent.js')) process.kill(Number(line), 'SIGKILL');
          } catch {
            /* already gone */
          }
        }
      }
    });
    const took = Date.now() - killedAt;
    assert.ok(killed, logs.slice(-20).join('\n'));
    assert.equal(run.status, 'partial', JSON.stringify(run.errors));
    const error = run.errors.find((e) => e.code === 'NODE_LOST' || e.code === 'RANK_EXITED');
    assert.ok(error, JSON.stringify(run.errors));
    assert.match(error.message, new RegExp(host.address.replace(/\./g, '\\.')), error.message);
    process.stderr.write(`host killed: run ended ${took} ms after the kill (${error.code}: ${error.message})\n`);
    assert.ok(took < 10_000, `a killed host is noticed at once (its connections close), not at the deadline: ${took} ms`);
    assert.deepEqual(await noAgentsWithin(15_000), []);
  });
});

describe('several hosts over loopback SSH (no namespaces needed)', { skip: NOT_BUILT || sshdMissingReason() || false }, () => {
  let server: SshServer;
  let dir = '';
  before(async () => {
    server = await startSshServer();
    dir = privateAgentCopy();
  });
  after(async () => {
    await server?.stop();
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });
  const base = (): { target: string; sshConfigPath: string; knownHostsPath: string; agentDir: string } => ({ target: server.alias, sshConfigPath: server.sshConfigPath, knownHostsPath: server.knownHostsPath, agentDir: dir });

  test('two agents, one rank each: the second joins the first at one of its discovered addresses', { timeout: 120_000 }, async () => {
    const logs: string[] = [];
    const run = await runMeasurement({ ...base(), moreTargets: [server.alias], options: { ...OPTIONS, experiments: ['init'], ranks: 1 } }, { onRun: () => undefined, onLog: (l) => logs.push(l) });
    assert.equal(run.status, 'complete', `${JSON.stringify(run.errors)}\n${logs.slice(-20).join('\n')}`);
    assert.deepEqual(run.nodes?.map((n) => n.ranks), [[0], [1]]);
    assert.ok(logs.some((l) => /joined the coordinator at \S+ with 1 rank\(s\)/.test(l)), logs.join('\n'));
  });

  test('a host that cannot be reached: the run fails at once, naming it; nothing is measured', { timeout: 60_000 }, async () => {
    const started = Date.now();
    const run = await runMeasurement({ ...base(), moreTargets: ['127.0.0.1:1'], options: { ...OPTIONS, experiments: ['init'], ranks: 1, deadlineSeconds: 30 } }, { onRun: () => undefined, onLog: () => undefined });
    const took = Date.now() - started;
    assert.equal(run.status, 'failed', JSON.stringify(run.errors));
    const hostError = run.errors.find((e) => e.where.host === '127.0.0.1:1');
    assert.ok(hostError, JSON.stringify(run.errors));
    assert.match(hostError.message, /host 127\.0\.0\.1:1 cannot join the run/);
    assert.equal(hostError.code, 'HOST_UNREACHABLE');
    assert.ok(took < 20_000, `the run ended ${took} ms after it started, not at the 30 s deadline`);
  });
});
