/**
 * The agree/differ rule of the verdict (readings/verdict/agreement.ts; review defect 14): a share
 * against the study's by absolute points with one tolerance (SHARE_POINTS), a ratio of two
 * figures of the run against the study's same ratio on a log scale with one factor
 * (RATIO_FACTOR), checked at and just past each boundary, and on the runs whose readings the
 * review found incoherent (29 points apart "agrees" while 3 points apart "differs"; 0.88× against
 * 0.0000029× "agrees").
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { RunFile } from '../../protocol/runFile';
import { deriveVerdict } from '../../readings/verdict';
import { RATIO_FACTOR, relationClause, SHARE_POINTS, shareClause, studySentence } from '../../readings/verdict/agreement';
import { STUDY_FIGURES as S, STUDY_A40 } from '../../readings/studyFigures';
import { experiment, load, synthetic, variant } from './verdictRuns';

const line = (run: RunFile, id: string): string => {
  const text = deriveVerdict(run).find((l) => l.id === id)?.text;
  assert.ok(text, `no ${id} line`);
  return text;
};
const HERE = { host: '2× H200 NVLink', simulated: false };

describe('shares: absolute points, one tolerance, whichever side of half', () => {
  test('the tolerance is 20 points', () => assert.equal(SHARE_POINTS, 20));
  test('at the boundary (20 points) agrees; 21 points differs; the points are said either way', () => {
    const at = shareClause(70, 100, 50, 100, STUDY_A40, 'share');
    assert.equal(at.agrees, true);
    assert.equal(at.detail, '(20 points apart)');
    const past = shareClause(70.6, 100, 50, 100, STUDY_A40, 'share');
    assert.equal(past.agrees, false);
    assert.equal(past.detail, '(21 points apart)');
    // Below half against above half is judged by the same points: 35% against 50% agrees.
    const below = shareClause(35, 100, 50, 100, STUDY_A40, 'share');
    assert.equal(below.agrees, true);
    assert.equal(below.detail, '(15 points apart)');
  });
  test('53% in the study against half here agrees (3 points apart), never "most in the study, half here"', () => {
    const run = synthetic(2, [experiment('init', [variant('default', { call: 50, first: 50, total: 100 })])]);
    const text = line(run, 'first-collective-share');
    assert.match(text, /share 53% \(derived by commcost [^)]*\) vs 50% \(of the call \+ first collective, 50\.0 \+ 50\.0 ms\): agrees \(3 points apart, within commcost's ±20-point band\)/, text);
    assert.doesNotMatch(text, /most in the study|half here/, text);
  });
  test('2×H200: 82% against the study\'s 53% differs (28 points apart)', () => {
    const text = line(load('h200x2-nccl2.28.9-wheel.json'), 'first-collective-share');
    assert.match(text, /share 53% \(derived by commcost [^)]*\) vs 82% \(of the call \+ first collective, 31\.9 \+ 144 ms\): differs \(29 points apart, outside commcost's ±20-point band\)/, text);
  });
});

describe('ratios: a log scale, one factor', () => {
  const study = S.splitToFirst.min / S.freshToFirst.min;
  const clause = (ratio: number) => relationClause(ratio * 92, 92, S.splitToFirst, S.freshToFirst, 'split against a fresh init');
  test('the factor is 2', () => assert.equal(RATIO_FACTOR, 2));
  test('2× and ½× the study\'s ratio agree; 2.02× and 0.49× differ', () => {
    assert.equal(clause(study * 2).agrees, true);
    assert.equal(clause(study / 2).agrees, true);
    assert.equal(clause(study * 2.02).agrees, false);
    assert.equal(clause(study * 0.49).agrees, false);
    assert.equal(clause(study * 2.02).detail, "(here 2.02× the study's ratio)");
  });
  test('0.88× in the study against 0.0000029× here differs', () => {
    const c = relationClause(175, 60_000_000, S.splitToFirst, S.freshToFirst, 'split against a fresh init');
    assert.equal(c.agrees, false);
    assert.match(studySentence(HERE, [c]), /vs 0\.0000029× \(0\.175 s vs 60000 s\): differs \(here 0\.0000033× the study's ratio, outside commcost's 0\.5–2× band\)/);
  });
  test('the same direction at 1.2× apart agrees (0.88× against 1.06× on 2×H200), where it read "differs"', () => {
    // The 2×H200 figures (186 ms vs 176 ms) on a split in half of 4 ranks, as the study's: at 2 ranks
    // the split keeps the parent's shape and is named, not judged (issue #28, readingsReview28b).
    const run = synthetic(4, [
      experiment('init', [variant('default', { call: 32, first: 144, total: 176 })]),
      experiment('split', [variant('halves/splitShare=0', { call: 46.7, first: 140, total: 186 })]),
    ]);
    const text = line(run, 'rebuild-vs-init');
    assert.match(text, /split against a fresh init 0\.88× \(81 ms vs 92 ms\) vs 1\.06× \(186 ms vs 176 ms\): agrees \(here 1\.2× the study's ratio, within commcost's 0\.5–2× band\)/, text);
    const two = line(load('h200x2-nccl2.28.9-wheel.json'), 'rebuild-vs-init');
    assert.match(two, /split with splitShare 1 to first collective 78 ms; split with splitShare 0 to first collective 81 ms — not compared here: the split is made differently, as above/, two);
    assert.doesNotMatch(two, /splitShare 1 against 0|split against a fresh init/, two);
  });
  test('a zero figure makes no ratio: named, not judged', () => {
    const c = relationClause(175, 0, S.splitToFirst, S.freshToFirst, 'split against a fresh init');
    const s = studySentence(HERE, [c]);
    assert.match(s, /: not judged \(a figure here reads 0 ms, below the timer's resolution\)/, s);
    assert.doesNotMatch(s, /Infinity|NaN|agrees|differs/, s);
  });
});
