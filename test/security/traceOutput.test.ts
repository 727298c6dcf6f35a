/**
 * The trace file is written like every other output (client/safeWrite.ts): never through a link,
 * never in place, refused before the job runs when it cannot be written (hardening issue, item 2).
 *
 * The attacks: a cloned repository commits `<out>.tmp` (the name the trace writer used to write
 * first) or `<out>` itself as a link to a file of the user's; `--out` names a folder; a full disk
 * (a file size limit, RLIMIT_FSIZE, makes the write fail with EFBIG part way).
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { CommcostError } from '../../client/errors';
import { runTrace } from '../../client/trace/run';

const root = join(__dirname, '..', '..');
const VICTIM = 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIVICTIM user@laptop\n';

/** A repository folder, a victim file outside it, and a private TMPDIR for the records. */
function setup(): { repo: string; victim: string; tmp: string; marker: string } {
  const top = mkdtempSync(join(tmpdir(), 'commcost-trace-out-'));
  const repo = join(top, 'repo');
  mkdirSync(repo);
  const victim = join(top, 'authorized_keys');
  writeFileSync(victim, VICTIM);
  const tmp = join(top, 'tmp');
  mkdirSync(tmp);
  return { repo, victim, tmp, marker: join(top, 'job-ran') };
}

/** runTrace of a job that only touches `marker`, with os.tmpdir() = `tmp`. */
async function trace(s: ReturnType<typeof setup>, out: string) {
  const saved = process.env.TMPDIR;
  process.env.TMPDIR = s.tmp;
  try {
    return await runTrace({ command: ['touch', s.marker], cwd: s.repo, out, base: join(root, 'cli'), simulate: true, stdio: { stdout: () => {}, stderr: () => {} } });
  } finally {
    if (saved === undefined) delete process.env.TMPDIR;
    else process.env.TMPDIR = saved;
  }
}

test('a link committed at <out>.tmp is not written through: the victim is unchanged, the trace saved, no temp file left', async () => {
  const s = setup();
  symlinkSync(s.victim, join(s.repo, 'trace.json.tmp'));
  const r = await trace(s, 'trace.json');
  assert.equal(readFileSync(s.victim, 'utf8'), VICTIM, 'the file the link points at is unchanged');
  assert.equal(r.saveError, undefined);
  assert.equal(JSON.parse(readFileSync(join(s.repo, 'trace.json'), 'utf8')).command[0], 'touch');
  assert.deepEqual(readdirSync(s.repo).filter((n) => n.endsWith('.tmp') && n !== 'trace.json.tmp'), [], 'no temp file of ours left');
});

test('a link at --out, or --out naming a folder, is refused before the job runs', async () => {
  const s = setup();
  symlinkSync(s.victim, join(s.repo, 'linked.json'));
  await assert.rejects(trace(s, 'linked.json'), (e: unknown) => e instanceof CommcostError && e.code === 'BAD_INPUT' && /symbolic link/.test(e.message));
  mkdirSync(join(s.repo, 'folder.json'));
  await assert.rejects(trace(s, 'folder.json'), (e: unknown) => e instanceof CommcostError && e.code === 'BAD_INPUT' && /a folder/.test(e.message));
  assert.equal(existsSync(s.marker), false, 'the job never ran');
  assert.equal(readFileSync(s.victim, 'utf8'), VICTIM);
});

test('a full disk (EFBIG part way through the write) leaves the previous trace whole and no temp file', (t) => {
  const prlimit = spawnSync('prlimit', ['--version']);
  if (prlimit.error) return t.skip('prlimit (util-linux) is not installed');
  const s = setup();
  const out = join(s.repo, 'trace.json');
  const previous = '{"previous":"trace"}\n';
  writeFileSync(out, previous);
  // 256 bytes per file: the job's own files are empty, the trace (several KiB) cannot be written.
  const r = spawnSync('prlimit', ['--fsize=256', process.execPath, join(root, 'bin', 'commcost.js'), 'trace', '--simulate', '--out', out, '--', 'touch', s.marker], {
    cwd: s.repo, env: { ...process.env, TMPDIR: s.tmp }, encoding: 'utf8', timeout: 120_000,
  });
  assert.ok(existsSync(s.marker), `the job ran: ${r.stderr}`);
  assert.equal(r.status, 1, r.stderr);
  assert.match(r.stderr, /could not save the trace/);
  assert.equal(readFileSync(out, 'utf8'), previous, 'the previous trace is whole');
  assert.deepEqual(readdirSync(s.repo).filter((n) => n !== 'trace.json'), [], 'no temp file left beside it');
});
