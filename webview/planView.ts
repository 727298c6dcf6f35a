/**
 * The Plan section of the results view and the HTML report: the reshape planner
 * (readings/plan/planner.ts) on the shown run, with inputs (shapes, switch interval, step, memory
 * budget) that recompute the table, the sentences and the chart as the user types. The chart is
 * the critical path per strategy on a log axis with the step (dashed) and the study's migration
 * pause (dotted) as reference lines. All text is inserted as text.
 */
import { BarController, BarElement, CategoryScale, Chart, LogarithmicScale, Tooltip, type Plugin } from 'chart.js';
import type { RunFile } from '../protocol/runFile';
import type { PlanRequest } from '../protocol/webviewMessages';
import { planReshape, splitShapes, type Plan, type PlanInputs } from '../readings/plan/planner';
import { criticalCell, deferredCell, planSentences } from '../readings/plan/sentences';
import { bytesText, msText, parseBudget, parseDuration, parseShapes, percentText, PlanInputError, stepShareText } from '../readings/plan/units';
import { onThemeChange } from './charts';
import { chartColors } from './chartTheme';
import { h, replaceChildren } from './dom';
import { planChartModel, type PlanChartModel } from './planChartData';

Chart.register(BarController, BarElement, CategoryScale, LogarithmicScale, Tooltip);

const models = new WeakMap<Chart, PlanChartModel>();

/** Draws the reference lines (step dashed, migration pause dotted) with their labels. */
const referenceLines: Plugin<'bar'> = {
  id: 'commcostPlanLines',
  afterDatasetsDraw(chart) {
    const model = models.get(chart as unknown as Chart);
    const x = chart.scales.x;
    if (!model || !x) return;
    const c = chartColors((v) => getComputedStyle(document.body).getPropertyValue(v).trim());
    const ctx = chart.ctx;
    ctx.save();
    ctx.strokeStyle = c.text;
    ctx.fillStyle = c.text;
    ctx.font = '11px system-ui, sans-serif';
    model.lines.forEach((l, i) => {
      const px = x.getPixelForValue(l.ms);
      ctx.setLineDash(l.style === 'dashed' ? [6, 4] : [2, 3]);
      ctx.beginPath();
      ctx.moveTo(px, chart.chartArea.top);
      ctx.lineTo(px, chart.chartArea.bottom);
      ctx.stroke();
      // A label near the right edge is written to the left of its line.
      const left = px > chart.chartArea.right - ctx.measureText(l.label).width - 6;
      ctx.textAlign = left ? 'right' : 'left';
      ctx.fillText(l.label, left ? px - 3 : px + 3, chart.chartArea.top + 10 + i * 12);
    });
    ctx.restore();
  },
};

/** Reads the inputs: a blank field is left out; a bad one is reported by its PlanInputError. */
function readInputs(fields: { shapes: string; every: string; step: string; budget: string }): PlanInputs {
  const blank = (t: string) => t.trim() === '';
  return {
    ...(blank(fields.shapes) ? {} : { shapes: parseShapes(fields.shapes, 'shapes') }),
    ...(blank(fields.every) ? {} : { switchEveryMs: parseDuration(fields.every, 'switch every') }),
    ...(blank(fields.step) ? {} : { stepMs: parseDuration(fields.step, 'step') }),
    ...(blank(fields.budget) ? {} : { budget: parseBudget(fields.budget, 'budget') }),
  };
}

/**
 * The plan's table. `onlyPriced`: only the strategies with a critical-path total (a 1-rank run,
 * where most strategies need a split, shrink, grow or switch that 1 rank cannot have: the line above
 * the chart names the others and the sentences say why, instead of rows of "missing").
 */
function planTable(plan: Plan, onlyPriced = false): HTMLElement {
  const strategies = onlyPriced ? plan.strategies.filter((s) => s.criticalMs !== undefined || s.perTarget?.some((x) => x.ms !== undefined)) : plan.strategies;
  const head = ['strategy', 'critical path', 'of a step', 'amortised', 'prepaid', 'deferred', 'memory / GPU', 'of budget'];
  const cell = (v: number | undefined, f: (x: number) => string) => (v === undefined ? 'missing' : f(v));
  return h('table', { class: 'plan-table' },
    h('thead', {}, h('tr', {}, ...head.map((x) => h('th', {}, x)))),
    h('tbody', {}, ...strategies.map((s) => h('tr', { title: s.how },
      h('td', {}, s.name),
      h('td', {}, criticalCell(s)),
      h('td', {}, s.stepShare === undefined ? '–' : stepShareText(s.stepShare)),
      h('td', {}, s.amortisedShare === undefined ? '–' : percentText(s.amortisedShare)),
      h('td', {}, cell(s.prepaidMs, msText)),
      h('td', {}, deferredCell(s)),
      h('td', {}, cell(s.memoryBytes, bytesText)),
      h('td', {}, s.memoryShareOfBudget === undefined ? '–' : percentText(s.memoryShareOfBudget)),
    ))),
  );
}

/** The Plan section. Construct once; {@link update} with each run snapshot. */
export class PlanSection {
  readonly root: HTMLElement;
  private readonly inputs = {
    shapes: h('input', { type: 'text', placeholder: 'every TP shape', 'aria-label': 'shapes' }) as HTMLInputElement,
    every: h('input', { type: 'text', value: '2s', 'aria-label': 'switch every' }) as HTMLInputElement,
    step: h('input', { type: 'text', value: '30ms', 'aria-label': 'step' }) as HTMLInputElement,
    budget: h('input', { type: 'text', value: '60GiB', 'aria-label': 'budget per GPU' }) as HTMLInputElement,
  };
  private readonly problem = h('p', { class: 'plan-problem', role: 'alert' });
  /** Where the inputs came from when the CodeLens opened the section ("from build_pool in …"). */
  private readonly origin = h('p', { class: 'plan-origin muted' });
  private readonly tableBox = h('div');
  private readonly sentencesBox = h('ul', { class: 'plan-sentences' });
  private readonly chartBox = h('div', { class: 'chart plan-chart' });
  private readonly missingBox = h('p', { class: 'muted' });
  /** The study's migration pause drawn for reference only, with why (planChartData.ts pauseNote). */
  private readonly pauseNoteBox = h('p', { class: 'muted plan-not-compared' });
  private chart: Chart<'bar'> | undefined;
  private lastModel: PlanChartModel | undefined;
  private stopTheme: (() => void) | undefined;
  private run: RunFile | undefined;
  private key = '';

  constructor() {
    const label = (text: string, input: HTMLElement) => h('label', {}, text, ' ', input);
    this.root = h('section', { class: 'plan', id: 'plan' },
      h('h2', {}, 'Plan a reshape'),
      h('div', { class: 'plan-inputs' },
        label('shapes', this.inputs.shapes), label('switch every', this.inputs.every), label('step', this.inputs.step), label('budget per GPU', this.inputs.budget)),
      this.origin, this.problem, this.chartBox, this.missingBox, this.pauseNoteBox, this.tableBox, this.sentencesBox);
    this.origin.hidden = true;
    for (const input of Object.values(this.inputs)) input.addEventListener('input', () => this.recompute(true));
  }

  /**
   * Sets the inputs a request gives (shapes as `tp4,tp2,tp1`; the others as typed), says where
   * they came from, recomputes, scrolls the section into view and focuses the shapes input.
   */
  show(request: PlanRequest): void {
    if (request.shapes) this.inputs.shapes.value = request.shapes.map((x) => `tp${x}`).join(',');
    if (request.switchEvery !== undefined) this.inputs.every.value = request.switchEvery;
    if (request.step !== undefined) this.inputs.step.value = request.step;
    if (request.budget !== undefined) this.inputs.budget.value = request.budget;
    this.origin.hidden = !request.origin;
    replaceChildren(this.origin, request.origin ?? '');
    this.recompute(true);
    this.root.scrollIntoView({ block: 'start' });
    this.inputs.shapes.focus({ preventScroll: true });
  }

  /** Plans `run` again when it changed (a complete snapshot). */
  update(run: RunFile): void {
    this.run = run;
    this.recompute(false);
  }

  private recompute(force: boolean): void {
    const run = this.run;
    if (!run) return;
    const fields = { shapes: this.inputs.shapes.value, every: this.inputs.every.value, step: this.inputs.step.value, budget: this.inputs.budget.value };
    const key = JSON.stringify([fields, run.id, run.status, run.experiments.map((e) => [e.experiment, e.state, e.variants.length])]);
    if (!force && key === this.key) return;
    this.key = key;
    let plan: Plan;
    let leftOut = '';
    try {
      const inputs = readInputs(fields);
      // Shapes written in code (the plan lens) may be larger than the run's GPUs: plan those the run
      // holds and say which are left out, never price a shape with another's figures.
      if (inputs.shapes) {
        const { held, left } = splitShapes(inputs.shapes, run.ranks);
        if (left.length > 0 && run.ranks >= 1) {
          leftOut = `${left.map((x) => `TP${x}`).join(', ')} left out: the run measured ${run.ranks} GPU${run.ranks === 1 ? '' : 's'} (a shape that does not divide them needs a run on that many GPUs)`;
          if (held.length > 0) inputs.shapes = held;
          else delete inputs.shapes;
        }
      }
      plan = planReshape([{ file: run.id, run }], inputs);
    } catch (e) {
      // The reason in one line, and nothing of an earlier plan left beside it.
      this.problem.hidden = false;
      replaceChildren(this.problem, e instanceof PlanInputError ? `${e.message} — ${e.hint}` : String(e));
      this.chartBox.hidden = true;
      for (const box of [this.tableBox, this.sentencesBox, this.missingBox, this.pauseNoteBox]) replaceChildren(box);
      return;
    }
    this.problem.hidden = leftOut === '';
    replaceChildren(this.problem, leftOut);
    const model = planChartModel(plan);
    // Nothing to plan from: one line, no chart, table or sentences of missing terms.
    const empty = model.empty !== undefined;
    this.chartBox.hidden = empty;
    const oneRank = run.ranks < 2;
    replaceChildren(this.tableBox, empty ? '' : planTable(plan, oneRank));
    replaceChildren(this.sentencesBox, ...(empty ? [] : planSentences(plan).map((s) => h('li', {}, s))));
    const missing =
      model.missing.length === 0
        ? ''
        : oneRank
          ? `1 rank: no total for ${model.missing.join(', ')} (a term is missing: why in the lines below); the table shows only the strategies this run can price`
          : `not measured (why in the lines below): ${model.missing.join(', ')}`;
    replaceChildren(this.missingBox, empty ? model.empty : missing);
    replaceChildren(this.pauseNoteBox, empty ? '' : (model.pauseNote ?? ''));
    this.pauseNoteBox.hidden = empty || model.pauseNote === undefined;
    if (!empty) this.draw(model);
  }

  private draw(model: PlanChartModel): void {
    // Colours are read from the theme at each draw: redraw with the last model on a theme change.
    this.lastModel = model;
    this.stopTheme ??= onThemeChange(() => {
      if (this.lastModel) this.draw(this.lastModel);
    });
    this.chartBox.style.height = `${90 + 30 * Math.max(1, model.bars.length)}px`;
    const c = chartColors((v) => getComputedStyle(document.body).getPropertyValue(v).trim());
    const data = {
      labels: model.bars.map((b) => b.label),
      datasets: [{ label: 'critical path per switch (ms)', data: model.bars.map((b) => b.ms), backgroundColor: c.slot(0) }],
    };
    const scales = {
      x: { type: 'logarithmic' as const, min: model.min, max: model.max, title: { display: true, text: 'critical path per switch, ms (log)', color: c.text }, ticks: { color: c.text, callback: (v: string | number) => (Number.isInteger(Math.log10(Number(v))) ? String(Number(v)) : '') }, grid: { color: c.grid } },
      y: { ticks: { color: c.text, autoSkip: false }, grid: { color: c.grid } },
    };
    if (!this.chart) {
      const canvas = h('canvas', { role: 'img', 'aria-label': 'critical path per switch by strategy, log axis, with the step and the migration pause' }) as HTMLCanvasElement;
      this.chartBox.appendChild(canvas);
      this.chart = new Chart(canvas, { type: 'bar', data, options: { indexAxis: 'y', animation: false, maintainAspectRatio: false, scales, plugins: { legend: { display: false }, tooltip: { enabled: true } } }, plugins: [referenceLines] });
    } else {
      this.chart.data = data;
      this.chart.options.scales = scales;
    }
    models.set(this.chart as unknown as Chart, model);
    this.chart.update();
  }
}
