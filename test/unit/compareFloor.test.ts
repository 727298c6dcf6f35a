// The practical floor of the comparison (protocol/compare.ts judgeDifference): a difference beyond
// the samples' spread is marked only when the medians differ by ≥ 0.05 ms and by a ratio outside
// [0.9, 1.1]. Checked on the three committed 1×H200 runs (NCCL 2.28.9, 2.28.3, 2.30.7 on one
// host: µs-level steps whose samples are apart) and on synthetic samples.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import type { RunFile } from '../../protocol/runFile';
import { clearsPracticalFloor, compareRuns, differenceRuleText, judgeDifference, PRACTICAL_FLOOR_MS, PRACTICAL_FLOOR_RATIO } from '../../protocol/compare';
import { ratioCellView } from '../../webview/compareCells';
import { formatComparison } from '../../cli/summary';

const dir = join(__dirname, '..', '..', 'docs', 'results', 'h200x1-2026-12-01');
const load = (name: string): RunFile => JSON.parse(readFileSync(join(dir, name), 'utf8')) as RunFile;
const W = 'h200x1-nccl2.28.9-wheel.json';
const S = 'h200x1-nccl2.28.3-system.json';

describe('the practical floor: statistically apart is not enough', () => {
  const c = compareRuns([load(W), load(S)]);
  const cell = (experiment: string, variant: string, step: string) =>
    c.experiments.find((e) => e.experiment === experiment)!.variants.find((v) => v.variant === variant)!.steps.find((s) => s.step === step)!.cells[1]!;

  test('1×H200, 2.28.3 against 2.28.9: a 0.001 → 0.003 ms steady allreduce (1.8×, samples apart) is below the floor, not marked', () => {
    const steady = cell('init', 'default', 'steady');
    assert.ok(steady.ratio! > 1.5, String(steady.ratio));
    assert.ok(Math.abs(steady.median - 0.0015) < 0.003, String(steady.median));
    assert.equal(steady.difference?.verdict, 'below-floor');
    const view = ratioCellView(steady.ratio, steady.difference);
    assert.equal(view.className, 'num', 'not coloured');
    assert.match(view.title!, /beyond the spread of both runs .* but below the practical floor: the medians differ by less than 0\.05 ms or by a ratio inside \[0\.9, 1\.1\]/);
    // Every µs-level step of the drain sweep and of the registrations: none marked.
    for (const v of ['stream-sync/16MiB', 'stream-sync/64MiB', 'stream-sync']) assert.notEqual(cell('drain', v, 'sync').difference?.verdict, 'higher', v);
  });

  test('the same runs: differences above the floor are still marked (window register 0.062 → 0.003 ms, cold init 352 → 302 ms)', () => {
    assert.equal(cell('registration', 'window/64MiB', 'register').difference?.verdict, 'lower');
    assert.equal(cell('cold-start', 'default', 'coldInit').difference?.verdict, 'lower');
  });

  test('the CLI table marks no µs-level step of the three 1×H200 runs', () => {
    const text = formatComparison([load(W), load(S), load('h200x1-nccl2.30.7-source.json')]);
    for (const row of text.split('\n').filter((l) => l.includes('beyond spread'))) {
      const medians = [...row.matchAll(/\s(\d+\.\d+)\s/g)].map((m) => Number(m[1]));
      assert.ok(Math.max(...medians) - Math.min(...medians) >= PRACTICAL_FLOOR_MS, `marked below the floor: ${row}`);
    }
    assert.match(text, /init default · steady: steady 64 MiB allreduce\s+0\.001\s+0\.003\s+1\.80×\s/);
    assert.doesNotMatch(text, /steady 64 MiB allreduce\s+0\.001\s+0\.003\s+1\.80× beyond spread/);
  });

  test('synthetic: separated samples under 0.05 ms apart, or within 10%, are below the floor; above both, marked', () => {
    const tight = [40, 40.2, 40.4, 40.5, 40.6, 40.8, 41, 41.1, 41.3, 41.5];
    const scaled = (xs: number[], k: number) => xs.map((x) => x * k);
    const us = tight.map((x) => x / 10000); // ~0.004 ms
    assert.equal(judgeDifference({ samples: scaled(us, 1.3), n: 10 }, { samples: us, n: 10 }, 1.3).verdict, 'below-floor');
    // 1.05× of 1000 ms (50 ms apart, samples apart): the ratio floor holds it back.
    const big = tight.map((x) => x * 25);
    assert.equal(judgeDifference({ samples: scaled(big, 1.05), n: 10 }, { samples: big, n: 10 }, 1.05).verdict, 'below-floor');
    assert.equal(judgeDifference({ samples: scaled(tight, 1.3), n: 10 }, { samples: tight, n: 10 }, 1.3).verdict, 'higher');
    // Range basis (files without samples): the same floor, medians from the summaries.
    const range = (median: number) => ({ median, samples: [], min: median * 0.99, max: median * 1.01, n: 10 });
    assert.equal(judgeDifference(range(0.002), range(0.001), 2).verdict, 'below-floor');
    assert.equal(judgeDifference(range(0.2), range(0.1), 2).verdict, 'higher');
    assert.equal(judgeDifference(range(0.08), range(0.1), 0.8).verdict, 'below-floor', '0.02 ms apart');
    assert.equal(judgeDifference(range(0.5), range(1), 0.5).verdict, 'lower');
  });

  test('clearsPracticalFloor: both conditions, ends included in the band', () => {
    assert.deepEqual(PRACTICAL_FLOOR_RATIO, [0.9, 1.1]);
    const at = (a: number, b: number) => clearsPracticalFloor({ median: a, samples: [], n: 1 }, { median: b, samples: [], n: 1 }, a / b);
    assert.equal(at(1.1, 1), false, 'ratio 1.1 is inside the band');
    assert.equal(at(1.2, 1), true);
    assert.equal(at(0.07, 0.01), true, '0.06 ms apart');
    assert.equal(at(0.05, 0.01), false, '0.04 ms apart');
    // Without medians, the samples' median is used.
    assert.equal(clearsPracticalFloor({ samples: [0.003, 0.003, 0.003], n: 3 }, { samples: [0.001, 0.001, 0.001], n: 3 }, 3), false);
  });

  test('the rule text says it, and docs/METHOD.md quotes it', () => {
    assert.match(differenceRuleText(), /larger than a practical floor: the medians differ by at least 0\.05 ms and their ratio is outside \[0\.9, 1\.1\]/);
    const method = readFileSync(join(__dirname, '..', '..', 'docs', 'METHOD.md'), 'utf8').replace(/\s+/g, ' ');
    assert.ok(method.includes(differenceRuleText()));
  });
});
