/**
 * The study's figures drawn the study's way (studyChartsData.ts models them): Figure 2 (critical
 * path of init, split, shrink, grow and the re-init after an abort, each stacked with its first
 * collective, p90 whiskers, the study's migration pause dashed and this run's switch inside its
 * pool dotted, their labels in a band above the plot, never over a bar; a linear axis, as its bars
 * are stacked: a segment's length is its ms) and Figure 3 (abort against finalize + destroy per
 * configuration, side by side, not stacked, with the 500 ms floor; log axis). Used by the results
 * panel and the HTML report (one run) and the comparison report (one colour per host and NCCL
 * version). What a run lacks is listed under each chart. All text is inserted as text.
 */
import { BarController, BarElement, CategoryScale, Chart, LinearScale, LogarithmicScale, Tooltip, type ChartDataset, type Plugin } from 'chart.js';
import { onThemeChange } from './charts';
import { chartColors, formatColor, mixColor, parseColor, type ChartColors } from './chartTheme';
import { h, replaceChildren } from './dom';
import { figure2Model, figure3Model, type Figure2Model, type Figure3Model, type StudyLine, type StudyRun } from './studyChartsData';

Chart.register(BarController, BarElement, CategoryScale, LinearScale, LogarithmicScale, Tooltip);

/** What a chart's plugin draws over the bars: whiskers (value ranges on a row) and vertical lines. */
interface Overlay {
  /** Per whisker: the dataset whose bar gives the row's pixel box, the row, and the ms range. */
  whiskers: { dataset: number; row: number; from: number; to: number }[];
  lines: StudyLine[];
}

const overlays = new WeakMap<Chart, Overlay>();

const theme = (): ChartColors => chartColors((v) => getComputedStyle(document.body).getPropertyValue(v).trim());

/** Segment k of a stacked bar in colour slot `slot`: the colour, then paler, then darker. */
function shade(c: ChartColors, slot: number, k: number): string {
  const base = parseColor(c.slot(slot));
  const text = parseColor(c.text);
  if (!base || k === 0) return c.slot(slot);
  if (k === 1) return c.slotStyle(slot).tint;
  return text ? formatColor(mixColor(base, { ...text, a: base.a }, 0.35)) : c.slot(slot);
}

/** Draws the whiskers (median → p90, with an end tick) and the reference lines with their labels. */
const overlayPlugin: Plugin<'bar'> = {
  id: 'commcostStudyOverlay',
  afterDatasetsDraw(chart) {
    const o = overlays.get(chart as unknown as Chart);
    const x = chart.scales.x;
    if (!o || !x) return;
    const c = theme();
    const ctx = chart.ctx;
    ctx.save();
    ctx.strokeStyle = c.whisker;
    ctx.lineWidth = 1.5;
    for (const w of o.whiskers) {
      if (!chart.isDatasetVisible(w.dataset)) continue;
      const el = chart.getDatasetMeta(w.dataset).data[w.row] as unknown as { y: number; height: number } | undefined;
      if (!el) continue;
      const [x0, x1] = [x.getPixelForValue(w.from), x.getPixelForValue(w.to)];
      const half = Math.max(2, el.height / 4);
      ctx.beginPath();
      ctx.moveTo(x0, el.y);
      ctx.lineTo(x1, el.y);
      ctx.moveTo(x1, el.y - half);
      ctx.lineTo(x1, el.y + half);
      ctx.stroke();
    }
    ctx.lineWidth = 1.25;
    ctx.fillStyle = c.text;
    ctx.font = '11px system-ui, sans-serif';
    // The labels sit in the band above the plot ({@link labelBandPx}, one row per line), never
    // over a bar; each line is drawn up into its label's row. Rows go from the leftmost line down,
    // so a line never crosses the label of a line to its right (written rightwards from its line).
    ctx.textBaseline = 'middle';
    [...o.lines].sort((a, b) => a.ms - b.ms).forEach((l, i) => {
      const px = x.getPixelForValue(l.ms);
      const row = chart.chartArea.top - labelBandPx(o.lines.length) + LABEL_ROW_PX * i + LABEL_ROW_PX / 2;
      ctx.setLineDash(l.style === 'dashed' ? [6, 4] : [2, 3]);
      ctx.beginPath();
      ctx.moveTo(px, row + 5);
      ctx.lineTo(px, chart.chartArea.bottom);
      ctx.stroke();
      const left = px > chart.chartArea.right - ctx.measureText(l.label).width - 6;
      ctx.textAlign = left ? 'right' : 'left';
      ctx.fillText(l.label, left ? px - 3 : px + 3, row);
    });
    ctx.restore();
  },
};

/** One row of the band above the plot per reference line's label, px. */
const LABEL_ROW_PX = 13;

/** The band above the plot that holds the reference lines' labels (none without lines), px. */
export function labelBandPx(lines: number): number {
  return lines > 0 ? LABEL_ROW_PX * lines + 4 : 0;
}

const logTicks = (v: string | number) => (Number.isInteger(Math.log10(Number(v))) ? String(Number(v)) : '');

interface Drawn {
  labels: string[];
  datasets: ChartDataset<'bar', (number | null)[]>[];
  overlay: Overlay;
  min: number;
  max: number;
  title: string;
  rows: number;
  /** 'linear' for stacked bars (a segment's length is its ms), 'logarithmic' for side-by-side bars. */
  axis: 'linear' | 'logarithmic';
}

/** The legend's words for each segment position of a Figure 2 bar (studyChartsData.ts FIGURE2_CATEGORIES). */
const SEGMENT_NAMES = ['the call (init, split, shrink, grow; the re-init after abort)', 'first collective'];

/** Figure 2's chart data: one stack per run, one dataset per segment position, coloured by host/NCCL. */
function figure2Data(m: Figure2Model, runs: readonly StudyRun[], c: ChartColors): Drawn {
  const datasets: Drawn['datasets'] = [];
  const whiskers: Overlay['whiskers'] = [];
  const depth = Math.max(1, ...m.bars.flat().map((b) => b.segments.length));
  runs.forEach((r, ri) => {
    const slot = m.legend.colorOf[ri] ?? ri;
    for (let k = 0; k < depth; k++) {
      const di = datasets.length;
      const data = m.bars.map((bars) => bars.find((b) => b.run === ri)?.segments[k]?.ms ?? null);
      datasets.push({ label: `${runs.length > 1 ? `${r.label}: ` : ''}${SEGMENT_NAMES[k] ?? `step ${k + 1}`}`, data, stack: `run${ri}`, backgroundColor: shade(c, slot, k), borderColor: c.slot(slot), borderWidth: 1 });
      m.bars.forEach((bars, row) => {
        const b = bars.find((x) => x.run === ri);
        const s = b?.segments[k];
        if (!b || !s) return;
        const before = b.segments.slice(0, k).reduce((a, x) => a + x.ms, 0);
        if (s.p90 > s.ms) whiskers.push({ dataset: di, row, from: before + s.ms, to: before + s.p90 });
      });
    }
  });
  return { labels: m.categories, datasets, overlay: { whiskers, lines: m.lines }, min: m.min, max: m.max, title: "critical path, ms (linear: each segment's length is its ms): each step's median, whisker to its p90", rows: m.categories.length * Math.max(1, runs.length), axis: m.axis };
}

/** Figure 3's chart data: per configuration, abort and finalize + destroy side by side. */
function figure3Data(m: Figure3Model, c: ChartColors): Drawn {
  const slot = (g: Figure3Model['groups'][number]) => m.legend.colorOf[g.run] ?? g.run;
  const parts = [
    { label: 'ncclCommAbort', get: (g: Figure3Model['groups'][number]) => g.abort, k: 0 },
    { label: 'ncclCommFinalize + ncclCommDestroy', get: (g: Figure3Model['groups'][number]) => g.finalizeDestroy, k: 1 },
  ];
  const whiskers: Overlay['whiskers'] = [];
  const datasets = parts.map((p, di): ChartDataset<'bar', (number | null)[]> => {
    m.groups.forEach((g, row) => {
      const s = p.get(g);
      if (s && s.p90 > s.ms) whiskers.push({ dataset: di, row, from: s.ms, to: s.p90 });
    });
    return {
      label: p.label,
      // A stack of its own: abort and finalize + destroy stand side by side, not summed.
      stack: `part${di}`,
      data: m.groups.map((g) => p.get(g)?.ms ?? null),
      backgroundColor: m.groups.map((g) => shade(c, slot(g), p.k)),
      borderColor: m.groups.map((g) => c.slot(slot(g))),
      borderWidth: 1,
    };
  });
  return { labels: m.groups.map((g) => g.config), datasets, overlay: { whiskers, lines: m.floor ? [m.floor] : [] }, min: m.min, max: m.max, title: 'ms (log): median, whisker to p90; abort in the full colour, finalize + destroy in its tint', rows: m.groups.length * 2, axis: m.axis };
}

/** One horizontal bar chart (linear or log axis, as its data says) that redraws in place. */
class StudyChart {
  readonly box = h('div', { class: 'chart study-chart' });
  private chart: Chart<'bar', (number | null)[], string> | undefined;

  constructor(private readonly ariaLabel: string) {}

  draw(d: Drawn): void {
    const c = theme();
    const band = labelBandPx(d.overlay.lines.length);
    this.box.style.height = `${110 + band + 26 * Math.max(1, d.rows)}px`;
    const scales = {
      x: {
        type: d.axis,
        min: d.min,
        max: d.max,
        stacked: true,
        title: { display: true, text: d.title, color: c.text },
        ticks: d.axis === 'logarithmic' ? { color: c.text, callback: logTicks } : { color: c.text },
        grid: { color: c.grid },
      },
      y: { stacked: true, ticks: { color: c.text, autoSkip: false }, grid: { color: c.grid } },
    };
    const data = { labels: d.labels, datasets: d.datasets };
    if (!this.chart) {
      const canvas = h('canvas', { role: 'img', 'aria-label': this.ariaLabel }) as HTMLCanvasElement;
      this.box.appendChild(canvas);
      this.chart = new Chart<'bar', (number | null)[], string>(canvas, {
        type: 'bar',
        data,
        // The legend below the axis, the band above the plot for the lines' labels (never over a bar).
        options: { indexAxis: 'y', animation: false, maintainAspectRatio: false, layout: { padding: { top: band } }, scales, plugins: { legend: { display: true, position: 'bottom', labels: { color: c.text } }, tooltip: { enabled: true } } },
        plugins: [overlayPlugin],
      });
    } else {
      this.chart.data = data;
      this.chart.options.scales = scales;
      this.chart.options.layout = { padding: { top: band } };
      if (this.chart.options.plugins?.legend?.labels) this.chart.options.plugins.legend.labels.color = c.text;
    }
    overlays.set(this.chart as unknown as Chart, d.overlay);
    this.chart.update();
  }

  destroy(): void {
    this.chart?.destroy();
    this.chart = undefined;
  }
}

/**
 * The words under a chart: colours (several runs), the lines' sources, the runs a study line is
 * drawn beside but not compared with (and why), and what is absent.
 */
function notes(legend: { keys: string[] } | undefined, lines: readonly StudyLine[], absent: readonly string[], drawn: readonly string[] = [], notCompared: readonly string[] = [], notDrawn?: string): HTMLElement {
  return h('div', { class: 'study-notes muted' },
    notDrawn ? h('p', { class: 'study-rows-not-drawn' }, notDrawn) : null,
    drawn.length > 0 ? h('p', {}, `Bars: ${drawn.join('; ')}.`) : null,
    legend && legend.keys.length > 1 ? h('p', {}, `Colours: one per host and NCCL version — ${legend.keys.map((k, i) => `${i + 1}: ${k}`).join('; ')}.`) : null,
    ...lines.map((l) => h('p', {}, `${l.style === 'dashed' ? 'Dashed' : 'Dotted'}: ${l.label} — ${l.source}.`)),
    ...notCompared.map((n) => h('p', { class: 'study-not-compared' }, n)),
    absent.length > 0 ? h('p', {}, 'Not drawn, and why:') : null,
    absent.length > 0 ? h('ul', {}, ...absent.map((a) => h('li', {}, a))) : null,
  );
}

/** The section with both figures. Construct once; {@link update} with the runs shown. */
export class StudyCharts {
  readonly root: HTMLElement;
  private readonly fig2 = new StudyChart("the study's Figure 2 from this run: critical path of init, split, shrink, grow and abort then re-init, each stacked with its first collective, linear axis");
  private readonly fig3 = new StudyChart("the study's Figure 3 from this run: abort against finalize + destroy per configuration, with the 500 ms floor, log axis");
  private readonly notes2 = h('div');
  private readonly notes3 = h('div');
  private readonly heading = h('h2', {}, "The study's figures, from this run");
  private runs: readonly StudyRun[] = [];
  private key = '';
  private stopTheme: (() => void) | undefined;

  constructor() {
    this.root = h('section', { class: 'study-figures', id: 'study-figures' },
      this.heading,
      h('h3', {}, 'Critical path of a rebuild (Figure 2 style)'),
      this.fig2.box, this.notes2,
      h('h3', {}, 'Abort against finalize + destroy (Figure 3 style)'),
      this.fig3.box, this.notes3);
  }

  /** Redraws both figures when the runs' figures changed (complete snapshots). */
  update(runs: readonly StudyRun[]): void {
    const key = JSON.stringify(runs.map((r) => [r.label, r.run.id, r.run.status, r.run.experiments.map((e) => [e.experiment, e.state, e.variants.length])]));
    if (key === this.key) return;
    this.key = key;
    this.runs = runs;
    replaceChildren(this.heading, `The study's figures, from ${runs.length === 1 ? 'this run' : 'these runs'}`);
    this.stopTheme ??= onThemeChange(() => this.draw());
    this.draw();
  }

  private draw(): void {
    const c = theme();
    const m2 = figure2Model(this.runs);
    const m3 = figure3Model(this.runs);
    // A figure with nothing to draw says so in one line, in place of an empty chart and its notes.
    this.fig2.box.hidden = m2.empty !== undefined;
    if (m2.empty === undefined) this.fig2.draw(figure2Data(m2, this.runs, c));
    replaceChildren(this.notes2, m2.empty !== undefined ? h('p', { class: 'muted study-empty' }, m2.empty) : notes(this.runs.length > 1 ? m2.legend : undefined, m2.lines, m2.absent, m2.drawn, m2.notCompared, m2.notDrawn));
    this.fig3.box.hidden = m3.empty !== undefined;
    if (m3.empty === undefined) this.fig3.draw(figure3Data(m3, c));
    replaceChildren(this.notes3, m3.empty !== undefined ? h('p', { class: 'muted study-empty' }, m3.empty) : notes(this.runs.length > 1 ? m3.legend : undefined, m3.floor ? [m3.floor] : [], m3.absent, [], m3.notCompared));
  }

  dispose(): void {
    this.stopTheme?.();
    this.fig2.destroy();
    this.fig3.destroy();
  }
}
