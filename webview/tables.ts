/**
 * The per-experiment tables: every step of every variant with median, p90, min, max (ms) and n;
 * the memory points (MiB per GPU: the free-memory delta and, beside it, NCCL's own count from
 * ncclCommMemStats, or why the run has none); and NCCL's view of a cold start (the variant's
 * ratios and its Init timings). The row models are pure (tested without a DOM); the builders
 * insert every value as text.
 */
import type { MemStatsBytes, NcclInitSummary, RatioPlan } from '../protocol/events';
import { memoryPointLabel } from '../protocol/runFile';
import { formatRatio } from '../protocol/compare';
import { h, replaceChildren, setText } from './dom';
import { formatCount, formatMiB, formatMs } from './format';
import type { VariantView } from './stats';

/** What the memory table and NCCL's view read of a variant's summary (absent while live). */
export interface VariantExtras {
  variant: string;
  memoryBytes?: Record<string, number>;
  memStats?: Record<string, MemStatsBytes>;
  ratios?: (RatioPlan & { value: number })[];
  ncclInit?: NcclInitSummary;
}

/** The memory table's header: the free-memory delta, then NCCL's count in its own columns. */
export const MEMORY_HEAD = ['variant', 'point', 'free-memory delta (MiB per GPU)', "NCCL's count (MemStats): total MiB", 'suspendable MiB', 'persistent MiB'] as const;

/**
 * Rows of the memory table, one per variant and memory point: variant, point in words, the
 * free-memory delta (MiB, median of the per-GPU max) and NCCL's count at the point (total,
 * suspendable, persistent, MiB; "–" where the run did not read it there).
 */
export function memoryRows(variants: readonly VariantExtras[]): string[][] {
  return memoryRowKeys(variants).map(([v, point]) => memoryRow(variants[v]!, point));
}

/** Which row is which, in table order: [variant index, memory point] (cheap: nothing formatted). */
export function memoryRowKeys(variants: readonly VariantExtras[]): [number, string][] {
  const keys: [number, string][] = [];
  variants.forEach((v, vi) => {
    const points = new Set(Object.keys(v.memoryBytes ?? {}));
    for (const p of Object.keys(v.memStats ?? {})) points.add(p);
    for (const point of points) keys.push([vi, point]);
  });
  return keys;
}

/** One row of the memory table (see {@link memoryRows}). */
export function memoryRow(v: VariantExtras, point: string): string[] {
  const m = v.memStats?.[point];
  return [v.variant, memoryPointLabel(point), formatMiB(v.memoryBytes?.[point]), formatMiB(m?.totalBytes), formatMiB(m?.suspendableBytes), formatMiB(m?.persistentBytes)];
}

/** The most rows a table shows at once; longer tables are paged (memory points, issue #21). */
export const TABLE_PAGE_ROWS = 50;

/** Rows [start, end) of page `page` (0-based, clamped) of a table of `total` rows, and the page count. */
export function pageOf(total: number, page: number, size = TABLE_PAGE_ROWS): { page: number; pages: number; start: number; end: number } {
  const pages = Math.max(1, Math.ceil(total / size));
  const p = Math.min(pages - 1, Math.max(0, Math.floor(page)));
  return { page: p, pages, start: p * size, end: Math.min(total, (p + 1) * size) };
}

/** "showing rows 51–100 of 12,000 (page 2 of 240)", or "" when every row is shown. */
export function pagerText(total: number, page: number, size = TABLE_PAGE_ROWS): string {
  const r = pageOf(total, page, size);
  if (r.pages === 1) return '';
  const n = formatCount;
  return `showing rows ${n(r.start + 1)}–${n(r.end)} of ${n(total)} (page ${n(r.page + 1)} of ${n(r.pages)})`;
}

/** NCCL's parts in the order its Init timings line prints them; other parts follow as found. */
const NCCL_PARTS = ['total', 'kernels', 'alloc', 'bootstrap', 'allgathers', 'topo', 'graphs', 'connections', 'rest'];

/** NCCL's view of one variant as a table model: the ratios, parts × creations (ms), notes. */
export interface NcclViewModel {
  /** "cold / warm (init to first collective): 21.25×", one per ratio of the summary. */
  ratios: string[];
  /** ['part', 'cold ms', 'warm ms']. */
  head: string[];
  /** One row per part (ms, whole: NCCL's 10 ms steps), then the iterations read per creation. */
  rows: string[][];
  /** The resolution, malformed lines skipped, and why the view is missing or partial. */
  notes: string[];
}

/**
 * NCCL's view (Init timings) and the ratios of a variant, or undefined when it has neither.
 * Figures are the summary's medians (ms, each part the MAX over ranks per iteration).
 */
export function ncclViewModel(v: VariantExtras): NcclViewModel | undefined {
  const ratios = (v.ratios ?? []).filter((r) => Number.isFinite(r.value)).map((r) => `${r.label}: ${formatRatio(r.value)}`);
  const view = v.ncclInit;
  if (!view && ratios.length === 0) return undefined;
  const creations = Object.keys(view?.medians ?? {});
  const parts = [...NCCL_PARTS.filter((p) => creations.some((c) => view!.medians[c]?.[p] !== undefined))];
  for (const c of creations) for (const p of Object.keys(view!.medians[c] ?? {})) if (!parts.includes(p)) parts.push(p);
  const rows = parts.map((p) => [p, ...creations.map((c) => {
    const x = view!.medians[c]?.[p];
    return x === undefined || !Number.isFinite(x) ? '–' : String(Math.round(x));
  })]);
  if (creations.length > 0) rows.push(['iterations read', ...creations.map((c) => String(view!.iterations?.[c] ?? 0))]);
  const notes: string[] = [];
  if (creations.length > 0) notes.push('NCCL prints seconds with two decimals: a 10 ms resolution; each part the MAX over ranks, median over iterations (parts of different ranks need not add up to the total).');
  if (view && view.malformedLines > 0) notes.push(`${view.malformedLines} unreadable Init timings line${view.malformedLines === 1 ? '' : 's'} skipped.`);
  if (view?.note) notes.push(`${creations.length > 0 ? "NCCL's view is partial" : "NCCL's view is missing"}: ${view.note}`);
  else if (view && creations.length === 0) notes.push("NCCL's view is missing: no Init timings line was read.");
  return { ratios, head: ['part', ...creations.map((c) => `${c} ms`)], rows, notes };
}

/**
 * A table of `total` rows built page by page: past {@link TABLE_PAGE_ROWS} rows only one page's
 * rows are built (`rowAt(i)` for i in the page) and in the DOM, above it "showing rows … of …" and
 * buttons to the first, previous, next and last page, so every row stays reachable and the note
 * says which are shown. A table that fits on one page is the plain table.
 * @param table the table with its `thead` (its `tbody` is added here)
 */
export function pagedTable(table: HTMLTableElement, total: number, rowAt: (i: number) => HTMLTableRowElement): HTMLElement {
  const body = h('tbody');
  table.appendChild(body);
  const pagerNote = h('span', { class: 'pager-note' });
  let page = 0;
  const show = (to: number): void => {
    const r = pageOf(total, to);
    page = r.page;
    const rows: HTMLTableRowElement[] = [];
    for (let i = r.start; i < r.end; i++) rows.push(rowAt(i));
    replaceChildren(body, ...rows);
    setText(pagerNote, pagerText(total, page));
  };
  const button = (label: string, to: () => number): HTMLElement => {
    const b = h('vscode-button', { secondary: true }, label);
    b.addEventListener('click', () => show(to()));
    return b;
  };
  show(0);
  if (pageOf(total, 0).pages === 1) return table;
  return h('div', { class: 'paged' },
    h('div', { class: 'pager' }, button('« first', () => 0), button('‹ previous', () => page - 1), pagerNote, button('next ›', () => page + 1), button('last »', () => Infinity)),
    table,
  );
}

/**
 * The memory table of one experiment (see {@link memoryRows}), paged past {@link TABLE_PAGE_ROWS}
 * rows ({@link pagedTable}: only the shown page's rows are formatted); `note` (memStatsNote) says
 * why NCCL's count is missing.
 */
export function memoryTable(variants: readonly VariantExtras[], note: string | undefined): HTMLElement {
  const keys = memoryRowKeys(variants);
  const anyCount = variants.some((v) => Object.keys(v.memStats ?? {}).length > 0);
  const head = anyCount ? MEMORY_HEAD : MEMORY_HEAD.slice(0, 3);
  const table = h('table', { class: 'steps memory' }, h('thead', {}, h('tr', {}, ...head.map((x, i) => h('th', { class: i >= 2 ? 'num' : undefined }, x)))));
  // Rows marked `memory`, as the memory rows of the step table were (not step rows).
  const rowAt = (i: number): HTMLTableRowElement => {
    const [vi, point] = keys[i]!;
    return h('tr', { class: 'memory' }, ...memoryRow(variants[vi]!, point).slice(0, head.length).map((x, j) => h('td', { class: j >= 2 ? 'num' : undefined }, x)));
  };
  return h('div', { class: 'memory-table' },
    pagedTable(table, keys.length, rowAt),
    !anyCount && note ? h('p', { class: 'muted' }, `NCCL's count (MemStats): ${note}`) : false,
  );
}

/** The small table "NCCL's view (Init timings)" of a variant beside its figures, with its ratios. */
export function ncclViewTable(model: NcclViewModel, variant: string): HTMLElement {
  return h('div', { class: 'nccl-view' },
    h('h3', {}, `NCCL's view (Init timings) · ${variant}`),
    model.ratios.length > 0 && h('p', {}, `Ratios of the medians: ${model.ratios.join('; ')}`),
    // Not a `table.steps`: its rows are NCCL's parts, not the run's steps.
    model.rows.length > 0 && h('table', { class: 'nccl-parts' },
      h('thead', {}, h('tr', {}, ...model.head.map((x, i) => h('th', { class: i > 0 ? 'num' : undefined }, x)))),
      h('tbody', {}, ...model.rows.map((r) => h('tr', {}, ...r.map((x, i) => h('td', { class: i > 0 ? 'num' : undefined }, x))))),
    ),
    ...model.notes.map((n) => h('p', { class: 'muted' }, n)),
  );
}

const KIND_LABEL: Record<string, string> = {
  call: 'call',
  first: 'first collective',
  toFirst: 'to first collective',
  steady: 'steady',
  teardown: 'teardown',
};

/** Builds the step table for `variants` (times in ms); memory is in {@link memoryTable}. */
export function stepTable(variants: readonly VariantView[]): HTMLTableElement {
  const head = h(
    'thead',
    {},
    h('tr', {}, h('th', {}, 'variant'), h('th', {}, 'step'), h('th', {}, 'kind'),
      h('th', { class: 'num' }, 'median ms'), h('th', { class: 'num' }, 'p90 ms'),
      h('th', { class: 'num' }, 'min ms'), h('th', { class: 'num' }, 'max ms'), h('th', { class: 'num' }, 'n')),
  );
  const body = h('tbody');
  for (const v of variants) {
    v.steps.forEach((s, i) => {
      body.appendChild(
        h('tr', { class: s.kind === 'toFirst' || (s.sumOf?.length ?? 0) > 0 ? 'derived' : undefined },
          h('td', {}, i === 0 ? v.variant + (v.live ? ' (live)' : '') : ''),
          h('td', {}, s.label),
          h('td', {}, s.kind ? (KIND_LABEL[s.kind] ?? s.kind) : ''),
          h('td', { class: 'num' }, formatMs(s.stats.median)),
          h('td', { class: 'num' }, formatMs(s.stats.p90)),
          h('td', { class: 'num' }, formatMs(s.stats.min)),
          h('td', { class: 'num' }, formatMs(s.stats.max)),
          h('td', { class: 'num' }, String(s.stats.n)),
        ),
      );
    });
  }
  return h('table', { class: 'steps' }, head, body);
}
