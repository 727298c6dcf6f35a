/**
 * `scan` and `plan` read only what they must (hardening issue, item 5): regular files inside the
 * scanned folder, each under its cap; everything else is listed with why and the scan exits 1
 * (incomplete), never hangs, never reads a device or a file outside the folder.
 *
 * The attacks, as a cloned repository can commit them: a `.gitignore` that is a FIFO or a link to
 * /dev/stdin, /dev/tty or /dev/zero (the scan hung, or read 667 MB); `x.py` linking to a file
 * outside the repository (it was read and its call sites listed); a source file too large for the
 * parser (its abort made every later file fail while the scan exited 0); `plan --trace` given a
 * FIFO or a link to /dev/zero. The CLI runs as a child process with a deadline, so that a hang
 * fails the test instead of blocking the runner.
 */
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, symlinkSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { scanFiles, scanRoots, type ScanReport } from '../../cli/scan';
import type { CallSiteFinder } from '../../sites/callSites';
import { loadFinder } from '../support/annotationFixtures';

const repoRoot = join(__dirname, '..', '..');
const CLI = join(repoRoot, 'bin', 'commcost.js');
const built = existsSync(join(repoRoot, 'dist', 'cli.js')) ? false : 'dist/cli.js is not built: run `npm run build`';
const GROUP = 'import torch.distributed as dist\n\n\ndef make():\n    return dist.new_group()\n';

/** A cloned repository: `.git/`, `a.py` with one call site, and whatever `extra` adds. */
function repo(extra: (root: string) => void = () => undefined): string {
  const root = join(mkdtempSync(join(tmpdir(), 'commcost-scanreads-')), 'repo');
  mkdirSync(join(root, '.git'), { recursive: true });
  writeFileSync(join(root, 'a.py'), GROUP);
  extra(root);
  return root;
}

/**
 * Runs the CLI with stdin left open (a link to /dev/stdin then blocks as a terminal would), killed
 * after `deadlineMs`. @returns exit code (null when killed), stdout, stderr, and whether it was killed.
 */
function cli(args: string[], deadlineMs = 30_000): Promise<{ code: number | null; out: string; err: string; killed: boolean; ms: number }> {
  return new Promise((resolve) => {
    const started = Date.now();
    const child = spawn(process.execPath, [CLI, ...args], { stdio: ['pipe', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    let killed = false;
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    const timer = setTimeout(() => {
      killed = true;
      child.kill('SIGKILL');
    }, deadlineMs);
    child.on('close', (code) => {
      clearTimeout(timer);
      child.stdin.destroy();
      resolve({ code, out, err, killed, ms: Date.now() - started });
    });
  });
}

const reasonOf = (doc: ScanReport, file: string): string | undefined => doc.skipped.find((s) => s.file.endsWith(file))?.reason;

describe('scan reads only regular files inside the folder', { skip: built }, () => {
  test('a .gitignore that is a FIFO, or a link to /dev/stdin, /dev/tty or /dev/zero: not read, listed with why, exit 1, within seconds', async () => {
    const root = repo((r) => {
      for (const d of ['fifo', 'stdin', 'tty', 'zero']) {
        mkdirSync(join(r, d));
        writeFileSync(join(r, d, 'm.py'), GROUP);
      }
      execFileSync('mkfifo', [join(r, 'fifo', '.gitignore')]);
      symlinkSync('/dev/stdin', join(r, 'stdin', '.gitignore'));
      symlinkSync('/dev/tty', join(r, 'tty', '.gitignore'));
      symlinkSync('/dev/zero', join(r, 'zero', '.gitignore'));
    });
    const r = await cli(['scan', root, '--json']);
    assert.equal(r.killed, false, `scan hung (killed after ${r.ms} ms): ${r.err}`);
    assert.equal(r.code, 1, r.err);
    const doc = JSON.parse(r.out) as ScanReport;
    assert.match(reasonOf(doc, join('fifo', '.gitignore')) ?? '', /^a named pipe \(FIFO\), not a regular file; its ignore rules are not applied$/);
    for (const d of ['stdin', 'tty', 'zero']) assert.match(reasonOf(doc, join(d, '.gitignore')) ?? '', /^a symbolic link \(not followed\); its ignore rules are not applied$/, d);
    // The folders' own source files are still scanned (no rule applied from what was not read).
    assert.deepEqual([...new Set(doc.sites.map((s) => s.file.slice(root.length + 1)))].sort(), ['a.py', join('fifo', 'm.py'), join('stdin', 'm.py'), join('tty', 'm.py'), join('zero', 'm.py')]);
    assert.match(r.err, /commcost scan: incomplete: 4 files not scanned/);
    assert.ok(r.ms < 20_000, `took ${r.ms} ms`);
  });

  test('x.py linking outside the repository (a file with call sites, /etc/passwd, /dev/zero), a FIFO and a dangling link named like source: not read, listed; a link inside is read', async () => {
    let outside = '';
    const root = repo((r) => {
      outside = join(r, '..', 'secret.py');
      writeFileSync(outside, GROUP);
      symlinkSync(outside, join(r, 'secret.py'));
      symlinkSync('/etc/passwd', join(r, 'passwd.py'));
      symlinkSync('/dev/zero', join(r, 'zero.py'));
      symlinkSync(join(r, 'missing.py'), join(r, 'dangling.py'));
      execFileSync('mkfifo', [join(r, 'fifo.py')]);
      symlinkSync(join(r, 'a.py'), join(r, 'inside.py'));
    });
    const r = await cli(['scan', root, '--json']);
    assert.equal(r.killed, false, `scan hung: ${r.err}`);
    assert.equal(r.code, 1, r.err);
    const doc = JSON.parse(r.out) as ScanReport;
    assert.deepEqual(doc.sites.map((s) => s.file.slice(root.length + 1)).sort(), ['a.py', 'inside.py'], 'the file outside was read');
    assert.equal(doc.filesScanned, 2);
    assert.match(reasonOf(doc, 'secret.py') ?? '', /^a symbolic link to .*secret\.py, outside the scanned folder .*repo \(not followed\)$/);
    assert.match(reasonOf(doc, 'passwd.py') ?? '', /^a symbolic link to \/etc\/passwd, outside the scanned folder/);
    assert.match(reasonOf(doc, 'zero.py') ?? '', /^a symbolic link to \/dev\/zero, outside the scanned folder/);
    assert.match(reasonOf(doc, 'dangling.py') ?? '', /^a symbolic link to a missing file$/);
    assert.match(reasonOf(doc, 'fifo.py') ?? '', /^a named pipe \(FIFO\), not a regular file$/);
    // The table says the same, after the sites.
    const text = await cli(['scan', root]);
    assert.equal(text.code, 1);
    assert.match(text.out, /\n5 files not scanned \(the scan is incomplete\):\n( {2}.*\n){5}$/);
    assert.match(text.out, /passwd\.py: a symbolic link to \/etc\/passwd, outside the scanned folder/);
  });

  test(`a source file over 8 MiB (MAX_SOURCE_BYTES) is not parsed, listed with its size; the files after it are scanned; exit 1`, async () => {
    const root = repo((r) => {
      writeFileSync(join(r, 'b_big.py'), '');
      truncateSync(join(r, 'b_big.py'), 200 * 2 ** 20);
      writeFileSync(join(r, 'c.py'), GROUP);
    });
    const r = await cli(['scan', root, '--json'], 60_000);
    assert.equal(r.killed, false, `scan took over 60 s: ${r.err}`);
    assert.equal(r.code, 1, r.err);
    const doc = JSON.parse(r.out) as ScanReport;
    assert.equal(reasonOf(doc, 'b_big.py'), '200 MiB, over the 8 MiB limit');
    assert.deepEqual(doc.sites.map((s) => s.file.slice(root.length + 1)), ['a.py', 'c.py']);
  });

  test('the parser failing on one file: that file is listed with why and the scan goes on; a parser that stops working lists every file left', async () => {
    const real = await loadFinder();
    /** The finder, whose parse throws as tree-sitter's abort does on texts holding `# BOOM` (and on every text after one with `# DEAD`). */
    const failing = (): CallSiteFinder => {
      let dead = false;
      return new Proxy(real, {
        get(target, key) {
          const v = Reflect.get(target, key) as unknown;
          if (key !== 'parse') return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
          return (language: Parameters<CallSiteFinder['parse']>[0], text: string) => {
            if (dead || text.includes('# BOOM') || text.includes('# DEAD')) {
              dead ||= text.includes('# DEAD');
              throw new Error('Aborted(). Build with -sASSERTIONS for more info.');
            }
            return target.parse(language, text);
          };
        },
      });
    };
    const root = repo((r) => {
      writeFileSync(join(r, 'b.py'), `${GROUP}# BOOM\n`);
      writeFileSync(join(r, 'c.py'), GROUP);
    });
    const warnings: string[] = [];
    const once = await scanFiles(await scanRoots([root], root), { cwd: root, finder: failing(), warn: (l) => warnings.push(l) });
    assert.deepEqual(once.skipped, [{ file: 'b.py', reason: 'the parser failed on it: Aborted(). Build with -sASSERTIONS for more info.' }]);
    assert.deepEqual(once.sites.map((s) => s.file), ['a.py', 'c.py']);
    assert.deepEqual(warnings, ['cannot scan b.py: the parser failed on it: Aborted(). Build with -sASSERTIONS for more info. (skipped)']);

    writeFileSync(join(root, 'b.py'), `${GROUP}# DEAD\n`);
    writeFileSync(join(root, 'd.py'), GROUP);
    const dead = await scanFiles(await scanRoots([root], root), { cwd: root, finder: failing(), warn: () => undefined });
    assert.deepEqual(dead.skipped, [
      { file: 'b.py', reason: 'the parser failed on it: Aborted(). Build with -sASSERTIONS for more info.' },
      { file: 'c.py', reason: 'not parsed: the parser stopped working after b.py; scan without that file' },
      { file: 'd.py', reason: 'not parsed: the parser stopped working after b.py; scan without that file' },
    ]);
    assert.deepEqual(dead.sites.map((s) => s.file), ['a.py']);
  });
});

describe('plan reads only regular files', { skip: built }, () => {
  const dir = mkdtempSync(join(tmpdir(), 'commcost-planreads-'));
  const fifo = join(dir, 'trace.json');
  execFileSync('mkfifo', [fifo]);
  const zero = join(dir, 'zero.json');
  symlinkSync('/dev/zero', zero);
  for (const [name, args, expected] of [
    ['plan --trace <a FIFO>', ['plan', '--trace', fifo], /cannot read the trace .*trace\.json: a named pipe \(FIFO\), not a regular file/],
    ['plan --trace <a link to /dev/zero>', ['plan', '--trace', zero], /cannot read the trace .*zero\.json: a device, not a regular file/],
    ['plan --run <a FIFO>', ['plan', '--run', fifo], /trace\.json is a named pipe \(FIFO\), not a file commcost can read/],
    ['plan --run <a link to /dev/zero>', ['plan', '--run', zero], /zero\.json is a device, not a file commcost can read/],
  ] as const) {
    test(`${name}: refused at once (exit 2), nothing read`, async () => {
      const r = await cli([...args], 20_000);
      assert.equal(r.killed, false, `plan hung (killed after ${r.ms} ms)`);
      assert.equal(r.code, 2, r.err);
      assert.match(r.err, expected);
      assert.doesNotMatch(r.err, /internal error|\n\s+at /);
    });
  }
});
