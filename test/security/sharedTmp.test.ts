/**
 * Nothing commcost executes or writes under a shared temp folder can be planted by another user
 * (issue: "Code from a shared /tmp runs as the user"). /tmp is writable by every local user and
 * cluster nodes often share it; commcost used fixed names there:
 * - the c10d driver `<tmp>/commcost-c10d-<hash>.py`, run as is when a file already stood there;
 * - c10d's FileStore folder `<tmp>/commcost-c10d-store-<session>`, used through a link;
 * - the CLI's fallback for a run it cannot save, `<tmp>/commcost-runs`, written through a link or
 *   into another user's world-writable folder.
 * Each attack is planted here in a TMPDIR of the test's own; the run must use a private folder it
 * has just made (mkdtemp, 0700, owned by us) and leave the planted things untouched.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, afterEach, beforeEach, describe, test } from 'node:test';
import type { RunFile } from '../../protocol/runFile';
import { saveWithFallback } from '../../cli/measure';
import { DRIVER_SOURCE } from '../../remote-agent/c10d/driverSource';
import * as c10d from '../../remote-agent/experiments/c10d';
import type { RankContext } from '../../remote-agent/experiments/experiment';
import * as agentPrivate from '../../remote-agent/privateDir';
import { normalizeOptions } from '../../remote-agent/runSetup';

const repoRoot = path.join(__dirname, '..', '..');
const PLANTED = 'import os\nos.system("touch /tmp/pwned")  # planted by another user\n';
const realTmp = os.tmpdir();
const roots: string[] = [];
let savedTmpdir: string | undefined;

/** A fresh folder standing for the shared /tmp (os.tmpdir() follows TMPDIR at each call). */
function sharedTmp(): string {
  const dir = fs.mkdtempSync(path.join(realTmp, 'commcost-sharedtmp-'));
  fs.chmodSync(dir, 0o1777);
  roots.push(dir);
  process.env.TMPDIR = dir;
  return dir;
}

beforeEach(() => {
  savedTmpdir = process.env.TMPDIR;
});
afterEach(() => {
  if (savedTmpdir === undefined) delete process.env.TMPDIR;
  else process.env.TMPDIR = savedTmpdir;
});
after(() => {
  for (const r of roots) fs.rmSync(r, { recursive: true, force: true });
});

/** Asserts `dir` is a real folder (not a link), ours, mode 0700. */
function assertPrivate(dir: string, what: string): void {
  const st = fs.lstatSync(dir);
  assert.ok(st.isDirectory() && !st.isSymbolicLink(), `${what} ${dir} is a real folder`);
  assert.equal(st.uid, process.getuid!(), `${what} is owned by us`);
  assert.equal(st.mode & 0o777, 0o700, `${what} has mode 0700`);
}

/** The old, predictable name of the driver (version-wide: the hash of its source). */
function oldDriverPath(tmp: string): string {
  return path.join(tmp, `commcost-c10d-${createHash('sha256').update(DRIVER_SOURCE).digest('hex').slice(0, 12)}.py`);
}

/**
 * A stand-in Python (a shell script): records the script it was given to run (path and content)
 * and the store folder it was told, then speaks just enough of the driver's protocol.
 */
function fakePython(dir: string): { python: string; log: string } {
  const log = path.join(dir, 'python.log');
  const python = path.join(dir, 'python');
  fs.writeFileSync(
    python,
    `#!/bin/sh
{ printf 'script=%s\\n' "$1"; printf 'store=%s\\n' "$COMMCOST_C10D_STORE_DIR"; printf 'content<<\\n'; cat "$1"; printf '\\n>>\\n'; } >> '${log}'
if [ "$2" = probe ]; then echo '{"torch":"0.0-fake","features":{}}'; exit 0; fi
echo '{"t":"ready"}'
while read -r line; do case "$line" in *exit*) echo '{"t":"bye"}'; exit 0;; esac; done
`,
    { mode: 0o755 },
  );
  return { python, log };
}

/** What the fake Python recorded: each start's script, its content and the store folder. */
function starts(log: string): { script: string; store: string; content: string }[] {
  const text = fs.readFileSync(log, 'utf8');
  return [...text.matchAll(/script=(.*)\nstore=(.*)\ncontent<<\n([\s\S]*?)\n>>\n/g)].map((m) => ({ script: m[1]!, store: m[2]!, content: m[3]! }));
}

/** The driver as the agent writes it: `writeDriver()` now (driverPath() before the fix). */
function writeTheDriver(): { file: string; remove(): void } {
  const mod = c10d as unknown as { writeDriver?: () => { file: string; remove(): void }; driverPath?: () => string };
  if (mod.writeDriver) return mod.writeDriver();
  return { file: mod.driverPath!(), remove: () => undefined };
}

describe('c10d: the driver and its store are never taken from the shared temp folder', () => {
  test('a file planted at the old driver name is not the driver written, nor the one run', () => {
    const tmp = sharedTmp();
    const planted = oldDriverPath(tmp);
    fs.writeFileSync(planted, PLANTED, { mode: 0o666 });
    const driver = writeTheDriver();
    try {
      assert.notEqual(driver.file, planted, 'the driver is not the planted file');
      assert.equal(fs.readFileSync(driver.file, 'utf8'), DRIVER_SOURCE, 'the driver to run is ours');
      assert.equal(fs.lstatSync(driver.file).mode & 0o777, 0o600);
      assertPrivate(path.dirname(driver.file), 'the driver\'s folder');
      assert.equal(path.dirname(path.dirname(driver.file)), tmp, 'in a folder of its own in the temp folder');
    } finally {
      driver.remove();
    }
    assert.equal(fs.existsSync(driver.file), false, 'removed when done');
    assert.equal(fs.readFileSync(planted, 'utf8'), PLANTED, 'the planted file is left alone');
  });

  test('the torch probe runs our driver, not a planted one, and leaves nothing behind', () => {
    const tmp = sharedTmp();
    fs.writeFileSync(oldDriverPath(tmp), PLANTED, { mode: 0o666 });
    const work = fs.mkdtempSync(path.join(realTmp, 'commcost-fakepy-'));
    roots.push(work);
    const { python, log } = fakePython(work);
    const probe = c10d.probeTorch(python);
    assert.equal(probe.torch, '0.0-fake', JSON.stringify(probe));
    const [run] = starts(log);
    assert.equal(run?.content, DRIVER_SOURCE, 'the script the Python ran is our driver');
    assert.deepEqual(fs.readdirSync(tmp), [path.basename(oldDriverPath(tmp))], 'nothing of ours is left in the temp folder');
  });

  test('setup/teardown: the driver is this rank\'s own, the store is the session\'s private folder — never a planted link — and both are gone after', async () => {
    const tmp = sharedTmp();
    const sessionId = '127.0.0.1-4242';
    fs.writeFileSync(oldDriverPath(tmp), PLANTED, { mode: 0o666 });
    // Another user's trap at the old store name: a link to a folder of the victim's.
    const victim = fs.mkdtempSync(path.join(realTmp, 'commcost-victim-'));
    roots.push(victim);
    fs.symlinkSync(victim, path.join(tmp, `commcost-c10d-store-${sessionId}`));
    const work = fs.mkdtempSync(path.join(realTmp, 'commcost-fakepy-'));
    roots.push(work);
    const { python, log } = fakePython(work);
    // The coordinator's part (coordinator.ts runSession): the session's private folder, in the environment.
    const session = (agentPrivate as Partial<typeof agentPrivate>).makePrivateDir?.('commcost-session-');
    const envName = (agentPrivate as Partial<typeof agentPrivate>).SESSION_DIR_ENV ?? 'COMMCOST_SESSION_DIR';
    const savedEnv = process.env[envName];
    if (session) process.env[envName] = session.path;
    const rc = {
      rank: 0,
      worldSize: 1,
      sessionId,
      barrierAddress: '127.0.0.1:1',
      options: normalizeOptions({ experiments: ['c10d'], python }),
      untimed: <T>(_label: string, fn: () => Promise<T>) => fn(),
      beginExternal: () => undefined,
      endExternal: () => undefined,
    } as unknown as RankContext;
    try {
      const state = await c10d.c10dExperiment.setup!(rc, 'init/lazy');
      await c10d.c10dExperiment.teardown!(rc, 'init/lazy', state);
      await new Promise<void>((resolve) => {
        const child = (state as { child: import('node:child_process').ChildProcess }).child;
        if (child.exitCode !== null) resolve();
        else child.on('close', () => resolve());
      });
    } finally {
      if (savedEnv === undefined) delete process.env[envName];
      else process.env[envName] = savedEnv;
    }
    const [run] = starts(log);
    assert.ok(run, 'the driver started');
    assert.equal(run.content, DRIVER_SOURCE, 'the script run is our driver, not the planted file');
    assert.notEqual(run.script, oldDriverPath(tmp));
    assert.notEqual(run.store, path.join(tmp, `commcost-c10d-store-${sessionId}`), 'the store is not the planted link');
    assert.equal(run.store, session?.path, 'the store is the session\'s private folder');
    assertPrivate(run.store, 'the store folder');
    assert.equal(fs.existsSync(run.script), false, 'the driver is removed at teardown');
    assert.deepEqual(fs.readdirSync(victim), [], 'nothing written through the planted link');
    session?.remove();
    assert.deepEqual(fs.readdirSync(tmp).sort(), [path.basename(oldDriverPath(tmp)), `commcost-c10d-store-${sessionId}`].sort(), 'no leftovers; the planted things left alone');
  });

  test('a store folder that is a link, open to others, or missing is refused with what to do', () => {
    const tmp = sharedTmp();
    const storeDir = (c10d as Partial<typeof c10d>).c10dStoreDir;
    assert.ok(storeDir, 'c10d checks the store folder it is given');
    const link = path.join(tmp, 'link');
    const open = path.join(tmp, 'open');
    fs.mkdirSync(open, { mode: 0o777 });
    fs.chmodSync(open, 0o777);
    fs.symlinkSync(open, link);
    assert.throws(() => storeDir({ COMMCOST_SESSION_DIR: link }), /symbolic link/);
    assert.throws(() => storeDir({ COMMCOST_SESSION_DIR: open }), /open to other users \(mode 0777/);
    assert.throws(() => storeDir({ COMMCOST_SESSION_DIR: path.join(tmp, 'gone') }), /is not on .*shares/);
    assert.throws(() => storeDir({ COMMCOST_SESSION_DIR_ERROR: 'ENOSPC' }), /made none: ENOSPC/);
    const mine = agentPrivate.makePrivateDir('commcost-session-');
    assert.equal(storeDir({ COMMCOST_SESSION_DIR: mine.path }), mine.path);
    mine.remove();
    assert.equal(fs.existsSync(mine.path), false);
  });
});

describe('CLI: a run that cannot be saved where asked never goes to a fixed name in the temp folder', () => {
  const run = JSON.parse(fs.readFileSync(path.join(repoRoot, 'docs', 'results', 'h200x2-nccl2.28.9-wheel.json'), 'utf8')) as RunFile;

  /** A save folder that fails (a file), so that the fallback is used. */
  function badSaveDir(): string {
    const dir = fs.mkdtempSync(path.join(realTmp, 'commcost-badsave-'));
    roots.push(dir);
    fs.writeFileSync(path.join(dir, 'afile'), '');
    return path.join(dir, 'afile');
  }

  test('<tmp>/commcost-runs planted as a link: nothing is written through it', async () => {
    const tmp = sharedTmp();
    const victim = fs.mkdtempSync(path.join(realTmp, 'commcost-victim-'));
    roots.push(victim);
    fs.symlinkSync(victim, path.join(tmp, 'commcost-runs'));
    let said = '';
    const saved = await saveWithFallback(badSaveDir(), run, (t) => (said += t));
    assert.deepEqual(fs.readdirSync(victim), [], 'nothing written through the link');
    assert.ok(saved.path, said);
    assert.equal(saved.asked, false);
    assert.ok(!saved.path.startsWith(path.join(tmp, 'commcost-runs') + path.sep), `saved in ${saved.path}`);
    assertPrivate(path.dirname(saved.path), 'the fallback folder');
    assert.deepEqual(JSON.parse(fs.readFileSync(saved.path, 'utf8')), run, 'nothing measured is lost');
    assert.match(said, new RegExp(`saved the run in the OS temp folder instead: ${saved.path.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`));
  });

  test('<tmp>/commcost-runs made first by another user, open to all: the run is not put there', async () => {
    const tmp = sharedTmp();
    const theirs = path.join(tmp, 'commcost-runs');
    fs.mkdirSync(theirs);
    fs.chmodSync(theirs, 0o777);
    // As root the test can make it truly someone else's (nobody); otherwise it is ours but open to all.
    if (process.getuid!() === 0) fs.chownSync(theirs, 65534, 65534);
    const saved = await saveWithFallback(badSaveDir(), run, () => undefined);
    assert.deepEqual(fs.readdirSync(theirs), [], 'nothing written in the other user\'s folder');
    assert.ok(saved.path && !saved.path.startsWith(theirs + path.sep), `saved in ${saved.path}`);
    assertPrivate(path.dirname(saved.path), 'the fallback folder');
  });

  test('when the fallback fails too, the folder it made is removed and the run goes to stderr', async () => {
    const tmp = sharedTmp();
    let said = '';
    const saved = await saveWithFallback(badSaveDir(), { ...run, id: '.bad' }, (t) => (said += t));
    assert.equal(saved.path, undefined);
    assert.ok(said.includes('"id":".bad"'), 'the run JSON is written out');
    assert.deepEqual(fs.readdirSync(tmp), [], 'no leftover folder in the temp folder');
  });
});

describe('agent privateDir: files are created new in a folder checked to be private', () => {
  test('writeFile refuses a name already there (a planted link included)', () => {
    const dir = agentPrivate.makePrivateDir('commcost-test-', realTmp);
    try {
      assertPrivate(dir.path, 'the folder');
      const f = dir.writeFile('a.py', 'x');
      assert.equal(fs.lstatSync(f).mode & 0o777, 0o600);
      assert.throws(() => dir.writeFile('a.py', 'y'), /cannot create .*EEXIST/);
      fs.symlinkSync('/etc/hostname', path.join(dir.path, 'l.py'));
      assert.throws(() => dir.writeFile('l.py', 'y'), /cannot create/);
      assert.throws(() => dir.writeFile('../x', 'y'), /not a plain file name/);
      fs.chmodSync(dir.path, 0o755);
      assert.throws(() => dir.writeFile('b.py', 'y'), /open to other users/);
    } finally {
      dir.remove();
    }
    assert.equal(fs.existsSync(dir.path), false);
  });

  test('makePrivateDir fails with a clear error where it cannot make one', () => {
    assert.throws(() => agentPrivate.makePrivateDir('x-', '/nonexistent/commcost'), /cannot make a private folder in \/nonexistent\/commcost: .*TMPDIR/);
  });
});
