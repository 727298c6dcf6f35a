// "Trace Python File" locally or on a host (extension/traceHost.ts): which entries of
// commcost.hosts the pick offers (localhost first; groups and slurm: listed with why, not
// offered), the default path of the file on the host, and the runRemoteTrace options built from
// the answers (empty working directory = the remote home).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { defaultRemoteFile, remotePython, remoteTraceOptions, traceHostItems } from '../../extension/traceHost';

test('localhost first, then SSH hosts; groups and slurm: entries are listed but not offered, with why', () => {
  const items = traceHostItems(['gpu-a', 'alice@gpu-b:2222', 'gpu-a + gpu-c', 'slurm:login1', 'localhost', 'gpu-a', ' ']);
  assert.deepEqual(items.map((i) => [i.entry, i.kind, i.offered]), [
    ['localhost', 'local', true],
    ['gpu-a', 'ssh', true],
    ['alice@gpu-b:2222', 'ssh', true],
    ['gpu-a + gpu-c', 'ssh', false],
    ['slurm:login1', 'ssh', false],
  ]);
  assert.match(items[3]!.detail!, /Not for tracing: a group .* pick gpu-a/);
  assert.match(items[4]!.detail!, /Not for tracing: a Slurm login node .*srun/);
  assert.equal(items[1]!.detail, undefined);
});

test('no setting: localhost only (the command then asks nothing); a bad entry is listed with its error', () => {
  assert.deepEqual(traceHostItems([]), [{ entry: 'localhost', kind: 'local', offered: true }]);
  const bad = traceHostItems(['-oProxyCommand=x']);
  assert.equal(bad.length, 2);
  assert.equal(bad[1]!.offered, false);
  assert.match(bad[1]!.detail!, /^Not for tracing: host entry/);
});

test('the file on the host defaults to its workspace-relative path, POSIX; outside the folder, its name', () => {
  assert.equal(defaultRemoteFile('/ws/examples/train.py', '/ws'), 'examples/train.py');
  assert.equal(defaultRemoteFile('/elsewhere/x.py', '/ws'), 'x.py');
  assert.equal(defaultRemoteFile('/tmp/y.py', undefined), 'y.py');
});

test('the options: python3 <file> in the typed folder; empty folder = the remote home; saved in the workspace', () => {
  const base = { host: 'gpu-a', remoteFile: ' examples/train.py ', python: '', localCwd: '/ws', base: '/ext/dist' };
  assert.deepEqual(remoteTraceOptions({ ...base, remoteCwd: 'proj' }), {
    command: ['python3', 'examples/train.py'], host: 'gpu-a', localCwd: '/ws', remoteCwd: 'proj', base: '/ext/dist', simulate: false, hostKeyPolicy: 'refuse',
  });
  const home = remoteTraceOptions({ ...base, remoteCwd: '  ' });
  assert.equal('remoteCwd' in home, false);
  assert.deepEqual(remoteTraceOptions({ ...base, remoteCwd: '', python: 'python3.11' }).command, ['python3.11', 'examples/train.py']);
  // A local interpreter path names this machine, not the host.
  assert.equal(remotePython('/usr/local/venv/bin/python'), 'python3');
  assert.throws(() => remoteTraceOptions({ ...base, remoteCwd: '', remoteFile: '  ' }), /path on the host is empty/);
  assert.throws(() => remoteTraceOptions({ ...base, remoteCwd: 'a\nb' }), /newline/);
});
