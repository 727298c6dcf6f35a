// The "plan this reshape" CodeLens: which Python functions are reshape routines (from the
// call-site finder's sites) and which TP shapes their literals give, on fixture files.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { findReshapeRoutines, literalInts, planLensText, ranksSize } from '../../sites/planLens';
import { createMessage, RunStateNotification, ShowPlanNotification } from '../../protocol/webviewMessages';
import { ROOT, scanText } from '../support/annotationFixtures';

const fixture = (name: string) => readFileSync(join(ROOT, 'test', 'fixtures', 'plan', name), 'utf8');
const routines = async (text: string) => findReshapeRoutines((await scanText('python', text)).sites, text);
const brief = (r: Awaited<ReturnType<typeof routines>>) => r.map((x) => [x.functionName, x.line + 1, x.kind, x.shapes]);

test('ranks literals give a group size; a range over a variable names the variable', () => {
  const cases: [string, ReturnType<typeof ranksSize>][] = [
    ['[0, 1]', 2],
    ['[0,1,2,3]', 4],
    ['list(range(0, 4, 2))', 2],
    ['range(4)', 4],
    ['list(range(s, s + 2))', 2],
    ['range(start, start + 4, 2)', 2],
    ['range(tp)', { variable: 'tp' }],
    ['list(range(start, start + tp))', { variable: 'tp' }],
    ['ranks', undefined],
    ['range(a, b)', undefined],
    ['[r for r in x]', undefined],
  ];
  for (const [expr, want] of cases) assert.deepEqual(ranksSize(expr), want, expr);
  assert.deepEqual(literalInts('(4, 2, 1)'), [4, 2, 1]);
  assert.deepEqual(literalInts('[8, 4]'), [8, 4]);
  assert.equal(literalInts('range(3)'), undefined);
  assert.equal(literalInts('(tp, 2)'), undefined);
});

test('a loop over literal TP sizes and a comprehension are reshape loops; their shapes come from the literals', async () => {
  const found = await routines(fixture('reshape_loop.py'));
  assert.deepEqual(brief(found), [
    ['build_pool', 5, 'loop', [4, 2, 1]],
    ['build_halves', 13, 'loop', [2]],
    ['build_unknown', 18, 'loop', []],
  ]);
  assert.match(found[0]!.why, /inside a for loop \(line 8\)/);
  assert.deepEqual(found[0]!.inferred, ['TP4, TP2, TP1 from `for tp in (4, 2, 1)` (line 7)']);
  // The comprehension iterates over starts (0, 2), not sizes: the size is the literal range's.
  assert.deepEqual(found[1]!.inferred, ['TP2 from the ranks `list(range(s, s + 2))` (line 15)']);
  assert.match(found[1]!.why, /comprehension \(line 15\)/);
});

test('a function that tears down and creates a group is a reshape routine; the shape before comes from the same target', async () => {
  const found = await routines(fixture('reshape_routine.py'));
  assert.deepEqual(brief(found), [
    ['reshape_to_one', 11, 'routine', [4, 2]],
    ['keep_halves', 22, 'routine', [2]],
  ]);
  assert.deepEqual(found[1]!.inferred, ['TP2 from the split ranks `[[0, 1], [2, 3]]` (line 24)']);
  assert.match(found[0]!.inferred[0]!, /TP4 from the ranks `\[0, 1, 2, 3\]` \(line 9\), the shape `self.tp_group` had before/);
  assert.match(found[0]!.inferred[1]!, /TP2 from the ranks `list\(range\(0, 4, 2\)\)` \(line 13\)/);
});

test('one creation, or collectives in a loop, is not a reshape', async () => {
  assert.deepEqual(await routines(fixture('not_reshape.py')), []);
});

test("the lens's title uses the code's shapes, else the run's, and its tooltip says which", async () => {
  const [pool, halves, unknown] = await routines(fixture('reshape_loop.py'));
  const own = planLensText(pool!, [2, 1], 'h200 · NCCL 2.30.7');
  assert.equal(own.title, 'commcost: plan this reshape (tp4 → tp2 → tp1)');
  assert.deepEqual(own.shapes, [4, 2, 1]);
  assert.match(own.tooltip, /Inferred from the code: TP4, TP2, TP1 from `for tp in \(4, 2, 1\)` \(line 7\)/);
  const one = planLensText(halves!, [2, 1]);
  assert.equal(one.title, "commcost: plan this reshape (tp2 → tp1, the run's shapes)");
  assert.equal(one.shapes, undefined);
  assert.match(one.tooltip, /Only TP2 is written in the code: the plan uses every TP shape of the run's GPU count \(tp2 → tp1\)/);
  const none = planLensText(unknown!, [2, 1]);
  assert.match(none.tooltip, /No shape is written as a literal in the code/);
  assert.match(planLensText(unknown!, undefined).title, /no run to plan from/);
});

test("the 'plan/show' message's guard takes TP shapes of whole numbers ≥ 1 and string inputs only", () => {
  const ok = createMessage(ShowPlanNotification, { shapes: [4, 2, 1], origin: 'from build_pool in train.py' }, 'host', 1);
  assert.equal(ShowPlanNotification.is(ok), true);
  assert.equal(RunStateNotification.is(ok), false);
  assert.equal(ShowPlanNotification.is(createMessage(ShowPlanNotification, {}, 'host', 2)), true);
  for (const params of [{ shapes: [0] }, { shapes: [2.5] }, { shapes: ['tp2'] }, { step: 30 }, { origin: {} }]) {
    assert.equal(ShowPlanNotification.is({ id: 'host:3', method: 'plan/show', params }), false, JSON.stringify(params));
  }
});
