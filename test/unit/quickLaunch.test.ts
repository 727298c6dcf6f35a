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
import { filesForHost, type AgentPayload, type PayloadFile } from '../../client/deploy';
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

  /** This machine's platform as the payload names it, or undefined where the rule sends every file. */
  const here = ({ 'Linux x86_64': 'linux-x64', 'Linux aarch64': 'linux-arm64' } as Record<string, string>)[`${os.type()} ${os.machine()}`];
  const full = (platforms: string[]): Record<string, string> => ({
    'agent.js': 'console.log(1)\n',
    'native/commcost.node': 'binary',
    ...Object.fromEntries(platforms.map((p) => [`native/${p}/commcost.node`, `prebuilt ${p}`])),
    'native/src/build.json': '{}',
    'native/src/binding.cc': 'int x;',
    'native/include/node-api-headers/node_api.h': '#pragma once',
  });

  test('only what the host needs: with its prebuilt addon, no sources, headers or other platforms are checked, and the agent starts', (t) => {
    if (!here) return t.skip(`no prebuilt platform for ${os.type()} ${os.machine()} (every file is needed there)`);
    const other = here === 'linux-x64' ? 'linux-arm64' : 'linux-x64';
    const payload = deploy('bbbb000000000001', full([here, other]));
    // Remove what the host does not need: the launch still finds everything it checks.
    const dir = path.join(home, '.cache', 'commcost', 'bbbb000000000001', 'native');
    for (const gone of ['src', 'include', other]) fs.rmSync(path.join(dir, gone), { recursive: true });
    const out = launch(payload, fakeNode('v20.11.1'));
    assert.equal((parseMarker(out[0]!) as { launched: boolean }).launched, true, out.join('\n'));

    // Without the host's prebuilt in the payload the sources are needed: their absence stops the launch.
    const noPrebuilt = deploy('bbbb000000000002', full([other]));
    fs.rmSync(path.join(home, '.cache', 'commcost', 'bbbb000000000002', 'native', 'src'), { recursive: true });
    const refused = launch(noPrebuilt, fakeNode('v20.11.1'));
    assert.equal((parseMarker(refused[0]!) as { reason: string }).reason, 'not deployed or changed');
    const prepared = parsePrepared(refused.slice(1))!;
    assert.equal(prepared.platform, here);
    assert.ok(!prepared.present.has('native/src/binding.cc'));
    assert.ok(prepared.present.has('native/include/node-api-headers/node_api.h'));
    assert.ok(!prepared.present.has(`native/${other}/commcost.node`), "another platform's prebuilt is not even checked");
  });

  test('filesForHost: the platform\'s prebuilt replaces the sources and headers; other platforms are left out; an unknown platform gets everything', () => {
    const files = (rels: string[]): PayloadFile[] => rels.map((rel) => ({ rel, abs: `/d/${rel}`, sha256: sha(rel), size: rel.length }));
    const all = files(['agent.js', 'native/commcost.node', 'native/libnccl-sim.so', 'native/linux-arm64/commcost.node', 'native/linux-x64/commcost.node', 'native/linux-x64/libnccl-sim.so', 'native/src/build.json', 'native/include/a/b.h']);
    const rels = (fs: PayloadFile[]): string[] => fs.map((f) => f.rel);
    assert.deepEqual(rels(filesForHost(all, 'linux-x64')), ['agent.js', 'native/commcost.node', 'native/libnccl-sim.so', 'native/linux-x64/commcost.node', 'native/linux-x64/libnccl-sim.so']);
    assert.deepEqual(rels(filesForHost(all, 'linux-arm64')), ['agent.js', 'native/commcost.node', 'native/libnccl-sim.so', 'native/linux-arm64/commcost.node']);
    const noArm = all.filter((f) => !f.rel.startsWith('native/linux-arm64/'));
    assert.deepEqual(rels(filesForHost(noArm, 'linux-arm64')), ['agent.js', 'native/commcost.node', 'native/libnccl-sim.so', 'native/src/build.json', 'native/include/a/b.h'], 'no prebuilt for the host: its sources and headers go');
    assert.deepEqual(rels(filesForHost(all, '')), rels(all));
    assert.deepEqual(rels(filesForHost(all, 'Darwin arm64')), rels(all));
  });
});
