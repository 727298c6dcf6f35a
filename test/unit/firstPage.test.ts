/**
 * The first page (readings/verdict/summary.ts `firstPageSummary`): the answer in a few lines,
 * each chosen by the run's figures, checked on committed runs — 1×H200 and 2×H200 of
 * docs/results, the partial run of the faults session, a simulated run and a failed run of
 * test/fixtures/runs — and on synthetic regimes (several hosts, a run still going). Every figure
 * is recomputed from the run's own medians; the study's figures from readings/studyFigures.ts.
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, test } from 'node:test';
import { validateRunFile } from '../../client/runFileSchema';
import type { RunFile } from '../../protocol/runFile';
import { STUDY_FIGURES } from '../../readings/studyFigures';
import { bytes, ms, msAll, pct } from '../../readings/verdict/format';
import { firstPageSummary, type SummaryLine } from '../../readings/verdict/summary';
import { load, synthetic } from './verdictRuns';

const fixture = (name: string): RunFile =>
  validateRunFile(JSON.parse(fs.readFileSync(path.join(__dirname, '..', 'fixtures', 'runs', name), 'utf8')));

const ONE_GPU = 'h200x1-2026-12-01/h200x1-nccl2.30.7-source.json';
const TWO_GPU = 'h200x2-2026-12-01/h200x2-nccl2.30.7-source.json';
const PARTIAL = 'h200x1-faults-2026-12-01/silent-agent-partial.json';

function medianOf(run: RunFile, e: string, v: string | undefined, step: string): number {
  const exp = run.experiments.find((x) => x.experiment === e);
  const variant = v === undefined ? exp?.variants[0] : exp?.variants.find((x) => x.variant === v);
  const m = variant?.steps.find((s) => s.step === step)?.stats.median;
  assert.ok(m !== undefined, `${e} ${v ?? ''} ${step} has no median in the run`);
  return m;
}

function lineOf(lines: SummaryLine[], kind: SummaryLine['kind']): SummaryLine {
  const l = lines.find((x) => x.kind === kind);
  assert.ok(l, `no ${kind} line in ${JSON.stringify(lines.map((x) => x.label))}`);
  return l;
}

/** Every study figure named is one of studyFigures.ts, with its own setting and source (a derived share names its sources). */
function assertStudyFromTable(lines: SummaryLine[]): void {
  const settings = new Set(Object.values(STUDY_FIGURES).map((f) => f.host.text));
  for (const l of lines)
    for (const s of l.study) {
      assert.ok(settings.has(s.setting), `${l.label}: setting "${s.setting}" is not a study setting`);
      assert.match(s.source, /docs\/METHOD\.md "The study's figures"/, `${l.label}: the source names where the figure is quoted`);
      assert.ok((s.comparison === undefined) !== (s.notCompared === undefined), `${l.label}: a study figure is compared or says why not, never both or neither`);
    }
}

describe('the first page: the answer in a few lines', () => {
  test('2×H200: rebuild, first collective, teardown and pool, each with its figure, its step and the study judged beside it', () => {
    const run = load(TWO_GPU);
    const lines = firstPageSummary(run);
    assert.deepEqual(lines.map((l) => l.kind), ['rebuild', 'first-collective', 'teardown', 'pool'], 'a complete measured run of 2 ranks needs no regime line');
    const total = medianOf(run, 'init', undefined, 'total');
    const rebuild = lineOf(lines, 'rebuild');
    assert.equal(rebuild.figure, ms(total));
    assert.match(rebuild.step ?? '', /^init · default · total, median of \d+$/);
    assert.match(rebuild.study[0]!.comparison ?? '', new RegExp(`${STUDY_FIGURES.initToFirst.written} vs ${ms(total)}`));
    const call = medianOf(run, 'init', undefined, 'call');
    const first = medianOf(run, 'init', undefined, 'first');
    const fc = lineOf(lines, 'first-collective');
    assert.equal(fc.figure, `${ms(first)} (${pct(first / (call + first))})`);
    assert.match(fc.study[0]!.written, /^\d+% \(derived by commcost from its /, "the share is the study's only as derived");
    assert.ok(fc.study[0]!.comparison, 'a 2-rank share on one host is compared');
    const teardown = lineOf(lines, 'teardown');
    const destroy = medianOf(run, 'destroy', undefined, 'total');
    assert.equal(teardown.figure, msAll([destroy, medianOf(run, 'abort', undefined, 'abort'), medianOf(run, 'revoke', 'idle/destroy', 'revoke')])[0]);
    assert.equal(teardown.study.length, 3, 'destroy, abort and revoke each beside the study');
    const pool = lineOf(lines, 'pool');
    const poolV = run.experiments.find((e) => e.experiment === 'pool')!.variants.find((v) => !v.variant.endsWith('/splitShare=1'))!;
    assert.equal(pool.figure, `${bytes(poolV.memoryBytes!['pool after TP1']!)} per GPU`);
    assert.match(pool.text, new RegExp(`turns a ${ms(medianOf(run, 'pool', poolV.variant, 'rebuild'))} rebuild`));
    assertStudyFromTable(lines);
  });

  test('1×H200: says what 1 rank cannot show, no line of "missing", every study figure named and not compared', () => {
    const run = load(ONE_GPU);
    const lines = firstPageSummary(run);
    assert.deepEqual(lines.map((l) => l.kind), ['regime', 'rebuild', 'first-collective', 'teardown', 'pool']);
    // Issue #28 round 3: the split this run timed (connect-mode, color = rank) is named as a
    // one-rank child; only what it did not time (shrink, grow) needs 2 GPUs (firstPage28d.test.ts).
    assert.match(lines[0]!.text, /1 rank has no peer to connect to: this run cannot show a connect; its split here, ncclCommSplit \(color = rank\) in the connect-mode experiment .* makes a one-rank child.*; shrink and grow need 2 GPUs or more/);
    for (const l of lines) assert.doesNotMatch(l.text, /missing/i);
    const fc = lineOf(lines, 'first-collective');
    assert.match(fc.text, /nothing to connect, so no lazy connect to measure/);
    assert.equal(fc.figure, ms(medianOf(run, 'init', undefined, 'first')));
    assert.match(lineOf(lines, 'pool').text, /one communicator \(TP1\).*nothing for a pool to save/);
    const study = lines.flatMap((l) => l.study);
    assert.ok(study.length >= 5);
    for (const s of study) assert.match(s.notCompared ?? '', /1 rank has no peer/, `${s.what} is named, not compared, at 1 rank`);
    assertStudyFromTable(lines);
  });

  test('simulated: said first, every figure marked simulated, nothing set against the study', () => {
    const run = fixture('simulated-2ranks-init-split.json');
    const lines = firstPageSummary(run);
    assert.equal(lines[0]!.label, 'Simulated');
    assert.match(lines[0]!.text, /simulated NCCL, not from a measurement/);
    const withFigures = lines.filter((l) => l.figure !== undefined);
    assert.ok(withFigures.length >= 2);
    for (const l of withFigures) {
      assert.match(l.figure!, /\(simulated\)$/, `${l.label}'s figure is marked simulated`);
      assert.match(l.text, /^Simulated: /, `${l.label}'s sentence says simulated`);
    }
    for (const s of lines.flatMap((l) => l.study)) {
      assert.equal(s.comparison, undefined, `${s.what}: a simulated figure is never compared`);
      assert.equal(s.notCompared, 'simulated figures are not measurements');
    }
    // The experiments it did not run are said absent, in one line each, with why.
    assert.match(lineOf(lines, 'teardown').text, /^No figure in this run: the destroy experiment was not part of this run\.$/);
  });

  test('failed: one line, what failed, and nothing else', () => {
    const run = fixture('simulated-2ranks-failed-startup.json');
    assert.equal(run.status, 'failed');
    const lines = firstPageSummary(run);
    assert.equal(lines.length, 1);
    const e = run.errors[0]!;
    assert.equal(lines[0]!.label, 'Failed');
    assert.ok(lines[0]!.text.includes(`${e.code}: ${e.message}`), lines[0]!.text);
    assert.match(lines[0]!.text, /simulated run failed before any figure was recorded/);
    // The same run marked measured: the line does not call it simulated.
    assert.doesNotMatch(firstPageSummary({ ...run, simulated: false, stamp: undefined })[0]!.text, /simulated/);
  });

  test('partial: names what stopped it and what is absent; nothing to show is one line, not four', () => {
    const run = load(PARTIAL);
    const lines = firstPageSummary(run);
    const partial = lines.find((l) => l.label === 'Partial');
    assert.ok(partial);
    const absent = run.experiments.filter((e) => e.variants.length === 0).map((e) => e.experiment);
    assert.ok(absent.length > 0);
    assert.ok(partial.text.includes(`no figure for ${absent.join(', ')}`), partial.text);
    assert.ok(partial.text.includes(String(run.errors[0]!.code)));
    assert.deepEqual(lines.map((l) => l.label), ['Partial', '1 rank', 'No answer']);
  });

  test('a run over several hosts: the study\'s one-host share named, not compared; its figure across nodes compared', () => {
    const frame = load(TWO_GPU);
    const run = synthetic(4, frame.experiments.filter((e) => e.experiment === 'init'), {
      nodes: [
        { host: 'a', hostname: 'a', ranks: [0, 1], gpus: 2 },
        { host: 'b', hostname: 'b', ranks: [2, 3], gpus: 2 },
      ] as unknown as RunFile['nodes'],
    });
    const lines = firstPageSummary(run);
    assert.match(lineOf(lines, 'rebuild').study[0]!.setting, /2 nodes × 4 V100/);
    assert.ok(lineOf(lines, 'rebuild').study[0]!.comparison);
    assert.match(lineOf(lines, 'first-collective').study[0]!.notCompared ?? '', /spans 2 hosts/);
  });

  test('a run still going says so; a line whose figures the code did not foresee says it could not be formed', () => {
    const run = { ...load(TWO_GPU), status: 'running' as const };
    assert.equal(firstPageSummary(run)[0]!.label, 'Running');
    const odd = load(TWO_GPU);
    const pool = odd.experiments.find((e) => e.experiment === 'pool')!;
    (pool.variants[0] as unknown as { variant: unknown }).variant = null;
    const lines = firstPageSummary(odd);
    assert.match(lineOf(lines, 'pool').text, /could not be formed/);
    assert.equal(lineOf(lines, 'rebuild').figure, ms(medianOf(odd, 'init', undefined, 'total')));
  });
});

test('the pool line names the child its switch goes to (a one-rank TP1 child at 2 ranks: no peer)', () => {
  const pool = firstPageSummary(load(TWO_GPU)).find((l) => l.kind === "pool")!;
  assert.match(pool.text, /turns a [\d.]+ ms rebuild of its one-rank TP1 child \(split \+ first collective\) into a [\d.]+ ms switch/);
});
