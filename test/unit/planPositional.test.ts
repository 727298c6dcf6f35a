// `commcost plan run.json` reads the run as `--run run.json` does (a user types the file first);
// before, commander refused it with "too many arguments for 'plan'".
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { test } from 'node:test';

const root = path.join(__dirname, '..', '..');
const bin = path.join(root, 'bin', 'commcost.js');
const run = path.join(root, 'docs', 'results', 'h200x2-2026-12-01', 'h200x2-nccl2.30.7-source.json');
const plan = (args: string[]) => execFileSync(process.execPath, [bin, 'plan', ...args], { cwd: root, encoding: 'utf8', timeout: 60_000 });

test('plan and plan --recovery take a run as a positional argument, the same as --run', () => {
  assert.equal(plan([run, '--shapes', 'tp2,tp1']), plan(['--run', run, '--shapes', 'tp2,tp1']));
  const recovery = plan(['--recovery', run]);
  assert.equal(recovery, plan(['--recovery', '--run', run]));
  assert.match(recovery, /^recovery plan for 2× H200/m);
});
