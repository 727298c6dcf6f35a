/**
 * Slurm from a login node: the host is reached over SSH (a real OpenSSH server on loopback), the
 * agent there starts the run with `srun` (the stand-in test/support/bin/srun, which gives each
 * task the environment the real one does) and relays rank 0's stream. Checks a complete run, the
 * srun arguments built from the user's options, a missing srun, and Cancel mid-run.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { RunOptions } from '../../protocol/events';
import { runMeasurement, type RunRequest } from '../../client/runSession';
import { srunArgsFor } from '../../client/slurm';
import { NOT_BUILT, privateAgentCopy, processesMatching, psLines, repoRoot, waitGone } from '../support/agentHarness';
import { sshdMissingReason, startSshServer, type SshServer } from '../support/sshServer';

const skip = NOT_BUILT || sshdMissingReason() || false;
const SRUN = path.join(repoRoot, 'test/support/bin/srun');
const options: RunOptions = { experiments: ['init', 'split'], iterations: 2, warmup: 0, deadlineSeconds: 20, simulate: true };

/** A TCP port free now on loopback (the tasks' rank 0 listens there: never the fixed default 29517, which another job may hold). */
async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const srv = net.createServer().listen(0, '127.0.0.1', () => {
      const port = (srv.address() as net.AddressInfo).port;
      srv.close(() => resolve(port));
    });
  });
}

/** `args` plus the export of a free COMMCOST_PORT to the tasks (the stand-in srun honours --export as srun does). */
async function withFreePort(args: string[]): Promise<string[]> {
  return [...args, `--export=ALL,COMMCOST_PORT=${await freePort()}`];
}

describe('Slurm login node over SSH (stand-in srun)', { skip }, () => {
  let server: SshServer;
  let agentDir: string;
  let base: Omit<RunRequest, 'options'>;
  before(async () => {
    server = await startSshServer();
    agentDir = privateAgentCopy();
    base = { target: server.alias, sshConfigPath: server.sshConfigPath, knownHostsPath: server.knownHostsPath, agentDir };
  });
  after(async () => {
    await server?.stop();
    if (agentDir) fs.rmSync(agentDir, { recursive: true, force: true });
  });

  test('srun --nodes=1 --ntasks-per-node=3 …: a complete run of 3 ranks relayed from rank 0, one hello, nothing left', { timeout: 120_000 }, async () => {
    const logs: string[] = [];
    const srunArgs = srunArgsFor({ partition: 'gpu', account: 'proj', nodes: 1, gpusPerNode: 3, time: '0:05:00', extraArgs: ['--qos=debug'] });
    assert.deepEqual(srunArgs, ['--nodes=1', '--ntasks-per-node=3', '--gpus-per-node=3', '--partition=gpu', '--account=proj', '--time=0:05:00', '--qos=debug']);
    const run = await runMeasurement({ ...base, options, slurm: { srunArgs: await withFreePort(srunArgs), srunPath: SRUN } }, { onRun: () => undefined, onLog: (l) => logs.push(l) });
    assert.equal(run.status, 'complete', `${JSON.stringify(run.errors)}\n${logs.slice(-20).join('\n')}`);
    assert.equal(run.ranks, 3);
    assert.equal(run.host, `slurm:${server.alias}`, 'named as the commcost.hosts entry that re-measures it');
    assert.equal(run.simulated, true);
    // The stand-in srun starts every task on this host: one node holding the 3 ranks.
    assert.deepEqual(run.nodes?.map((n) => n.ranks), [[0, 1, 2]]);
    assert.deepEqual(run.experiments.map((e) => [e.experiment, e.state]), [['init', 'finished'], ['split', 'finished']]);
    assert.ok(logs.some((l) => l.includes(`starting the job step: ${SRUN} ${srunArgs.join(' ')} --export=ALL,COMMCOST_PORT=`)), logs.join('\n'));
    assert.ok(logs.some((l) => /rank 0 of 3 \(slurm\)/.test(l)));
    // Rank 0 listened on the free port the test exported, not on the fixed default 29517.
    assert.ok(logs.some((l) => /rank 0 of 3 \(slurm\), coordinator \S+:\d+ \(COMMCOST_PORT\)/.test(l)), logs.filter((l) => /rank 0 of/.test(l)).join('\n'));
    // The run is also on the login node's shared home, next to the deployed agent.
    assert.ok(logs.some((l) => /the run is also written to \S+\/runs\/\S+\.jsonl/.test(l)));
    // Ranks exit on their own after run/done; 15 s as for the cancel below, since a loaded CI
    // machine can take more than the default 5 s to reap three rank processes and their shells.
    const left = await waitGone('agent.js rank', 15_000);
    assert.deepEqual(left, [], `left: ${psLines(left)}`);
  });

  test('a login node without srun: a clear error naming the path and the setting', { timeout: 60_000 }, async () => {
    const run = await runMeasurement({ ...base, options, slurm: { srunArgs: ['--nodes=1'], srunPath: '/nonexistent/srun' } }, { onRun: () => undefined, onLog: () => undefined });
    assert.equal(run.status, 'failed');
    const error = run.errors[0]!;
    assert.equal(error.code, 'BAD_COMMAND');
    assert.match(error.message, /srun not found on .* \(looked for "\/nonexistent\/srun"\)/);
    assert.match(error.hint ?? '', /commcost\.slurm\.srunPath|--srun/);
  });

  test('an srun wrapper whose child keeps the pipes open: the agent ends when srun exits, not when the child does', { timeout: 120_000 }, async () => {
    const wrapper = path.join(agentDir, 'srun-wrapper.sh');
    // A site wrapper that leaves a helper behind holding stdout (the helper is killed below).
    fs.writeFileSync(wrapper, `#!/bin/sh\nsleep 31.5 &\nexec ${SRUN} "$@"\n`, { mode: 0o755 });
    // The agent on the login node, driven over stdin as commcost drives it (stdin stays open).
    const agent = spawn(process.execPath, [path.join(agentDir, 'agent.js')], { stdio: ['pipe', 'pipe', 'pipe'] });
    try {
      let out = '';
      agent.stdout.on('data', (d: Buffer) => (out += d.toString()));
      const exited = new Promise<number>((r) => agent.on('exit', () => r(Date.now())));
      agent.stdin.write(JSON.stringify({ type: 'run/start', options: { ...options, experiments: ['init'] }, slurm: { srunArgs: await withFreePort(srunArgsFor({ gpusPerNode: 2 })), srunPath: wrapper } }) + '\n');
      const until = Date.now() + 60_000;
      while (!out.includes('"run/done"') && Date.now() < until) await new Promise((r) => setTimeout(r, 50));
      const doneAt = Date.now();
      assert.match(out, /"type":"run\/done","status":"complete"/);
      const exitAt = await Promise.race([exited, new Promise<number>((r) => setTimeout(() => r(Infinity), 15_000))]);
      assert.ok(exitAt - doneAt < 5_000, `the agent exited ${exitAt - doneAt} ms after run/done (the helper holds the pipe for 31.5 s)`);
    } finally {
      agent.kill('SIGKILL');
      for (const pid of processesMatching('sleep 31.5')) process.kill(pid, 'SIGKILL');
    }
  });

  test('Cancel mid-run: srun gets SIGTERM, the run ends partial with what was measured, no task left', { timeout: 120_000 }, async () => {
    const controller = new AbortController();
    const run = await runMeasurement(
      { ...base, options: { ...options, iterations: 500 }, slurm: { srunArgs: await withFreePort(srunArgsFor({ gpusPerNode: 2 })), srunPath: SRUN } },
      {
        onRun: (r) => {
          if ((r.experiments[0]?.done ?? 0) >= 3) controller.abort();
        },
        onLog: () => undefined,
      },
      controller.signal,
    );
    assert.equal(run.status, 'partial');
    assert.ok((run.experiments[0]?.samples.default?.call?.length ?? 0) >= 2, JSON.stringify(run.experiments[0]?.samples));
    const left = await waitGone('agent.js rank', 15_000);
    assert.deepEqual(left, [], `left: ${psLines(left)}`);
  });
});
