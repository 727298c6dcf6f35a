/**
 * A one-rank child is never set against a multi-rank fresh init (review defect 15): a shrink of
 * 2 ranks leaves a one-rank child, with no peer to connect to, while the fresh init has 2 ranks;
 * the rebuild line gives its figure and says why it is not compared, as the study sentence does.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { deriveVerdict } from '../../readings/verdict';
import { experiment, load, synthetic, variant } from './verdictRuns';

const rebuild = (run: ReturnType<typeof load>): string => deriveVerdict(run).find((l) => l.id === 'rebuild-vs-init')!.text;

test('2 ranks: the shrink to a one-rank child is not set against the 2-rank fresh init', () => {
  const text = rebuild(load('h200x2-2026-12-01/h200x2-nccl2.30.7-source.json'));
  assert.match(text, /shrink \(to a one-rank child\): 24\.8 ms \(its first collective negligible, 0\.017 ms\), not set against the 2-rank fresh init \(a one-rank child has no peer to connect to\)/, text);
  assert.doesNotMatch(text, /shrink \(to a one-rank child\): [^;]*of a fresh init/, text);
  // Split and grow (2-rank results) are still set against it.
  assert.match(text, /grow \(to 2 ranks\): 175 ms \(101% of a fresh init, about the same/, text);
});

test('4 ranks: the shrink to 3 ranks is still set against the fresh init', () => {
  const four = synthetic(4, [
    experiment('init', [variant('default', { call: 45, first: 50, total: 95 })]),
    experiment('shrink', [variant('default', { call: 20, first: 45, total: 65 })]),
  ]);
  assert.match(rebuild(four), /shrink \(to a 3-rank child\): 65\.0 ms \(68% of a fresh init, cheaper/);
});
