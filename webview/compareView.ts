/**
 * The comparison view of the HTML report (several runs in one file): a legend naming each run
 * (host · NCCL · what differs, SIMULATED when so) with its colour, then per experiment a chart of
 * grouped bars per step (one colour per run, median with a whisker to p90; the chart code of a
 * single run) and a table of each run's median and p90 and the ratio of its median to the first
 * run's, coloured only when the difference is beyond the spread of both runs' samples
 * (protocol/compare.ts `judgeDifference`; the rule is written under the legend). Built once from
 * the embedded data; all data is inserted as text (see dom.ts).
 */
import '@vscode-elements/elements/dist/vscode-collapsible/index.js';
import { compareRuns, differenceRuleText, formatRatio, rankCountNote, simulatedMixNote, type CompareExperiment, type Comparison, type ComparisonData } from '../protocol/compare';
import { memoryPointLabel } from '../protocol/runFile';
import { ratioCellView } from './compareCells';
import { compareChartModel, compareRowLabel } from './compareChartData';
import { chartHeight, ExperimentChart, runColor } from './charts';
import { append, h } from './dom';
import { formatDate, formatGpus, formatMiB, formatMs } from './format';
import { pagedTable, TABLE_PAGE_ROWS } from './tables';
import { SIMULATED_TEXT } from './view';
import { StudyCharts } from './studyCharts';

function legend(c: Comparison, runs: ComparisonData['runs']): HTMLElement {
  const head = h('tr', {}, h('th', {}, ''), h('th', {}, 'run'), h('th', {}, 'GPUs'), h('th', {}, 'NCCL library'), h('th', {}, 'date'), h('th', { class: 'num' }, 'ranks'), h('th', {}, 'n per step'), h('th', {}, 'status'));
  const body = h('tbody');
  c.runs.forEach((r, i) => {
    const run = runs[i];
    const s = run?.stamp;
    const o = run?.options;
    body.appendChild(
      h('tr', {},
        h('td', {}, h('span', { class: 'swatch', style: `background:${runColor(i)}` }), h('strong', {}, r.key)),
        h('td', {}, r.label, h('div', { class: 'muted' }, `${r.host} · run ${r.id}`)),
        h('td', {}, formatGpus(Array.isArray(s?.gpus) ? s.gpus : [])),
        h('td', {}, s ? `${String(s.ncclVersion)} · ${String(s.ncclPath)}${s.ncclSource ? ` (${String(s.ncclSource)})` : ''}` : ''),
        h('td', {}, formatDate(s?.startedAt)),
        h('td', { class: 'num' }, r.ranks !== undefined ? String(r.ranks) : ''),
        h('td', {}, o ? `${String(o.iterations)} recorded + ${String(o.warmup)} warmup` : ''),
        h('td', {}, r.status),
      ),
    );
  });
  return h('table', { class: 'steps legend' }, h('thead', {}, head), body);
}

/**
 * The comparison table of one experiment: per variant its steps, then its memory points. Past
 * {@link TABLE_PAGE_ROWS} memory rows (runs with thousands of memory points) the memory points
 * leave it for a paged table of their own ({@link compareMemoryTable}).
 */
function compareTable(exp: CompareExperiment, c: Comparison, withMemory: boolean): HTMLTableElement {
  const base = c.runs[0]?.key ?? 'A';
  const headCells = [h('th', {}, 'variant · step')];
  c.runs.forEach((r, i) => {
    headCells.push(h('th', { class: 'num' }, `${r.key} median ms`), h('th', { class: 'num' }, `${r.key} p90 ms`));
    if (i > 0) headCells.push(h('th', { class: 'num' }, `${r.key}/${base}`));
  });
  const body = h('tbody');
  for (const v of exp.variants) {
    for (const s of v.steps) {
      const cells = [h('td', {}, compareRowLabel(exp, v.variant, s.label))];
      s.cells.forEach((cell, i) => {
        cells.push(h('td', { class: 'num' }, formatMs(cell?.median)), h('td', { class: 'num' }, formatMs(cell?.p90)));
        if (i > 0) {
          const r = ratioCellView(cell?.ratio, cell?.difference);
          cells.push(h('td', { class: r.className, title: r.title }, r.text));
        }
      });
      body.appendChild(h('tr', { class: s.derived ? 'derived' : undefined }, ...cells));
    }
    if (withMemory) for (const m of v.memory) body.appendChild(memoryRow(exp, v.variant, m));
  }
  return h('table', { class: 'steps compare' }, h('thead', {}, h('tr', {}, ...headCells)), body);
}

/** One memory point of a variant across the runs: MiB per run and the ratio to the first run. */
function memoryRow(exp: CompareExperiment, variant: string, m: CompareExperiment['variants'][number]['memory'][number]): HTMLTableRowElement {
  const cells = [h('td', {}, compareRowLabel(exp, variant, `memory ${memoryPointLabel(m.point)}`))];
  m.bytes.forEach((b, i) => {
    cells.push(h('td', { class: 'num', colspan: '2' }, b === null ? '–' : `${formatMiB(b)} MiB`));
    // Memory is one figure per point: no spread to judge a ratio by, so never coloured.
    if (i > 0) cells.push(h('td', { class: 'num' }, formatRatio(m.ratio[i])));
  });
  return h('tr', { class: 'memory' }, ...cells);
}

/** The memory points of an experiment across the runs, paged ({@link pagedTable}). */
function compareMemoryTable(exp: CompareExperiment, c: Comparison): HTMLElement {
  const base = c.runs[0]?.key ?? 'A';
  const headCells = [h('th', {}, 'variant · memory point')];
  c.runs.forEach((r, i) => {
    headCells.push(h('th', { class: 'num', colspan: '2' }, `${r.key} MiB per GPU`));
    if (i > 0) headCells.push(h('th', { class: 'num' }, `${r.key}/${base}`));
  });
  const rows = exp.variants.flatMap((v) => v.memory.map((m) => [v.variant, m] as const));
  const table = h('table', { class: 'steps compare memory' }, h('thead', {}, h('tr', {}, ...headCells)));
  return pagedTable(table, rows.length, (i) => memoryRow(exp, rows[i]![0], rows[i]![1]));
}

/** Renders a comparison into `container` (once: a report's data does not change). */
export class CompareView {
  private readonly charts: ExperimentChart[] = [];
  /** The study's Figure 2 and 3 over every run, one colour per host and NCCL version (studyCharts.ts). */
  private readonly study = new StudyCharts();

  constructor(private readonly container: HTMLElement) {}

  render(data: ComparisonData): void {
    const c = compareRuns(data.runs);
    const base = c.runs[0];
    const sections = c.experiments.map((exp) => {
      const model = compareChartModel(exp, c.runs);
      const chartBox = h('div', { class: 'chart' });
      chartBox.style.height = `${chartHeight(model)}px`;
      const canvas = h('canvas', { role: 'img', 'aria-label': `${exp.experiment}: median per step and run, whisker to p90` });
      chartBox.appendChild(canvas);
      const section = h('vscode-collapsible', { open: true, class: 'exp' });
      section.heading = exp.experiment;
      const memoryRows = exp.variants.reduce((a, v) => a + v.memory.length, 0);
      const pageMemory = memoryRows > TABLE_PAGE_ROWS;
      section.append(chartBox, compareTable(exp, c, !pageMemory));
      if (pageMemory) section.append(compareMemoryTable(exp, c));
      return { section, canvas, model };
    });
    const rankNote = rankCountNote(c.runs);
    const simNote = simulatedMixNote(c.runs);
    append(this.container, [
      h('h1', {}, `commcost — comparison of ${c.runs.length} runs`),
      c.anySimulated && h('div', { class: 'banner-sim', role: 'alert' }, h('strong', {}, 'SIMULATED'), `${SIMULATED_TEXT} (the runs marked SIMULATED)`),
      legend(c, data.runs),
      h('p', { class: 'muted' }, `Bars: median per step, whisker to p90, one colour per run. Ratios: a run's median / the median of ${base ? `${base.key} (${base.label})` : 'the first run'}.`),
      h('p', { class: 'muted rule' }, `Colours: red higher, green lower. ${differenceRuleText()}`),
      rankNote && h('p', { class: 'rank-note' }, `Read with care: ${rankNote}.`),
      simNote && h('p', { class: 'rank-note' }, `Read with care: ${simNote}.`),
      this.study.root,
      ...sections.map((s) => s.section),
    ]);
    this.study.update(c.runs.map((r, i) => ({ label: `${r.key}: ${r.label}`, file: String(data.runs[i]?.id ?? r.key), run: data.runs[i]! })));
    for (const s of sections) this.charts.push(new ExperimentChart(s.canvas, s.model));
  }

  dispose(): void {
    for (const chart of this.charts) chart.destroy();
    this.study.dispose();
    this.container.replaceChildren();
  }
}
