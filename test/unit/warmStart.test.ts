// The background start of the annotation engine (extension/annotations/warmStart.ts) and the
// finder's warm-up parse (sites/callSites.ts CallSiteFinder.warmUp).
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { inSlices, WarmStart } from '../../extension/annotations/warmStart';
import { CallSiteFinder, nodeModulesGrammars } from '../../sites/callSites';

const root = join(__dirname, '..', '..');

test('WarmStart: the timer starts the load once, and a later get() shares it', async () => {
  let loads = 0;
  const w = new WarmStart(async () => ++loads);
  w.startSoon(0, (e) => assert.fail(String(e)));
  assert.equal(w.started, false, 'not started inside the caller (activate() returns first)');
  await sleep(10);
  assert.equal(w.started, true);
  assert.equal(await w.get(), 1);
  assert.equal(await w.get(), 1);
  assert.equal(loads, 1);
});

test('WarmStart: a get() before the timer fires starts the load; the timer then starts no second one', async () => {
  let loads = 0;
  const w = new WarmStart(async () => ++loads);
  w.startSoon(5, (e) => assert.fail(String(e)));
  assert.equal(await w.get(), 1);
  await sleep(20);
  assert.equal(loads, 1);
});

test('WarmStart: disposed before the timer fires, nothing loads', async () => {
  let loads = 0;
  const w = new WarmStart(async () => ++loads);
  w.startSoon(5, (e) => assert.fail(String(e)));
  w.dispose();
  await sleep(20);
  assert.equal(loads, 0);
  assert.equal(w.started, false);
});

test('WarmStart: a failed background load is reported once and kept for get(), not retried', async () => {
  let loads = 0;
  const errors: unknown[] = [];
  const w = new WarmStart(async () => {
    loads++;
    throw new Error('no grammar at /x/tree-sitter.wasm');
  });
  w.startSoon(0, (e) => errors.push(e));
  await sleep(10);
  assert.equal(errors.length, 1);
  await assert.rejects(w.get(), /no grammar at \/x\/tree-sitter.wasm/);
  assert.equal(loads, 1);
});

test('CallSiteFinder.warmUp: a document scanned after it finds what a fresh finder finds', async (t) => {
  const grammars = nodeModulesGrammars(root);
  const warm = await CallSiteFinder.load(grammars, { lazyCpp: true });
  const cold = await CallSiteFinder.load(grammars, { lazyCpp: true });
  t.after(() => {
    warm.dispose();
    cold.dispose();
  });
  warm.warmUp();
  warm.warmUp(); // twice: it keeps nothing
  const text = readFileSync(join(root, 'test', 'fixtures', 'callsites', 'train_alias.py'), 'utf8');
  const sitesOf = (f: CallSiteFinder): unknown[] => {
    const tree = f.parse('python', text);
    try {
      return f.scan('python', tree, text).sites.map((s) => [s.api, s.range.start.line, s.range.start.character]);
    } finally {
      tree.delete();
    }
  };
  const expected = sitesOf(cold);
  assert.ok(expected.length > 0, 'the fixture has call sites');
  assert.deepEqual(sitesOf(warm), expected);
});

test('the deeper warm-up runs one round per turn of the event loop, lets other work run between, and stops when asked', async () => {
  const order: string[] = [];
  let rounds = 0;
  const run = inSlices(() => void order.push(`round ${++rounds}`), 5, () => false);
  setImmediate(() => order.push('other work'));
  assert.equal(await run, 5);
  // The other work came between the rounds, not after all of them.
  assert.ok(order.indexOf('other work') < order.length - 1, order.join(', '));
  // Stopped by its test: a document asked for the engine after two rounds.
  let n = 0;
  assert.equal(await inSlices(() => void n++, 100, () => n >= 2), 2);
  // A throwing round ends it, swallowed.
  assert.equal(await inSlices(() => { throw new Error('x'); }, 3, () => false), 0);
});
