/**
 * Leftovers of the readings review (2026-12-01): each test names the item it covers and failed on
 * the code before its fix. Field case C5's headings named in words; the drain's and the study's
 * sources; one unit per comparison; a zero figure never divided by; the few-iterations note on
 * every judgement; "NCCL version not recorded", never "NCCL ?"; "0 MiB", never "0.0 MiB"; every
 * node of a run over several named in the results page's and the report's header.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { deriveVerdict } from '../../readings/verdict';
import { costWordsOf, figureClause, rangeClause, relationClause, shareClause, studySentence } from '../../readings/verdict/agreement';
import { fewIterationsNote } from '../../readings/verdict/format';
import { STUDY_FIGURES as S } from '../../readings/studyFigures';
import { formatBytes, ncclText, profileLabel, statusText } from '../../readings/annotationText';
import { runsTree } from '../../extension/runsViewModel';
import { compareRuns } from '../../protocol/compare';
import { runFolder, storeOf } from '../support/annotationFixtures';
import { metaRows } from '../../webview/runFacts';
import { renderReport } from '../../client/htmlReport';
import { formatSummary } from '../../cli/summary';
import type { RunFile } from '../../protocol/runFile';
import { experiment, load, synthetic, twoNodes as twoNodesOf, variant } from './verdictRuns';


function stubBundle(): string {
  const dir = mkdtempSync(join(tmpdir(), 'commcost-leftovers-'));
  const path = join(dir, 'webview.js');
  writeFileSync(path, 'window.__commcost = "loaded";');
  return path;
}

const NEVER = /NaN|Infinity|undefined|\b0×|(?<![\d.])0\.0 (ms|MiB)|NCCL \?|\(no ratio \(/;

const line = (run: RunFile, id: string): string => {
  const text = deriveVerdict(run).find((l) => l.id === id)?.text;
  assert.ok(text, `no ${id} line in:\n${deriveVerdict(run).map((l) => l.id).join(', ')}`);
  return text;
};

const noscript = (html: string): string => /<noscript>([\s\S]*)<\/noscript>/.exec(html)?.[1] ?? '';

/** A 2-rank run with the shrink-abort experiment planned and nothing summarised yet. */
function c5Run(over: Partial<RunFile> = {}): RunFile {
  return synthetic(2, [experiment('shrink-abort', [])], over);
}

describe('field case C5 headings (leftover 1)', () => {
  test('the CLI names C5 in words in its table header, which comes before the verdict', () => {
    const text = formatSummary(c5Run({ stamp: undefined }));
    const header = text.split('\n').find((l) => l.includes('C5'));
    assert.equal(
      header,
      'Field case C5, "shrink with abort, then destroy, hangs" (shrink-abort) on NCCL version not recorded: after ncclCommShrink drops the last rank, each way to release the parent:',
    );
    assert.match(formatSummary(c5Run()), /^Field case C5, "shrink with abort, then destroy, hangs" \(shrink-abort\) on NCCL 2\.28\.9: /m);
  });

  test('the HTML report names C5 in words and never writes "NCCL ?"', () => {
    const bare = noscript(renderReport(c5Run({ stamp: undefined }), { webviewJsPath: stubBundle() }));
    assert.match(bare, /<h2>Field case C5, &#34;shrink with abort, then destroy, hangs&#34; on NCCL version not recorded: releasing the parent after ncclCommShrink<\/h2>/);
    assert.doesNotMatch(bare, /NCCL \?/);
    assert.match(noscript(renderReport(c5Run(), { webviewJsPath: stubBundle() })), /<h2>Field case C5, &#34;shrink with abort, then destroy, hangs&#34; on NCCL 2\.28\.9: /);
  });
});

describe('the drain without a figure (leftover 2)', () => {
  test("the study's 7–112 ms is given with its host and source, not bare", () => {
    // A drain whose work had finished before the call: not a drain figure.
    const v = variant('finalize/16MiB', { finalize: 1.2, sync: 0.01, total: 1.2 });
    v.counts = { inFlightAtStart: { min: 0, max: 0, sum: 0, n: 10 } };
    const text = line(synthetic(2, [experiment('drain', [v])]), 'drain');
    assert.match(
      text,
      / Study \(4× A40 PCIe, one node, NCCL version not stated\): until quiet with four 16–256 MB allreduces in flight 7–112 ms — not compared here: this run has no drain figure \(study: drain of four in-flight 16–256 MB messages, in docs\/METHOD\.md "The study's figures"\)\.$/,
      text,
    );
    assert.doesNotMatch(text, NEVER, text);
  });
});

describe('agreement.ts: one wording, one unit, no division by 0 (leftover 3)', () => {
  const HERE = { host: '2× H200 NVLink', simulated: false };
  test("the study sentence's few-iterations note is format.ts's, word for word", () => {
    for (const iterations of [1, 2]) {
      const s = studySentence({ ...HERE, iterations }, [figureClause(100, S.initToFirst)]);
      assert.ok(s.endsWith(` (${fewIterationsNote({ simulated: false, iterations })!}).`), s);
    }
  });

  test('a comparison writes both sides in one unit: the study in seconds, the run in seconds', () => {
    assert.match(studySentence(HERE, [figureClause(508, S.destroy)]), /ncclCommFinalize \+ ncclCommDestroy 0\.16–0\.43 s vs 0\.508 s \(1\.18× its upper end\): same order as the study/);
    // A run's figure of 1 s or more against a study figure written in ms: both in seconds.
    assert.equal(figureClause(1950, S.initToFirst).text, 'init to the first 1 MB allreduce 0.092 s vs 1.95 s (21×)');
    assert.match(rangeClause(600, 1200, S.drain).text, / 0\.007–0\.112 s vs 0\.600–1\.20 s \(/);
    assert.match(relationClause(1200, 98, S.coldToFirst, S.warmToFirst, 'cold against warm').text, /\(1\.20 s vs 0\.098 s\)/);
    assert.match(shareClause(1500, 2000, S.initToFirst.min - S.initCall.min, S.initToFirst.min, S.initCall.host, 'share').text, /\(of the call \+ first collective, 0\.500 \+ 1\.50 s\)/);
    for (const c of [figureClause(508, S.destroy), figureClause(1950, S.initToFirst), rangeClause(600, 1200, S.drain)]) {
      assert.doesNotMatch(c.text, / ms\b.* s\b| s\b.* ms\b/, c.text);
    }
  });

  test('a figure of 0 is named, not judged, never divided by', () => {
    for (const c of [
      figureClause(0, S.destroy),
      figureClause(0, S.poolBytes),
      rangeClause(0, 50, S.drain),
      shareClause(0, 0, 49, 92, S.initCall.host, 'share'),
      relationClause(0, 98, S.coldToFirst, S.warmToFirst, 'cold against warm'),
    ]) {
      // The cold/warm anchor was measured across nodes: judged (here: not) only for a run across nodes.
      const s = studySentence(c.host.acrossNodesOnly ? { ...HERE, nodes: 2 } : HERE, [c]);
      assert.equal(c.agrees, false);
      assert.match(s, /: not judged \((a figure here reads 0 ms|it reads 0 ms here|its lowest reads 0 ms here|no memory change measured here|a total of 0 ms here)/, s);
      assert.doesNotMatch(s, NEVER, s);
      assert.doesNotMatch(s, /agrees|differs|points apart/, s);
    }
  });
});

describe('cold start (leftover 4)', () => {
  const cold = (c: number, w: number, ranks = 2, over: Partial<RunFile> = {}): RunFile =>
    synthetic(ranks, [experiment('cold-start', [variant('default', { cold: c, warm: w })])], over);

  test('a warm figure of 0 reads as a sentence: no ratio, said why, never nested "(no ratio (…))"', () => {
    const text = line(cold(500, 0), 'cold-start');
    assert.match(text, /a second one in the same process 0 ms: cold costs more than warm \(no ratio: the warm one reads 0 ms, below the timer's resolution\)\./, text);
    assert.doesNotMatch(text, NEVER, text);
    assert.match(line(cold(0, 0), 'cold-start'), /\(no ratio: both read 0 ms, below the timer's resolution\)/);
  });

  test('cold and warm in one unit', () => {
    assert.match(line(cold(1200, 98), 'cold-start'), /costs 1\.20 s to its first collective, a second one in the same process 0\.098 s: cold costs more than warm \(12×\)/);
  });

  test('at 1 rank (not compared with the study) the cost words carry the few-iterations note', () => {
    const base = cold(500, 100, 1);
    const run = { ...base, options: { ...base.options!, iterations: 1 } };
    assert.match(line(run, 'cold-start'), /cold costs more than warm \(5×\) \(here from one recorded iteration per step: each word rests on a single observation\)\./);
    assert.doesNotMatch(line(base, 'cold-start'), /recorded iteration/);
  });
});

describe('field cases C2–C6 (leftover 5)', () => {
  const cases = (): RunFile => load('h200x2-nccl2.28.9-wheel.cases.json');

  test('C6: the poll in the label, the whole and the abort call in one unit', () => {
    const run = cases();
    const nb = run.experiments.find((e) => e.experiment === 'init-abort')!.variants.find((v) => v.variant === 'nonblocking')!;
    const whole = nb.steps.find((s) => s.step === 'abort')!;
    whole.label = 'non-blocking init polled 1500 ms, then ncclCommAbort';
    whole.stats = { ...whole.stats, median: 1500.2 };
    nb.steps.push({ ...structuredClone(whole), step: 'abortCall', label: 'the ncclCommAbort call alone', stats: { ...whole.stats, median: 0.42 } });
    const text = line(run, 'init-abort');
    assert.match(text, /a non-blocking one was aborted \(non-blocking init polled 1\.50 s, then ncclCommAbort\): 1\.50 s in all, of which ncclCommAbort itself took 0\.42 ms\./, text);
    // The poll and the whole are set side by side in one unit; the abort call keeps its own.
    assert.doesNotMatch(text, /polled 1500 ms/, text);
  });

  test('C2–C6 carry the few-iterations note at 1 and 2 recorded iterations, before "The study published no figure for this."', () => {
    const shrinkAbort = synthetic(2, [experiment('shrink-abort', [])]);
    const oneRankMemory = synthetic(2, [
      experiment('connect-mode', [
        variant('one-rank/runtimeConnect=1', {}, { afterCall: 300, afterFirst: 500 }),
        variant('one-rank/runtimeConnect=0', {}, { afterCall: 500, afterFirst: 500 }),
      ]),
    ]);
    for (const [run, ids] of [
      [cases(), ['split-share', 'split-subset', 'init-abort']],
      [shrinkAbort, ['shrink-abort']],
      [oneRankMemory, ['one-rank-memory']],
    ] as const) {
      for (const iterations of [1, 2]) {
        const few = { ...run, options: { ...run.options!, iterations } };
        for (const id of ids) {
          const text = line(few, id);
          assert.ok(text.includes(` (${fewIterationsNote({ simulated: false, iterations })!}).`), `${id} at ${iterations}: ${text}`);
          assert.match(text, /The study published no figure for this\.$/, text);
        }
      }
      for (const id of ids) assert.doesNotMatch(line({ ...run, options: { ...run.options!, iterations: 10 } }, id), /recorded iteration/);
    }
  });
});

describe('extension surfaces (leftover 6)', () => {
  test('memory of no bytes reads "0 MiB", never "0.0 MiB"; under 0.05 MiB one significant digit', () => {
    assert.equal(formatBytes(0), '0 MiB');
    assert.equal(formatBytes(40 * 1024), '0.04 MiB');
    assert.equal(formatBytes(4 * 2 ** 20), '4.0 MiB');
    assert.equal(formatBytes(484 * 2 ** 20), '484 MiB');
  });

  test('a run without a stamp: "NCCL version not recorded" in the status bar, the runs view, the run picker and the comparison legend', async () => {
    const run: RunFile = { ...structuredClone(load('h200x2-nccl2.28.9-wheel.json')), stamp: undefined, verdict: undefined };
    const { store } = await storeOf(runFolder([run]));
    const p = store.profiles[0];
    assert.ok(p, 'the stamp-less run loads');
    const status = statusText(p, true, [], [], { simulated: 0, foreign: 0 }, store.profiles);
    const node = runsTree(store.profiles, p, { now: p.time, staleAfterDays: 30, expectedNcclVersion: '' })[0]!.runs[0]!;
    const texts = [status.text, status.tooltip, profileLabel(p), node.label, node.description, node.tooltip, compareRuns([run, run]).runs[0]!.label];
    for (const t of texts) assert.doesNotMatch(t, /NCCL \?/, t);
    for (const t of [status.text, profileLabel(p), node.tooltip, compareRuns([run, run]).runs[0]!.label]) assert.match(t, /NCCL version not recorded/, t);
    assert.equal(ncclText('2.28.9'), 'NCCL 2.28.9');
  });
});

describe('a run over several nodes names every node (leftover 7)', () => {
  const twoNodes = (): RunFile => twoNodesOf('h200x2-nccl2.28.9-wheel.json');

  test("the results page's header: each node's host, GPUs and ranks; the GPUs of every node; the stamp said to be of one", () => {
    const rows = new Map(metaRows(twoNodes()));
    assert.equal(rows.get('nodes'), '2: gpu0 (8 GPUs, ranks 0–7), gpu1 (8 GPUs, ranks 8–15)');
    assert.equal(rows.get('GPUs'), '16 × NVIDIA H100 80GB HBM3');
    assert.equal(rows.get('host'), 'localhost (coordinator; the stamp below is of vm)');
    assert.match(rows.get('NCCL')!, /^2\.28\.9 · .* \(stamp of vm\)$/);
    // One host: as before, no nodes row.
    const one = new Map(metaRows(load('h200x2-nccl2.28.9-wheel.json')));
    assert.equal(one.get('nodes'), undefined);
    assert.equal(one.get('host'), 'localhost (vm)');
    assert.equal(one.get('GPUs'), '2 × NVIDIA H200');
  });

  test("the HTML report's header names every node", () => {
    const header = /<p>host [^<]*<\/p>/.exec(noscript(renderReport(twoNodes(), { webviewJsPath: stubBundle() })))?.[0] ?? '';
    assert.match(header, / · 2 nodes: gpu0 \(8 GPUs, ranks 0–7\), gpu1 \(8 GPUs, ranks 8–15\) · NCCL 2\.28\.9 \([^)]*\) \(stamp of vm\) · /, header);
    const bare = /<p>host [^<]*<\/p>/.exec(noscript(renderReport({ ...twoNodes(), stamp: undefined }, { webviewJsPath: stubBundle() })))?.[0] ?? '';
    assert.match(bare, /no environment stamp \(GPUs and NCCL version not recorded\)/, bare);
  });
});

describe('ratios of the medians in the HTML report', () => {
  test('written as the CLI writes them (formatRatio): a ratio below 0.1 keeps two significant digits, never "0.00×"', () => {
    const run = load('h200x2-2026-12-01/h200x2-nccl2.28.9-wheel.json');
    const cold = run.experiments.find((e) => e.experiment === 'cold-start')!.variants[0]!;
    assert.equal(cold.ratios?.length, 2);
    cold.ratios![0]!.value = 0.0042;
    cold.ratios![1]!.value = 3.43;
    const html = noscript(renderReport(run, { webviewJsPath: stubBundle() }));
    const p = /<p>Ratios of the medians: [^<]*<\/p>/.exec(html)?.[0] ?? '';
    assert.match(p, /cold \/ warm \(init to first collective\) 0\.0042×; cold \/ warm init 3\.43×/, p);
    assert.match(formatSummary(run), /cold \/ warm \(init to first collective\) 0\.0042×; cold \/ warm init 3\.43×/);
  });
});

test('issue #28 (5): a figure outside the study\'s range never reads "agrees", however close to its end; inside it does', () => {
  const HERE = { host: '2× H200 NVLink', simulated: false };
  const outside = figureClause(508, S.destroy);
  assert.match(outside.text, /1\.18× its upper end/);
  const words = studySentence(HERE, [outside]);
  assert.match(words, /same order as the study \(within commcost's 0\.32–3\.2× band\)/);
  assert.doesNotMatch(words, /: agrees/);
  assert.match(studySentence(HERE, [figureClause(300, S.destroy)]), /inside the study's range\): agrees/);
  // A single figure of the study keeps the 1.5× rule: 1.18× its value agrees.
  assert.match(studySentence(HERE, [figureClause(92 * 1.18, S.initToFirst)]), /: agrees/);
});

test('issue #28: two µs figures 8× apart are "within 0.05 ms (commcost\'s floor) of" each other, never "about the same"; close ones stay "about the same"', () => {
  assert.equal(costWordsOf(0.000096, 0.00079), "is within 0.05 ms (commcost's floor for a difference) of");
  assert.equal(costWordsOf(10.2, 10), 'costs about the same as');
  assert.equal(costWordsOf(0.0101, 0.01), 'costs about the same as');
  assert.equal(costWordsOf(5, 50), 'costs less than');
});
