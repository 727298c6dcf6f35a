/**
 * Draws a trace (the `--html` report of `commcost trace`): the SIMULATED banner where it applies,
 * the job's facts, the timeline per rank (traceTimeline.ts) as SVG, and the per-site table with
 * NCCL's view. Every string from the trace is inserted as text (createTextNode / textContent) or an
 * attribute value through setAttribute: never parsed as markup.
 */
import { ENVIRONMENT_NOT_RECORDED, siteApiText, environmentText, isSimulatedTrace, ncclVersionText, sharedTeardownMark, type TraceFile, type TracePhaseStats, type TraceSite } from '../protocol/trace';
import { h } from './dom';
import { PHASE_WORDS, timelineModel, type TimelinePhase } from './traceTimeline';

const SVG = 'http://www.w3.org/2000/svg';

function svg<K extends keyof SVGElementTagNameMap>(tag: K, attrs: Record<string, string | number>, text?: string): SVGElementTagNameMap[K] {
  const el = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
  if (text !== undefined) el.textContent = text;
  return el;
}

/** The stylesheet of the trace report (light and dark after prefers-color-scheme). */
export const TRACE_STYLES = `
body { font-family: system-ui, sans-serif; font-size: 13px; color: #222; background: #fff; margin: 0; padding: 12px 20px; }
@media (prefers-color-scheme: dark) { body { color: #ccc; background: #1e1e1e; } .axis line, .grid { stroke: #555; } td, th { border-bottom-color: #454545; } .banner-sim { background: #352a05; } }
h1 { font-size: 1.4em; margin: 0 0 6px 0; } h2 { font-size: 1.1em; margin: 18px 0 6px 0; }
.banner-sim { border: 2px solid #b58900; background: #fff4ce; padding: 8px 12px; margin: 8px 0; font-weight: 600; }
.meta { display: grid; grid-template-columns: max-content 1fr; gap: 2px 14px; margin: 8px 0; } .meta dt { opacity: .75; } .meta dd { margin: 0; word-break: break-all; }
table { border-collapse: collapse; margin: 6px 0; } td, th { border-bottom: 1px solid #d0d0d0; padding: 3px 8px; text-align: left; vertical-align: top; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
.legend { display: flex; gap: 14px; flex-wrap: wrap; margin: 4px 0; } .legend span { display: inline-flex; gap: 5px; align-items: center; }
.swatch { width: 14px; height: 10px; display: inline-block; }
.p-creation { fill: #1a85ff; background: #1a85ff; } .p-firstCollective { fill: #d18616; background: #d18616; } .p-teardown { fill: #8e44ad; background: #8e44ad; }
.p-connect { fill: #388a34; background: #388a34; } .p-init { fill: #388a34; background: #388a34; }
.bg { opacity: .4; } .cold { stroke: #e51400; stroke-width: 2; } .swatch.cold { background: transparent; border: 2px solid #e51400; }
.axis text, .row-label { fill: currentColor; font-size: 11px; } .rank { font-weight: 600; } .axis line, .grid { stroke: #ccc; }
.note { opacity: .8; margin: 2px 0; }
`;

function fmt(x: number): string {
  return x >= 100 ? x.toFixed(0) : x >= 10 ? x.toFixed(1) : x.toFixed(2);
}
function stats(s: TracePhaseStats | null): string {
  return !s ? '—' : s.n > 1 ? `${fmt(s.medianMs)} (p90 ${fmt(s.p90Ms)})` : fmt(s.medianMs);
}
function where(s: TraceSite): string {
  return s.file ? `${s.file}${s.line !== null ? `:${s.line}` : ''}` : '(unattributed)';
}

/** The timeline as an SVG element (one row per rank), with its legend. */
export function renderTimeline(trace: TraceFile): HTMLElement {
  const m = timelineModel(trace);
  const box = h('section', { id: 'timeline' }, h('h2', {}, 'Timeline per rank'));
  if (m.rows.length === 0) {
    box.append(h('p', { class: 'note' }, m.note ?? 'nothing to draw'));
    return box;
  }
  const left = 300, width = 780, laneH = 22, gap = 8, top = 4, axisH = 26;
  const x = (ms: number) => left + (ms / m.spanMs) * width;
  const lanes = m.rows.reduce((n, r) => n + r.lanes.length, 0);
  const height = top + lanes * laneH + m.rows.length * gap;
  const root = svg('svg', { width: left + width + 30, height: height + axisH, role: 'img', 'aria-label': 'timeline of each rank: creation, first collective and teardown of every communicator' });
  let y = top;
  for (const row of m.rows) {
    root.append(svg('text', { x: 4, y: y + laneH / 2 + 4, class: 'row-label rank' }, row.label));
    for (const lane of row.lanes) {
      root.append(svg('text', { x: 135, y: y + laneH / 2 + 4, class: 'row-label' }, lane.label.length > 25 ? lane.label.slice(0, 24) + '…' : lane.label));
      for (const b of lane.bars) {
        const thin = b.phase === 'connect' || b.phase === 'init';
        const bx = x(b.start), bw = Math.max(2, x(b.end) - bx);
        const cls = `p-${b.phase}${b.background ? ' bg' : ''}${b.cold && b.phase === 'creation' ? ' cold' : ''}`;
        const rect = svg('rect', { x: bx, y: thin ? y + laneH - 8 : y + 2, width: bw, height: thin ? 6 : laneH - 10, class: cls, 'data-phase': b.phase, 'data-site': b.site });
        rect.append(svg('title', {}, `${PHASE_WORDS[b.phase]}${b.background ? ' — ran outside the call that paid for it' : ''}: ${b.label}, ${fmt(b.end - b.start)} ms (from ${fmt(b.start)} ms)${b.cold ? ' — cold: first communicator of this process' : ''}`));
        root.append(rect);
      }
      y += laneH;
    }
    root.append(svg('line', { x1: 4, x2: left + width, y1: y + gap / 2, y2: y + gap / 2, class: 'grid' }));
    y += gap;
  }
  const axisY = height;
  const axis = svg('g', { class: 'axis' });
  axis.append(svg('line', { x1: left, x2: left + width, y1: axisY, y2: axisY }));
  for (const t of m.ticks) {
    axis.append(svg('line', { x1: x(t), x2: x(t), y1: axisY, y2: axisY + 4 }));
    axis.append(svg('text', { x: x(t) - 8, y: axisY + 16 }, Number.isInteger(t) ? String(t) : String(Number(t.toPrecision(3)))));
  }
  axis.append(svg('text', { x: left + width - 4, y: axisY + 16 }, 'ms'));
  root.append(axis);
  const legend = h('div', { class: 'legend' });
  for (const p of ['creation', 'firstCollective', 'teardown', 'connect'] as TimelinePhase[]) legend.append(h('span', {}, h('i', { class: `swatch p-${p}` }), PHASE_WORDS[p]));
  legend.append(h('span', {}, h('i', { class: 'swatch p-connect bg' }), 'lighter: NCCL work in the background (outside the call that paid for it)'));
  legend.append(h('span', {}, h('i', { class: 'swatch cold' }), 'cold: the process\'s first communicator'));
  box.append(legend, root);
  if (m.note) box.append(h('p', { class: 'note' }, m.note));
  return box;
}

/** The per-site table: count, phases (MAX over ranks, median/p90 over occurrences), memory, NCCL's view. */
export function renderSiteTable(trace: TraceFile): HTMLElement {
  const head = ['site', 'api', 'n', 'creation ms', 'first use', 'first collective ms', 'connect ms', 'teardown ms', 'memory', '', "NCCL's view (Init timings, ms)"];
  const table = h('table', { id: 'sites' }, h('thead', {}, h('tr', {}, ...head.map((c) => h('th', {}, c)))));
  const body = h('tbody');
  for (const s of trace.sites) {
    const v = s.nccl;
    const view = v ? `${v.fn ?? ''} total ${Math.round(v.parts.total ?? 0)}: ${Object.entries(v.parts).filter(([k, x]) => k !== 'total' && x > 0).map(([k, x]) => `${k} ${Math.round(x)}`).join(', ') || 'no part above 0'}${v.join === 'order' ? ' (joined by order)' : ''}` : '—';
    body.append(h('tr', {},
      h('td', {}, where(s)), h('td', {}, siteApiText(s)), h('td', { class: 'num' }, String(s.count)),
      h('td', { class: 'num' }, stats(s.creation)), h('td', {}, s.firstUse ?? (s.firstCollective ? '?' : '—')), h('td', { class: 'num' }, stats(s.firstCollective)), h('td', { class: 'num' }, stats(s.connect)),
      h('td', { class: 'num' }, stats(s.teardown) + sharedTeardownMark(s)), h('td', { class: 'num' }, s.memoryBytes !== null ? `${(s.memoryBytes / 2 ** 20).toFixed(0)} MiB` : '—'),
      h('td', {}, s.cold ? 'cold' : ''), h('td', {}, view)));
  }
  table.append(body);
  return h('section', {}, h('h2', {}, 'Call sites'), h('p', { class: 'note' }, 'Each phase: MAX over ranks per occurrence, then median (p90) over occurrences.'), table);
}

/** The whole report into `root`. */
export function renderTrace(root: HTMLElement, trace: TraceFile): void {
  root.replaceChildren();
  if (isSimulatedTrace(trace)) root.append(h('div', { class: 'banner-sim', role: 'alert' }, "SIMULATED — every figure comes from commcost's simulated NCCL, not from a GPU"));
  root.append(h('h1', {}, `commcost trace: ${trace.command.join(' ')}`));
  const meta = h('dl', { class: 'meta' });
  const facts: Array<[string, string]> = [
    ['status', `${trace.status}${trace.exitCode !== null ? `, exit code ${trace.exitCode}` : ''}${trace.signal ? `, signal ${trace.signal}` : ''}`],
    ['processes', String(trace.processes.length)], ['host', trace.host], ['started', trace.startedAt], ['NCCL', trace.ncclVersion !== null ? ncclVersionText(trace.ncclVersion) : 'unknown'],
    ['environment', trace.environment ? environmentText(trace.environment) : ENVIRONMENT_NOT_RECORDED] as [string, string],
  ];
  for (const [k, v] of facts) meta.append(h('dt', {}, k), h('dd', {}, v));
  root.append(meta, renderTimeline(trace), renderSiteTable(trace));
  const notes = [...trace.sites.flatMap((s) => s.notes.map((n) => `note: ${n}`)), ...trace.missing.map((m) => `missing: ${m}`), ...trace.problems.map((p) => `problem: ${p}`)];
  if (trace.ncclLog?.note) notes.push(`NCCL's view: ${trace.ncclLog.note}`);
  if (notes.length) root.append(h('section', {}, h('h2', {}, 'Notes'), ...[...new Set(notes)].map((n) => h('p', { class: 'note' }, n))));
}
