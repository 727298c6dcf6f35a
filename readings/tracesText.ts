/**
 * The words of a traced line (traces.ts `TraceObservation`): the observed sentence, the hover's
 * Markdown block, the CodeLens title, the after-line label, and the trace's label for the picker
 * and the status bar. No `vscode` import. Every figure is read from the trace file; a phase the
 * trace has as null is said to be not measured, with the trace's notes. Trace files are untrusted:
 * text from one goes through `escapeMarkdown` (Markdown) or `plain` (plain text).
 */
import { traceGpusText } from '../protocol/runNameParts';
import { isSimulatedTrace, ncclVersionText, type TraceFile, type TracePhaseStats, type TraceSite } from '../protocol/trace';

export { ncclVersionText };
import { CELL_GAP, escapeMarkdown, formatBytes, formatMs, plain } from './annotationText';
import type { LoadedTrace, TraceObservation } from './traces';

/** The commands trace links may run (added to the hover's `isTrusted.enabledCommands`). */
export const TRACE_COMMANDS = ['commcost.openTrace'] as const;

/** A `command:` URI opening the trace with `key` (traces.ts keys only: never trace-file text). */
export function openTraceUri(key: string): string {
  return `command:commcost.openTrace?${encodeURIComponent(JSON.stringify([key]))}`;
}

/** The job's short name: the script it ran (the last `.py` argument's file name), else the program's file name. */
export function jobName(trace: TraceFile): string {
  const script = [...trace.command].reverse().find((a) => /\.py$/.test(a));
  const name = (script ?? trace.command[0] ?? 'job').split(/[\\/]/).pop() || 'job';
  return plain(name, 60);
}

/** "2026-12-01 10:10 UTC": when the job started, to the minute. */
function whenText(t: LoadedTrace): string {
  return `${new Date(t.time).toISOString().slice(0, 16).replace('T', ' ')} UTC`;
}

/**
 * A trace's one-line label (plain text): "torch_tp_reshape.py · 2× H200 · NCCL 2.28.9 · 2026-12-01
 * 10:10 UTC" where its environment names the GPUs (protocol/runNameParts.ts traceGpusText), else
 * its host: "torch_tp_reshape.py · vm · NCCL 2.28.9 · 2026-12-01
 * 10:10 UTC", "SIMULATED · …" for a simulated trace, "… · partial" when the job did not complete.
 */
export function traceLabel(t: LoadedTrace): string {
  const tr = t.trace;
  const sim = isSimulatedTrace(tr) ? 'SIMULATED · ' : '';
  const partial = tr.status === 'partial' ? ' · partial' : '';
  // Its GPUs and their count where its environment names them (as a run's name does), else its host.
  const on = traceGpusText(tr.environment, tr.processes.filter((p) => p.plugin).length, isSimulatedTrace(tr)) ?? tr.host;
  return `${sim}${jobName(tr)} · ${plain(on, 40)} · NCCL ${ncclVersionText(tr.ncclVersion)} · ${whenText(t)}${partial}`;
}

/** The communicators' size: "2 ranks", "1 rank", "1-rank communicators on 2 processes", "2–4 ranks". */
export function ranksText(site: TraceSite): string {
  const sizes = [...new Set(site.occurrences.flatMap((o) => o.commRanks))].sort((a, b) => a - b);
  const procs = Math.max(0, ...site.occurrences.map((o) => o.ranks));
  if (sizes.length === 0) return procs > 0 ? `${procs} process${procs === 1 ? '' : 'es'}` : 'ranks unknown';
  const lo = sizes[0]!, hi = sizes[sizes.length - 1]!;
  if (lo === hi && lo === 1 && procs > 1) return `1-rank communicators on ${procs} processes`;
  return lo === hi ? `${lo} rank${lo === 1 ? '' : 's'}` : `${lo}–${hi} ranks`;
}

/** "142 ms" for one occurrence, "142 ms, p90 150 ms" for several. */
function figure(s: TracePhaseStats): string {
  return s.n > 1 ? `${formatMs(s.medianMs)}, p90 ${formatMs(s.p90Ms)}` : formatMs(s.medianMs);
}

/** How many occurrences the figures are over (the most any phase has). */
function count(site: TraceSite): number {
  return Math.max(site.count, ...[site.creation, site.firstCollective, site.connect, site.teardown].map((s) => s?.n ?? 0));
}

const COLD = 'cold: the first communicator of its process, with the one-time CUDA and NCCL start';

/** A creation paid after its call returned (trace `deferred`; where: the site's note): the sentence's and the table row's words. */
const DEFERRED_HOW = { group: 'in a group (paid at its ncclGroupEnd)', initAll: 'by ncclCommInitAll in one group', nonblocking: 'non-blocking (to its completion)' } as const;
const DEFERRED_ROW = { group: 'creation (the call → its ncclGroupEnd)', initAll: 'creation (the call: its own group)', nonblocking: 'creation (the call → completion)' } as const;

/** The sentence of one creation site: "created in 35.5 ms, first collective on this group paid 144 ms (connect 144 ms), teardown 1.13 s". */
function creationParts(site: TraceSite, withTeardown: boolean): string[] {
  const parts: string[] = [];
  const made = site.lazy ? 'created lazily at its first collective in' : site.deferred ? `created ${DEFERRED_HOW[site.deferred.kind]} in` : 'created in';
  parts.push(site.creation ? `${made} ${figure(site.creation)}${site.cold ? ' (cold)' : ''}` : `creation not measured${site.cold ? ' (cold)' : ''}`);
  if (site.firstCollective) {
    const connect = site.connect ? ` (connect ${figure(site.connect)})` : '';
    parts.push(`first collective on this group paid ${figure(site.firstCollective)}${connect}`);
  } else parts.push('first collective not measured');
  if (withTeardown) parts.push(site.teardown ? `teardown ${figure(site.teardown)}` : 'teardown not measured');
  return parts;
}

/**
 * The observed sentence (plain text; untrusted text made plain), e.g. "observed in
 * torch_tp_reshape.py, 2 ranks: created in 35.5 ms, first collective on this group paid 144 ms
 * (connect 144 ms), teardown 1.13 s (n=1)"; "SIMULATED · " first for a simulated trace.
 */
export function observedSentence(o: TraceObservation): string {
  const sim = isSimulatedTrace(o.trace.trace) ? 'SIMULATED · ' : '';
  const job = jobName(o.trace.trace);
  const site = o.sites[0]!;
  if (o.role === 'teardown') {
    const n = Math.max(...o.sites.map(count));
    const made = o.sites.map((s) => `${plain(s.api, 40)} at line ${lineOf(s, o)}`).join(', ');
    const figs = o.sites.map((s) => (s.teardown ? figure(s.teardown) : 'not measured'));
    const groups = `${o.sites.length} group${o.sites.length === 1 ? '' : 's'}`;
    if (new Set(figs).size === 1) return `${sim}observed in ${job}: this teardown of ${groups} (${made}) ${o.sites[0]!.teardown ? `paid ${figs[0]}` : 'was not measured'} (n=${n})`;
    return `${sim}observed in ${job}: this teardown of ${groups} — ${o.sites.map((s, i) => `${plain(s.api, 40)} at line ${lineOf(s, o)}: ${figs[i]}`).join('; ')} (n=${n})`;
  }

  if (o.role === 'firstCollective') {
    const f = site.firstCollective ? `paid ${figure(site.firstCollective)}${site.connect ? ` (connect ${figure(site.connect)})` : ''}` : 'not measured';
    return `${sim}observed in ${job}, ${ranksText(site)}: this first collective ${firstCollectiveDoes(site, lineOf(site, o))}: ${f} (n=${count(site)})`;
  }
  return `${sim}observed in ${job}, ${ranksText(site)}: ${creationParts(site, true).join(', ')} (n=${count(site)})`;
}

/** Whether every communicator the site made has one rank (no peer: its first collective connects nothing). */
function oneRankOnly(site: TraceSite): boolean {
  const sizes = site.occurrences.flatMap((o) => o.commRanks);
  return sizes.length > 0 && sizes.every((n) => n === 1);
}

/**
 * What a group's first collective does, by what the trace recorded: it creates the communicator
 * only for a lazily made group (`site.lazy`; a C creation or an eager group was made by its call),
 * and connects it only when the communicator has more than one rank.
 */
function firstCollectiveDoes(site: TraceSite, line: number): string {
  const one = oneRankOnly(site);
  if (site.lazy) return one ? `creates the one-rank group made at line ${line} (nothing to connect)` : `creates and connects the group made at line ${line}`;
  return one ? `runs on the one-rank group made at line ${line} (nothing to connect)` : `connects the group made at line ${line}`;
}

/** A site's creation line in the document (the traced line moved by the observation's shift). */
function lineOf(site: TraceSite, o: TraceObservation): number {
  return (site.line ?? 0) + o.shift;
}

/** The figures of the label and the CodeLens: the phases the line's role is about, as "35.5 ms call · 144 ms first collective". */
function shortFigures(o: TraceObservation): string {
  const site = o.sites[0]!;
  const f = (s: TracePhaseStats | null, what: string) => (s ? `${formatMs(s.medianMs)} ${what}` : `${what} not measured`);
  if (o.role === 'teardown') {
    const worst = o.sites.map((s) => s.teardown).filter((s): s is TracePhaseStats => s !== null).sort((a, b) => b.medianMs - a.medianMs)[0] ?? null;
    return f(worst, 'teardown');
  }
  if (o.role === 'firstCollective') {
    const parts = [site.lazy ? 'init' : undefined, oneRankOnly(site) ? undefined : 'connect'].filter((x): x is string => x !== undefined);
    return f(site.firstCollective, `first collective${parts.length > 0 ? ` (${parts.join(' + ')})` : ''}`);
  }
  return `${f(site.creation, site.lazy || site.deferred ? 'creation' : 'call')} · ${f(site.firstCollective, 'first collective')}${site.cold ? ' (cold)' : ''}`;
}

/**
 * The CodeLens title of a traced line: "⏱ observed 35.5 ms call · 144 ms first collective —
 * torch_tp_reshape.py · 2 ranks · vm · NCCL 2.28.9 · 2026-12-01 10:10 UTC".
 */
export function observedLensTitle(o: TraceObservation): string {
  const sim = isSimulatedTrace(o.trace.trace) ? 'SIMULATED · ' : '';
  const ranks = o.role === 'teardown' ? '' : ` · ${ranksText(o.sites[0]!)}`;
  const tr = o.trace.trace;
  const partial = tr.status === 'partial' ? ' · partial' : '';
  return `${sim}⏱ observed ${shortFigures(o)} — ${jobName(tr)}${ranks} · ${plain(tr.host, 40)} · NCCL ${ncclVersionText(tr.ncclVersion)} · ${whenText(o.trace)}${partial}`;
}

/** The after-line label's observed part: "observed 35.5 ms call · 144 ms first collective" ("SIMULATED observed …"). */
export function observedLabel(o: TraceObservation): string {
  return `${isSimulatedTrace(o.trace.trace) ? 'SIMULATED ' : ''}observed ${shortFigures(o)}`;
}

/** The headline median of a traced line (ms) for the label's colour: the sum of the phases it shows. */
export function observedMs(o: TraceObservation): number {
  if (o.role === 'teardown') return Math.max(0, ...o.sites.map((s) => s.teardown?.medianMs ?? 0));
  const s = o.sites[0]!;
  return (o.role === 'create' ? (s.creation?.medianMs ?? 0) : 0) + (s.firstCollective?.medianMs ?? 0);
}

/**
 * NCCL's own breakdown of the creation (its `Init timings` log line, trace v2 `nccl`), beside
 * commcost's figures: "NCCL's view (Init timings of ncclCommInitRankConfig, 10 ms steps): total
 * 370 ms — kernels 350 ms, bootstrap 10 ms". Undefined when the trace has none. Markdown, escaped.
 */
export function ncclViewLine(site: TraceSite): string | undefined {
  const v = site.nccl;
  if (!v) return undefined;
  const entries = Object.entries(v.parts).filter(([, ms]) => Number.isFinite(ms));
  const total = entries.find(([k]) => k === 'total');
  const rest = entries.filter(([k]) => k !== 'total').map(([k, ms]) => `${escapeMarkdown(k, 30)} ${formatMs(ms)}`);
  if (!total && rest.length === 0) return undefined;
  const fn = v.fn ? ` of ${escapeMarkdown(v.fn, 60)}` : '';
  const how = v.join === 'order' ? '; joined by order: NCCL prints no commId for a split child' : '';
  return `NCCL's view (its Init timings${fn}, 10 ms steps${how}): ${total ? `total ${formatMs(total[1])}` : ''}${total && rest.length ? ' — ' : ''}${rest.join(', ')}`;
}

function statsRow(name: string, s: TracePhaseStats | null): string {
  if (!s) return `| ${name} | ${CELL_GAP}not measured | | |`;
  return `| ${name} | ${CELL_GAP}${formatMs(s.medianMs)} | ${CELL_GAP}${formatMs(s.p90Ms)} | ${CELL_GAP}${s.n} |`;
}

/**
 * The hover's Markdown block of a traced line (observed first; the caller appends the experiment's
 * hover beside it for comparison). Links: `openTrace`, a `command:` URI the caller built from our own ids.
 */
export function observedMarkdown(o: TraceObservation, openTrace?: string): string {
  const t = o.trace.trace;
  const out: string[] = [];
  if (isSimulatedTrace(t)) out.push("**SIMULATED** — traced on commcost's simulated NCCL, not a GPU", '');
  const what = o.role === 'teardown' ? 'teardown' : `\`${plain(o.sites[0]!.api, 40).replace(/`/g, "'")}\``;
  out.push(`**commcost** · ${what} · observed in your job`, '');
  const sentence = observedSentence(o).replace(/^SIMULATED · /, '');
  out.push(`${escapeMarkdown(sentence.charAt(0).toUpperCase() + sentence.slice(1), 600)}.`, '');
  out.push(`| phase | ${CELL_GAP}median | ${CELL_GAP}p90 | ${CELL_GAP}n |`, '|---|---:|---:|---:|');
  if (o.role === 'teardown') {
    for (const s of o.sites) out.push(statsRow(`teardown of ${escapeMarkdown(s.api, 40)} (line ${lineOf(s, o)})`, s.teardown));
  } else {
    const s = o.sites[0]!;
    out.push(statsRow(`${s.lazy ? 'creation (at the first collective)' : s.deferred ? DEFERRED_ROW[s.deferred.kind] : 'creation (the call)'}${s.cold ? ' · cold' : ''}`, s.creation));
    out.push(statsRow('first collective', s.firstCollective));
    out.push(statsRow('↳ connect (first group)', s.connect));
    out.push(statsRow('teardown', s.teardown));
  }
  const view = o.role === 'teardown' ? undefined : ncclViewLine(o.sites[0]!);
  if (view) out.push('', view);
  const notes: string[] = [];
  const sites = o.sites;
  for (const s of sites) {
    if (o.role !== 'teardown' && s.cold) notes.push(COLD);
    if (o.role !== 'teardown' && s.memoryBytes !== null)
      notes.push(`memory per GPU: ${formatBytes(s.memoryBytes)} (device free memory from NCCL's init to the end of the first group, max over ranks)`);
    const nulls = o.role === 'teardown' ? [s.teardown] : [s.creation, s.firstCollective, s.connect, s.teardown];
    if (nulls.some((x) => x === null)) notes.push(s.notes.length ? `not measured: ${s.notes.join('; ')}` : 'a phase not measured: the trace recorded no such event for it (e.g. no collective ran on the group)');
    else for (const n of s.notes) notes.push(n);
  }
  for (const n of [...new Set(notes)]) out.push('', escapeMarkdown(n, 400));
  if (o.shift !== 0)
    out.push('', `Traced at line ${o.tracedLine}: the file has changed since the trace (lines moved by ${o.shift > 0 ? '+' : ''}${o.shift}).`);
  // Named by its GPUs and their count where the trace's environment says them, as a run is; else its host.
  const traced = t.processes.filter((p) => p.plugin).length;
  const status = t.status === 'partial' ? ` · partial${t.missing.length ? `: ${escapeMarkdown(t.missing.join('; '), 200)}` : ''}` : '';
  out.push(
    '',
    `*\`${plain(t.command.join(' '), 160).replace(/`/g, "'")}\` · ${escapeMarkdown(traceGpusText(t.environment, traced, isSimulatedTrace(t)) ?? t.host, 60)} · ${traced} traced processes · NCCL ${ncclVersionText(t.ncclVersion)} · ${whenText(o.trace)}${status}*`,
  );
  out.push('', `*Trace: ${escapeMarkdown(o.trace.path.split(/[\\/]/).pop() ?? o.trace.path, 120)}*${openTrace ? ` · [Open trace](${openTrace})` : ''}`);
  return out.join('\n');
}
