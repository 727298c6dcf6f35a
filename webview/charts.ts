/**
 * chart.js rendering of one experiment's {@link ChartModel}: horizontal stacked bars of medians
 * (ms) per variant with p90 whiskers drawn by a small plugin. Charts are created once per
 * experiment and then updated in place.
 */
import {
  BarController,
  BarElement,
  CategoryScale,
  Chart,
  Legend,
  LinearScale,
  Tooltip,
  type ChartDataset,
  type Plugin,
} from 'chart.js';
import type { ChartModel, SegmentSeries, Whisker } from './chartData';
import { formatMs } from './format';

// Tree-shaken registration: only what a horizontal bar chart needs.
Chart.register(BarController, BarElement, CategoryScale, LinearScale, Tooltip, Legend);

type BarDataset = ChartDataset<'bar', (number | null)[]> & { commcostKey?: string };

const whiskersOf = new WeakMap<Chart, Whisker[]>();

/** Draws each whisker as a line from the stack total to p90 with an end cap, over the bars. */
const whiskerPlugin: Plugin<'bar'> = {
  id: 'commcostWhiskers',
  afterDatasetsDraw(chart) {
    const whiskers = whiskersOf.get(chart as unknown as Chart);
    const x = chart.scales.x;
    if (!whiskers || !x) return;
    const ctx = chart.ctx;
    ctx.save();
    ctx.strokeStyle = cssColor('--vscode-foreground', '#444');
    ctx.lineWidth = 1.5;
    for (const w of whiskers) {
      const di = chart.data.datasets.findIndex(
        (d) => (d as BarDataset).stack === w.stack && d.data[w.variantIndex] !== null && d.data[w.variantIndex] !== undefined,
      );
      if (di < 0 || !chart.isDatasetVisible(di)) continue;
      const bar = chart.getDatasetMeta(di).data[w.variantIndex] as unknown as { y: number; height: number } | undefined;
      if (!bar) continue;
      const x0 = x.getPixelForValue(w.from);
      const x1 = x.getPixelForValue(w.to);
      const cap = Math.max(3, (bar.height || 8) / 3);
      ctx.beginPath();
      ctx.moveTo(x0, bar.y);
      ctx.lineTo(x1, bar.y);
      ctx.moveTo(x1, bar.y - cap);
      ctx.lineTo(x1, bar.y + cap);
      ctx.stroke();
    }
    ctx.restore();
  },
};

// Theme colours are read once per theme (VS Code switches the body class): getComputedStyle in
// every frame would force a style recalculation.
let colorCache = new Map<string, string>();
let colorTheme: string | undefined;

function cssColor(variable: string, fallback: string): string {
  const theme = `${document.body.className}|${document.documentElement.getAttribute('style') ?? ''}`;
  if (theme !== colorTheme) {
    colorTheme = theme;
    colorCache = new Map();
  }
  let v = colorCache.get(variable);
  if (v === undefined) {
    v = getComputedStyle(document.body).getPropertyValue(variable).trim();
    colorCache.set(variable, v);
  }
  return v || fallback;
}

const KIND_COLORS: Record<SegmentSeries['kind'], [string, string]> = {
  call: ['--vscode-charts-blue', '#3794ff'],
  first: ['--vscode-charts-orange', '#d18616'],
  toFirst: ['--vscode-charts-purple', '#b180d7'],
  steady: ['--vscode-charts-green', '#89d185'],
  teardown: ['--vscode-charts-red', '#f14c4c'],
  other: ['--vscode-charts-yellow', '#cca700'],
};

function colorFor(s: SegmentSeries, nthOfKind: number): string {
  const [v, f] = KIND_COLORS[s.kind];
  const base = cssColor(v, f);
  // Several steps of one kind (e.g. finalize + destroy): fade the later ones.
  return nthOfKind === 0 ? base : `color-mix(in srgb, ${base} ${Math.max(35, 100 - nthOfKind * 25)}%, transparent)`;
}

/** One colour per run of a comparison (VS Code chart colours, in this order; then repeated faded). */
const RUN_COLORS: [string, string][] = [
  ['--vscode-charts-blue', '#3794ff'],
  ['--vscode-charts-orange', '#d18616'],
  ['--vscode-charts-green', '#388a34'],
  ['--vscode-charts-purple', '#b180d7'],
  ['--vscode-charts-red', '#f14c4c'],
  ['--vscode-charts-yellow', '#cca700'],
];

/** The colour of run `index` in a comparison (charts and legend swatches). */
export function runColor(index: number): string {
  const [v, f] = RUN_COLORS[index % RUN_COLORS.length]!;
  const base = cssColor(v, f);
  const round = Math.floor(index / RUN_COLORS.length);
  return round === 0 ? base : `color-mix(in srgb, ${base} ${Math.max(35, 100 - round * 30)}%, transparent)`;
}

function toDatasets(model: ChartModel): BarDataset[] {
  const nth = new Map<string, number>();
  return model.series.map((s) => {
    const n = nth.get(s.kind) ?? 0;
    nth.set(s.kind, n + 1);
    const color = s.runIndex !== undefined ? runColor(s.runIndex) : colorFor(s, n);
    return {
      commcostKey: s.key,
      label: s.label,
      stack: s.stack,
      data: s.data,
      backgroundColor: color,
      borderColor: color,
      borderWidth: 0,
    };
  });
}

/** Height in px that fits one bar per variant and stack. */
export function chartHeight(model: ChartModel): number {
  const stacks = new Set(model.series.map((s) => s.stack)).size || 1;
  return Math.max(140, model.labels.length * stacks * 22 + 70);
}

/** A chart bound to a canvas; {@link update} mutates it in place. */
export class ExperimentChart {
  private readonly chart: Chart<'bar', (number | null)[], string>;

  /**
   * Creates the chart on `canvas` (whose parent sets the size) from `model`.
   * @param unit 'ms' (step medians, whisker to p90) or 'MiB' (memory per GPU).
   */
  constructor(canvas: HTMLCanvasElement, model: ChartModel, unit: 'ms' | 'MiB' = 'ms') {
    const fg = cssColor('--vscode-foreground', '#333');
    const grid = cssColor('--vscode-editorWidget-border', 'rgba(128,128,128,0.25)');
    this.chart = new Chart<'bar', (number | null)[], string>(canvas, {
      type: 'bar',
      data: { labels: [...model.labels], datasets: toDatasets(model) },
      options: {
        indexAxis: 'y',
        animation: false,
        responsive: true,
        maintainAspectRatio: false,
        color: fg,
        scales: {
          x: { stacked: true, beginAtZero: true, title: { display: true, text: unit === 'ms' ? 'ms (median; whisker to p90)' : 'MiB per GPU (median of the per-GPU max)', color: fg }, ticks: { color: fg }, grid: { color: grid } },
          y: { stacked: true, ticks: { color: fg, autoSkip: false }, grid: { display: false } },
        },
        plugins: {
          legend: { position: 'bottom', labels: { color: fg, boxWidth: 12 } },
          tooltip: {
            callbacks: {
              label: (item) => (unit === 'ms' ? `${item.dataset.label ?? ''}: ${formatMs(item.parsed.x)} ms median` : `${item.dataset.label ?? ''}: ${Math.round(item.parsed.x ?? 0)} MiB per GPU`),
            },
          },
        },
      },
      plugins: [whiskerPlugin],
    });
    whiskersOf.set(this.chart as unknown as Chart, model.whiskers);
  }

  /** Replaces labels, series data and whiskers without recreating the chart (no animation). */
  update(model: ChartModel): void {
    const data = this.chart.data;
    data.labels = [...model.labels];
    const next = toDatasets(model);
    const existing = new Map((data.datasets as BarDataset[]).map((d) => [d.commcostKey, d]));
    data.datasets = next.map((d) => {
      const old = existing.get(d.commcostKey);
      if (!old) return d;
      old.data = d.data;
      old.label = d.label;
      return old;
    });
    whiskersOf.set(this.chart as unknown as Chart, model.whiskers);
    this.chart.update('none');
  }

  /** Frees the canvas. */
  destroy(): void {
    this.chart.destroy();
  }
}
