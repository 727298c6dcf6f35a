/**
 * Issue #28, round 3 of the re-audit (1-rank first page and Figure 2). Each rule is checked on
 * every committed run it applies to (docs/results), and on the runs the audit named:
 * - FALSE 1: a 1-rank run's first page says what the run did not time, chosen by its figures: a
 *   split it timed (connect-mode's `ncclCommSplit (color = rank)`, c10d's `split_group`) is named
 *   with its figures as a one-rank child, never "cannot show a split"; only an untimed shrink or
 *   grow needs 2 GPUs. Figure 2's "No bar for split" names that split, never calls it absent.
 * - MISLEADING 10: the line in place of an empty Figure 2 or 3 says where each c10d figure is
 *   said, and only where it is (x2c's 186 and 192 ms are not in the verdict).
 * - MISLEADING 5: Figure 2 stacks its parts, so its axis is linear (a segment's length is its
 *   ms); Figure 3's bars stand side by side, on a log axis.
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, test } from 'node:test';
import type { RunFile } from '../../protocol/runFile';
import { deriveVerdict } from '../../readings/verdict';
import { ms } from '../../readings/verdict/format';
import { firstPageSummary } from '../../readings/verdict/summary';
import { figure2Model, figure3Model, type StudyRun } from '../../webview/studyChartsData';
import { load } from './verdictRuns';

const RESULTS = path.join(__dirname, '..', '..', 'docs', 'results');

/** Every committed run file under docs/results (relative names), with its parsed run. */
function committedRuns(): { name: string; run: RunFile }[] {
  const out: { name: string; run: RunFile }[] = [];
  const walk = (dir: string): void => {
    for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
      const full = path.join(dir, e.name);
      if (e.isDirectory()) walk(full);
      else if (e.name.endsWith('.json')) {
        try {
          const run = JSON.parse(fs.readFileSync(full, 'utf8')) as RunFile;
          if (Array.isArray(run.experiments) && typeof run.ranks === 'number' && Array.isArray(run.errors)) out.push({ name: path.relative(RESULTS, full), run });
        } catch {
          // not a run file
        }
      }
    }
  };
  walk(RESULTS);
  return out;
}

const RUNS = committedRuns();
const S4W = 'h200x1-2026-12-02/h200x1-nccl2.28.9-wheel-session4.json';
const X1C = 'h200x1-2026-12-01/h200x1-torch2.11-nccl2.28.9-c10d.json';
const X2C = 'h200x2-torch2.11-nccl2.28.9-c10d.json';
const X2W = 'h200x2-2026-12-01/h200x2-nccl2.28.9-wheel.json';

/** The split steps a run timed: each variant's call step labelled ncclCommSplit or split_group, with its `total` median. */
function timedSplits(run: RunFile): { experiment: string; variant: string; total?: number }[] {
  return run.experiments.flatMap((e) =>
    e.variants.flatMap((v) => {
      const call = v.steps.find((s) => s.kind === 'call' && /^(ncclCommSplit|split_group)\b/.test(s.label));
      if (!call) return [];
      const total = v.steps.find((s) => s.step === call.step.replace(/^call/, 'total'))?.stats.median;
      return [{ experiment: e.experiment, variant: v.variant, ...(total !== undefined ? { total } : {}) }];
    }),
  );
}

const ONE_RANK = RUNS.filter(({ run }) => run.ranks === 1 && run.status !== 'failed' && run.experiments.some((e) => e.variants.length > 0));

describe('FALSE 1: the 1-rank first page names the split the run timed', () => {
  test('the committed 1-rank runs include ones that timed a split (s4w, x1c)', () => {
    const withSplit = ONE_RANK.filter(({ run }) => timedSplits(run).length > 0).map((r) => r.name);
    assert.ok(withSplit.includes(S4W) && withSplit.includes(X1C), withSplit.join(', '));
  });

  for (const { name, run } of ONE_RANK) {
    test(`${name}: the 1-rank line says only what the run did not time`, () => {
      const line = firstPageSummary(run).find((l) => l.label === '1 rank');
      assert.ok(line, 'a 1-rank line');
      assert.match(line.text, /^A communicator of 1 rank has no peer to connect to: this run cannot show a connect/);
      const splits = timedSplits(run);
      if (splits.length > 0) {
        // Never "cannot show … a split" when it timed one: named, with its figures, as a one-rank child.
        assert.doesNotMatch(line.text, /cannot show a connect, nor a split|split, shrink or grow \(each needs 2 GPUs/);
        assert.match(line.text, /its split here, .* makes a one-rank child, not a split of a communicator of several ranks/);
        for (const s of splits) if (s.total !== undefined) assert.ok(line.text.includes(ms(s.total)) || splits.length > 1, `${s.experiment}/${s.variant} ${ms(s.total)}`);
        const totals = splits.flatMap((s) => (s.total !== undefined ? [s.total] : []));
        assert.ok(line.text.includes(ms(Math.min(...totals))) && line.text.includes(ms(Math.max(...totals))), `the range of ${totals.map(ms).join(', ')}`);
        assert.doesNotMatch(line.text, /\bsplit\b[^;]*needs? 2 GPUs/);
      } else {
        assert.match(line.text, /split, shrink and grow need 2 GPUs or more/);
      }
    });
  }

  test('s4w and x1c read as the audit asked', () => {
    const s4w = firstPageSummary(load(S4W))[0]!.text;
    assert.equal(
      s4w,
      'A communicator of 1 rank has no peer to connect to: this run cannot show a connect; its split here, ncclCommSplit (color = rank) in the connect-mode experiment ' +
        '(4 variants, 19.7 ms to 47.7 ms to its first collective), makes a one-rank child, not a split of a communicator of several ranks; shrink and grow need 2 GPUs or more. ' +
        'Measure on 2 GPUs or more for a connect, a split of several ranks, a shrink or a grow.',
    );
    const x1c = firstPageSummary(load(X1C))[0]!.text;
    assert.match(x1c, /its split here, split_group in the c10d experiment \(41\.1 ms to its first collective\), makes a one-rank child/);
    assert.match(x1c, /; shrink and grow need 2 GPUs or more\./);
  });
});

describe('FALSE 1: Figure 2 names a one-rank split, never calls it absent', () => {
  for (const { name, run } of ONE_RANK) {
    const m = figure2Model([{ label: 'A', file: name, run }]);
    if (m.empty !== undefined || !m.notDrawn?.includes('split')) continue;
    test(`${name}: "No bar for split" says what its split is`, () => {
      const ncclSplits = timedSplits(run).filter((s) => s.experiment !== 'c10d' && s.experiment !== 'split');
      if (ncclSplits.length === 0) return;
      assert.doesNotMatch(m.notDrawn!, /no figure for (split|them)/);
      assert.match(m.notDrawn!, /the run's split, ncclCommSplit \(color = rank\) in the connect-mode experiment \(\d+ variants?, .* to its first collective\), makes a one-rank child \(no peer to connect to\), not the study's split/);
    });
  }

  test('s4w: the line, and the list under the chart is headed without "no figure"', () => {
    const m = figure2Model([{ label: 'A', file: 's4w.json', run: load(S4W) }]);
    assert.match(m.notDrawn!, /^No bar for split, shrink and grow: the run has no figure for shrink and grow \(why below\); the run's split, ncclCommSplit \(color = rank\)/);
    // The notes' heading over the absent list (studyCharts.ts) no longer says "the run has no figure for it".
    const src = fs.readFileSync(path.join(__dirname, '..', '..', 'webview', 'studyCharts.ts'), 'utf8');
    assert.doesNotMatch(src, /Not drawn \(the run has no figure for it\)/);
  });

  test('a run with no one-rank split keeps "no figure for it/them"', () => {
    const m = figure2Model([{ label: 'A', file: 'x2w.json', run: load(X2W) }]);
    assert.equal(m.notDrawn, 'No bar for grow: the run has no figure for it (why below).');
  });

  test('x1c (c10d only, 1 rank): split_group is named a one-rank child in the line in place of Figure 2', () => {
    const m = figure2Model([{ label: 'A', file: 'x1c.json', run: load(X1C) }]);
    assert.match(m.empty!, /split_group to its first all_reduce 41\.1 ms, a one-rank child/);
  });
});

describe('MISLEADING 10: the empty charts say where each c10d figure is, and only there', () => {
  const C10D = RUNS.filter(({ run }) => run.status !== 'failed' && run.experiments.some((e) => e.experiment === 'c10d' && e.variants.length > 0));
  let checked = 0;
  for (const { name, run } of C10D) {
    const one: StudyRun[] = [{ label: 'A', file: name, run }];
    for (const [fig, empty] of [
      ['Figure 2', figure2Model(one).empty],
      ['Figure 3', figure3Model(one).empty],
    ] as const) {
      if (empty === undefined || !empty.includes('c10d figures')) continue;
      checked++;
      test(`${name} ${fig}: every place named carries the figure`, () => {
        assert.doesNotMatch(empty, /they are on the first page and in the verdict's c10d line/);
        const inner = /c10d figures \((.*)\) are of torch's calls/.exec(empty)?.[1];
        assert.ok(inner, empty);
        const page = firstPageSummary(run).filter((l) => l.label.endsWith('(c10d)')).map((l) => l.text).join('\n');
        const verdict = deriveVerdict(run).filter((l) => l.id === 'c10d-lifecycle').map((l) => l.text).join('\n');
        for (const entry of inner.split('; ')) {
          const figure = /(\d[\d.]* m?s)(, a one-rank child)?, (on the first page|in the verdict's c10d line|on the first page and in the verdict's c10d line|in the c10d step table only)$/.exec(entry);
          assert.ok(figure, `a place for "${entry}"`);
          const [, words, , where] = figure;
          if (where!.includes('first page')) assert.ok(page.includes(words!), `${words} on the first page`);
          else assert.ok(!page.includes(words!), `${words} is on the first page: said`);
          if (where!.includes('verdict')) assert.ok(verdict.includes(words!), `${words} in the verdict's c10d line`);
          else assert.ok(!verdict.includes(words!), `${words} is in the verdict: said`);
        }
      });
    }
  }
  test('the c10d runs give empty charts to check (x2c, x1c)', () => assert.ok(checked >= 4, String(checked)));

  test("x2c: 186 and 192 ms are said to be on the first page, not in the verdict's c10d line", () => {
    const m = figure2Model([{ label: 'A', file: 'x2c.json', run: load(X2C) }]);
    assert.match(m.empty!, /init_process_group\(device_id\) to its first all_reduce 186 ms, on the first page; init_process_group without device_id to its first all_reduce 192 ms, on the first page;/);
    assert.match(m.empty!, /split_group to its first all_reduce 185 ms, in the verdict's c10d line\)/);
  });
});

describe('MISLEADING 5: Figure 2 stacks on a linear axis', () => {
  test("x2w: the axis starts at 0 and is linear, so the init call's drawn share is its share of the bar", () => {
    const run = load(X2W);
    const m = figure2Model([{ label: 'A', file: 'x2w.json', run }]);
    assert.equal(m.axis, 'linear');
    assert.equal(m.min, 0);
    const init = m.bars[m.categories.indexOf('init')]![0]!;
    const [call, first] = init.segments;
    assert.ok(m.max >= init.totalMs && m.max >= call!.ms + call!.p90 - call!.ms);
    // Drawn share on a linear axis from 0: the call's length over the bar's, the figures' own share.
    const drawnShare = (call!.ms - m.min) / (init.totalMs - m.min);
    assert.ok(Math.abs(drawnShare - call!.ms / (call!.ms + first!.ms)) < 1e-9);
    assert.ok(drawnShare < 0.25, `the call is ${drawnShare} of the bar, as its ${ms(call!.ms)} of ${ms(init.totalMs)}`);
  });

  test('every committed run: Figure 2 linear from 0 past every bar end; Figure 3 (not stacked) stays log', () => {
    for (const { name, run } of RUNS) {
      if (run.status === 'failed') continue;
      const one: StudyRun[] = [{ label: 'A', file: name, run }];
      const m = figure2Model(one);
      assert.equal(m.axis, 'linear', name);
      assert.equal(m.min, 0, name);
      for (const b of m.bars.flat()) assert.ok(m.max >= b.totalMs, `${name}: ${m.max} ≥ ${b.totalMs}`);
      assert.equal(figure3Model(one).axis, 'logarithmic', name);
    }
  });
});
