/**
 * chart.js rendering of a {@link MemoryLineModel}: one line per variant over its memory points
 * (NCCL's count dashed), thinned by chart.js's own decimation plugin (LTTB, at most
 * `model.samples` points per line: parsing off, data already `{x, y}` sorted by x, as the plugin
 * requires). Created once per experiment, then updated in place; re-themed with the other charts.
 * After each draw the canvas carries `data-drawn-points`: the points chart.js drew per line, so
 * a test can hold the note (memoryLineData.ts) to what was drawn.
 */
import {
  Chart,
  Decimation,
  Legend,
  LinearScale,
  LineController,
  LineElement,
  PointElement,
  Tooltip,
  type ChartDataset,
  type Plugin,
} from 'chart.js';
import { chartColors, type ChartColors } from './chartTheme';
import { onThemeChange } from './charts';
import { formatCount } from './format';
import type { MemoryLineModel } from './memoryLineData';

Chart.register(LineController, LineElement, PointElement, LinearScale, Decimation, Tooltip, Legend);

type LineDataset = ChartDataset<'line', { x: number; y: number }[]> & { commcostColor?: number };

/** Height of the line chart's plot, px (its legend rows are added: {@link memoryLineHeight}). */
const PLOT_PX = 280;

/** Height in px of the chart of `model`: the plot, the x axis and a legend row per two lines. */
export function memoryLineHeight(model: MemoryLineModel): number {
  return PLOT_PX + 64 + Math.ceil(model.lines.length / 2) * 22;
}

/** Writes what chart.js drew (its decimated data) on the canvas: `data-drawn-points="400,400,…"`. */
const drawnPointsPlugin: Plugin<'line'> = {
  id: 'commcostDrawnPoints',
  afterDraw(chart) {
    const counts = chart.data.datasets.map((_, i) => chart.getDatasetMeta(i).data.length);
    chart.canvas.dataset.drawnPoints = counts.join(',');
  },
};

function toDatasets(model: MemoryLineModel, c: ChartColors): LineDataset[] {
  return model.lines.map((l) => ({
    label: l.label,
    // chart.js's decimation replaces `data` with a getter; a fresh array per update is what it expects.
    data: l.data,
    commcostColor: l.color,
    borderColor: c.slot(l.color),
    backgroundColor: c.slot(l.color),
    borderWidth: l.dashed ? 1.5 : 2,
    borderDash: l.dashed ? [6, 4] : [],
    pointRadius: 0,
    pointHitRadius: 4,
    spanGaps: false,
  }));
}

/** The memory line chart of one experiment (see the file comment). */
export class MemoryLineChart {
  private readonly chart: Chart<'line', { x: number; y: number }[]>;
  private model: MemoryLineModel;
  private colors: ChartColors | undefined;
  private readonly stopTheme: () => void;

  /** Creates the chart on `canvas` (whose parent sets the size) from `model`. */
  constructor(canvas: HTMLCanvasElement, model: MemoryLineModel) {
    this.model = model;
    const c = this.theme();
    const label = (x: unknown): string => {
      const i = typeof x === 'number' ? x : Number(x);
      return Number.isInteger(i) ? (this.model.pointLabels[i] ?? '') : '';
    };
    this.chart = new Chart<'line', { x: number; y: number }[]>(canvas, {
      type: 'line',
      data: { datasets: toDatasets(model, c) },
      options: {
        animation: false,
        responsive: true,
        maintainAspectRatio: false,
        // What chart.js's decimation needs: no parsing, data already {x, y} sorted by x.
        parsing: false,
        normalized: true,
        indexAxis: 'x',
        color: c.text,
        interaction: { mode: 'nearest', axis: 'x', intersect: false },
        scales: {
          x: {
            type: 'linear',
            min: 0,
            max: Math.max(1, model.points.length - 1),
            title: {
              display: true,
              text: `memory point, in the order recorded (${formatCount(model.points.length)} points)`,
              color: c.text,
            },
            ticks: { color: c.text, maxTicksLimit: 8, callback: (v) => label(v) },
            grid: { color: c.grid },
            border: { color: c.grid },
          },
          y: {
            type: 'linear',
            beginAtZero: true,
            title: { display: true, text: 'MiB per GPU (median of the per-GPU max)', color: c.text },
            ticks: { color: c.text },
            grid: { color: c.grid },
            border: { color: c.grid },
          },
        },
        plugins: {
          decimation: { enabled: true, algorithm: 'lttb', samples: model.samples, threshold: model.samples },
          // Line swatches (solid, or dashed for NCCL's count) rather than boxes.
          legend: { position: 'bottom', labels: { color: c.text, boxWidth: 24, usePointStyle: true, pointStyle: 'line' } },
          tooltip: {
            callbacks: {
              title: (items) => label(items[0]?.parsed.x),
              label: (item) => `${item.dataset.label ?? ''}: ${Math.round(item.parsed.y ?? 0)} MiB per GPU`,
            },
          },
        },
      },
      plugins: [drawnPointsPlugin],
    });
    this.stopTheme = onThemeChange(() => this.retheme());
  }

  private theme(): ChartColors {
    this.colors ??= chartColors((variable) => getComputedStyle(document.body).getPropertyValue(variable).trim());
    return this.colors;
  }

  /** Replaces the lines and the x axis without recreating the chart (no animation). */
  update(model: MemoryLineModel): void {
    this.model = model;
    this.chart.data.datasets = toDatasets(model, this.theme());
    const x = this.chart.options.scales?.x;
    if (x) {
      x.max = Math.max(1, model.points.length - 1);
      if (x.title) x.title.text = `memory point, in the order recorded (${formatCount(model.points.length)} points)`;
    }
    const decimation = this.chart.options.plugins?.decimation;
    if (decimation && decimation.algorithm === 'lttb') {
      decimation.samples = model.samples;
      decimation.threshold = model.samples;
    }
    this.chart.update('none');
  }

  /** Applies the current theme's colours and redraws. */
  retheme(): void {
    this.colors = undefined;
    const c = this.theme();
    const o = this.chart.options;
    o.color = c.text;
    for (const axis of [o.scales?.x, o.scales?.y]) {
      if (!axis) continue;
      if (axis.ticks) axis.ticks.color = c.text;
      if (axis.grid) axis.grid.color = c.grid;
      if (axis.border) axis.border.color = c.grid;
      if ('title' in axis && axis.title) axis.title.color = c.text;
    }
    if (o.plugins?.legend?.labels) o.plugins.legend.labels.color = c.text;
    for (const d of this.chart.data.datasets as LineDataset[]) {
      d.borderColor = c.slot(d.commcostColor ?? 0);
      d.backgroundColor = d.borderColor;
    }
    this.chart.update('none');
  }

  /** The model last drawn. */
  get current(): MemoryLineModel {
    return this.model;
  }

  /** Frees the canvas and stops following the theme. */
  destroy(): void {
    this.stopTheme();
    this.chart.destroy();
  }
}
