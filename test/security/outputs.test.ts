/**
 * Outputs are never written through a link, never in place, and text written into files
 * outside the run's own cannot start a line of its own (issue #21, item 1).
 *
 * The attack: a cloned repository commits `runs/x.html` as a symbolic link to a file of the
 * user's (here a stand-in for `~/.ssh/authorized_keys` outside the repository); `commcost
 * report runs/x.json` must refuse and leave that file unchanged.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { linkSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import type { RunFile } from '../../protocol/runFile';
import { main } from '../../cli/main';
import { CommcostError } from '../../client/errors';
import { resolveTarget } from '../../client/hosts';
import { appendHostKey, checkHostKey, removeHostKeyCommand } from '../../client/knownHosts';
import { checkOutputFile, loadRun, saveRun } from '../../client/resultsStore';
import { readRegularFile, writeFileSafely } from '../../client/safeWrite';

const repoRoot = join(__dirname, '..', '..');
const fixture = join(repoRoot, 'test', 'fixtures', 'runs', 'simulated-2ranks-init-split.json');
const VICTIM = 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIVICTIMVICTIMVICTIMVICTIM user@laptop\n';

/** A cloned repository with a run file, and a victim file outside it. */
function clonedRepo(): { repo: string; victim: string; run: string } {
  const root = mkdtempSync(join(tmpdir(), 'commcost-sec-'));
  const repo = join(root, 'repo');
  mkdirSync(join(repo, 'runs'), { recursive: true });
  const victim = join(root, 'authorized_keys');
  writeFileSync(victim, VICTIM);
  const run = join(repo, 'runs', 'x.json');
  writeFileSync(run, readFileSync(fixture));
  return { repo, victim, run };
}

/** Runs the CLI in-process with stderr captured (stdout, the summary, is left to the test reporter's log). @returns its exit code and stderr. */
async function cli(args: string[]): Promise<{ code: number; stderr: string }> {
  const write = process.stderr.write.bind(process.stderr);
  let stderr = '';
  process.stderr.write = ((chunk: string | Uint8Array) => ((stderr += chunk.toString()), true)) as typeof process.stderr.write;
  try {
    const code = await main(['node', 'commcost', ...args]);
    return { code, stderr };
  } finally {
    process.stderr.write = write;
  }
}

describe('outputs never follow a link', () => {
  test('report --html: <run>.html committed as a link to a file outside the repository is refused, the file unchanged', async () => {
    const { victim, run } = clonedRepo();
    symlinkSync(victim, run.replace(/\.json$/, '.html'));
    // Without --html nothing is written: the link is not even looked at.
    const plain = await cli(['report', run]);
    assert.equal(plain.code, 0, plain.stderr);
    assert.equal(readFileSync(victim, 'utf8'), VICTIM);
    const r = await cli(['report', run, '--html']);
    assert.equal(readFileSync(victim, 'utf8'), VICTIM, 'the file the link points to was overwritten');
    assert.equal(r.code, 2, r.stderr);
    assert.match(r.stderr, /symbolic link/);
    assert.match(r.stderr, /never writes through a link/);
  });

  test('report a b --html: <a>.compare.html as a link is refused, the file unchanged', async () => {
    const { victim, run } = clonedRepo();
    const other = run.replace(/x\.json$/, 'y.json');
    writeFileSync(other, readFileSync(fixture));
    symlinkSync(victim, run.replace(/\.json$/, '.compare.html'));
    const r = await cli(['report', run, other, '--html']);
    assert.equal(readFileSync(victim, 'utf8'), VICTIM);
    assert.equal(r.code, 2, r.stderr);
    assert.match(r.stderr, /symbolic link/);
  });

  test('report --html <link> and measure --json/--html <link> are refused before anything is measured', async () => {
    const { repo, victim, run } = clonedRepo();
    const link = join(repo, 'out.html');
    symlinkSync(victim, link);
    const r = await cli(['report', run, '--html', link]);
    assert.equal(r.code, 2, r.stderr);
    assert.equal(readFileSync(victim, 'utf8'), VICTIM);
    await assert.rejects(checkOutputFile(link, `--json ${link}`), (e: unknown) => e instanceof CommcostError && e.code === 'BAD_INPUT' && /symbolic link/.test(e.message));
    // A dangling link is refused too (writing would create its target).
    const dangling = join(repo, 'dangling.json');
    symlinkSync(join(repo, '..', 'created-by-link'), dangling);
    await assert.rejects(checkOutputFile(dangling, `--json ${dangling}`), /symbolic link/);
    await assert.rejects(writeFileSafely(dangling, '{}'), /symbolic link/);
    assert.throws(() => statSync(join(repo, '..', 'created-by-link')));
  });

  test('saving a run where <id>.json is a link refuses and leaves the target unchanged', async () => {
    const { repo, victim } = clonedRepo();
    const runFile = JSON.parse(readFileSync(fixture, 'utf8')) as RunFile;
    const dir = join(repo, '.commcost', 'runs');
    mkdirSync(dir, { recursive: true });
    symlinkSync(victim, join(dir, `${runFile.id}.json`));
    await assert.rejects(saveRun(dir, runFile), /symbolic link/);
    assert.equal(readFileSync(victim, 'utf8'), VICTIM);
    assert.deepEqual(readdirSync(dir).filter((f) => f.endsWith('.tmp')), [], 'a temp file was left');
  });

  test('a FIFO as an output is refused at once (no hang)', async () => {
    const { repo } = clonedRepo();
    const fifo = join(repo, 'out.json');
    execFileSync('mkfifo', [fifo]);
    await assert.rejects(checkOutputFile(fifo, `--json ${fifo}`), /named pipe/);
    await assert.rejects(writeFileSafely(fifo, '{}'), /named pipe/);
  });

  test('--json/--html are written by temp file + rename: a hard link to the old file keeps the old bytes', async () => {
    const { repo, run } = clonedRepo();
    const out = join(repo, 'report.html');
    writeFileSync(out, 'old report\n');
    const keep = join(repo, 'keep.html');
    linkSync(out, keep);
    const r = await cli(['report', run, '--html', out]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(readFileSync(keep, 'utf8'), 'old report\n', 'the report was written in place (a full disk would truncate it)');
    assert.match(readFileSync(out, 'utf8'), /<html/i);
    assert.deepEqual(readdirSync(repo).filter((f) => f.endsWith('.tmp')), []);
  });
});

describe('reads are bounded', () => {
  test('a FIFO named *.json is refused at once, /dev/zero too, with BAD_RUN_FILE', async () => {
    const { repo } = clonedRepo();
    const fifo = join(repo, 'run.json');
    execFileSync('mkfifo', [fifo]);
    const t0 = Date.now();
    await assert.rejects(loadRun(fifo), (e: unknown) => e instanceof CommcostError && e.code === 'BAD_RUN_FILE' && /named pipe/.test(e.message));
    await assert.rejects(loadRun('/dev/zero'), (e: unknown) => e instanceof CommcostError && /a device/.test(e.message));
    assert.ok(Date.now() - t0 < 2000);
  });

  test('a file over the size limit is refused without reading it whole', async () => {
    const { repo } = clonedRepo();
    const big = join(repo, 'big.json');
    writeFileSync(big, Buffer.alloc(4096, 0x20));
    await assert.rejects(readRegularFile(big, big, { maxBytes: 1024 }), /over the 1024-byte limit/);
    assert.equal((await readRegularFile(big, big, { maxBytes: 4096 })).length, 4096);
  });
});

describe('text written outside the run\'s own files', () => {
  const key = (() => {
    const type = Buffer.from('ssh-ed25519');
    const b = Buffer.alloc(4 + type.length + 4 + 32, 7);
    b.writeUInt32BE(type.length, 0);
    type.copy(b, 4);
    b.writeUInt32BE(32, 4 + type.length);
    return b;
  })();

  test('a host name with a newline never starts a line of its own in known_hosts', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'commcost-kh-'));
    const path = join(dir, 'known_hosts');
    const evil = 'gpu1\nevil.example ssh-ed25519 AAAAEVIL';
    await appendHostKey(path, evil, 22, key).catch(() => undefined);
    let text: string[] = [];
    try {
      text = readFileSync(path, 'utf8').split('\n').filter(Boolean);
    } catch {
      // Refused before the file was created.
    }
    assert.ok(text.length <= 1, `appended ${text.length} lines: ${JSON.stringify(text)}`);
    assert.ok(!text.some((l) => l.startsWith('evil.example')), 'the injected entry became a line');
    await assert.rejects(appendHostKey(path, 'a b', 22, key), /not a host name/);
  });

  test('a host key of another type than the recorded one is a changed key (as OpenSSH says), not an unknown one', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'commcost-kh-'));
    const path = join(dir, 'known_hosts');
    writeFileSync(path, `[gpu1]:2222 ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQ==\n`);
    const check = await checkHostKey(path, 'gpu1', 2222, key);
    assert.equal(check.outcome, 'mismatch');
    assert.equal(check.outcome === 'mismatch' ? check.line : 0, 1);
    assert.equal((await checkHostKey(path, 'gpu2', 2222, key)).outcome, 'unknown');
  });

  test('the ssh-keygen -R hint names [host]:port, quoted for the shell', () => {
    assert.equal(removeHostKeyCommand('gpu1', 2222, join(homedir(), '.ssh', 'known_hosts')), "ssh-keygen -R '[gpu1]:2222'");
    assert.equal(removeHostKeyCommand('gpu1', 22, '/tmp/kh'), 'ssh-keygen -R gpu1 -f /tmp/kh');
  });
});

describe('the ssh config and identity files', () => {
  test('Include lines are read (a proxied host is not silently connected to directly); ProxyCommand is refused clearly', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'commcost-sshcfg-'));
    mkdirSync(join(dir, 'conf.d'));
    writeFileSync(join(dir, 'config'), 'Include conf.d/*.conf\nHost other\n  HostName other.example\n');
    writeFileSync(join(dir, 'conf.d', 'a.conf'), 'Host gpu1\n  HostName 10.1.2.3\n  Port 2222\n  ProxyJump bastion\nHost bastion\n  HostName bastion.example\n');
    writeFileSync(join(dir, 'conf.d', 'b.conf'), 'Host viaproxy\n  ProxyCommand nc -X 5 -x proxy:1080 %h %p\n');
    const t = await resolveTarget('gpu1', { sshConfigPath: join(dir, 'config'), homeDir: dir, localUser: 'u' });
    assert.equal(t.kind, 'ssh');
    if (t.kind === 'ssh') {
      assert.equal(t.hostname, '10.1.2.3');
      assert.equal(t.port, 2222);
      assert.deepEqual(t.proxyJump.map((j) => j.hostname), ['bastion.example']);
    }
    await assert.rejects(resolveTarget('viaproxy', { sshConfigPath: join(dir, 'config'), homeDir: dir, localUser: 'u' }), (e: unknown) => e instanceof CommcostError && e.code === 'BAD_TARGET' && /ProxyCommand/.test(e.message) && /ProxyJump/.test(e.hint ?? ''));
  });

  test('an Include of a FIFO or /dev/zero is refused at once, not read', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'commcost-sshcfg-'));
    writeFileSync(join(dir, 'config'), 'Include /dev/zero\n');
    await assert.rejects(resolveTarget('gpu1', { sshConfigPath: join(dir, 'config'), homeDir: dir, localUser: 'u' }), /is a device/);
  });
});
