/**
 * The Runs view's "Traces" group (pure, no `vscode` import; unit-tested in
 * test/unit/runsViewTraces.test.ts): the traces of the user's own job (`.commcost/traces/*.json`
 * of the workspace folders, loaded and validated by annotations/traces.ts `TraceStore`), newest
 * first, each with its command, host, NCCL version, date, SIMULATED, partial, and whether it is
 * the trace the annotations ask first (the user's choice). Trace files are untrusted: every text
 * shown goes through annotationText.ts `plain`; tooltips are plain strings.
 */
import { isAbsolute, relative, sep } from 'node:path';
import { isSimulatedTrace, ncclVersionText } from '../protocol/trace';
import { plain } from './annotations/annotationText';
import type { LoadedTrace } from './annotations/traces';
import { jobName } from './annotations/tracesText';
import { utcMinute } from './runsViewModel';

/** One trace in the tree. */
export interface TraceNode {
  kind: 'trace';
  /** The TraceStore key (what commands carry, never a path). */
  key: string;
  path: string;
  /** The HTML report beside it (same name, `.html`), when there is one. */
  html: string | null;
  /** "torch_tp_reshape.py · 2026-12-01 10:10 UTC". */
  label: string;
  /** "gpu1 · NCCL 2.28.9 · 2 ranks", then the words that apply: "used for annotations", "SIMULATED", "partial". */
  description: string;
  /** Plain text, several lines: the command, host, processes, NCCL, date, status, sites, clock, file. */
  tooltip: string;
  /**
   * For `view/item/context` menus: `trace` or `trace.chosen` (the annotations already ask it
   * first), with `.html` appended when a report is beside it.
   */
  contextValue: string;
  chosen: boolean;
  simulated: boolean;
  status: 'complete' | 'partial';
}

/** The "Traces" group: every loaded trace, newest first. */
export interface TracesNode {
  kind: 'traces';
  label: 'Traces';
  /** "2 traces", and "1 used for annotations" when one is chosen. */
  description: string;
  traces: TraceNode[];
}

/** The node of one trace. `html`: the report beside it, or null. */
export function traceNode(t: LoadedTrace, chosen: LoadedTrace | undefined, html: string | null): TraceNode {
  const tr = t.trace;
  const simulated = isSimulatedTrace(tr);
  const isChosen = chosen !== undefined && chosen.path === t.path;
  const ranks = tr.processes.filter((p) => p.plugin).length;
  const words = [`${plain(tr.host, 40) || '(no host)'} · NCCL ${ncclVersionText(tr.ncclVersion)} · ${ranks} traced process${ranks === 1 ? '' : 'es'}`];
  if (isChosen) words.push('used for annotations');
  if (simulated) words.push('SIMULATED');
  if (tr.status !== 'complete') words.push(tr.status);
  const tooltip = [
    `${simulated ? 'SIMULATED NCCL (figures are not measurements) · ' : ''}${plain(tr.command.join(' '), 200)}`,
    `${plain(tr.host, 60)} · ${ranks} traced process${ranks === 1 ? '' : 'es'} · NCCL ${ncclVersionText(tr.ncclVersion)} · started ${utcMinute(t.time)}`,
    `${tr.status}${tr.exitCode !== null && tr.exitCode !== 0 ? ` (exit code ${tr.exitCode})` : tr.signal ? ` (${plain(tr.signal, 20)})` : ''}${isChosen ? ' · the annotations ask this trace first' : ''}`,
    `call sites: ${tr.sites.length}${tr.sites.length ? ` (${plain(tr.sites.slice(0, 4).map((s) => `${s.api}${s.line !== null ? `:${s.line}` : ''}`).join(', '), 160)}${tr.sites.length > 4 ? ', …' : ''})` : ''}`,
    ...tr.missing.slice(0, 3).map((m) => `missing: ${plain(m, 200)}`),
    ...(tr.clock ? [`clock: ${plain(tr.clock.note, 300)}`] : []),
    plain(t.path, 300),
    ...(html ? [`report: ${plain(html, 300)}`] : []),
  ].join('\n');
  return {
    kind: 'trace',
    key: t.key,
    path: t.path,
    html,
    label: `${jobName(tr)} · ${utcMinute(t.time)}`,
    description: words.join(' · '),
    tooltip,
    contextValue: `${isChosen ? 'trace.chosen' : 'trace'}${html ? '.html' : ''}`,
    chosen: isChosen,
    simulated,
    status: tr.status,
  };
}

/** The HTML report of a trace file: the same path with `.html` for `.json`. */
export function traceReportPath(path: string): string {
  return path.replace(/\.json$/, '') + '.html';
}

/**
 * The "Traces" group, or null when there is no trace (the group is then not shown).
 * @param traces TraceStore.traces (newest first)
 * @param chosen TraceStore.chosen
 * @param exists whether a file exists (for the report beside each trace)
 */
export function tracesGroup(traces: readonly LoadedTrace[], chosen: LoadedTrace | undefined, exists: (path: string) => boolean): TracesNode | null {
  if (traces.length === 0) return null;
  const nodes = [...traces].sort((a, b) => b.time - a.time || (a.path < b.path ? 1 : -1)).map((t) => {
    const html = traceReportPath(t.path);
    return traceNode(t, chosen, exists(html) ? html : null);
  });
  const n = nodes.length;
  return { kind: 'traces', label: 'Traces', description: `${n} trace${n === 1 ? '' : 's'}${nodes.some((x) => x.chosen) ? ' · 1 used for annotations' : ''}`, traces: nodes };
}

/**
 * Whether `path` is a trace file the Runs view may delete: a `.json` file directly inside one of
 * the trace folders read (`<workspace folder>/.commcost/traces`). Returns the reason when not.
 */
export function deletableTraceFile(path: string, dirs: readonly string[]): { ok: true } | { ok: false; why: string } {
  if (!isAbsolute(path)) return { ok: false, why: `${path} is not an absolute path` };
  if (!path.endsWith('.json')) return { ok: false, why: `${path} is not a trace file (.json)` };
  for (const d of dirs) {
    const rel = relative(d, path);
    if (rel && !rel.startsWith('..') && !isAbsolute(rel) && !rel.includes(sep)) return { ok: true };
  }
  return { ok: false, why: `${path} is not in a trace folder (${dirs.join(', ') || 'no workspace folder'})` };
}
