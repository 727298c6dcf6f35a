// The pure parts of `commcost trace --host` (client/trace/remote.ts): the host's architecture,
// the deployed artifacts (a clear error when the host's architecture has no plugin), the job's
// variables built by the local rules on the host's own values, and the wrapper that receives
// every value as a word (run here with sh: no value is ever read as shell text).
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { CommcostError } from '../../client/errors';
import { archOfUname, remoteArtifacts, remoteJobEnv, wrappedCommand } from '../../client/trace/remote';

const rels = ['agent.js', 'native/pyhook/sitecustomize.py', 'native/linux-x64/libcommcost-profiler.so', 'native/linux-x64/libnccl-sim.so', 'native/linux-x64/libcommcost-interposer.so'];
const dir = '/srv/u/.cache/commcost/0123456789abcdef';

test('uname -m names the build architecture; others are not built for', () => {
  assert.equal(archOfUname('x86_64\n'), 'x64');
  assert.equal(archOfUname('aarch64'), 'arm64');
  assert.equal(archOfUname('ppc64le'), null);
});

test('the deployed artifacts for the host; no plugin for its architecture is a clear error', () => {
  const a = remoteArtifacts(rels, dir, 'x64', 'gpu1', { simulate: true, interpose: true });
  assert.equal(a.plugin, `${dir}/native/linux-x64/libcommcost-profiler.so`);
  assert.equal(a.hookDir, `${dir}/native/pyhook`);
  assert.throws(() => remoteArtifacts(rels, dir, 'arm64', 'gpu1', { simulate: false, interpose: false }), (e: unknown) =>
    e instanceof CommcostError && e.code === 'BAD_INPUT' && /no profiler plugin .* for the host's architecture \(linux-arm64\)/.test(e.message) && /gpu1/.test(e.message) && /build it for linux-arm64/.test(e.hint ?? ''));
  assert.throws(() => remoteArtifacts(rels.filter((r) => !r.includes('interposer')), dir, 'x64', 'gpu1', { simulate: false, interpose: true }), /no interposer/);
});

test("the job's variables: the local rules on the host's own values, only what changes", () => {
  const art = remoteArtifacts(rels, dir, 'x64', 'gpu1', { simulate: true, interpose: true });
  const mine = remoteJobEnv({ PYTHONPATH: '/opt/lib', NCCL_PROFILER_PLUGIN: '/opt/their-profiler.so', LD_PRELOAD: 'libtcmalloc.so', UNRELATED: 'x' }, '/tmp/t', art, { simulate: true, interpose: true, ncclLog: true });
  const env = Object.fromEntries(mine.vars);
  assert.equal(env.PYTHONPATH, `${dir}/native/pyhook:/opt/lib`, 'the hook first, the host\'s PYTHONPATH kept');
  assert.equal(env.NCCL_PROFILER_PLUGIN, art.plugin);
  assert.equal(env.COMMCOST_TRACE_CHAIN_PLUGIN, '/opt/their-profiler.so', "the host's own plugin is chained");
  assert.equal(env.LD_PRELOAD, `${art.interposer}:libtcmalloc.so`);
  assert.equal(env.LD_LIBRARY_PATH, '/tmp/t/simlib');
  assert.equal(env.COMMCOST_TRACE_DIR, '/tmp/t/records');
  assert.equal(env.NCCL_DEBUG_FILE, '/tmp/t/records/%h-%p.nccl.log');
  assert.equal(env.UNRELATED, undefined, 'nothing the trace does not set is passed');
  const user = remoteJobEnv({ NCCL_DEBUG: 'WARN' }, '/tmp/t', art, { simulate: false, interpose: false, ncclLog: true });
  assert.equal(Object.fromEntries(user.vars).NCCL_DEBUG, undefined, "the host's NCCL_DEBUG is left alone");
  assert.match(user.ncclLogSkipped ?? '', /NCCL_DEBUG=WARN was set by you/);
});

test('the wrapper: values are words, never shell text; a missing program or folder is written to the status file', () => {
  const t = mkdtempSync(join(tmpdir(), 'commcost-wrap-'));
  const pwned = join(t, 'pwned');
  const status = join(t, 'status');
  const nasty = `$(touch ${pwned}); \`touch ${pwned}\` ' " \n *`;
  const argv = wrappedCommand(status, t, [['COMMCOST_X', nasty]], ['sh', '-c', 'printf "%s|%s" "$COMMCOST_X" "$(pwd)"']);
  const out = execFileSync(argv[0]!, argv.slice(1), { encoding: 'utf8' });
  assert.equal(out, `${nasty}|${t}`);
  assert.equal(existsSync(pwned), false);
  assert.match(readFileSync(status, 'utf8'), /^pid \d+\n$/);
  const missing = wrappedCommand(status, t, [], ['commcost-no-such-program-xyz']);
  assert.throws(() => execFileSync(missing[0]!, missing.slice(1), { stdio: 'ignore' }), (e: { status?: number }) => e.status === 127);
  assert.equal(readFileSync(status, 'utf8'), 'notfound');
  const noDir = wrappedCommand(status, join(t, 'nope'), [], ['true']);
  assert.throws(() => execFileSync(noDir[0]!, noDir.slice(1), { stdio: 'ignore' }), (e: { status?: number }) => e.status === 126);
  assert.equal(readFileSync(status, 'utf8'), 'cwd');
});
