#!/usr/bin/env node
// Compares commcost run files with the independent reference measured in the same session:
// medians of init, split (splitShare 0 and 1), shrink, destroy, abort, revoke and window registration, ratio product/reference.
// Usage: compare.mjs <run.json> <reference.json> [--tolerance 0.10]; exit 1 if a total is outside.
import { readFileSync } from 'node:fs';

// <run.json> may be several run files joined by commas (e.g. the suite and the catalogue runs).
const [runPaths, refPath] = process.argv.slice(2);
const tolIdx = process.argv.indexOf('--tolerance');
const tolerance = tolIdx > 0 ? Number(process.argv[tolIdx + 1]) : 0.10;
const runs = runPaths.split(',').map((p) => JSON.parse(readFileSync(p, 'utf8')));
const run = runs[0];
const ref = JSON.parse(readFileSync(refPath, 'utf8'));

function productStats(experiment, variant, step) {
  for (const r of runs) {
    const v = r.experiments.find((x) => x.experiment === experiment)?.variants.find((x) => x.variant === variant);
    const s = v?.steps.find((x) => x.step === step)?.stats;
    if (s) return s;
  }
  return undefined;
}

// [experiment, variant, reference prefix, [commcost step, reference step] pairs]; `total` rows decide the exit code.
const rows = [
  ['init', 'default', 'init', [['call', 'call'], ['first', 'first'], ['total', 'total']]],
  ['split', 'halves/splitShare=0', 'split/halves', [['call', 'call'], ['first', 'first'], ['total', 'total']]],
  ['split', 'whole/splitShare=0', 'split/whole', [['call', 'call'], ['first', 'first'], ['total', 'total']]],
  ['split', 'whole/splitShare=1', 'split/whole-share1', [['call', 'call'], ['first', 'first'], ['total', 'total']]],
  ['shrink', 'default', 'shrink', [['call', 'call'], ['first', 'first'], ['total', 'total']]],
  ['destroy', 'default', 'destroy', [['finalize', 'finalize'], ['destroy', 'destroy'], ['total', 'total']]],
  ['abort', 'default', 'abort', [['abort', 'abort'], ['reinit', 'reinit'], ['first', 'first'], ['total', 'total']]],
  ['revoke', 'idle/destroy', 'revoke', [['revoke', 'revoke'], ['destroy', 'destroy'], ['total', 'total']]],
  ['registration', 'window/64MiB', 'window', [['register', 'register'], ['deregister', 'deregister']]],
];
console.log(`NCCL ${run.stamp?.ncclVersion} (${run.stamp?.ncclPath}), ${run.ranks} ranks, ${run.stamp?.gpus?.[0]?.name ?? '?'}${run.simulated ? ' — SIMULATED' : ''}`);
if (Array.isArray(ref.order)) console.log(`reference sections in this order, in the same processes: ${ref.order.join(', ')}`);
console.log('step                                commcost median  p90     reference median  p90     ratio   within');
if (typeof run.ranks === 'number' && typeof ref.ranks === 'number' && run.ranks !== ref.ranks) {
  console.log(`not comparable: commcost measured ${run.ranks} ranks, the reference ${ref.ranks}`);
  process.exit(1);
}
let bad = 0;
let totals = 0;
for (const [experiment, variant, refKey, pairs] of rows) {
  for (const [step, refStep] of pairs) {
    const p = productStats(experiment, variant, step);
    const r = ref.steps[`${refKey}/${refStep}`];
    if (!p || !r) continue;
    const ratio = p.median / r.median;
    const ok = Math.abs(ratio - 1) <= tolerance;
    if (step === 'total') totals++;
    if (step === 'total' && !ok) bad++;
    const label = `${experiment} ${variant} ${step}`.padEnd(36);
    console.log(
      `${label}${p.median.toFixed(3).padStart(10)} ${p.p90.toFixed(3).padStart(8)}  ${r.median.toFixed(3).padStart(14)} ${r.p90.toFixed(3).padStart(8)}  ${ratio.toFixed(3).padStart(6)}  ${ok ? 'yes' : 'NO'}`,
    );
  }
}
// Memory taken by the new communicator by its first collective (free-memory delta, MiB, median of the per-GPU max).
for (const [experiment, variant, refKey] of rows.slice(0, 4)) {
  const v = run.experiments.find((x) => x.experiment === experiment)?.variants.find((x) => x.variant === variant);
  const mine = v?.memoryBytes?.afterFirst;
  const theirs = ref.steps[`memory/${refKey}/afterFirstMiB`]?.median;
  if (mine === undefined || theirs === undefined) continue;
  console.log(`memory ${experiment} ${variant} after first collective: commcost ${(mine / 2 ** 20).toFixed(0)} MiB, reference ${theirs.toFixed(0)} MiB per GPU`);
}
if (totals === 0) console.log('nothing compared: no total step is in both files');
console.log(`${totals - bad} of ${totals} totals within ±${Math.round(tolerance * 100)}%`);
process.exit(bad > 0 || totals === 0 ? 1 : 0);
