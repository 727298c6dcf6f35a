/**
 * The one-command launch script (client/quickLaunch.ts) run by a local sh, with HOME set to a
 * temporary folder standing for the host's: it starts the agent only when Node ≥ 18 is found and
 * every deployed file matches the payload's sha256, and otherwise says why on one marker line.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, describe, test } from 'node:test';
import type { AgentPayload } from '../../client/deploy';
import { launchArgv, parseMarker, parsePrepared } from '../../client/quickLaunch';

const home = fs.mkdtempSync(path.join(os.tmpdir(), 'commcost-quick-'));
after(() => fs.rmSync(home, { recursive: true, force: true }));
const sha = (b: string) => createHash('sha256').update(b).digest('hex');

/** A fake node: `-v` prints `version`; otherwise it prints the script it was asked to run. */
function fakeNode(version: string): string {
  const p = path.join(home, `node-${version}`);
  fs.writeFileSync(p, `#!/bin/sh\nif [ "$1" = -v ]; then echo ${version}; else echo "AGENT-RAN $1"; fi\n`, { mode: 0o755 });
  return p;
}

function deploy(hash: string, files: Record<string, string>): AgentPayload {
  const dir = path.join(home, '.cache', 'commcost', hash);
  for (const [rel, body] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(dir, rel)), { recursive: true });
    fs.writeFileSync(path.join(dir, rel), body);
  }
  return { hash, files: Object.entries(files).map(([rel, body]) => ({ rel, abs: '', sha256: sha(body), size: body.length })) } as AgentPayload;
}

function launch(payload: AgentPayload, node: string | undefined, pathEnv = '/usr/bin:/bin'): string[] {
  const [cmd, ...args] = launchArgv(payload, node);
  assert.equal(cmd, 'sh');
  const r = spawnSync('/bin/sh', args, { env: { HOME: home, PATH: pathEnv }, encoding: 'utf8', timeout: 20_000 });
  assert.equal(r.status, 0, r.stderr);
  return r.stdout.split('\n').filter(Boolean);
}

describe('one-command launch of a deployed agent', () => {
  const files = { 'agent.js': 'console.log(1)\n', 'native/commcost.node': 'binary' };

  test('deployed and Node 20: the marker, then the agent runs from the deployed folder', () => {
    const p = deploy('aaaa000000000001', files);
    const node = fakeNode('v20.11.1');
    const [marker, agentLine] = launch(p, node);
    const m = parseMarker(marker!);
    assert.deepEqual(m, { launched: true, node: { path: node, version: 'v20.11.1' }, remoteDir: path.join(home, '.cache', 'commcost', 'aaaa000000000001') });
    assert.equal(agentLine, `AGENT-RAN ${path.join(home, '.cache', 'commcost', 'aaaa000000000001', 'agent.js')}`);
  });

  test('Node found on the PATH of sh -c when no path is given', () => {
    const p = deploy('aaaa000000000002', files);
    const bin = path.join(home, 'bin2');
    fs.mkdirSync(bin, { recursive: true });
    fs.copyFileSync(fakeNode('v22.1.0'), path.join(bin, 'node'));
    fs.chmodSync(path.join(bin, 'node'), 0o755);
    const [marker] = launch(p, undefined, `${bin}:/usr/bin:/bin`);
    assert.equal(parseMarker(marker!)?.launched, true, marker);
  });

  test('a changed or missing file, a folder not deployed, an old or absent Node: not launched, with why', () => {
    const p = deploy('aaaa000000000003', files);
    fs.writeFileSync(path.join(home, '.cache', 'commcost', 'aaaa000000000003', 'native', 'commcost.node'), 'tampered');
    const changed = launch(p, fakeNode('v20.11.1'));
    assert.ok(!changed.some((l) => l.startsWith('AGENT-RAN')), 'nothing runs after a not-launched marker');
    assert.deepEqual(parseMarker(changed[0]!), { launched: false, reason: 'not deployed or changed', node: { path: fakeNode('v20.11.1'), version: 'v20.11.1' } });
    // What the deploy needs, from the same command: the folder and the files already in place.
    const prepared = parsePrepared(changed.slice(1));
    assert.equal(prepared?.remoteDir, path.join(home, '.cache', 'commcost', 'aaaa000000000003'));
    assert.deepEqual([...prepared!.present], ['agent.js'], 'the tampered file is not in place');
    assert.deepEqual(prepared!.mkdirFailed, []);

    const missing = { hash: 'aaaa00000000000f', files: p.files } as AgentPayload;
    const notDeployed = launch(missing, fakeNode('v20.11.1'));
    assert.equal((parseMarker(notDeployed[0]!) as { reason: string }).reason, 'not deployed');
    const made = parsePrepared(notDeployed.slice(1));
    assert.equal(made?.present.size, 0);
    assert.ok(fs.statSync(path.join(home, '.cache', 'commcost', 'aaaa00000000000f', 'native')).isDirectory(), 'the payload subfolders are made for the upload');

    const fresh = deploy('aaaa000000000004', files);
    const old = launch(fresh, fakeNode('v16.20.0'));
    assert.deepEqual(parseMarker(old[0]!), { launched: false, reason: 'node v16.20.0 is not usable', node: { path: fakeNode('v16.20.0'), version: 'v16.20.0' } });
    assert.equal(old.length, 1);

    const none = launch(fresh, undefined, '/nonexistent');
    assert.equal((parseMarker(none[0]!) as { reason: string }).reason, 'no node on the PATH of sh -c');
  });

  test('a line that is not a marker is not taken for one', () => {
    assert.equal(parseMarker('Welcome to the cluster'), undefined);
    assert.equal(parseMarker('COMMCOST-LAUNCH\tonly-two'), undefined);
  });
});
