/**
 * The results view: builds its DOM once and updates it in place from complete {@link RunState}
 * snapshots. All data is inserted as text (see dom.ts).
 */
import '@vscode-elements/elements/dist/vscode-badge/index.js';
import '@vscode-elements/elements/dist/vscode-button/index.js';
import '@vscode-elements/elements/dist/vscode-collapsible/index.js';
import '@vscode-elements/elements/dist/vscode-progress-bar/index.js';
import type { PlanRequest, RunState } from '../protocol/webviewMessages';
import { isSimulatedRun, memStatsNote, type RunExperiment, type RunFile } from '../protocol/runFile';
import { chartModel, type ChartModel } from './chartData';
import { MemoryLineChart, memoryLineHeight } from './memoryLineChart';
import { memoryChartFor, type MemoryChart } from './memoryLineData';
import { chartHeight, ExperimentChart } from './charts';
import { h, replaceChildren, setText } from './dom';
import { formatWhere } from './format';
import { dataSignature, variantViews } from './stats';
import { AtMostEvery } from './scheduler';
import { metaRows, runErrors } from './runFacts';
import { memoryTable, ncclViewModel, ncclViewTable, stepTable, type VariantExtras } from './tables';
import { manyCommsTables } from './manyCommsTables';
import { PlanSection } from './planView';
import { RecoverySection } from './recoveryView';
import { StudyCharts } from './studyCharts';
import { FirstPageSection } from './firstPage';
import { runName } from '../readings/runName';
import { errorAdvice } from '../readings/failureAdvice';

/** What the view may ask of its host; absent in the standalone report. */
export interface ViewActions {
  cancel(): void;
  showLog(): void;
}

/** The simulated-run banner text (also asserted by the report tests). */
export const SIMULATED_TEXT = "figures come from commcost's simulated NCCL, not from a measurement";

/**
 * The shortest time (ms) between two redraws of the charts while a run streams: a chart update
 * lays out and paints the canvas, too much for every frame; the tables follow every frame.
 */
const CHART_INTERVAL_MS = 250;

/** The width a chart is laid out for: its box's, or the widest a chart is drawn (styles.ts `.chart`). */
function chartWidth(box: HTMLElement): number {
  return box.clientWidth > 0 ? box.clientWidth : 900;
}

/** Sets `box`'s height to fit `model` at the box's width. */
function fitChart(box: HTMLElement, model: ChartModel): void {
  const height = `${chartHeight(model, chartWidth(box))}px`;
  if (box.style.height !== height) box.style.height = height;
}

/** One error of the run as list item: code, message, where, the library's text, the hint (readings/failureAdvice.ts: chosen against the run's regime). */
function errorItem(e: RunFile['errors'][number], hintLabel: string, simulated: boolean): HTMLElement {
  const advice = errorAdvice(e, simulated);
  return h('li', {},
    h('span', { class: 'code' }, String(e.code)), ' ', String(e.message),
    formatWhere(e.where) && h('div', {}, `where: ${formatWhere(e.where)}`),
    e.detail && h('div', {}, `why: ${e.detail}`),
    advice && h('div', { class: 'hint' }, `${hintLabel}: ${advice}`),
  );
}

class ExperimentSection {
  readonly root: HTMLElement;
  private readonly badge = h('vscode-badge', { slot: 'decorations', variant: 'counter' });
  private readonly bar = h('vscode-progress-bar');
  private readonly progressText = h('span');
  private readonly chartBox = h('div', { class: 'chart' });
  private readonly memoryBox = h('div', { class: 'chart' });
  /** What the memory chart draws of its points when it does not draw them all (memoryLineData.ts). */
  private readonly memoryNote = h('p', { class: 'muted decimation-note' });
  private readonly tableBox = h('div');
  /** Memory per GPU: the free-memory delta and NCCL's count (MemStats) in columns of their own. */
  private readonly memoryTableBox = h('div');
  /** NCCL's view of a cold start (Init timings) and the variant's ratios, beside the figures. */
  private readonly ncclBox = h('div');
  /** many-comms: the curve as tables (N → memory per GPU, the N-th creation, per variant). */
  private readonly curveBox = h('div');
  /** The field case's expected hangs (errors with `expected: true` of this experiment). */
  private readonly hangsBox = h('div', { class: 'expected-hangs' });
  private chart: ExperimentChart | undefined;
  private memoryChart: ExperimentChart | MemoryLineChart | undefined;
  /** dataSignature of what the last update showed: an unchanged experiment is not rendered again. */
  private dataKey = '';
  /** The chart models computed but not drawn yet (charts are throttled while a run streams). */
  private pendingCharts: { model: ChartModel; memory: MemoryChart; memoryKey: string } | undefined;
  /** The signatures of the models each chart last drew: an unchanged chart is not updated. */
  private chartKey = '';
  private memoryKey = '';
  private tableKey = '';
  private extrasKey = '';
  private hangsKey = '';

  constructor(readonly id: string) {
    const c = h('vscode-collapsible', { open: true, class: 'exp' });
    c.heading = id;
    c.append(this.badge, h('div', { class: 'exp-progress' }, this.bar, this.progressText), this.chartBox, this.ncclBox, this.memoryBox, this.memoryNote, this.curveBox, this.tableBox, this.memoryTableBox, this.hangsBox);
    this.memoryNote.hidden = true;
    this.root = c;
  }

  /**
   * Brings the section to `exp`: progress, tables and the chart models; does nothing more when
   * `exp`'s {@link dataSignature} (counts and last values, not the samples) is unchanged.
   * @param memNote why the run has no ncclCommMemStats (memStatsNote), shown under the memory
   * table when no variant has NCCL's count.
   * @param ranks the run's rank count (the many-comms curve names it)
   * @returns whether chart models wait for {@link drawCharts}
   */
  update(exp: RunExperiment, hangs: RunFile['errors'], memNote?: string, ranks = 1): boolean {
    this.renderHangs(hangs);
    // The summaries (with their memory points, thousands per variant in a large run) are written
    // once: the memory table, NCCL's view and the memory chart are drawn from them alone.
    const summariesKey = dataSignature([exp.variants, memNote]);
    const dataKey = dataSignature([exp.state, exp.done, exp.total, exp.samples]) + summariesKey;
    if (dataKey === this.dataKey) return this.pendingCharts !== undefined;
    this.dataKey = dataKey;
    const done = Number(exp.done) || 0;
    const total = Number(exp.total) || 0;
    setText(this.badge, `${done}/${total}`);
    this.bar.max = Math.max(1, total);
    this.bar.value = done;
    this.bar.hidden = exp.state === 'finished';
    setText(this.progressText, `${exp.state} · ${done}/${total} iterations`);

    const variants = variantViews(exp);
    const model = chartModel(variants);
    // The summary's extras (MemStats, ratios, NCCL's view) beside the displayed variants.
    const summaries = Array.isArray(exp.variants) ? exp.variants : [];
    const extras: VariantExtras[] = variants.map((v) => {
      const s = summaries.find((x) => x && String(x.variant) === v.variant);
      return { variant: v.variant, memoryBytes: v.memoryBytes, memStats: s?.memStats, ratios: s?.ratios, ncclInit: s?.ncclInit };
    });
    // Past a few points a bar per point does not read (and thousands froze the page): lines.
    const memory = memoryChartFor(variants.map((v, i) => ({ ...v, memStats: extras[i]!.memStats })));
    this.pendingCharts = { model, memory, memoryKey: summariesKey };
    // The step table does not show memory points: they are left out of its key.
    const key = JSON.stringify(variants, (k, v: unknown) => (k === 'memoryBytes' ? undefined : v));
    if (key !== this.tableKey) {
      this.tableKey = key;
      // "yet" only while the experiment may still record: a stopped or finished one recorded none.
      const none = exp.state === 'stopped' || exp.state === 'finished' ? 'no samples recorded' : 'no samples yet';
      replaceChildren(this.tableBox, variants.length > 0 ? stepTable(variants) : h('p', { class: 'muted' }, none));
    }
    // Extras come from the summaries (absent while live: nothing to show).
    const extrasKey = summariesKey;
    if (extrasKey !== this.extrasKey) {
      this.extrasKey = extrasKey;
      const withMemory = extras.filter((x) => Object.keys(x.memoryBytes ?? {}).length + Object.keys(x.memStats ?? {}).length > 0);
      replaceChildren(this.memoryTableBox, withMemory.length > 0 && memoryTable(withMemory, memNote));
      replaceChildren(this.curveBox, this.id === 'many-comms' && manyCommsTables(exp, ranks));
      replaceChildren(this.ncclBox, ...extras.map((x) => {
        const model = ncclViewModel(x);
        return model ? ncclViewTable(model, x.variant) : false;
      }));
    }
    return true;
  }

  /** Draws the chart models the last {@link update} computed; a chart whose model is unchanged is left as drawn. */
  drawCharts(): void {
    const pending = this.pendingCharts;
    this.pendingCharts = undefined;
    if (!pending) return;
    const { model, memory, memoryKey } = pending;
    const key = dataSignature(model);
    if (model.series.length > 0 && key !== this.chartKey) {
      this.chartKey = key;
      fitChart(this.chartBox, model);
      if (!this.chart) {
        const canvas = h('canvas', { role: 'img', 'aria-label': `${this.id}: median per step, whisker to p90` });
        this.chartBox.appendChild(canvas);
        this.chart = new ExperimentChart(canvas, model);
      } else {
        this.chart.update(model);
      }
    }
    const hasMemory = memory.kind === 'bars' ? memory.model.series.length > 0 : memory.model.lines.length > 0;
    if (hasMemory && memoryKey !== this.memoryKey) {
      this.memoryKey = memoryKey;
      const kindChanged = this.memoryChart !== undefined && (this.memoryChart instanceof MemoryLineChart) !== (memory.kind === 'lines');
      if (kindChanged) {
        this.memoryChart!.destroy();
        this.memoryChart = undefined;
        this.memoryBox.replaceChildren();
      }
      if (memory.kind === 'lines') {
        this.memoryBox.style.height = `${memoryLineHeight(memory.model)}px`;
        setText(this.memoryNote, memory.model.note);
        this.memoryNote.hidden = memory.model.note === '';
      } else {
        fitChart(this.memoryBox, memory.model);
        this.memoryNote.hidden = true;
      }
      if (!this.memoryChart) {
        const canvas = h('canvas', { role: 'img', 'aria-label': `${this.id}: memory per GPU per variant and point (MiB)` });
        this.memoryBox.appendChild(canvas);
        this.memoryChart = memory.kind === 'lines' ? new MemoryLineChart(canvas, memory.model) : new ExperimentChart(canvas, memory.model, 'MiB');
      } else if (memory.kind === 'lines') {
        (this.memoryChart as MemoryLineChart).update(memory.model);
      } else {
        (this.memoryChart as ExperimentChart).update(memory.model);
      }
    }
  }

  /** Lists the field case's expected hangs under its own section: the hang is the case's result. */
  private renderHangs(hangs: RunFile['errors']): void {
    const key = JSON.stringify(hangs);
    if (key === this.hangsKey) return;
    this.hangsKey = key;
    this.hangsBox.hidden = hangs.length === 0;
    replaceChildren(
      this.hangsBox,
      hangs.length > 0 && h('h3', {}, hangs.length === 1 ? 'Expected hang: the hang is this case\'s result' : 'Expected hangs: each hang is this case\'s result'),
      // An expected hang's hint is its why, kept as written (errorAdvice).
      hangs.length > 0 && h('ul', {}, ...hangs.map((e) => errorItem(e, 'why', false))),
    );
  }

  /** Fits the charts to their boxes' width again (after the panel was resized). */
  refit(): void {
    if (this.chart) fitChart(this.chartBox, this.chart.current);
    if (this.memoryChart instanceof ExperimentChart) fitChart(this.memoryBox, this.memoryChart.current);
  }

  dispose(): void {
    this.chart?.destroy();
    this.memoryChart?.destroy();
    this.root.remove();
  }
}

/** Renders run states into `container`. Construct once; call {@link render} per frame. */
export class RunView {
  private readonly title = h('h1');
  private readonly simBanner = h('div', { class: 'banner-sim', role: 'alert' }, h('strong', {}, 'SIMULATED'), SIMULATED_TEXT);
  private readonly meta = h('dl', { class: 'meta' });
  private readonly statusRow = h('div', { class: 'status' });
  private readonly statusLabel = h('span', { class: 'label' });
  private readonly overall = h('vscode-progress-bar');
  private readonly cancelButton = h('vscode-button', { secondary: true }, 'Cancel');
  private readonly failureBox = h('div', { class: 'errors' });
  private readonly experimentsBox = h('div');
  private readonly skippedBox = h('div', { class: 'skipped' });
  /** The answer in a few lines, before everything else but the title (firstPage.ts). */
  private readonly firstPage = new FirstPageSection();
  /** The verdict: conclusions derived from this run's figures (RunFile.verdict). */
  private readonly verdictBox = h('div', { class: 'verdict' });
  /** The reshape planner on this run (planView.ts). */
  private readonly plan = new PlanSection();
  /** The recovery paths after a lost rank on this run (recoveryView.ts). */
  private readonly recovery = new RecoverySection();
  /** The study's Figure 2 and Figure 3 drawn from this run (studyCharts.ts). */
  private readonly study = new StudyCharts();
  private verdictKey = '';
  private readonly errorsBox = h('div', { class: 'errors' });
  private readonly sections = new Map<string, ExperimentSection>();
  /** The charts while a run streams: redrawn at most every CHART_INTERVAL_MS; a final state at once. */
  private readonly chartThrottle = new AtMostEvery(CHART_INTERVAL_MS);
  private metaKey = '';
  private listsKey = '';

  constructor(
    container: HTMLElement,
    private readonly actions: ViewActions | undefined,
  ) {
    this.cancelButton.addEventListener('click', () => this.actions?.cancel());
    this.statusRow.append(this.statusLabel, this.overall, this.cancelButton);
    container.append(this.title, this.simBanner, this.firstPage.root, this.meta, this.statusRow, this.failureBox, this.verdictBox, this.plan.root, this.recovery.root, this.study.root, this.experimentsBox, this.skippedBox, this.errorsBox);
    // The legend wraps to more rows in a narrower panel: fit the charts again (once per frame).
    let pending = false;
    window.addEventListener('resize', () => {
      if (pending) return;
      pending = true;
      requestAnimationFrame(() => {
        pending = false;
        for (const section of this.sections.values()) section.refit();
      });
    });
  }

  /** Opens the Plan section with `request`'s inputs (the "plan this reshape" CodeLens), or the Recovery section (`section: 'recovery'`, the "plan this recovery" CodeLens). */
  showPlan(request: PlanRequest): void {
    if (request.section === 'recovery') this.recovery.show(request);
    else this.plan.show(request);
  }

  /** Brings the DOM to `state` (a complete snapshot). */
  render(state: RunState): void {
    const run = state.run;
    // The run's one name (readings/runName.ts), as the HTML report's title: GPUs, NCCL, start; SIMULATED when so.
    setText(this.title, `commcost — ${runName(run)}`);
    this.simBanner.hidden = !isSimulatedRun(run);
    this.renderMeta(run);
    this.renderStatus(run, state);
    this.firstPage.update(run);
    this.renderVerdict(run);
    // A run that failed before any figure: the first page says what failed, the errors say the rest;
    // no plan, recovery or study section stands beside it with nothing to show.
    const exps = Array.isArray(run.experiments) ? run.experiments : [];
    const nothing = run.status === 'failed' && !exps.some((e) => Array.isArray(e.variants) && e.variants.length > 0);
    for (const root of [this.plan.root, this.recovery.root, this.study.root]) root.hidden = nothing;
    if (!nothing) {
      this.plan.update(run);
      this.recovery.update(run);
      this.study.update([{ label: String(run.host ?? ''), file: String(run.id ?? 'this run'), run }]);
    }
    const chartsWait = this.renderExperiments(run);
    this.renderLists(run, state);
    const draw = (): void => {
      for (const section of this.sections.values()) section.drawCharts();
    };
    // The last state of a run (not live) is drawn at once; a throttled job is never dropped.
    if (!state.live) this.chartThrottle.runNow(draw);
    else if (chartsWait) this.chartThrottle.run(draw);
  }

  private renderVerdict(run: RunFile): void {
    const lines = Array.isArray(run.verdict) ? run.verdict : [];
    const key = JSON.stringify(lines);
    if (key === this.verdictKey) return;
    this.verdictKey = key;
    this.verdictBox.hidden = lines.length === 0;
    replaceChildren(this.verdictBox, h('h2', {}, 'Verdict for this host'), h('ul', {}, ...lines.map((l) => h('li', {}, String(l.text)))));
  }

  private renderMeta(run: RunFile): void {
    const rows = metaRows(run);
    const key = JSON.stringify(rows);
    if (key === this.metaKey) return;
    this.metaKey = key;
    replaceChildren(this.meta, ...rows.flatMap(([k, v]) => [h('dt', {}, k), h('dd', {}, v)]));
  }

  private renderStatus(run: RunFile, state: RunState): void {
    const status = state.live ? 'running' : String(run.status);
    this.statusRow.className = `status status-${status}`;
    setText(this.statusLabel, status);
    const exps = Array.isArray(run.experiments) ? run.experiments : [];
    const done = exps.reduce((a, e) => a + (Number(e.done) || 0), 0);
    const total = exps.reduce((a, e) => a + (Number(e.total) || 0), 0);
    this.overall.hidden = !state.live;
    if (total > 0) {
      this.overall.max = total;
      this.overall.value = done;
    } else {
      this.overall.value = undefined;
    }
    this.cancelButton.hidden = !(state.live && this.actions);
  }

  /** @returns whether some section has chart models not drawn yet */
  private renderExperiments(run: RunFile): boolean {
    let chartsWait = false;
    const exps = Array.isArray(run.experiments) ? run.experiments : [];
    const hangs = runErrors(run).hangsByExperiment;
    const seen = new Set<string>();
    for (const exp of exps) {
      const id = String(exp.experiment);
      seen.add(id);
      let section = this.sections.get(id);
      if (!section) {
        section = new ExperimentSection(id);
        this.sections.set(id, section);
        this.experimentsBox.appendChild(section.root);
      }
      if (section.update(exp, hangs.get(id) ?? [], memStatsNote(run), Number(run.ranks) || 1)) chartsWait = true;
    }
    for (const [id, section] of this.sections) {
      if (!seen.has(id)) {
        section.dispose();
        this.sections.delete(id);
      }
    }
    return chartsWait;
  }

  private renderLists(run: RunFile, state: RunState): void {
    const skipped = Array.isArray(run.skipped) ? run.skipped : [];
    const errors = Array.isArray(run.errors) ? run.errors : [];
    const ids = (Array.isArray(run.experiments) ? run.experiments : []).map((e) => String(e.experiment));
    const key = JSON.stringify([skipped, errors, state.failure, ids]);
    if (key === this.listsKey) return;
    this.listsKey = key;
    replaceChildren(
      this.skippedBox,
      skipped.length > 0 && h('h2', {}, 'Skipped'),
      skipped.length > 0 &&
        h('ul', {}, ...skipped.map((s) => h('li', {}, `${s.experiment}${s.variant ? ` / ${s.variant}` : ''}: ${s.reason}`))),
    );
    const showLog = this.actions ? h('vscode-button', { secondary: true }, 'Show Log') : undefined;
    showLog?.addEventListener('click', () => this.actions?.showLog());
    const f = state.failure;
    const simulated = isSimulatedRun(run);
    const failureAdvice = f ? errorAdvice(f, simulated) : undefined;
    replaceChildren(
      this.failureBox,
      f && h('h2', {}, 'Failed'),
      f && h('p', {}, h('span', { class: 'code' }, f.code), ' ', f.message),
      f?.where && h('p', {}, `where: ${f.where}`),
      failureAdvice && h('p', { class: 'hint' }, `what to do: ${failureAdvice}`),
      f && showLog,
    );
    const showLog2 = this.actions && !f ? h('vscode-button', { secondary: true }, 'Show Log') : undefined;
    showLog2?.addEventListener('click', () => this.actions?.showLog());
    // A hang that is a field case's result (expected) is listed under its case's section; only an
    // expected hang whose experiment has no section is listed here, apart from the errors.
    const { real, orphanHangs: orphans } = runErrors(run);
    replaceChildren(
      this.errorsBox,
      real.length > 0 && h('h2', {}, 'Errors'),
      real.length > 0 && h('ul', {}, ...real.map((e) => errorItem(e, 'what to do', simulated))),
      orphans.length > 0 && h('h2', {}, 'Expected hangs (field cases: the hang is the result)'),
      orphans.length > 0 && h('ul', {}, ...orphans.map((e) => errorItem(e, 'why', false))),
      real.length > 0 && showLog2,
    );
  }
}
