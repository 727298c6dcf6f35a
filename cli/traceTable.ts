/**
 * The text of a trace for the terminal: its summary table, the Ray workers, NCCL's view. Shared by
 * `commcost trace` and `commcost report <trace.json>` (which must not load the trace engine or ssh2).
 */
import { formatView } from '../client/trace/ncclView';
import type { TraceFile, TracePhaseStats } from '../protocol/trace';
import { ENVIRONMENT_NOT_RECORDED, siteApiText, environmentText, isSimulatedTrace, ncclVersionText, sharedTeardownMark } from '../protocol/trace';
import { terminalSafe } from './summary';

/** A phase's figure: the median (and p90 when more than one occurrence), ms. */
function ms(s: TracePhaseStats | null): string {
  if (!s) return '—';
  // Below 1 ms two significant digits, so a µs-level phase (a one-rank first collective) never prints "0.00".
  const f = (x: number) => (x >= 100 ? x.toFixed(0) : x >= 10 ? x.toFixed(1) : x >= 1 || x === 0 ? x.toFixed(2) : String(Number(x.toPrecision(2))));
  return s.n > 1 ? `${f(s.medianMs)} (p90 ${f(s.p90Ms)})` : f(s.medianMs);
}

/** One line per Ray worker that recorded: its actor class, pid, node (the hook's `ray` line). */
function rayLines(t: TraceFile): string[] {
  const workers = t.processes.filter((p) => p.ray);
  if (workers.length === 0) return [];
  const nodes = new Set(workers.map((p) => p.ray!.node)).size;
  return [`Ray: ${workers.length} worker${workers.length === 1 ? '' : 's'} on ${nodes} node${nodes === 1 ? '' : 's'}`,
    ...workers.map((p) => `  ${terminalSafe(p.ray!.actor ?? '(task)')}  pid ${p.pid} on ${terminalSafe(p.host)}, node ${terminalSafe(p.ray!.ip ?? '?')} ${terminalSafe(p.ray!.node.slice(0, 12))}, ${p.communicators} communicator${p.communicators === 1 ? '' : 's'}`)];
}

/** The summary table of a trace (text; untrusted strings made terminal-safe). */
export function formatTrace(t: TraceFile): string {
  const lines: string[] = [];
  if (isSimulatedTrace(t)) lines.push('SIMULATED — every figure below comes from commcost\'s simulated NCCL, not a GPU');
  lines.push(`commcost trace: ${terminalSafe(t.command.join(' '))} — ${t.processes.length} process${t.processes.length === 1 ? '' : 'es'}, ${t.status}${t.ncclVersion ? `, NCCL ${ncclVersionText(t.ncclVersion)}` : ''}`);
  lines.push(`environment: ${t.environment ? terminalSafe(environmentText(t.environment)) : ENVIRONMENT_NOT_RECORDED}`);
  lines.push('Each phase: MAX over ranks per occurrence, then median (p90) over occurrences, ms. cold = a process\'s first communicator. first use = the op of the group\'s first collective (its figure is that op\'s).');
  const ray = t.sites.some((s) => s.actors?.length);
  const rows = [['site', 'api', 'n', 'creation', 'first use', 'first collective', 'connect', 'teardown', 'memory', ...(ray ? ['ray actors'] : []), '']];
  for (const s of t.sites) {
    const where = s.file ? `${s.file.length > 48 ? '…' + s.file.slice(-47) : s.file}${s.line !== null ? `:${s.line}` : ''}` : '(unattributed)';
    rows.push([terminalSafe(where), terminalSafe(siteApiText(s)), String(s.count), ms(s.creation), terminalSafe(s.firstUse ?? (s.firstCollective ? '?' : '—')), ms(s.firstCollective), ms(s.connect), ms(s.teardown) + sharedTeardownMark(s),
      s.memoryBytes !== null ? `${(s.memoryBytes / 2 ** 20).toFixed(0)} MiB` : '—', ...(ray ? [terminalSafe((s.actors ?? []).join(', ') || '—')] : []), s.cold ? 'cold' : '']);
  }
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  for (const r of rows) lines.push(r.map((c, i) => c.padEnd(widths[i]!)).join('  ').trimEnd());
  lines.push(...ncclViewLines(t));
  lines.push(...rayLines(t));
  for (const s of t.sites) for (const n of s.notes) lines.push(`note: ${terminalSafe(n)}`);
  if (t.clock?.kind === 'wall-offsets') lines.push(`clock: ${terminalSafe(t.clock.note)}`);
  for (const m of t.missing) lines.push(`missing: ${terminalSafe(m)}`);
  for (const p of t.problems) lines.push(`problem: ${terminalSafe(p)}`);
  return lines.join('\n') + '\n';
}

/**
 * "NCCL's view": per site, NCCL's own Init timings breakdown (median over occurrences of the MAX
 * over ranks, ms), or why there is none.
 */
export function ncclViewLines(t: TraceFile): string[] {
  const out: string[] = [];
  const withView = t.sites.filter((s) => s.nccl);
  if (withView.length > 0) {
    out.push("NCCL's view (its own Init timings log: MAX over ranks, median over occurrences; NCCL prints 10 ms steps):");
    for (const s of withView) {
      const where = s.file ? `${s.file.length > 48 ? '…' + s.file.slice(-47) : s.file}${s.line !== null ? `:${s.line}` : ''}` : '(unattributed)';
      const v = s.nccl!;
      out.push(`  ${terminalSafe(where)}  ${terminalSafe(v.fn ?? s.api)}: ${terminalSafe(formatView(v))}${v.join === 'order' ? ' (joined by order: NCCL prints no commId for a split child)' : ''}`);
    }
  } else if (t.ncclLog?.note) out.push(`NCCL's view: none — ${terminalSafe(t.ncclLog.note)}`);
  else if (t.ncclLog && t.ncclLog.creations === 0) out.push("NCCL's view: none — NCCL's log held no creation (NCCL older than 2.23.4 prints no Init timings)");
  return out;
}
