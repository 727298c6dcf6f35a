/**
 * Issue #28, rule 1: every figure of readings/studyFigures.ts carries exactly the setting the study
 * gives it, and nothing in the product is shown as the study's words unless the study says it
 * verbatim. Checked against the study's own text (shared/study/where-communicator-rebuild-actually-costs.txt):
 * its README states no licence, so the text is not copied into test/fixtures; the tests read it
 * from ../shared (or COMMCOST_STUDY_TEXT) and are skipped, with that reason, where it is absent.
 *
 * For each figure the table below gives the study's passages that hold it (short locators, each
 * checked verbatim in the text; the first is the figure's own sentence). The rules:
 * - every number the figure is written with is in those passages;
 * - every fact of its setting (NCCL and torch versions, GPU models, counts, nodes, PCIe,
 *   InfiniBand) is in those passages: no setting the study does not give;
 * - every NCCL version and GPU model of the figure's own passage is in its setting: no setting
 *   narrowed to one host of several ("4× A40, NCCL 2.32.3" for a figure the study gives across
 *   NCCL 2.28.9 and 2.32.3, A40 and V100);
 * - a setting with no NCCL version says the version is not stated (or is the study's estimate).
 */
import assert from 'node:assert/strict';
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { STUDY_FIGURES, type StudyFigureKey } from '../../readings/studyFigures';

const repoRoot = join(__dirname, '..', '..');
const studyPath = process.env.COMMCOST_STUDY_TEXT ?? join(repoRoot, '..', 'shared', 'study', 'where-communicator-rebuild-actually-costs.txt');
const present = existsSync(studyPath);
const skip = present ? false : `the study's text is not at ${studyPath} (its licence is not stated, so it is not copied into test/fixtures; set COMMCOST_STUDY_TEXT)`;
if (!present) console.log(`# studyAttribution: skipped: ${skip as string}`);

/** Quotes and apostrophes made straight and whitespace single, for a verbatim comparison. */
const norm = (s: string): string => s.replace(/[’‘]/g, "'").replace(/[“”]/g, '"').replace(/\s+/g, ' ').trim();
const study = present ? norm(readFileSync(studyPath, 'utf8')) : '';

const A40_NODE = 'One node of four A40s, 48 GB, PCIe';
const A40_VERSION = 'On four A40s with NCCL 2.32.3, init itself is 43 ms';
const REBUILD = 'On four A40s, split is 81 ms, shrink 64 ms, grow 78 ms, and a fresh init 92 ms';
const ABORT = 'Abort stays between 485 and 534 ms on NCCL 2.28.9 and 2.32.3, on A40 and V100, on one node and across nodes';
const FLOOR = 'Abort and revoke sit on a floor of about 0.5 s from 2 to 8 GPUs, on A40 and V100, and on NCCL 2.28.9 and 2.32.3';
const POOL = 'Last, the pool. On four A40s';
const ONE_NODE = 'This is one node.';

/** Each figure's passages in the study: the figure's own sentence first, then those that give its setting. */
const PASSAGES: Record<StudyFigureKey, string[]> = {
  initCall: [A40_VERSION, A40_NODE],
  initToFirst: ['Adding the first 1 MB allreduce makes it 92 ms', A40_VERSION, A40_NODE],
  splitCall: ['The split call is 23 ms', A40_VERSION, A40_NODE],
  splitFirst: ['The first allreduce on the new subgroup pays another 54.5 ms', A40_VERSION, A40_NODE],
  splitToFirst: [REBUILD, A40_NODE],
  shrinkToFirst: [REBUILD, A40_NODE],
  growToFirst: [REBUILD, A40_NODE],
  freshToFirst: [REBUILD, A40_NODE],
  splitShare1ToFirst: ['splitShare=1 is 78 ms on four GPUs, against 81 ms without sharing', REBUILD, A40_NODE],
  splitShare0ToFirst: ['splitShare=1 is 78 ms on four GPUs, against 81 ms without sharing', REBUILD, A40_NODE],
  nodesShrinkToFirst: ['On eight V100s, shrink is 180 ms, grow 175 ms, and fresh 184 ms', 'two nodes of four V100s over InfiniBand'],
  nodesGrowToFirst: ['On eight V100s, shrink is 180 ms, grow 175 ms, and fresh 184 ms', 'two nodes of four V100s over InfiniBand'],
  nodesFreshToFirst: ['On eight V100s, shrink is 180 ms, grow 175 ms, and fresh 184 ms', 'two nodes of four V100s over InfiniBand'],
  abort: [ABORT, 'Abort barely moves from 2 GPUs to 8'],
  revoke: ['Revoke on A40 is also 499 to 502 ms'],
  destroy: [
    'Finalize plus destroy is 0.16 to 0.43 s',
    'Each pair is abort and finalize-plus-destroy on one configuration',
    ABORT,
    'Abort barely moves from 2 GPUs to 8',
    'Destroy is shortest on eight V100s across nodes, 156 ms',
    'two nodes of four V100s over InfiniBand',
  ],
  c10dDestroy: ["c10d's destroy_process_group is more expensive, a stable 0.94 to 0.96 s on A40", "the image's 2.28.9 on A40 with torch 2.11"],
  poolBytes: ['a TP4 parent plus two TP2 groups plus four TP1 groups costs an extra 464 MB per GPU', POOL, A40_NODE, ONE_NODE],
  tp2ChildBytes: ['One TP2 child alone is about 76 MB', POOL, A40_NODE, ONE_NODE],
  steadyChild: ['A 64 MB allreduce on the child is 3.273 ms, against 3.272 ms on a freshly built communicator', POOL, A40_NODE, ONE_NODE],
  steadyFresh: ['A 64 MB allreduce on the child is 3.273 ms, against 3.272 ms on a freshly built communicator', POOL, A40_NODE, ONE_NODE],
  poolSwitch: ['about 0.2 ms, plus capturing and instantiating one allreduce in a CUDA Graph, 0.28 ms', POOL, A40_NODE, ONE_NODE],
  coldToFirst: [
    'NCCL init plus the first collective took 493 to 523 ms',
    'an earlier result on A40s across InfiniBand',
    "a cold process's first init plus first collective, including the first CUDA and library initialization inside the process",
  ],
  warmToFirst: ['A warm process on the same class of cross-node A40 is 98 ms'],
  drain: ['Draining four large in-flight messages takes 7 to 112 ms on four A40s', A40_NODE],
  migrationPause: ['a cross-GPU request migration paused for a median of 69 ms', 'a handoff of state between two independent single-GPU engines'],
  abortFloor: [FLOOR, ABORT],
  pool8Bytes: ['At 8 GPUs the shape count grows to about 15 and the memory to about 1 GB', POOL, A40_NODE],
};

const WORDS: Record<string, string> = { '1': 'one', '2': 'two', '4': 'four', '8': 'eight' };
/** A count is given when its digit or its word stands alone in the passages. */
const hasCount = (text: string, n: string): boolean => new RegExp(`\\b(${n}|${WORDS[n] ?? n})\\b`, 'i').test(text);

/** The facts a setting states, each with whether the passages give it. */
function facts(setting: string, passages: string): { fact: string; given: boolean }[] {
  const out: { fact: string; given: boolean }[] = [];
  for (const v of setting.match(/\b\d+\.\d+\.\d+\b/g) ?? []) out.push({ fact: `NCCL ${v}`, given: passages.includes(v) });
  for (const m of setting.match(/\b(A40|V100|H100|H200)\b/g) ?? []) out.push({ fact: m, given: passages.includes(m) });
  for (const m of setting.matchAll(/torch (\d+\.\d+)/g)) out.push({ fact: m[0], given: passages.includes(m[0]) });
  for (const m of setting.matchAll(/(\d+)(?:–(\d+))? (GPUs|nodes)|(\d+)× (?:A40|V100)/g)) {
    for (const n of [m[1], m[2], m[4]].filter((x): x is string => x !== undefined)) out.push({ fact: `count ${n} (${m[0]})`, given: hasCount(passages, n) });
  }
  for (const w of ['PCIe', 'InfiniBand', 'one node', 'across nodes'])
    if (setting.includes(w)) out.push({ fact: w, given: passages.toLowerCase().includes(w.toLowerCase()) });
  return out;
}

describe("each study figure carries the study's own setting", { skip }, () => {
  test('every passage cited is in the study verbatim', () => {
    for (const [key, passages] of Object.entries(PASSAGES))
      for (const p of passages) assert.ok(study.includes(norm(p)), `${key}: "${p}" is not in the study`);
    assert.deepEqual(Object.keys(PASSAGES).sort(), Object.keys(STUDY_FIGURES).sort(), 'every figure has its passages');
  });
  for (const [key, f] of Object.entries(STUDY_FIGURES)) {
    test(`${key}: ${f.written}, ${f.host.text}`, () => {
      const passages = PASSAGES[key as StudyFigureKey].join(' | ');
      // Its numbers, as written (the pool's "2×TP2" names shapes, not figures).
      for (const n of f.written.replace(/\d×TP\d|TP\d/g, '').match(/\d+(?:\.\d+)?/g) ?? [])
        assert.ok(new RegExp(`(^|[^\\d.])${n.replace('.', '\\.')}(?![\\d])`).test(passages), `${key}: ${n} (of "${f.written}") is not in its passages`);
      // Its setting states only what the study gives…
      for (const x of facts(f.host.text, passages)) assert.ok(x.given, `${key}: its setting "${f.host.text}" states ${x.fact}, which the study does not give this figure`);
      // …and all that the figure's own passage gives: no configuration narrowed to one.
      const own = PASSAGES[key as StudyFigureKey][0]!;
      for (const v of own.match(/\b\d+\.\d+\.\d+\b|\b(A40|V100)\b/g) ?? [])
        assert.ok(f.host.text.includes(v), `${key}: the study gives it on ${v}, its setting "${f.host.text}" leaves that out`);
      if (!/\d+\.\d+\.\d+/.test(f.host.text)) assert.match(f.host.text, /not stated|estimate/, `${key}: no NCCL version and not said to be unstated: "${f.host.text}"`);
    });
  }
});

/** Product text (code, its comments, the docs) in which a quote of the study could appear. */
function productFiles(): string[] {
  const out: string[] = [];
  const walk = (dir: string): void => {
    for (const name of readdirSync(dir)) {
      const p = join(dir, name);
      if (statSync(p).isDirectory()) walk(p);
      else if (/\.(ts|md)$/.test(name)) out.push(p);
    }
  };
  for (const d of ['readings', 'webview', 'cli', 'client', 'extension', 'docs']) walk(join(repoRoot, d));
  for (const f of ['README.md', 'README.vsix.md', 'ARCHITECTURE.md']) out.push(join(repoRoot, f));
  return out.filter((f) => !f.includes(`${join('docs', 'results')}`));
}

describe("nothing is shown as the study's words unless the study says it verbatim", { skip }, () => {
  test('a quotation attributed to the study ("the study expects "…"") is in its text', () => {
    const wrong: string[] = [];
    for (const file of productFiles()) {
      // Comment markers and line breaks out, so a quote across lines of a comment is read whole.
      const text = readFileSync(file, 'utf8').replace(/\n\s*(\*|\/\/)\s?/g, ' ').replace(/\s+/g, ' ');
      for (const m of text.matchAll(/\b[Ss]tudy(?:'s)?\b(?: own)? (?:expects|says|writes|warns|warning|puts it|states)[^"“.]{0,40}["“]([^"”]{12,})["”]/g)) {
        if (!study.includes(norm(m[1]!))) wrong.push(`${file.slice(repoRoot.length + 1)}: "${m[1]}"`);
      }
    }
    assert.deepEqual(wrong, []);
  });
});
