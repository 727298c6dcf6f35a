// The "plan this recovery" CodeLens: which functions call a recovery API (abort, revoke, shrink,
// grow, destroy_process_group followed by a creation), in Python and C, from the finder's sites.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { findRecoveryRoutines, recoveryLensText } from '../../sites/planLens';
import { ROOT, scanText } from '../support/annotationFixtures';

const fixture = (name: string) => readFileSync(join(ROOT, 'test', 'fixtures', 'plan', name), 'utf8');
const routines = async (language: 'python' | 'c', text: string) => findRecoveryRoutines((await scanText(language, text)).sites, text);

test('Python: shrink_group, destroy + re-create and abort are recovery routines; a final destroy_process_group is not', async () => {
  const found = await routines('python', fixture('recovery.py'));
  assert.deepEqual(
    found.map((r) => [r.functionName, r.line + 1, r.apis]),
    [
      ['on_rank_failure', 6, ['shrink_group']],
      ['restart_world', 12, ['destroy_process_group']],
      ['give_up', 20, ['_abort_process_group']],
    ],
  );
  assert.equal(found[1]!.why, 'calls destroy_process_group (line 14), then re-creates a group');
});

test('C: revoke, shrink and abort in one function are one lens; finalize + destroy is not a recovery', async () => {
  const found = await routines('c', fixture('recovery.c'));
  assert.deepEqual(found.map((r) => [r.functionName, r.apis]), [['recover', ['ncclCommRevoke', 'ncclCommShrink', 'ncclCommAbort']]]);
  assert.equal(found[0]!.why, 'calls ncclCommRevoke (line 7), ncclCommShrink (line 8) and ncclCommAbort (line 9)');
});

test('the lens names the calls and the run it plans on, with its rank count; without a run it asks for one', async () => {
  const [r] = await routines('c', fixture('recovery.c'));
  const t = recoveryLensText(r!, 'vm · NCCL 2.30.7 · 2026-12-01', 2);
  assert.equal(t.title, 'commcost: plan this recovery (ncclCommRevoke, ncclCommShrink, ncclCommAbort)');
  assert.match(t.tooltip, /Opens the Recovery section on vm · NCCL 2\.30\.7 · 2026-12-01 \(2 ranks\)/);
  assert.equal(recoveryLensText(r!).title, 'commcost: plan this recovery (no run to plan from)');
});

test('nothing to recover in the reshape fixtures\' plain loops', async () => {
  assert.deepEqual(await routines('python', fixture('reshape_loop.py')), []);
});
