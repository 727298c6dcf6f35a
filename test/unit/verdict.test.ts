/**
 * The verdict re-derives the study's conclusions from a run's own figures: checked against a
 * real H200 run (docs/results) by recomputing each number from the run file.
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { test } from 'node:test';
import type { RunFile } from '../../protocol/runFile';
import { validateRunFile } from '../../client/runFileSchema';
import { deriveVerdict, ms, pct } from '../../client/verdict';

const file = path.join(__dirname, '..', '..', 'docs', 'results', 'h200x2-nccl2.28.9-wheel.json');
const run: RunFile = validateRunFile(JSON.parse(fs.readFileSync(file, 'utf8')));

function median(experiment: string, variant: string, step: string): number {
  const s = run.experiments.find((e) => e.experiment === experiment)?.variants.find((v) => v.variant === variant)?.steps.find((x) => x.step === step);
  assert.ok(s);
  return s.stats.median;
}

test('first-collective share and teardown floors come from the run', () => {
  const lines = deriveVerdict(run);
  const share = lines.find((l) => l.id === 'first-collective-share')!;
  const first = median('init', 'default', 'first');
  const total = median('init', 'default', 'total');
  assert.ok(share.text.includes(pct(first / total)), share.text);
  assert.ok(share.text.includes(ms(total)), share.text);
  const floors = lines.find((l) => l.id === 'teardown-floors')!;
  assert.ok(floors.text.includes(`ncclCommAbort ${ms(median('abort', 'default', 'abort'))}`), floors.text);
  const rebuild = lines.find((l) => l.id === 'rebuild-vs-init')!;
  assert.ok(rebuild.text.includes(pct(median('split', 'whole/splitShare=0', 'total') / total)), rebuild.text);
  assert.equal(lines.some((l) => l.id === 'pool'), false, 'no pool in this run, so no pool sentence');
});

test('a simulated run says so in every line', () => {
  const lines = deriveVerdict({ ...run, simulated: true });
  assert.ok(lines.length > 0);
  for (const l of lines) assert.match(l.text, /^SIMULATED — /);
});

test('a run without summaries has no verdict', () => {
  assert.deepEqual(deriveVerdict({ ...run, experiments: [] }), []);
});
