// Issue #21, "4,000 memory points freeze the report page": the memory chart of a run with
// thousands of memory points per variant is a few lines (not a bar and a legend entry per point),
// what chart.js draws of them is bounded and said in a note with the counts, the memory table is
// paged with "showing rows … of …", and the readings (verdict, table) still come from every point.
// The page itself is loaded in headless Chromium by test/security/reportMemoryPoints.test.ts.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { splitShareLines } from '../../readings/verdict/fieldCases';
import type { RunExperiment, RunFile } from '../../protocol/runFile';
import { memoryChartModel } from '../../webview/chartData';
import { MEMORY_BARS_MAX, MEMORY_LINE_SAMPLES, memoryChartFor, memoryLineModel, type MemoryLineModel } from '../../webview/memoryLineData';
import { variantViews } from '../../webview/stats';
import { memoryRow, memoryRowKeys, memoryRows, pageOf, pagerText, TABLE_PAGE_ROWS, type VariantExtras } from '../../webview/tables';
import { groupPoint, memoryAt, runWithMemoryPoints } from '../support/memoryPointsRun';

const MiB = 2 ** 20;

/** split-share's variants as the view hands them to the memory chart and table (view.ts). */
function splitShare(run: RunFile): {
  views: ReturnType<typeof variantViews>;
  extras: VariantExtras[];
  withStats: Parameters<typeof memoryChartFor>[0];
} {
  const exp = run.experiments.find((e) => e.experiment === 'split-share') as RunExperiment;
  const views = variantViews(exp);
  const extras = views.map((v, i) => ({ variant: v.variant, memoryBytes: v.memoryBytes, memStats: exp.variants[i]!.memStats }));
  return { views, extras, withStats: views.map((v, i) => ({ ...v, memStats: extras[i]!.memStats })) };
}

function lines(run: RunFile): MemoryLineModel {
  const chart = memoryChartFor(splitShare(run).withStats);
  assert.equal(chart.kind, 'lines', 'thousands of points are drawn as lines, not a bar per point');
  return (chart as { model: MemoryLineModel }).model;
}

describe('memory chart of thousands of points', () => {
  for (const points of [4000, 40_000]) {
    test(`${points.toLocaleString('en-US')} points per variant: six lines, each drawn through at most ${MEMORY_LINE_SAMPLES} points, and a note with the counts`, () => {
      const m = lines(runWithMemoryPoints(points));
      // Two lines per variant (free-memory delta, NCCL's count): 6 datasets and legend entries, not 6 × points.
      assert.equal(m.lines.length, 6);
      assert.deepEqual(
        m.lines.map((l) => l.dashed),
        [false, true, false, true, false, true],
      );
      assert.equal(m.points.length, points);
      assert.equal(m.pointLabels[points - 1], `after ${points} groups`);
      // The model keeps every point (chart.js thins what it draws, and the note says how much).
      for (const l of m.lines) assert.equal(l.data.length, points);
      assert.deepEqual(m.lines[0]!.data[points - 1], { x: points - 1, y: memoryAt(0, points) / MiB });
      assert.equal(m.samples, MEMORY_LINE_SAMPLES);
      assert.equal(m.drawn, 6 * MEMORY_LINE_SAMPLES);
      assert.equal(m.total, 6 * points);
      assert.match(
        m.note,
        new RegExp(
          `^Chart: 2,400 of ${(6 * points).toLocaleString('en-US')} points drawn — each line through at most 400 of its ${points.toLocaleString('en-US')} points \\(chart\\.js LTTB decimation`,
        ),
      );
      assert.match(m.note, /Every point is in the table below; no figure on this page is computed from the drawn points\./);
    });
  }

  test(`up to ${MEMORY_BARS_MAX} points keep their bars (the committed runs' charts are unchanged)`, () => {
    for (const n of [3, MEMORY_BARS_MAX]) {
      const { withStats } = splitShare(runWithMemoryPoints(n));
      const chart = memoryChartFor(withStats);
      assert.equal(chart.kind, 'bars');
      assert.deepEqual(chart.model, memoryChartModel(withStats));
    }
  });

  test(`${MEMORY_BARS_MAX + 1} points: lines with every point drawn, and no note`, () => {
    const m = lines(runWithMemoryPoints(MEMORY_BARS_MAX + 1));
    assert.equal(m.drawn, m.total);
    assert.equal(m.note, '');
  });

  test('lines of different lengths: the note says "up to"; a point without a figure is a gap, not a zero', () => {
    const v = (variant: string, n: number) => ({
      variant,
      memoryBytes: Object.fromEntries(Array.from({ length: n }, (_, k) => [groupPoint(k + 1), (k + 1) * MiB])),
    });
    const a = v('a', 1000);
    a.memoryBytes[groupPoint(7)] = NaN;
    const m = memoryLineModel([a, v('b', 500)]);
    assert.equal(m.lines[0]!.data.length, 999);
    assert.equal(
      m.lines[0]!.data.some((p) => p.x === 6),
      false,
    );
    assert.match(m.note, /^Chart: 800 of 1,499 points drawn — each line through at most 400 of its up to 999 points/);
  });
});

describe('memory table of thousands of rows', () => {
  test(`paged by ${TABLE_PAGE_ROWS} rows with "showing rows … of …"; every row is reachable`, () => {
    const { extras } = splitShare(runWithMemoryPoints(4000));
    const keys = memoryRowKeys(extras);
    assert.equal(keys.length, 12_000);
    assert.equal(pagerText(keys.length, 0), 'showing rows 1–50 of 12,000 (page 1 of 240)');
    assert.deepEqual(pageOf(keys.length, Infinity), { page: 239, pages: 240, start: 11_950, end: 12_000 });
    assert.deepEqual(pageOf(keys.length, -3), { page: 0, pages: 240, start: 0, end: 50 });
    // The last row of the last page is the last point of the last variant, with its own figures.
    const [vi, point] = keys[11_999]!;
    assert.deepEqual(memoryRow(extras[vi]!, point), [
      'splitShare=0+env',
      'after 4000 groups',
      (memoryAt(2, 4000) / MiB).toFixed(1),
      ...memoryRow(extras[2]!, groupPoint(4000)).slice(3),
    ]);
    assert.equal(pagerText(TABLE_PAGE_ROWS, 0), '', 'a table that fits on one page says nothing');
  });

  test('a small table is the same rows as before', () => {
    const { extras } = splitShare(runWithMemoryPoints(3));
    assert.deepEqual(
      memoryRows(extras),
      memoryRowKeys(extras).map(([vi, p]) => memoryRow(extras[vi]!, p)),
    );
    assert.equal(memoryRows(extras).length, 9);
  });
});

describe('readings follow the measurement, not the drawing', () => {
  test("field case C2's verdict reads the last of 4,000 points (every point, not the decimated lines)", () => {
    const run = runWithMemoryPoints(4000);
    const text = splitShareLines(run)[0]?.text ?? '';
    assert.match(text, /for 4000\)/);
    // A line decimated to 400 points would still hold the last point; the per-group figure divides it by 4000 groups.
    assert.match(text, /splitShare 0: [\d.]+ [KMG]i?B per group/);
  });
});
