// The bundled CLI loads only what a command needs (issue #31): `--version` evaluates no library of
// dist/vendor/, and `report`, `scan` and `plan` never load ssh2 (only `measure` and `trace --host`
// reach SSH). Each command runs the built dist/cli.js with a preloaded hook that records every
// module name asked of Node's loader (test/support/recordLoads.cjs): deterministic, no timing. How
// fast `--version` starts beside `node -e 0` is the bench's row (test/bench/cliStart.ts).
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';

const root = join(__dirname, '..', '..');
const cli = join(root, 'dist', 'cli.js');
const run = join(root, 'docs', 'results', 'h200x2-2026-12-01', 'h200x2-nccl2.28.9-wheel.json');
const skip = existsSync(cli) ? false : 'dist/cli.js not built (node scripts/build.mjs)';

/** The module names `node dist/cli.js …args` asked the loader for, and its stdout. */
function loads(args: string[]): { names: string[]; stdout: string } {
  const dir = mkdtempSync(join(tmpdir(), 'commcost-loads-'));
  try {
    const file = join(dir, 'loads.json');
    const stdout = execFileSync(process.execPath, ['--require', join(root, 'test', 'support', 'recordLoads.cjs'), cli, ...args], {
      cwd: root,
      encoding: 'utf8',
      env: { ...process.env, COMMCOST_RECORD_LOADS: file },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    return { names: JSON.parse(readFileSync(file, 'utf8')) as string[], stdout };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe('the bundled CLI loads only what a command needs', { skip }, () => {
  const out = mkdtempSync(join(tmpdir(), 'commcost-cli-start-'));
  after(() => rmSync(out, { recursive: true, force: true }));

  test('--version loads no vendor library (no ssh2, ajv, web-tree-sitter, validator) and no package', () => {
    const { names, stdout } = loads(['--version']);
    assert.match(stdout, /^commcost \S+ \(agent protocol \d+\)\n$/);
    assert.ok(names.length > 1, 'the hook recorded the loads');
    const ours = names.filter((n) => !n.startsWith('node:') && n !== cli && !['fs', 'path', 'os', 'events', 'child_process', 'crypto'].includes(n));
    assert.deepEqual(ours, [], `--version loaded ${ours.join(', ')}`);
  });

  const noSsh = (names: string[], what: string): void => {
    const ssh = names.filter((n) => /ssh2/.test(n));
    assert.deepEqual(ssh, [], `${what} loaded ${ssh.join(', ')}`);
  };

  test('report of a saved run loads no ssh2 (the run-file validator, yes)', () => {
    const { names } = loads(['report', run, '--html', join(out, 'report.html')]);
    noSsh(names, 'report');
    assert.ok(names.some((n) => /vendor[\\/]run-file-validator\.js$/.test(n)), `the report read the run through its validator: ${names.join(', ')}`);
  });

  test('scan of source folders loads no ssh2 (the parser, yes)', () => {
    const { names } = loads(['scan', join(root, 'test', 'fixtures', 'callsites', 'train_alias.py')]);
    noSsh(names, 'scan');
    assert.ok(names.some((n) => /vendor[\\/]web-tree-sitter\.js$/.test(n)), `scan parsed with web-tree-sitter: ${names.join(', ')}`);
  });

  test('plan from a saved run loads no ssh2', () => {
    noSsh(loads(['plan', '--run', run]).names, 'plan');
  });

  test('dist/cli.js does not carry ssh2 itself: it is required from dist/vendor/ssh2.js by the verbs that need it', () => {
    const text = readFileSync(cli, 'utf8');
    assert.match(text, /require\("\.\/vendor\/ssh2\.js"\)/);
    assert.doesNotMatch(text, /SSH-2\.0-ssh2js/, 'ssh2 inlined in dist/cli.js');
  });
});
