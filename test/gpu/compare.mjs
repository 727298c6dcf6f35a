#!/usr/bin/env node
// Compares commcost run files with the independent reference measured in the same session:
// medians of init, split (splitShare 0 and 1), shrink, grow, destroy, abort, revoke, window registration and
// suspend/resume, ratio product/reference.
// Usage: compare.mjs <run.json>[,<run.json>…] <reference.json>[,<reference.json>…] [--tolerance 0.10]; exit 1 if a
// decided figure is outside: every total, and suspend's suspend call (which no total holds).
// Several run files may hold different experiments (the suite and the catalogue) or the same ones
// measured in rounds that alternate with the reference's (gpu-proof.sh ROUNDS): a step found in
// several files is summarised over all their samples (ms per recorded iteration), as is the reference's.
import { readFileSync } from 'node:fs';

const USAGE = 'usage: compare.mjs <run.json>[,<run.json>…] <reference.json>[,<reference.json>…] [--tolerance 0.10]';
const args = process.argv.slice(2);
const tolIdx = args.indexOf('--tolerance');
const tolerance = tolIdx >= 0 ? Number(args[tolIdx + 1]) : 0.10;
if (tolIdx >= 0 && !(tolerance > 0 && tolerance < 1)) refuse(`--tolerance must be a fraction between 0 and 1 (0.10 = ±10%), got '${args[tolIdx + 1] ?? ''}'`);
const [runPaths, refPaths, extra] = args.filter((_, i) => tolIdx < 0 || (i !== tolIdx && i !== tolIdx + 1));
if (!runPaths || !refPaths || extra !== undefined) refuse(USAGE);

/** Exit 2 with what went wrong (bad arguments or files; exit 1 is kept for figures outside the tolerance). */
function refuse(message) {
  console.error(`compare.mjs: ${message}`);
  process.exit(2);
}

/** The JSON files of a comma-separated list, each as {path, data}. */
function readAll(list, what) {
  return list.split(',').map((path) => {
    if (path.trim() === '') refuse(`an empty ${what} path in '${list}'`);
    try {
      return { path, data: JSON.parse(readFileSync(path, 'utf8')) };
    } catch (e) {
      return refuse(`cannot read the ${what} file ${path}: ${e.message}`);
    }
  });
}
const runFiles = readAll(runPaths, 'commcost run');
const refFiles = readAll(refPaths, 'reference');
const runs = runFiles.map((f) => f.data);
const run = runs[0];
const refs = refFiles.map((f) => f.data);
const ref = refs[0];

/** Linear-interpolated quantile of sorted values (the definition of commcost's stats and reference.py). */
function quantile(sorted, q) {
  const pos = (sorted.length - 1) * q;
  const lo = Math.floor(pos);
  const hi = Math.ceil(pos);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo);
}

/**
 * {median, p90, n} of every sample of the found stats ({path, stats, samples}); one file's own
 * stats when it is the only one. Refuses to pool a file without per-iteration samples (a
 * reference written before it recorded them) rather than quietly using one file.
 */
function pooled(found, what) {
  if (found.length === 0) return undefined;
  if (found.length === 1) return found[0].stats;
  const bare = found.find((f) => !Array.isArray(f.samples));
  if (bare) refuse(`${what}: ${bare.path} has no per-iteration samples, so it cannot be pooled with the other files; compare one run with one reference`);
  const all = found.flatMap((f) => f.samples).sort((a, b) => a - b);
  return { median: quantile(all, 0.5), p90: quantile(all, 0.9), n: all.length };
}

function productStats(experiment, variant, step) {
  const found = [];
  for (const { path, data } of runFiles) {
    const v = data.experiments.find((x) => x.experiment === experiment)?.variants.find((x) => x.variant === variant);
    const s = v?.steps.find((x) => x.step === step);
    if (s?.stats) found.push({ path, stats: s.stats, samples: s.samples });
  }
  return pooled(found, `${experiment} ${variant} ${step}`);
}

function referenceStats(key) {
  const found = refFiles.filter((f) => f.data.steps?.[key] !== undefined).map(({ path, data }) => ({ path, stats: data.steps[key], samples: data.steps[key].samples }));
  return pooled(found, `reference ${key}`);
}

/** "2.28.9" from a run's stamp or a reference's version code (22809). */
function versionOf(file) {
  if (typeof file.stamp?.ncclVersion === 'string') return file.stamp.ncclVersion;
  const code = file.ncclVersionCode;
  return typeof code === 'number' ? `${Math.floor(code / 10000)}.${Math.floor(code / 100) % 100}.${code % 100}` : undefined;
}

// [experiment, variant, reference prefix, [commcost step, reference step, decides?] pairs]; `total` rows
// decide the exit code, and a step marked `true` that no total holds (the suspend call: suspend's
// total is resume + first collective, as commcost defines it).
const rows = [
  ['init', 'default', 'init', [['call', 'call'], ['first', 'first'], ['total', 'total']]],
  ['split', 'halves/splitShare=0', 'split/halves', [['call', 'call'], ['first', 'first'], ['total', 'total']]],
  ['split', 'whole/splitShare=0', 'split/whole', [['call', 'call'], ['first', 'first'], ['total', 'total']]],
  ['split', 'whole/splitShare=1', 'split/whole-share1', [['call', 'call'], ['first', 'first'], ['total', 'total']]],
  ['shrink', 'default', 'shrink', [['call', 'call'], ['first', 'first'], ['total', 'total']]],
  ['grow', 'default', 'grow', [['call', 'call'], ['first', 'first'], ['total', 'total']]],
  ['destroy', 'default', 'destroy', [['finalize', 'finalize'], ['destroy', 'destroy'], ['total', 'total']]],
  ['abort', 'default', 'abort', [['abort', 'abort'], ['reinit', 'reinit'], ['first', 'first'], ['total', 'total']]],
  ['revoke', 'idle/destroy', 'revoke', [['revoke', 'revoke'], ['destroy', 'destroy'], ['total', 'total']]],
  ['registration', 'window/64MiB', 'window', [['register', 'register'], ['deregister', 'deregister']]],
  ['suspend', 'default', 'suspend', [['suspend', 'suspend', true], ['resume', 'resume'], ['first', 'first'], ['total', 'total']]],
];
console.log(`NCCL ${run.stamp?.ncclVersion} (${run.stamp?.ncclPath}), ${run.ranks} ranks, ${run.stamp?.gpus?.[0]?.name ?? '?'}${run.simulated ? ' — SIMULATED' : ''}`);
if (Array.isArray(ref.order)) console.log(`reference sections in this order, in the same processes: ${ref.order.join(', ')}`);
if (runs.length > 1 || refs.length > 1) console.log(`pooled: ${runs.length} commcost run file(s), ${refs.length} reference file(s)`);
console.log('step                                commcost median  p90     reference median  p90     ratio   within');
const versions = new Set([...runs, ...refs].map(versionOf).filter((v) => v !== undefined));
if (versions.size > 1) {
  console.log(`not comparable: the files measured different NCCL versions (${[...versions].join(', ')})`);
  process.exit(1);
}
const rankCounts = new Set([...runs, ...refs].map((r) => r.ranks).filter((n) => typeof n === 'number'));
if (rankCounts.size > 1) {
  console.log(`not comparable: the files measured different rank counts (${[...rankCounts].join(', ')})`);
  process.exit(1);
}
let bad = 0;
let totals = 0;
for (const [experiment, variant, refKey, pairs] of rows) {
  for (const [step, refStep, alone] of pairs) {
    const p = productStats(experiment, variant, step);
    const r = referenceStats(`${refKey}/${refStep}`);
    if (!p || !r) continue;
    const ratio = p.median / r.median;
    const ok = Math.abs(ratio - 1) <= tolerance;
    const decides = step === 'total' || alone === true;
    if (decides) totals++;
    if (decides && !ok) bad++;
    const label = `${experiment} ${variant} ${step}`.padEnd(36);
    console.log(
      `${label}${p.median.toFixed(3).padStart(10)} ${p.p90.toFixed(3).padStart(8)}  ${r.median.toFixed(3).padStart(14)} ${r.p90.toFixed(3).padStart(8)}  ${ratio.toFixed(3).padStart(6)}  ${ok ? 'yes' : 'NO'}`,
    );
  }
}
// Memory (free-memory delta, MiB, median of the per-GPU max; shown, not decided): what the new
// communicator took by its first collective, and for suspend at each point from before the
// communicator was made (warm, after the suspend, after the resume, after the first collective).
const memoryRows = [
  ...rows.slice(0, 4).map(([experiment, variant, refKey]) => [experiment, variant, refKey, 'afterFirst', 'after first collective']),
  ['grow', 'default', 'grow', 'afterCall', 'after the call'],
  ['grow', 'default', 'grow', 'afterFirst', 'after first collective'],
  ['suspend', 'default', 'suspend', 'warm', 'warm'],
  ['suspend', 'default', 'suspend', 'afterSuspend', 'after the suspend'],
  ['suspend', 'default', 'suspend', 'afterResume', 'after the resume'],
  ['suspend', 'default', 'suspend', 'afterFirst', 'after first collective'],
];
for (const [experiment, variant, refKey, point, words] of memoryRows) {
  const v = run.experiments.find((x) => x.experiment === experiment)?.variants.find((x) => x.variant === variant);
  const mine = v?.memoryBytes?.[point];
  const theirs = referenceStats(`memory/${refKey}/${point}MiB`)?.median;
  if (mine === undefined || theirs === undefined) continue;
  console.log(`memory ${experiment} ${variant} ${words}: commcost ${(mine / 2 ** 20).toFixed(0)} MiB, reference ${theirs.toFixed(0)} MiB per GPU`);
}
// What the reference skipped here, with its reason (e.g. grow at one rank, suspend before 2.29.7).
const skippedByRef = new Map();
for (const { data } of refFiles) for (const [section, why] of Object.entries(data.skipped ?? {})) skippedByRef.set(section, why);
for (const [section, why] of skippedByRef) console.log(`reference skipped ${section}: ${why}`);
if (totals === 0) console.log('nothing compared: no total step is in both files');
const alone = totals > 0 && rows.some(([e, v, k, pairs]) => pairs.some(([step, refStep, a]) => a === true && productStats(e, v, step) && referenceStats(`${k}/${refStep}`)));
console.log(`${totals - bad} of ${totals} totals${alone ? " (with suspend's suspend call)" : ''} within ±${Math.round(tolerance * 100)}%`);
process.exit(bad > 0 || totals === 0 ? 1 : 0);
