/**
 * The verdict in the regimes the readings review (2026-12-01) broke it with: a zero figure, a
 * timed-out init or split, a suspend whose round trip and way back disagree, the plan's rebuild
 * against the verdict's, one recorded iteration, several nodes, units, one share rounded once, a
 * run without a stamp. Each test names the review's defect number and failed on the code before
 * its fix. Runs are built from the committed 2×H200 runs (docs/results) or synthetic ones
 * (verdictRuns.ts).
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { deriveVerdict, ms } from '../../client/verdict';
import { times } from '../../client/verdict/format';
import { formatSummary } from '../../cli/summary';
import { planReshape } from '../../client/plan/planner';
import { poolSentence } from '../../client/plan/sentences';
import type { RunFile } from '../../protocol/runFile';
import { asPlanRuns } from './planRuns';
import { experiment, load, synthetic, variant } from './verdictRuns';

const W = 'h200x2-2026-12-01/h200x2-nccl2.28.9-wheel.json';
const SRC = 'h200x2-2026-12-01/h200x2-nccl2.30.7-source.json';

const line = (run: RunFile, id: string): string => {
  const text = deriveVerdict(run).find((l) => l.id === id)?.text;
  assert.ok(text, `no ${id} line in:\n${deriveVerdict(run).map((l) => l.id).join(', ')}`);
  return text;
};
const all = (run: RunFile): string => deriveVerdict(run).map((l) => l.text).join('\n');
const NEVER = /NaN|Infinity|undefined|\b0×|0\.0 ms/;

/** The run with one step of a variant set to `value` (ms, or bytes for a memory point). */
function setStep(run: RunFile, experimentId: string, variantName: string, step: string, value: number): void {
  const v = run.experiments.find((e) => e.experiment === experimentId)!.variants.find((x) => x.variant === variantName)!;
  const s = v.steps.find((x) => x.step === step)!;
  s.stats = { ...s.stats, median: value, p90: value, min: value, max: value, mean: value };
}

test('#16 the plan\'s rebuild and the verdict\'s pool rebuild each say what they are (the same run: 169 ms and 45.5 ms)', () => {
  const run = load(W);
  const plan = poolSentence(planReshape(asPlanRuns(run), {}));
  assert.match(plan, /turns a 169 ms rebuild \(ncclCommInitRankConfig TP2 \+ first collective TP2\) into a 0\.025 ms switch/, plan);
  assert.match(line(run, 'pool'), /turns a 45\.5 ms rebuild of its one-rank child \(split \+ first collective\) into a 0\.025 ms switch/);
});
