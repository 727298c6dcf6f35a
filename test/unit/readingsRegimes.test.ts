/**
 * Readings broken on purpose: run files of the regimes the committed runs do not show (1 rank with
 * cold start, equal medians, a failed headline variant, …), each checked against the sentence
 * its figures allow. Every test here failed on the code before its fix.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { deriveVerdict } from '../../readings/verdict';
import { formatTrace } from '../../cli/trace';
import type { TraceFile, TraceSite } from '../../protocol/trace';
import { formatComparison, headerLine } from '../../cli/summary';
import { formatPlan } from '../../cli/plan';
import { planReshape } from '../../readings/plan/planner';
import { planSentences } from '../../readings/plan/sentences';
import { describeRuns, formatRatio, rankCountNote } from '../../protocol/compare';
import { ncclViewModel } from '../../webview/tables';
import type { RunFile } from '../../protocol/runFile';
import { experiment, load, oneRank, synthetic, variant } from './verdictRuns';

const line = (run: RunFile, id: string): string => {
  const text = deriveVerdict(run).find((l) => l.id === id)?.text;
  assert.ok(text, `no ${id} line`);
  return text;
};

test('1 rank: the cold-start line names the study figures (init to a first collective that connected 4 ranks) without judging a 1-rank figure against them', () => {
  const run = oneRank();
  run.experiments.push(experiment('cold-start', [variant('default', { cold: 340, warm: 17.5 })]));
  const text = line(run, 'cold-start');
  assert.match(text, /cold costs more than warm/);
  assert.doesNotMatch(text, /agrees|differs/, text);
  assert.match(text, /Study \(A40 across InfiniBand, GPU count and NCCL version not stated\): .*493–523 ms — not compared here: .*1 rank has no peer to connect to.* Study \(cross-node A40, [^)]*\): .*98 ms — not compared here/, text);
  // At 2 ranks on one host the same figures are set beside the study's (across InfiniBand), not judged: the transports differ.
  const two = synthetic(2, [experiment('cold-start', [variant('default', { cold: 595, warm: 171 })])]);
  assert.match(line(two, 'cold-start'), /warm 98 ms vs 171 ms \(1\.74×\) — not judged: the transports differ/);
});

test('equal medians: a first collective of exactly half the init is "half", never "less than half"', () => {
  const run = synthetic(2, [experiment('init', [variant('default', { call: 50, first: 50, total: 100 })])]);
  const text = line(run, 'first-collective-share');
  assert.match(text, /ncclCommInitRankConfig pays 50\.0 ms \(50%\) and the first collective 50\.0 ms \(50%\)/);
  assert.doesNotMatch(text, /less than half here/, text);
  assert.match(text, /share 53% \(derived by commcost [^)]+\) vs 50% \(of the call \+ first collective, 50\.0 \+ 50\.0 ms\): agrees \(3 points apart, within commcost's ±20-point band\)/, text);
});

test('a failed splitShare 0 split: the rebuild line says it has no figure and names the splitShare 1 split in full, not "the same with splitShare 1"', () => {
  const run = structuredClone(load('h200x2-2026-12-01/h200x2-nccl2.28.9-wheel.json'));
  const split = run.experiments.find((e) => e.experiment === 'split')!;
  split.variants = split.variants.filter((v) => v.variant !== 'whole/splitShare=0');
  run.status = 'partial';
  run.errors = [
    {
      code: 'NCCL_ERROR',
      message: 'ncclCommSplit failed: unhandled cuda error',
      where: { host: 'localhost', rank: 1, experiment: 'split', variant: 'whole/splitShare=0', iteration: 0 },
      fatal: false,
    },
  ];
  const text = line(run, 'rebuild-vs-init');
  assert.doesNotMatch(text, /the same with splitShare 1/, text);
  assert.match(text, /split of the same shape \(a 2-rank child\), splitShare 0: no figure in this run \(it failed: see the errors\)/, text);
  assert.match(text, /split of the same shape \(a 2-rank child\), splitShare 1: 21\.7 ms/, text);
  // With both measured, "the same with splitShare 1" refers to the entry just before it.
  const whole = load('h200x2-2026-12-01/h200x2-nccl2.28.9-wheel.json');
  assert.match(line(whole, 'rebuild-vs-init'), /splitShare 0: 175 ms .*; the same with splitShare 1: 21\.7 ms/);
});

test('1 rank in the CLI header and in a comparison label: "1 rank" / "1× H200", never "1 ranks"', () => {
  const one = load('h200x1-2026-12-01/h200x1-nccl2.28.9-wheel.json');
  const two = load('h200x2-2026-12-01/h200x2-nccl2.28.9-wheel.json');
  assert.match(headerLine(one), / · 1 rank · NCCL /);
  assert.match(headerLine(two), / · 2 ranks · NCCL /);
  // The comparison names the GPUs and their count (one GPU per rank): "1× H200", never "1 ranks".
  const labels = describeRuns([two, one]).map((i) => i.label);
  assert.ok((labels[1] ?? '').startsWith(`1× ${one.stamp!.gpus[0]!.name.replace(/^NVIDIA /, '')} · NCCL`), labels[1]);
  assert.doesNotMatch(labels[1] ?? '', /1 ranks/);
});

test('a ratio far below 1 keeps two significant digits: the 1-rank first collective against the 2-rank one is 0.000058×, never "0.00×"', () => {
  const two = load('h200x2-2026-12-01/h200x2-nccl2.28.9-wheel.json');
  const one = load('h200x1-2026-12-01/h200x1-nccl2.28.9-wheel.json');
  assert.equal(formatRatio(0.0000575), '0.000058×');
  assert.equal(formatRatio(0.052), '0.052×');
  assert.equal(formatRatio(0), '0.00×');
  const text = formatComparison([two, one]);
  const row = text.split('\n').find((l) => l.startsWith('init default · first collective'));
  assert.ok(row, text);
  assert.doesNotMatch(row, / 0\.00×/, row);
});

test('plan at 1 rank: the init\'s first collective is never called "its lazy connect" (one rank has no peer); at 2 ranks it is', () => {
  const one = load('h200x1-2026-12-01/h200x1-nccl2.28.9-wheel.json');
  const onePlan = planReshape([{ file: 'one.json', run: one }], { stepMs: 30 });
  // At 1 GPU the CLI prints one line, no terms (issue #28): the terms are read from the plan itself.
  const text = formatPlan(onePlan) + JSON.stringify(onePlan);
  assert.doesNotMatch(text, /\(its lazy connect\)|first collective connects|the connect is paid/, text);
  assert.match(text, /first collective TP1 \(one rank: no peer to connect to\)/);
  const two = load('h200x2-2026-12-01/h200x2-nccl2.28.9-wheel.json');
  assert.match(formatPlan(planReshape([{ file: 'two.json', run: two }], { stepMs: 30 })), /first collective TP2 \(its lazy connect\)/);
});

test('2 ranks: a shrink to a one-rank child and a pool switch to a one-rank child are named beside the study, not judged against its multi-rank figures', () => {
  const run = load('h200x2-2026-12-01/h200x2-nccl2.30.7-source.json');
  const rebuild = line(run, 'rebuild-vs-init');
  assert.match(rebuild, /shrink \(to a one-rank child\): 24\.8 ms/);
  assert.doesNotMatch(rebuild, /shrink against a fresh init [^.;]*: (agrees|differs)/, rebuild);
  assert.match(rebuild, /Study \(4× A40 PCIe, one node, NCCL version not stated\): shrink to first collective 64 ms — not compared here: the shrink here leaves a one-rank child \(no peer to connect to\), the study shrank a communicator of 4 ranks \(study: [^)]+\)\./, rebuild);
  // Split and grow (2-rank children) are still judged.
  assert.match(rebuild, /grow against a fresh init [^;]*: agrees \(here 1\.19× the study's ratio, within commcost's 0\.5–2× band\)/);
  const pool = line(run, 'pool');
  assert.doesNotMatch(pool, /switch[^;.]*: (agrees|differs)/, pool);
  assert.match(pool, /switch inside the pool \(collective \+ CUDA Graph capture and instantiation\) ≈ 0\.2 ms collective \+ 0\.28 ms capturing and instantiating one allreduce in a CUDA Graph — not compared here: the switch here is to a one-rank child, whose collective has no peer \(study: switch inside the pool, in docs\/METHOD\.md "The study's figures"\)\./, pool);
  // A pool of TP2 + 2×TP1 is not the study's TP4 + 2×TP2 + 4×TP1: named with both makeups, not compared.
  assert.match(pool, /a pool of every TP shape, per GPU 464 MB \(TP4 \+ 2×TP2 \+ 4×TP1\) — not compared here: the pools are made differently: here TP2 \+ 2×TP1 on 2 GPUs, the study's TP4 \+ 2×TP2 \+ 4×TP1 on 4 GPUs/, pool);
  // At 4 ranks the shrink leaves 3 ranks and is judged.
  const four = synthetic(4, [
    experiment('init', [variant('default', { call: 45, first: 50, total: 95 })]),
    experiment('shrink', [variant('default', { call: 20, first: 45, total: 65 })]),
  ]);
  assert.match(line(four, 'rebuild-vs-init'), /shrink against a fresh init 0\.7× \(64 ms vs 92 ms\) vs 0\.68× \(65\.0 ms vs 95\.0 ms\): agrees/);
});

test('the trace summary: "1 process", and a µs-level phase keeps two significant digits, never "0.00"', () => {
  const t = JSON.parse(fs.readFileSync(path.join(__dirname, '..', '..', 'docs', 'results', 'h200x1-check-2026-12-01', 'traces', 'trace-c-1rank.json'), 'utf8')) as TraceFile;
  const site = t.sites[0]!;
  site.firstCollective = { n: 1, medianMs: 0.0042, p90Ms: 0.0042, maxMs: 0.0042 } satisfies NonNullable<TraceSite['firstCollective']>;
  const text = formatTrace(t);
  assert.match(text, / — 1 process, complete/);
  assert.doesNotMatch(text, /process\(es\)|\b0\.00\b/, text);
  // "?": the first use of a file written before it is unknown.
  assert.match(text, /ncclCommInitRank {2}1 {2}365 {7}\? +0\.0042 /, text);
});

test('a plan of a simulated run marks every sentence SIMULATED, not only the first; a measured plan marks none', () => {
  const sim = synthetic(2, load('h200x2-2026-12-01/h200x2-nccl2.28.9-wheel.json').experiments, { simulated: true });
  sim.stamp = { ...sim.stamp!, simulated: true };
  const lines = planSentences(planReshape([{ file: 'sim.json', run: sim }], { stepMs: 30 }));
  assert.ok(lines.length > 5);
  for (const l of lines) assert.match(l, /^SIMULATED — /, l);
  const real = planSentences(planReshape([{ file: 'two.json', run: load('h200x2-2026-12-01/h200x2-nccl2.28.9-wheel.json') }], { stepMs: 30 }));
  for (const l of real) assert.doesNotMatch(l, /SIMULATED/, l);
});

test('cold start: NCCL\'s own "kernels" part printed as 0.00 s reads "below that resolution", never "0 ms of it"', () => {
  const run = load('h200x2-2026-12-01/h200x2-nccl2.28.9-wheel.json');
  const text = line(run, 'cold-start');
  assert.doesNotMatch(text, /\b0 ms of it/, text);
  assert.match(text, /the warm one 30 ms, "kernels" below that resolution/, text);
  assert.match(text, /the cold init 440 ms, 360 ms of it in "kernels"/, text);
});

test('a partial run whose splitShare 0 split has its call but no first collective: the rebuild line gives the call alone, not "no figure"', () => {
  const run = structuredClone(load('h200x2-2026-12-01/h200x2-nccl2.28.9-wheel.json'));
  run.status = 'partial';
  const v = run.experiments.find((e) => e.experiment === 'split')!.variants.find((x) => x.variant === 'whole/splitShare=0')!;
  v.steps = v.steps.filter((x) => x.step === 'call');
  const text = line(run, 'rebuild-vs-init');
  assert.match(text, /split of the same shape \(a 2-rank child\), splitShare 0: no figure to the first collective in this run \(the call alone 33\.9 ms\)/, text);
});

test('a comparison of runs of different rank counts says its ratios set communicators of different sizes side by side; runs of one size say nothing', () => {
  const two = load('h200x2-2026-12-01/h200x2-nccl2.28.9-wheel.json');
  const one = load('h200x1-2026-12-01/h200x1-nccl2.28.9-wheel.json');
  assert.match(formatComparison([two, one]), /the runs have different rank counts \(A 2, B 1\): each ratio sets communicators of different sizes side by side/);
  assert.doesNotMatch(formatComparison([two, load('h200x2-2026-12-01/h200x2-nccl2.30.7-source.json')]), /different rank counts/);
});

test('1 rank: teardown figures (abort, revoke, finalize + destroy, destroy_process_group) are named beside the study, not judged against its 4-rank ones', () => {
  const one = load('h200x1-2026-12-01/h200x1-nccl2.28.9-wheel.json');
  const text = line(one, 'teardown-floors');
  assert.match(text, /^Tearing a communicator of 1 rank down costs: ncclCommAbort 999 ms/);
  assert.doesNotMatch(text, /agrees|differs/, text);
  // Each figure in the setting the study gives it (issue #28): abort across its configurations,
  // revoke on A40 with the configuration not stated, destroy with its low end on 8 V100s.
  assert.match(text, /Study \(NCCL 2\.28\.9 and 2\.32\.3, A40 and V100, one node and across nodes, 2–8 GPUs\): ncclCommAbort 485–534 ms — not compared here: a communicator of 1 rank has no peer, the study's had 2–8 GPUs \(study: abort, [^)]+\)\./, text);
  assert.match(text, /Study \(A40, configuration not stated\): ncclCommRevoke until quiet 499–502 ms — not compared here: a communicator of 1 rank has no peer, the study's had several GPUs \(count not stated\) \(study: revoke/, text);
  assert.match(text, /Study \([^)]*; the 156 ms low end on 2 nodes × 4 V100\): ncclCommFinalize \+ ncclCommDestroy 0\.16–0\.43 s — not compared here/, text);
  const c10d = deriveVerdict(load('h200x1-2026-12-01/h200x1-torch2.11-nccl2.28.9-c10d.json')).map((l) => l.text).join('\n');
  assert.match(c10d, /destroy_process_group 0\.94–0\.96 s — not compared here: a process group of 1 rank/);
  assert.doesNotMatch(c10d, /destroy_process_group 0\.94–0\.96 s vs/);
  // At 2 ranks both are judged.
  assert.match(line(load('h200x2-2026-12-01/h200x2-nccl2.28.9-wheel.json'), 'teardown-floors'), /ncclCommAbort 485–534 ms vs 517 ms \(inside the study's range\): agrees/);
  assert.match(deriveVerdict(load('h200x2-torch2.11-nccl2.28.9-c10d.json')).map((l) => l.text).join('\n'), /destroy_process_group 0\.94–0\.96 s vs 0\.507 s \(0\.54× its lower end\): same order as the study \(within commcost's 0\.32–3\.2× band\)/);
});

test('the results page gives a small ratio two significant digits (a 1-rank step against a 2-rank one), never "0.00×"', () => {
  const m = ncclViewModel({ ratios: [{ label: 'first collective / init', value: 0.0000575 }, { label: 'cold / warm', value: 21.23 }] } as Parameters<typeof ncclViewModel>[0]);
  const text = JSON.stringify(m);
  assert.match(text, /first collective \/ init: 0\.000058×/);
  assert.match(text, /cold \/ warm: 21\.2×/);
  assert.doesNotMatch(text, /0\.00×/);
});

test('the comparison page and the CLI share one rank-count note: said only when the runs differ in size', () => {
  assert.match(rankCountNote([{ key: 'A', ranks: 2 }, { key: 'B', ranks: 1 }]) ?? '', /^the runs have different rank counts \(A 2, B 1\): each ratio sets communicators of different sizes side by side/);
  assert.equal(rankCountNote([{ key: 'A', ranks: 2 }, { key: 'B', ranks: 2 }]), undefined);
  assert.equal(rankCountNote([{ key: 'A', ranks: 2 }, { key: 'B' }]), undefined, 'an unknown size is no evidence of a difference');
  const view = fs.readFileSync(path.join(__dirname, '..', '..', 'webview', 'compareView.ts'), 'utf8');
  assert.match(view, /rankCountNote\(c\.runs\)/, 'the comparison page shows the note');
});

test('a verdict judged from one recorded iteration per step says it rests on a single observation; 10 iterations say nothing of it', () => {
  const ten = load('h200x2-2026-12-01/h200x2-nccl2.28.9-wheel.json');
  const judged = (r: RunFile) => deriveVerdict(r).map((l) => l.text).filter((t) => /: (agrees|differs)/.test(t));
  assert.ok(judged(ten).length > 0, 'the 2-GPU run has judged lines');
  for (const t of judged(ten)) assert.doesNotMatch(t, /single observation|too few to show a spread/);
  const one = { ...ten, options: { ...ten.options, iterations: 1 } } as RunFile;
  for (const t of judged(one)) assert.match(t, /each word rests on a single observation/, t);
  const two = { ...ten, options: { ...ten.options, iterations: 2 } } as RunFile;
  for (const t of judged(two)) assert.match(t, /from 2 recorded iterations per step: too few to show a spread/, t);
});
