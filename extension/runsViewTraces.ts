/**
 * The Runs view's "Traces" group (pure, no `vscode` import; unit-tested in
 * test/unit/runsViewTraces.test.ts): the traces of the user's own job (`.commcost/traces/*.json`
 * of the workspace folders, loaded and validated by client/traceStore.ts `TraceStore`), newest
 * first, each with its command, host, NCCL version, date, SIMULATED, partial, and whether it is
 * the trace the annotations ask first (the user's choice), and a trace compared with a run
 * ({@link compareTraceWithRun}). Trace files are untrusted: every text shown goes through
 * annotationText.ts `plain` (or `escapeMarkdown` in the comparison); tooltips are plain strings.
 */
import { isAbsolute, relative, sep } from 'node:path';
import { strategyTerms, tpShapes } from '../readings/plan/strategies';
import type { Term } from '../readings/plan/terms';
import { traceObservations } from '../readings/plan/traceTerms';
import { isSimulatedRun, type RunFile } from '../protocol/runFile';
import { isSimulatedTrace, ncclVersionText, type TraceFile } from '../protocol/trace';
import { traceGpusText } from '../protocol/runNameParts';
import { escapeMarkdown, ncclText, plain, plural } from '../readings/annotationText';
import type { LoadedTrace } from '../readings/traces';
import { jobName } from '../readings/tracesText';
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
  // Named by its GPUs and their count where its environment says them, as a run is; else its host.
  const on = traceGpusText(tr.environment, ranks, simulated) ?? (plain(tr.host, 40) || '(no host)');
  const words = [`${on} · NCCL ${ncclVersionText(tr.ncclVersion)} · ${ranks} traced process${ranks === 1 ? '' : 'es'}`];
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

/** One row of a trace compared with a run: a figure the trace observed and the run's of the same API, size and phase. */
export interface TraceRunRow {
  /** The traced site: "new_group at torch_tp_reshape.py:35" (plain). */
  site: string;
  /** The run's figure it is compared with: "ncclCommInitRankConfig TP2" (plain), or the key when the run has none. */
  what: string;
  phase: 'creation' | 'first collective';
  /** The communicator's ranks. */
  size: number;
  /** The trace's figure: median over the site's occurrences of the MAX over ranks, ms. */
  observedMs: number;
  /** Occurrences the median is over. */
  n: number;
  /** The run's median, ms (its experiment and step in `source`); null when the run has no figure for it (`why`). */
  runMs: number | null;
  source: string | null;
  why: string | null;
}

/** A trace compared with a run: rows, the sites left out (cold, no term, no size) and whether figures are simulated. */
export interface TraceRunComparison {
  rows: TraceRunRow[];
  unused: string[];
  /** Either side is simulated (then every figure is labelled so). */
  simulated: boolean;
  /** Host and NCCL of each side, plain, and a note when they differ. */
  traceSide: string;
  runSide: string;
  notes: string[];
}

/**
 * Compares a trace with a run: each warm figure the trace observed (plan/traceTerms.ts
 * `traceObservations`: creation and first collective per API and communicator size, median over
 * occurrences of the MAX over ranks) against the run's figure of the same key (plan/strategies.ts
 * terms: the init, split, shrink and grow experiments' call and first-collective medians). Cold
 * sites are left out (a process's first communicator carries its one-time start; compare them with
 * the cold-start experiment). Pure.
 */
export function compareTraceWithRun(traceFile: string, trace: TraceFile, runFile: string, run: RunFile): TraceRunComparison {
  const obs = traceObservations(traceFile, trace);
  const runs = [{ file: runFile, run }];
  const terms = new Map<string, Term>();
  // Only the run's own rank count: its experiments measured communicators of that size (init) and
  // of the children it made (split halves, shrink by one, grow); any other size has no figure.
  if (run.ranks >= 1)
    for (const st of strategyTerms(runs, run.ranks, tpShapes(run.ranks)))
      for (const t of [...st.critical, ...st.prepaid].flatMap((x) => x.parts ?? [x])) {
        // The first strategy that has a key keeps it: the experiment of the call itself (init, split…), not the pool's.
        const id = t.key ? `${t.key.api}/${t.key.size}/${t.key.phase}` : '';
        if (t.key && !terms.has(id)) terms.set(id, t);
      }
  const rows = obs.observations.map((o): TraceRunRow => {
    const t = terms.get(`${o.key.api}/${o.key.size}/${o.key.phase}`);
    const measured = t !== undefined && t.value !== undefined;
    return {
      site: plain(o.site, 120), what: t ? plain(t.what, 80) : `${o.key.api} of ${o.key.size} rank${o.key.size === 1 ? '' : 's'}`, phase: o.key.phase === 'first' ? 'first collective' : 'creation', size: o.key.size,
      observedMs: o.ms, n: o.n, runMs: measured ? t.value! : null, source: measured && t.source ? plain(`${t.source.experiment} ${t.source.variant} ${t.source.step}`, 80) : null,
      why: measured ? null : t ? plain(t.missing?.why ?? 'the run has no figure for it', 160) : `the run (${plural(run.ranks, 'rank')}) measured no ${o.key.api} making ${o.key.size} rank${o.key.size === 1 ? '' : 's'}`,
    };
  });
  const traceSide = `${plain(trace.host, 40)} · NCCL ${ncclVersionText(trace.ncclVersion)}`;
  const runSide = `${plain(run.host, 40)} · ${ncclText(run.stamp?.ncclVersion, (t) => plain(t, 20))}`;
  const notes: string[] = [];
  if (run.host === 'localhost' || trace.host === 'localhost') {
    if (trace.host !== run.host) notes.push(`the run was measured on "localhost" and the trace on ${plain(trace.host, 40)}: check they are the same machine`);
  } else if (trace.host !== run.host) notes.push(`different hosts (${plain(trace.host, 40)} vs ${plain(run.host, 40)}): the figures are of different machines`);
  if (trace.ncclVersion !== null && run.stamp?.ncclVersion && ncclVersionText(trace.ncclVersion) !== run.stamp.ncclVersion) notes.push('different NCCL versions');
  return { rows, unused: obs.unused.map((u) => plain(u, 200)), simulated: isSimulatedTrace(trace) || isSimulatedRun(run), traceSide, runSide, notes };
}

/** The comparison as Markdown (every text from the files escaped): a table of observed vs run figures, the ratio, and what was left out. */
export function comparisonMarkdown(c: TraceRunComparison, traceName: string, runName: string): string {
  const f = (ms: number) => (ms >= 100 ? ms.toFixed(0) : ms >= 10 ? ms.toFixed(1) : ms.toFixed(2));
  const lines = [
    `# Trace vs run${c.simulated ? ' — SIMULATED (figures of the simulated NCCL are not measurements)' : ''}`,
    '',
    `- trace: ${escapeMarkdown(traceName, 120)} (${escapeMarkdown(c.traceSide, 80)}): each figure the median over a site's occurrences of the MAX over ranks`,
    `- run: ${escapeMarkdown(runName, 120)} (${escapeMarkdown(c.runSide, 80)}): the experiment step's median`,
    ...c.notes.map((n) => `- note: ${escapeMarkdown(n, 200)}`),
    '',
    '| traced site | phase | ranks | observed ms (n) | run figure | run ms | observed / run |',
    '|---|---|---|---|---|---|---|',
    ...c.rows.map((r) => `| ${escapeMarkdown(r.site, 120)} | ${r.phase} | ${r.size} | ${f(r.observedMs)} (${r.n}) | ${escapeMarkdown(r.what, 80)}${r.source ? ` (${escapeMarkdown(r.source, 80)})` : ''} | ${r.runMs !== null ? f(r.runMs) : `— ${escapeMarkdown(r.why ?? '', 160)}`} | ${r.runMs ? `${(r.observedMs / r.runMs).toFixed(2)}×` : '—'} |`),
    ...(c.rows.length === 0 ? ['| (no warm figure the run measures was observed) | | | | | | |'] : []),
    '',
    ...(c.unused.length ? ['Left out:', ...c.unused.map((u) => `- ${escapeMarkdown(u, 200)}`)] : []),
  ];
  return lines.join('\n') + '\n';
}
