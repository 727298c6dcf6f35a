/**
 * A cloned repository may commit `.commcost`, `.commcost/runs` or `.commcost/traces` as a
 * symbolic link to elsewhere: `measure` and `trace` must not write through it (outside the
 * repository), and a dangling one must give a clear error (what, where, what to do), not an
 * internal error with a stack trace.
 */
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import type { RunFile } from '../../protocol/runFile';
import { main } from '../../cli/main';
import { traceCommand } from '../../cli/trace';
import { CommcostError } from '../../client/errors';
import { ensureWritableDir, saveRun } from '../../client/resultsStore';
import { linkedCommcostDirProblem } from '../../client/safeWrite';

const repoRoot = join(__dirname, '..', '..');
const fixture = join(repoRoot, 'test', 'fixtures', 'runs', 'simulated-2ranks-init-split.json');
const roots: string[] = [];
after(() => {
  for (const r of roots) rmSync(r, { recursive: true, force: true });
});

/** A cloned repository and a folder outside it that a committed link points at. */
function clone(): { repo: string; outside: string } {
  const root = mkdtempSync(join(tmpdir(), 'commcost-links-'));
  roots.push(root);
  const repo = join(root, 'repo');
  const outside = join(root, 'outside');
  mkdirSync(repo);
  mkdirSync(outside);
  return { repo, outside };
}

/** Runs the CLI in-process with stderr captured. @returns its exit code and stderr. */
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

const NO_STACK = /\n\s+at .*:\d+:\d+/;

describe('measure: a linked .commcost/runs is refused before anything is measured', () => {
  for (const [what, plant] of [
    ['.commcost/runs → a folder outside', (repo: string, outside: string) => (mkdirSync(join(repo, '.commcost')), symlinkSync(outside, join(repo, '.commcost', 'runs')))],
    ['.commcost → a folder outside', (repo: string, outside: string) => symlinkSync(outside, join(repo, '.commcost'))],
    ['.commcost/runs dangling', (repo: string, outside: string) => (mkdirSync(join(repo, '.commcost')), symlinkSync(join(outside, 'nothing-here'), join(repo, '.commcost', 'runs')))],
  ] as const) {
    test(what, async () => {
      const { repo, outside } = clone();
      plant(repo, outside);
      const saveDir = join(repo, '.commcost', 'runs');
      const r = await cli(['measure', '--simulate', '--experiments', 'init', '--iterations', '1', '--save-dir', saveDir]);
      assert.equal(r.code, 2, r.stderr);
      assert.match(r.stderr, /is a symbolic link \(to .*\): commcost writes its runs and traces only in a real folder/);
      assert.match(r.stderr, /remove the link/);
      assert.doesNotMatch(r.stderr, NO_STACK, 'no stack trace');
      assert.deepEqual(readdirSync(outside), [], 'nothing written outside the repository');
      // saveRun itself (the extension's and the CLI's save) refuses it too.
      const run = JSON.parse(readFileSync(fixture, 'utf8')) as RunFile;
      await assert.rejects(saveRun(saveDir, run), (e: unknown) => e instanceof CommcostError && e.code === 'BAD_INPUT' && /symbolic link/.test(e.message));
      assert.deepEqual(readdirSync(outside), []);
    });
  }

  test('a dangling link is said as such', async () => {
    const { repo, outside } = clone();
    mkdirSync(join(repo, '.commcost'));
    symlinkSync(join(outside, 'gone'), join(repo, '.commcost', 'runs'));
    await assert.rejects(ensureWritableDir(join(repo, '.commcost', 'runs'), '--save-dir .commcost/runs'), /--save-dir \.commcost\/runs: .*runs is a symbolic link \(to .*gone, which does not exist\)/);
  });

  test('links above .commcost (your own folders) are not judged; a real .commcost/runs is used', async () => {
    const { repo, outside } = clone();
    const viaLink = join(outside, 'link-to-repo');
    symlinkSync(repo, viaLink);
    assert.equal(await linkedCommcostDirProblem(join(viaLink, '.commcost', 'runs'), 'x'), undefined);
    assert.equal(await linkedCommcostDirProblem(join(repo, 'other', 'runs'), 'x'), undefined);
    const run = JSON.parse(readFileSync(fixture, 'utf8')) as RunFile;
    const saved = await saveRun(join(viaLink, '.commcost', 'runs'), run);
    assert.ok(saved.endsWith(`${run.id}.json`));
  });
});

describe('trace: a linked .commcost/traces is refused before the job runs', () => {
  for (const [what, plant] of [
    ['.commcost/traces → a folder outside', (repo: string, outside: string) => (mkdirSync(join(repo, '.commcost')), symlinkSync(outside, join(repo, '.commcost', 'traces')))],
    ['.commcost → a folder outside', (repo: string, outside: string) => symlinkSync(outside, join(repo, '.commcost'))],
    ['.commcost/traces dangling', (repo: string, outside: string) => (mkdirSync(join(repo, '.commcost')), symlinkSync(join(outside, 'nothing-here'), join(repo, '.commcost', 'traces')))],
  ] as const) {
    test(what, async () => {
      const { repo, outside } = clone();
      plant(repo, outside);
      const marker = join(outside, 'job-ran');
      await assert.rejects(
        traceCommand(['sh', '-c', `touch '${marker}'`], {}, { out: () => undefined, err: () => undefined, cwd: repo, base: join(repoRoot, 'cli') }),
        (e: unknown) => e instanceof CommcostError && e.code === 'BAD_INPUT' && /traces.*is a symbolic link|\.commcost is a symbolic link/.test(e.message) && /remove the link/.test(e.hint ?? ''),
      );
      assert.deepEqual(readdirSync(outside), [], 'nothing written outside the repository, and the job did not run');
    });
  }
});
