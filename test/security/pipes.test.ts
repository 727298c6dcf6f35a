/**
 * Output through a pipe is whole, and a reader that goes away ends the command quietly
 * (hardening issue, item 8). `commcost scan <repo> --json | jq .` failed: the CLI called
 * process.exit before the pipe had drained, so a slow reader got exactly the first 65,536 bytes.
 *
 * Each command runs under `sh` as a user runs it, its stdout piped into a reader that sleeps
 * before reading (`{ sleep 1; cat; }`), so that the pipe is full when the command ends.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import type { RunFile } from '../../protocol/runFile';

const repoRoot = join(__dirname, '..', '..');
const CLI = join(repoRoot, 'bin', 'commcost.js');
const built = existsSync(join(repoRoot, 'dist', 'cli.js')) ? false : 'dist/cli.js is not built: run `npm run build`';

/** Runs `sh -c script` with $1 node, $2 the CLI and $3… `args`. @returns its exit status, stdout and stderr. */
function sh(script: string, args: string[]): { status: number | null; out: string; err: string } {
  const r = spawnSync('sh', ['-c', script, 'sh', process.execPath, CLI, ...args], { encoding: 'utf8', timeout: 120_000, maxBuffer: 64 * 2 ** 20 });
  return { status: r.status, out: r.stdout, err: r.stderr };
}

/** A folder of `n` Python files with two call sites each (about 900 bytes of JSON per file). */
function manyFiles(n: number): string {
  const dir = mkdtempSync(join(tmpdir(), 'commcost-pipes-'));
  for (let i = 0; i < n; i++) writeFileSync(join(dir, `m${i}.py`), 'import torch.distributed as dist\ng = dist.new_group()\ndist.destroy_process_group()\n');
  return dir;
}

/** A valid run with each experiment's variants repeated `copies` times under new names: a summary of well over 64 KiB. */
function wideRun(copies: number): string {
  const run = JSON.parse(readFileSync(join(repoRoot, 'test', 'fixtures', 'runs', 'simulated-2ranks-init-split.json'), 'utf8')) as RunFile;
  for (const e of run.experiments) e.variants = Array.from({ length: copies }, (_, i) => e.variants.map((v) => ({ ...v, variant: `${v.variant}-copy${i}` }))).flat();
  const dir = mkdtempSync(join(tmpdir(), 'commcost-pipes-run-'));
  mkdirSync(dir, { recursive: true });
  const file = join(dir, 'wide.json');
  writeFileSync(file, JSON.stringify(run));
  return file;
}

describe('piped output is whole', { skip: built }, () => {
  test('scan --json into a slow reader: the whole document (over 64 KiB) parses', () => {
    const dir = manyFiles(200);
    const r = sh('"$1" "$2" scan "$3" --json | { sleep 1; cat; }', [dir]);
    assert.equal(r.err, '');
    assert.ok(r.out.length > 65_536, `${r.out.length} bytes: the test needs more than a pipe's 64 KiB`);
    const doc = JSON.parse(r.out) as { filesScanned: number; sites: unknown[] };
    assert.equal(doc.filesScanned, 200);
    assert.equal(doc.sites.length, 400);
  });

  test('report of a saved run into a slow reader: the whole summary, its last line included', () => {
    const file = wideRun(60);
    const direct = sh('"$1" "$2" report "$3" > "$3.out"; cat "$3.out"', [file]);
    assert.equal(direct.status, 0, direct.err);
    assert.ok(direct.out.length > 65_536, `${direct.out.length} bytes`);
    const piped = sh('"$1" "$2" report "$3" 2>/dev/null | { sleep 1; cat; }', [file]);
    assert.equal(piped.out.length, direct.out.length, 'the piped summary was cut');
    assert.equal(piped.out, direct.out);
  });
});

describe('a reader that goes away ends the command quietly', { skip: built }, () => {
  for (const [name, args] of [
    ['scan --json | head -c 100', (dir: string) => ['scan', dir, '--json']],
    ['report | head -c 100', () => ['report', wideRun(60)]],
  ] as const) {
    test(`${name}: no error text, the command's own exit code`, () => {
      const dir = manyFiles(200);
      // bash's PIPESTATUS gives the CLI's own status (sh's $? would be head's).
      const wrapped = spawnSync('bash', ['-c', '"$0" "$@" 2>"$ERRFILE" | head -c 100 >/dev/null; echo "${PIPESTATUS[0]}"', process.execPath, CLI, ...args(dir)], {
        encoding: 'utf8',
        timeout: 120_000,
        env: { ...process.env, ERRFILE: join(dir, 'stderr.txt') },
      });
      const status = Number(wrapped.stdout.trim());
      const err = readFileSync(join(dir, 'stderr.txt'), 'utf8').replace(/^wrote .*\n/m, '');
      assert.equal(err, '', 'stderr after the reader closed');
      assert.equal(status, 0);
    });
  }
});
