#!/usr/bin/env node
// Compares a commcost run file with the independent reference measured in the same session:
// medians of init and split (call, first collective, total), ratio product/reference.
// Usage: compare.mjs <run.json> <reference.json> [--tolerance 0.15]; exit 1 if a total is outside.
import { readFileSync } from 'node:fs';

const [runPath, refPath] = process.argv.slice(2);
const tolIdx = process.argv.indexOf('--tolerance');
const tolerance = tolIdx > 0 ? Number(process.argv[tolIdx + 1]) : 0.15;
const run = JSON.parse(readFileSync(runPath, 'utf8'));
const ref = JSON.parse(readFileSync(refPath, 'utf8'));

function productStats(experiment, variant, step) {
  const e = run.experiments.find((x) => x.experiment === experiment);
  const v = e?.variants.find((x) => x.variant === variant);
  return v?.steps.find((s) => s.step === step)?.stats;
}

const rows = [
  ['init', 'default', 'init'],
  ['split', 'halves/splitShare=0', 'split/halves'],
  ['split', 'whole/splitShare=0', 'split/whole'],
];
console.log(`NCCL ${run.stamp?.ncclVersion} (${run.stamp?.ncclPath}), ${run.ranks} ranks, ${run.stamp?.gpus?.[0]?.name ?? '?'}${run.simulated ? ' — SIMULATED' : ''}`);
console.log('step                          commcost median  p90     reference median  p90     ratio   within');
let bad = 0;
for (const [experiment, variant, refKey] of rows) {
  for (const step of ['call', 'first', 'total']) {
    const p = productStats(experiment, variant, step);
    const r = ref.steps[`${refKey}/${step}`];
    if (!p || !r) continue;
    const ratio = p.median / r.median;
    const ok = Math.abs(ratio - 1) <= tolerance;
    if (step === 'total' && !ok) bad++;
    const label = `${experiment} ${variant} ${step}`.padEnd(30);
    console.log(
      `${label}${p.median.toFixed(3).padStart(10)} ${p.p90.toFixed(3).padStart(8)}  ${r.median.toFixed(3).padStart(14)} ${r.p90.toFixed(3).padStart(8)}  ${ratio.toFixed(3).padStart(6)}  ${ok ? 'yes' : 'NO'}`,
    );
  }
}
// Memory taken by the new communicator by its first collective (free-memory delta, MiB, median of the per-GPU max).
for (const [experiment, variant, refKey] of rows) {
  const v = run.experiments.find((x) => x.experiment === experiment)?.variants.find((x) => x.variant === variant);
  const mine = v?.memoryBytes?.afterFirst;
  const theirs = ref.steps[`memory/${refKey}/afterFirstMiB`]?.median;
  if (mine === undefined || theirs === undefined) continue;
  console.log(`memory ${experiment} ${variant} after first collective: commcost ${(mine / 2 ** 20).toFixed(0)} MiB, reference ${theirs.toFixed(0)} MiB per GPU`);
}
process.exit(bad > 0 ? 1 : 0);
