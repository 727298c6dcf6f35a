/**
 * Issue #28 (items 4, 5 and 8), a new user's audit: the first page of a c10d-only run, the figure
 * written past a chart's bar, and the study's Figure 2 like with like. Each rule is checked on
 * every committed run it applies to (docs/results), never on one file's figures:
 * - a run with c10d figures and no NCCL init/destroy answers its first page with the c10d calls,
 *   named as such, and the study's c10d figure beside them (FALSE 2); Figures 2 and 3 name its c10d
 *   figures in place of "measured neither abort nor destroy";
 * - a bar that stacks a derived step's parts writes that step's own median, the step table's
 *   figure, never the sum of the parts' medians (FALSE 7);
 * - Figure 2's abort-then-re-init bar is the re-init and its first collective, as the study's
 *   (its paths are 43–195 ms); the abort is Figure 3's (MISLEADING 1);
 * - the dotted line is the run's own switch inside its pool, named with its child, never as the
 *   study's swap; at a one-rank child a note says the study's is not drawn (MISLEADING 2);
 * - the reference lines' labels sit in a band above the plot, not over the first bar (MISLEADING 11).
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, test } from 'node:test';
import type { RunExperiment, RunFile } from '../../protocol/runFile';
import { STUDY_FIGURES } from '../../readings/studyFigures';
import { ms } from '../../readings/verdict/format';
import { firstPageSummary } from '../../readings/verdict/summary';
import { barEnds, chartModel } from '../../webview/chartData';
import { figure2Model, figure3Model } from '../../webview/studyChartsData';
import { variantViews } from '../../webview/stats';
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
          if (Array.isArray(run.experiments) && typeof run.ranks === 'number') out.push({ name: path.relative(RESULTS, full), run });
        } catch {
          // not a run file
        }
      }
    }
  };
  walk(RESULTS);
  return out;
}

const median = (run: RunFile, e: string, v: string, step: string): number | undefined =>
  run.experiments.find((x) => x.experiment === e)?.variants.find((x) => x.variant === v)?.steps.find((s) => s.step === step)?.stats.median;

const C10D_ONLY = committedRuns().filter(({ run }) => run.status !== 'failed' && run.experiments.length > 0 && run.experiments.every((e) => e.experiment === 'c10d'));

describe('FALSE 2: the first page of a c10d-only run answers with its c10d figures', () => {
  test('the committed c10d-only runs include the 2×H200 and a 1×H200 one', () => {
    const names = C10D_ONLY.map((r) => r.name);
    assert.ok(names.includes('h200x2-torch2.11-nccl2.28.9-c10d.json'), names.join(', '));
    assert.ok(C10D_ONLY.some((r) => r.run.ranks === 1), names.join(', '));
  });

  for (const { name, run } of C10D_ONLY) {
    test(`${name}: rebuild, first collective and teardown named as the c10d calls, with their medians; no "No answer"`, () => {
      const lines = firstPageSummary(run);
      assert.ok(!lines.some((l) => l.label === 'No answer'), JSON.stringify(lines.map((l) => l.text)));
      const byKind = (k: string) => lines.find((l) => l.kind === k)!;
      const eagerTotal = median(run, 'c10d', 'init/eager', 'total') ?? median(run, 'c10d', 'init/lazy', 'total')!;
      const rebuild = byKind('rebuild');
      assert.equal(rebuild.figure, ms(eagerTotal));
      assert.match(rebuild.text, /init_process_group/);
      assert.doesNotMatch(rebuild.text, /^Rebuilding a communicator/, 'not said as the NCCL init');
      assert.match(rebuild.step ?? '', /^c10d · init\/(eager|lazy) · total, median of \d+$/);
      // The study's NCCL init is another call: named, never judged against a c10d figure.
      assert.ok(rebuild.study.every((s) => s.comparison === undefined), JSON.stringify(rebuild.study));
      const lazyFirst = median(run, 'c10d', 'init/lazy', 'first');
      if (lazyFirst !== undefined) assert.ok(byKind('first-collective').text.includes(ms(lazyFirst)), byKind('first-collective').text);
      const teardown = byKind('teardown');
      const destroy = median(run, 'c10d', 'init/eager', 'destroy') ?? median(run, 'c10d', 'init/lazy', 'destroy')!;
      const abort = median(run, 'c10d', 'abort', 'abort');
      assert.equal(teardown.figure, ms(destroy));
      assert.ok(teardown.text.includes(`destroy_process_group ${ms(destroy)}`), teardown.text);
      if (abort !== undefined) assert.ok(teardown.text.includes(ms(abort)), teardown.text);
      // The study's own c10d figure beside it: judged at several ranks, named with why at 1 rank.
      const c10d = teardown.study.find((s) => s.what === STUDY_FIGURES.c10dDestroy.what)!;
      assert.ok(c10d, JSON.stringify(teardown.study));
      if (run.ranks >= 2) assert.match(c10d.comparison ?? '', new RegExp(`^destroy_process_group ${STUDY_FIGURES.c10dDestroy.written} vs `));
      else assert.match(c10d.notCompared ?? '', /1 rank/);
      // The pool is still a question with no figure: said, not answered from c10d.
      assert.equal(byKind('pool').figure, undefined);
    });

    test(`${name}: Figures 2 and 3 name its c10d figures in place of "measured neither abort nor destroy"`, () => {
      const r = [{ label: 'A', file: name, run }];
      const f3 = figure3Model(r).empty ?? '';
      assert.doesNotMatch(f3, /measured neither abort nor destroy$/);
      const destroy = median(run, 'c10d', 'init/eager', 'destroy')!;
      assert.ok(f3.includes(`destroy_process_group (after init with device_id) ${ms(destroy)}`), f3);
      const f2 = figure2Model(r).empty ?? '';
      assert.ok(f2.includes(`init_process_group(device_id) to its first all_reduce ${ms(median(run, 'c10d', 'init/eager', 'total')!)}`), f2);
    });
  }

  test('a run with NCCL figures still answers with them (the c10d figures answer only a question the NCCL ones leave open)', () => {
    const run = load('h200x1-2026-12-02/h200x1-nccl2.28.9-init-destroy-c10d.json');
    const lines = firstPageSummary(run);
    assert.equal(lines.find((l) => l.kind === 'rebuild')!.figure, ms(median(run, 'init', 'default', 'total')!));
    assert.equal(lines.find((l) => l.kind === 'teardown')!.figure, ms(median(run, 'destroy', 'default', 'total')!));
  });
});

describe("FALSE 7: the figure written past a stacked bar is the derived step's own median (the table's)", () => {
  const runs = committedRuns().filter(({ run }) => run.status !== 'failed');
  test('every bar of a derived step, in every committed run', () => {
    let checked = 0;
    let differs = 0;
    for (const { name, run } of runs)
      for (const exp of run.experiments) {
        const views = variantViews(exp as unknown as RunExperiment);
        if (views.length === 0) continue;
        const m = chartModel(views);
        for (const end of barEnds(m)) {
          if (!end.stack.startsWith('sum:')) continue;
          const step = end.stack.slice(4);
          const variant = views.length === 1 ? views[0]! : views[end.variantIndex]!;
          const own = variant.steps.find((s) => s.step === step)!.stats.median;
          assert.equal(end.value, own, `${name} ${exp.experiment} ${variant.variant} ${step}: writes ${end.value}, the table ${own}`);
          if (Math.abs(end.total - own) > 1e-6) differs++;
          checked++;
        }
      }
    assert.ok(checked > 20, `${checked} bars`);
    assert.ok(differs > 0, 'some sums of medians differ from the total median (the case the rule is for)');
  });

  test('the audit\'s cases: init 170.0 (not 169.4), c10d init/eager 186.2 (not 188.8), split_group 185.4 (not 183.8)', () => {
    const at = (run: RunFile, e: string, variant: string): number => {
      const views = variantViews(run.experiments.find((x) => x.experiment === e) as unknown as RunExperiment);
      const m = chartModel(views);
      const vi = views.length === 1 ? 0 : views.findIndex((v) => v.variant === variant);
      return barEnds(m).find((b) => b.variantIndex === vi && b.stack === 'sum:total')!.value;
    };
    const wheel = load('h200x2-2026-12-01/h200x2-nccl2.28.9-wheel.json');
    assert.equal(at(wheel, 'init', 'default'), median(wheel, 'init', 'default', 'total'));
    const c10d = load('h200x2-torch2.11-nccl2.28.9-c10d.json');
    assert.equal(at(c10d, 'c10d', 'init/eager'), median(c10d, 'c10d', 'init/eager', 'total'));
    assert.equal(at(c10d, 'c10d', 'split_group'), median(c10d, 'c10d', 'split_group', 'total'));
  });
});

describe("Figure 2 like with like (MISLEADING 1, 2)", () => {
  const withAbort = committedRuns().filter(({ run }) => run.status !== 'failed' && median(run, 'abort', 'default', 'reinit') !== undefined);

  test('the abort-then-re-init bar is the re-init and its first collective; the abort is named as Figure 3\'s', () => {
    assert.ok(withAbort.length >= 2);
    for (const { name, run } of withAbort) {
      const m = figure2Model([{ label: 'A', file: name, run }]);
      const row = m.categories.indexOf('abort then re-init');
      assert.ok(row >= 0, name);
      const bar = m.bars[row]![0]!;
      assert.deepEqual(bar.segments.map((s) => s.source), ['abort/default/reinit', 'abort/default/first'], name);
      assert.ok(!bar.segments.some((s) => s.label === 'ncclCommAbort'), name);
      const abort = median(run, 'abort', 'default', 'abort')!;
      assert.ok(m.drawn.some((d) => d.includes(`the abort itself (${ms(abort)}) is Figure 3's`)), m.drawn.join('\n'));
    }
  });

  test("the dotted line is the run's own switch, named with its child; at a one-rank child the study's swap is said not drawn", () => {
    const wheel = load('h200x2-2026-12-01/h200x2-nccl2.28.9-wheel.json');
    const m = figure2Model([{ label: 'A', file: 'w.json', run: wheel }]);
    const dotted = m.lines.filter((l) => l.style === 'dotted');
    assert.equal(dotted.length, 1);
    assert.match(dotted[0]!.label, /^this run's switch to TP1 inside the pool \(a one-rank child\) /);
    assert.doesNotMatch(dotted[0]!.label, /^in-pool swap/);
    assert.ok(m.notCompared.some((n) => n.startsWith(`The study's swap inside the pool (${STUDY_FIGURES.poolSwitch.written}`) && /one-rank child/.test(n)), m.notCompared.join('\n'));
  });
});

describe('MISLEADING 11: the reference lines\' labels are drawn above the plot, not over the first bar', () => {
  test('a band of one row per line above the plot area', async () => {
    // studyCharts.ts draws with chart.js in the page; its band size is a pure export.
    const src = fs.readFileSync(path.join(__dirname, '..', '..', 'webview', 'studyCharts.ts'), 'utf8');
    assert.match(src, /layout: \{ padding: \{ top: band \} \}/, 'the plot is pushed down by the band');
    assert.match(src, /position: 'bottom'/, 'the legend is below, so the band is directly above the plot');
    assert.doesNotMatch(src, /chartArea\.top \+ 10 \+ i \* 12/, 'labels are no longer written inside the plot area');
  });
});
