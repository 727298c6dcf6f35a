/**
 * The results view: builds its DOM once and updates it in place from complete {@link RunState}
 * snapshots. All data is inserted as text (see dom.ts).
 */
import '@vscode-elements/elements/dist/vscode-badge/index.js';
import '@vscode-elements/elements/dist/vscode-button/index.js';
import '@vscode-elements/elements/dist/vscode-collapsible/index.js';
import '@vscode-elements/elements/dist/vscode-progress-bar/index.js';
import type { RunState } from '../protocol/webviewMessages';
import { isSimulatedRun, type RunExperiment, type RunFile } from '../protocol/runFile';
import { chartModel, memoryChartModel } from './chartData';
import { chartHeight, ExperimentChart } from './charts';
import { h, replaceChildren, setText } from './dom';
import { formatDate, formatGpus, formatMs, formatWhere } from './format';
import { variantViews } from './stats';
import { stepTable } from './tables';

/** What the view may ask of its host; absent in the standalone report. */
export interface ViewActions {
  cancel(): void;
  showLog(): void;
}

/** The simulated-run banner text (also asserted by the report tests). */
export const SIMULATED_TEXT = "figures come from commcost's simulated NCCL, not from a measurement";

class ExperimentSection {
  readonly root: HTMLElement;
  private readonly badge = h('vscode-badge', { slot: 'decorations', variant: 'counter' });
  private readonly bar = h('vscode-progress-bar');
  private readonly progressText = h('span');
  private readonly chartBox = h('div', { class: 'chart' });
  private readonly memoryBox = h('div', { class: 'chart' });
  private readonly tableBox = h('div');
  private chart: ExperimentChart | undefined;
  private canvas: HTMLCanvasElement | undefined;
  private memoryChart: ExperimentChart | undefined;
  private tableKey = '';

  constructor(readonly id: string) {
    const c = h('vscode-collapsible', { open: true, class: 'exp' });
    c.heading = id;
    c.append(this.badge, h('div', { class: 'exp-progress' }, this.bar, this.progressText), this.chartBox, this.memoryBox, this.tableBox);
    this.root = c;
  }

  update(exp: RunExperiment): void {
    const done = Number(exp.done) || 0;
    const total = Number(exp.total) || 0;
    setText(this.badge, `${done}/${total}`);
    this.bar.max = Math.max(1, total);
    this.bar.value = done;
    this.bar.hidden = exp.state === 'finished';
    setText(this.progressText, `${exp.state} · ${done}/${total} iterations`);

    const variants = variantViews(exp);
    const model = chartModel(variants);
    if (model.series.length > 0) {
      const height = `${chartHeight(model)}px`;
      if (this.chartBox.style.height !== height) this.chartBox.style.height = height;
      if (!this.chart) {
        this.canvas = h('canvas', { role: 'img', 'aria-label': `${this.id}: median per step, whisker to p90` });
        this.chartBox.appendChild(this.canvas);
        this.chart = new ExperimentChart(this.canvas, model);
      } else {
        this.chart.update(model);
      }
    }
    const memory = memoryChartModel(variants);
    if (memory.series.length > 0) {
      const height = `${chartHeight(memory)}px`;
      if (this.memoryBox.style.height !== height) this.memoryBox.style.height = height;
      if (!this.memoryChart) {
        const canvas = h('canvas', { role: 'img', 'aria-label': `${this.id}: memory per GPU per variant and point (MiB)` });
        this.memoryBox.appendChild(canvas);
        this.memoryChart = new ExperimentChart(canvas, memory, 'MiB');
      } else {
        this.memoryChart.update(memory);
      }
    }
    const key = JSON.stringify(variants);
    if (key !== this.tableKey) {
      this.tableKey = key;
      replaceChildren(this.tableBox, variants.length > 0 ? stepTable(variants) : h('p', { class: 'muted' }, 'no samples yet'));
    }
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
  /** The verdict: conclusions derived from this run's figures (RunFile.verdict). */
  private readonly verdictBox = h('div', { class: 'verdict' });
  private verdictKey = '';
  private readonly errorsBox = h('div', { class: 'errors' });
  private readonly sections = new Map<string, ExperimentSection>();
  private metaKey = '';
  private listsKey = '';

  constructor(
    container: HTMLElement,
    private readonly actions: ViewActions | undefined,
  ) {
    this.cancelButton.addEventListener('click', () => this.actions?.cancel());
    this.statusRow.append(this.statusLabel, this.overall, this.cancelButton);
    container.append(this.title, this.simBanner, this.meta, this.statusRow, this.failureBox, this.verdictBox, this.experimentsBox, this.skippedBox, this.errorsBox);
  }

  /** Brings the DOM to `state` (a complete snapshot). */
  render(state: RunState): void {
    const run = state.run;
    setText(this.title, `commcost — ${String(run.host ?? '')}`);
    this.simBanner.hidden = !isSimulatedRun(run);
    this.renderMeta(run);
    this.renderStatus(run, state);
    this.renderVerdict(run);
    this.renderExperiments(run);
    this.renderLists(run, state);
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
    const s = run.stamp;
    const rows: [string, string][] = [['host', `${String(run.host ?? '')}${s?.hostname ? ` (${s.hostname})` : ''}`]];
    if (s) {
      rows.push(['GPUs', formatGpus(s.gpus)]);
      rows.push(['NCCL', `${s.ncclVersion} · ${s.ncclPath}${s.ncclSource ? ` (${s.ncclSource})` : ''}`]);
      rows.push(['driver', s.driverVersion]);
      rows.push(['date', formatDate(s.startedAt)]);
    }
    rows.push(['ranks', String(run.ranks ?? '')]);
    const o = run.options;
    if (o) rows.push(['n', `${o.iterations} recorded + ${o.warmup} warmup per step`]);
    if (run.startup) {
      const cuda = Array.isArray(run.startup.cudaInitMs) ? run.startup.cudaInitMs.map(formatMs).join(', ') : '';
      rows.push(['process start', `CUDA init ${cuda} ms per rank · first ncclGetUniqueId ${formatMs(run.startup.firstUniqueIdMs)} ms (not in any figure below)`]);
    }
    if (run.wallMs !== undefined) rows.push(['wall', `${formatMs(run.wallMs)} ms (timed steps ${formatMs(run.measuredMs)} ms)`]);
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

  private renderExperiments(run: RunFile): void {
    const exps = Array.isArray(run.experiments) ? run.experiments : [];
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
      section.update(exp);
    }
    for (const [id, section] of this.sections) {
      if (!seen.has(id)) {
        section.dispose();
        this.sections.delete(id);
      }
    }
  }

  private renderLists(run: RunFile, state: RunState): void {
    const skipped = Array.isArray(run.skipped) ? run.skipped : [];
    const errors = Array.isArray(run.errors) ? run.errors : [];
    const key = JSON.stringify([skipped, errors, state.failure]);
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
    replaceChildren(
      this.failureBox,
      f && h('h2', {}, 'Failed'),
      f && h('p', {}, h('span', { class: 'code' }, f.code), ' ', f.message),
      f?.where && h('p', {}, `where: ${f.where}`),
      f?.hint && h('p', { class: 'hint' }, `what to do: ${f.hint}`),
      f && showLog,
    );
    const showLog2 = this.actions && !f ? h('vscode-button', { secondary: true }, 'Show Log') : undefined;
    showLog2?.addEventListener('click', () => this.actions?.showLog());
    // A hang that is a field case's result (expected) is listed apart from the errors.
    const listOf = (list: typeof errors, expected: boolean): HTMLElement =>
      h('ul', {}, ...list.map((e) =>
        h('li', {},
          h('span', { class: 'code' }, String(e.code)), ' ', String(e.message),
          formatWhere(e.where) && h('div', {}, `where: ${formatWhere(e.where)}`),
          e.detail && h('div', {}, `why: ${e.detail}`),
          e.hint && h('div', { class: 'hint' }, `${expected ? 'why' : 'what to do'}: ${e.hint}`),
        )));
    const real = errors.filter((e) => !e.expected);
    const hangs = errors.filter((e) => e.expected);
    replaceChildren(
      this.errorsBox,
      real.length > 0 && h('h2', {}, 'Errors'),
      real.length > 0 && listOf(real, false),
      hangs.length > 0 && h('h2', {}, 'Expected hangs (field cases: the hang is the result)'),
      hangs.length > 0 && listOf(hangs, true),
      real.length > 0 && showLog2,
    );
  }
}
