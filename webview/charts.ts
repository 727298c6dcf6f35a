/**
 * chart.js rendering of one experiment's {@link ChartModel}: horizontal bars of medians (ms) per
 * variant, side by side inside a variant's group (only the parts of one sum stack), each bar's
 * value written at its end and a p90 whisker drawn by a small plugin. Charts are created once per
 * experiment and then updated in place.
 *
 * Colours come from the theme's CSS variables (chartTheme.ts). Every live chart is re-themed when
 * the theme changes: VS Code switches the body class (`vscode-light`, `vscode-dark`,
 * `vscode-high-contrast`, `vscode-high-contrast-light`) and rewrites the variables on the html
 * element's style, watched by one MutationObserver; the standalone report follows
 * `prefers-color-scheme`.
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
import { axisMax, barEnds, chartHeight as modelHeight, legendLabels, type ChartModel, type Whisker } from './chartData';
import { chartColors, type ChartColors } from './chartTheme';
import { formatMs } from './format';

// Tree-shaken registration: only what a horizontal bar chart needs.
Chart.register(BarController, BarElement, CategoryScale, LinearScale, Tooltip, Legend);

type BarDataset = ChartDataset<'bar', (number | null)[]> & { commcostKey?: string; commcostColor?: number; commcostLegend?: boolean };

interface ChartExtras {
  model: ChartModel;
  unit: 'ms' | 'MiB';
}
const extrasOf = new WeakMap<Chart, ChartExtras>();

// Theme colours are read once per theme: getComputedStyle in every frame would force a style
// recalculation. The observer below drops them when the theme changes.
let colors: ChartColors | undefined;

function theme(): ChartColors {
  colors ??= chartColors((variable) => getComputedStyle(document.body).getPropertyValue(variable).trim());
  return colors;
}

/** The colour of run `index` in a comparison (charts and legend swatches), from the current theme. */
export function runColor(index: number): string {
  return theme().slot(index);
}

/** The pixel box of the bar of `stack` for variant `vi`, or undefined when it is not drawn. */
function barBox(chart: Chart, stack: string, vi: number): { y: number; height: number } | undefined {
  const di = chart.data.datasets.findIndex((d) => (d as BarDataset).stack === stack && d.data[vi] !== null && d.data[vi] !== undefined);
  if (di < 0 || !chart.isDatasetVisible(di)) return undefined;
  return chart.getDatasetMeta(di).data[vi] as unknown as { y: number; height: number } | undefined;
}

/**
 * The ms axis title: what the bars, the whiskers and the figures written past them are. A bar of
 * parts (call + first collective) ends at the sum of the parts' medians, but the figure written
 * past it is the derived step's own median, the step table's (chartData.ts `values`).
 */
export const CHART_MS_TITLE = "ms (each part's median; whisker to p90; a stacked bar's figure is its total's median, as in the table)";

/** Draws each whisker (bar end → p90, with an end cap) and writes each bar's figure past its end (barEnds `value`). */
const barExtrasPlugin: Plugin<'bar'> = {
  id: 'commcostBarExtras',
  afterDatasetsDraw(chart) {
    const extras = extrasOf.get(chart as unknown as Chart);
    const x = chart.scales.x;
    if (!extras || !x) return;
    const c = theme();
    const ctx = chart.ctx;
    ctx.save();
    ctx.strokeStyle = c.whisker;
    ctx.lineWidth = 1.5;
    const whiskerEnd = new Map<string, number>();
    for (const w of extras.model.whiskers as Whisker[]) {
      const bar = barBox(chart as unknown as Chart, w.stack, w.variantIndex);
      if (!bar) continue;
      const x0 = x.getPixelForValue(w.from);
      const x1 = x.getPixelForValue(w.to);
      whiskerEnd.set(`${w.variantIndex}|${w.stack}`, Math.max(x0, x1));
      const cap = Math.max(3, (bar.height || 8) / 3);
      ctx.beginPath();
      ctx.moveTo(x0, bar.y);
      ctx.lineTo(x1, bar.y);
      ctx.moveTo(x1, bar.y - cap);
      ctx.lineTo(x1, bar.y + cap);
      ctx.stroke();
    }
    ctx.fillStyle = c.text;
    ctx.font = '11px system-ui, sans-serif';
    ctx.textBaseline = 'middle';
    for (const end of barEnds(extras.model)) {
      const bar = barBox(chart as unknown as Chart, end.stack, end.variantIndex);
      if (!bar) continue;
      const at = Math.max(x.getPixelForValue(end.total), whiskerEnd.get(`${end.variantIndex}|${end.stack}`) ?? 0) + 4;
      ctx.fillText(extras.unit === 'ms' ? formatMs(end.value) : `${Math.round(end.value)} MiB`, at, bar.y);
    }
    ctx.restore();
  },
};

/** A canvas fill for slot `slot`: its colour, or (past the five palette colours) hatched or dotted on a tint of it. */
function fillOf(c: ChartColors, slot: number): string | CanvasPattern {
  const style = c.slotStyle(slot);
  if (style.fill === 'solid') return style.color;
  const size = 8;
  const tile = document.createElement('canvas');
  tile.width = size;
  tile.height = size;
  const g = tile.getContext('2d');
  if (!g) return style.color;
  g.fillStyle = style.tint;
  g.fillRect(0, 0, size, size);
  g.fillStyle = style.color;
  g.strokeStyle = style.color;
  if (style.fill === 'hatched') {
    g.lineWidth = 2.5;
    g.beginPath();
    for (const o of [-size, 0, size]) {
      g.moveTo(o, size);
      g.lineTo(o + size, 0);
    }
    g.stroke();
  } else {
    g.beginPath();
    g.arc(size / 2, size / 2, 2.2, 0, 2 * Math.PI);
    g.fill();
  }
  return g.createPattern(tile, 'repeat') ?? style.color;
}

function toDatasets(model: ChartModel, c: ChartColors): BarDataset[] {
  return model.series.map((s, i) => {
    const slot = s.runIndex ?? s.color ?? i;
    const color = fillOf(c, slot);
    return {
      commcostKey: s.key,
      commcostColor: slot,
      commcostLegend: s.inLegend !== false,
      label: s.label,
      stack: s.stack,
      data: s.data,
      backgroundColor: color,
      borderColor: color,
      borderWidth: 0,
    };
  });
}

/** Height in px of `model`'s chart drawn `widthPx` wide: see chartData.ts {@link modelHeight}. */
export function chartHeight(model: ChartModel, widthPx?: number): number {
  return modelHeight(model, widthPx);
}

/** Every chart on the page, re-themed together. */
const liveCharts = new Set<ExperimentChart>();
/** Other charts' redraws on a theme change (e.g. the Plan section's chart, planView.ts). */
const themeListeners = new Set<() => void>();
let watching = false;

/**
 * Calls `redraw` after every theme change (a live VS Code theme switch, or the system's light/dark
 * in the standalone report), once the theme's colours can be read again.
 * @returns a function that stops the calls
 */
export function onThemeChange(redraw: () => void): () => void {
  watchTheme();
  themeListeners.add(redraw);
  return () => themeListeners.delete(redraw);
}

/** Starts watching the theme once (body class, html style, prefers-color-scheme). */
function watchTheme(): void {
  if (watching) return;
  watching = true;
  const retheme = (): void => {
    colors = undefined;
    for (const chart of liveCharts) chart.retheme();
    for (const redraw of themeListeners) redraw();
  };
  const observer = new MutationObserver(retheme);
  observer.observe(document.body, { attributes: true, attributeFilter: ['class'] });
  observer.observe(document.documentElement, { attributes: true, attributeFilter: ['style', 'class'] });
  window.matchMedia?.('(prefers-color-scheme: dark)').addEventListener?.('change', retheme);
}

/** A chart bound to a canvas; {@link update} mutates it in place. */
export class ExperimentChart {
  private readonly chart: Chart<'bar', (number | null)[], string>;
  private model: ChartModel;

  /**
   * Creates the chart on `canvas` (whose parent sets the size) from `model`.
   * @param unit 'ms' (step medians, whisker to p90) or 'MiB' (memory per GPU).
   */
  constructor(
    canvas: HTMLCanvasElement,
    model: ChartModel,
    private readonly unit: 'ms' | 'MiB' = 'ms',
  ) {
    this.model = model;
    const c = theme();
    this.chart = new Chart<'bar', (number | null)[], string>(canvas, {
      type: 'bar',
      data: { labels: [...model.labels], datasets: toDatasets(model, c) },
      options: {
        indexAxis: 'y',
        animation: false,
        responsive: true,
        maintainAspectRatio: false,
        color: c.text,
        // A variant without a step leaves no gap: only the bars it has share its group.
        skipNull: true,
        datasets: { bar: { maxBarThickness: 22 } },
        scales: {
          x: {
            stacked: true,
            beginAtZero: true,
            // Every bar and whisker, with room past the longest for its value.
            suggestedMax: axisMax(model),
            title: { display: true, text: unit === 'ms' ? CHART_MS_TITLE : 'MiB per GPU (median of the per-GPU max)', color: c.text },
            ticks: { color: c.text },
            grid: { color: c.grid },
            border: { color: c.grid },
          },
          y: { stacked: true, ticks: { color: c.text, autoSkip: false }, grid: { display: false }, border: { color: c.grid } },
        },
        plugins: {
          legend: {
            display: legendLabels(model).length > 0,
            position: 'bottom',
            labels: {
              color: c.text,
              boxWidth: 12,
              // One entry per label (series that share a label share a colour); none for a bar the axis names.
              filter: (item, data) => {
                const inLegend = (d: unknown): boolean => (d as BarDataset).commcostLegend !== false;
                return inLegend(data.datasets[item.datasetIndex ?? -1]) && data.datasets.findIndex((d) => inLegend(d) && d.label === item.text) === item.datasetIndex;
              },
            },
          },
          tooltip: {
            callbacks: {
              label: (item) =>
                unit === 'ms'
                  ? `${item.dataset.label ?? ''}: ${formatMs(item.parsed.x)} ms median`
                  : `${item.dataset.label ?? ''}: ${Math.round(item.parsed.x ?? 0)} MiB per GPU`,
            },
          },
        },
      },
      plugins: [barExtrasPlugin],
    });
    extrasOf.set(this.chart as unknown as Chart, { model, unit });
    liveCharts.add(this);
    watchTheme();
  }

  /** Replaces labels, series data and whiskers without recreating the chart (no animation). */
  update(model: ChartModel): void {
    this.model = model;
    const data = this.chart.data;
    data.labels = [...model.labels];
    const next = toDatasets(model, theme());
    const existing = new Map((data.datasets as BarDataset[]).map((d) => [d.commcostKey, d]));
    data.datasets = next.map((d) => {
      const old = existing.get(d.commcostKey);
      if (!old) return d;
      old.data = d.data;
      old.label = d.label;
      old.stack = d.stack;
      old.backgroundColor = d.backgroundColor;
      old.borderColor = d.borderColor;
      old.commcostColor = d.commcostColor;
      old.commcostLegend = d.commcostLegend;
      return old;
    });
    const x = this.chart.options.scales?.x;
    if (x) x.suggestedMax = axisMax(model);
    const legend = this.chart.options.plugins?.legend;
    if (legend) legend.display = legendLabels(model).length > 0;
    extrasOf.set(this.chart as unknown as Chart, { model, unit: this.unit });
    this.chart.update('none');
  }

  /** Applies the current theme's colours to the axes, legend and bars, and redraws. */
  retheme(): void {
    const c = theme();
    const o = this.chart.options;
    o.color = c.text;
    const x = o.scales?.x;
    const y = o.scales?.y;
    for (const axis of [x, y]) {
      if (!axis) continue;
      if (axis.ticks) axis.ticks.color = c.text;
      if (axis.border) axis.border.color = c.grid;
    }
    if (x?.grid) x.grid.color = c.grid;
    if (x && 'title' in x && x.title) x.title.color = c.text;
    if (o.plugins?.legend?.labels) o.plugins.legend.labels.color = c.text;
    for (const d of this.chart.data.datasets as BarDataset[]) {
      const color = fillOf(c, d.commcostColor ?? 0);
      d.backgroundColor = color;
      d.borderColor = color;
    }
    this.chart.update('none');
  }

  /** The model last drawn. */
  get current(): ChartModel {
    return this.model;
  }

  /** Frees the canvas. */
  destroy(): void {
    liveCharts.delete(this);
    this.chart.destroy();
  }
}
