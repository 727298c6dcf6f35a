/**
 * The CLI's text output: a header (host, GPUs, NCCL) and a table per experiment / variant / step
 * with median, p90, min, max (ms) and n, plus memory lines. Pure: run in, text out.
 */
import type { StepStats, VariantSummary } from '../protocol/events';
import type { RunFile } from '../protocol/runFile';
import { deriveVerdict } from '../client/verdict';

/** Shown whenever a run was measured on the simulated NCCL. */
export const SIMULATED_BANNER = 'SIMULATED NCCL — these figures are not measurements';

const KIND_ORDER = ['call', 'first', 'toFirst', 'steady', 'teardown'];
const KIND_LABEL: Record<string, string> = {
  call: 'call',
  first: 'first collective',
  toFirst: 'total (to first collective)',
  steady: 'steady',
  teardown: 'teardown',
};

function ms(x: number): string {
  return x >= 100 ? x.toFixed(1) : x >= 1 ? x.toFixed(2) : x.toFixed(3);
}

function mib(bytes: number): string {
  return `${(bytes / (1 << 20)).toFixed(1)} MiB`;
}

/** Pads rows into aligned columns (first column left-aligned, the others right-aligned). */
export function formatTable(rows: string[][]): string {
  const widths: number[] = [];
  for (const r of rows) r.forEach((c, i) => (widths[i] = Math.max(widths[i] ?? 0, c.length)));
  return rows
    .map((r) => r.map((c, i) => (i === 0 ? c.padEnd(widths[i] ?? 0) : c.padStart(widths[i] ?? 0))).join('  ').trimEnd())
    .join('\n');
}

/** One line: host, GPU count and model, NCCL version and path (or what is unknown yet). */
export function headerLine(run: RunFile): string {
  const s = run.stamp;
  if (!s) return `host ${run.host}: no environment stamp (the agent stopped before its plan)`;
  const names = [...new Set(s.gpus.map((g) => g.name))].join(', ') || 'no GPU';
  return `host ${run.host} (${s.hostname}) · ${s.gpus.length} GPU${s.gpus.length === 1 ? '' : 's'} ${names} · ${run.ranks} ranks · NCCL ${s.ncclVersion} ${s.ncclPath}`;
}

function statRow(label: string, st: StepStats): string[] {
  return [label, ms(st.median), ms(st.p90), ms(st.min), ms(st.max), String(st.n)];
}

function variantRows(experiment: string, v: VariantSummary): { rows: string[][]; memory: string[] } {
  const steps = [...v.steps].sort((a, b) => KIND_ORDER.indexOf(a.kind) - KIND_ORDER.indexOf(b.kind));
  const rows = steps.map((s) => statRow(`${experiment} ${v.variant} · ${KIND_LABEL[s.kind] ?? s.kind}: ${s.label}`, s.stats));
  const memory = Object.entries(v.memoryBytes ?? {}).map(([point, b]) => `  memory ${experiment} ${v.variant} ${point}: ${mib(b)} per GPU (median of the per-GPU max)`);
  return { rows, memory };
}

/**
 * The whole summary: banner when simulated, header, status, the step table (ms), memory lines,
 * skipped experiments and errors.
 */
export function formatSummary(run: RunFile): string {
  const out: string[] = [];
  if (run.simulated) out.push(`*** ${SIMULATED_BANNER} ***`);
  out.push(headerLine(run));
  out.push(`run ${run.id}: ${run.status}${run.wallMs !== undefined ? ` in ${(run.wallMs / 1000).toFixed(1)} s` : ''}`);
  const rows: string[][] = [['experiment variant · step', 'median ms', 'p90 ms', 'min ms', 'max ms', 'n']];
  const memory: string[] = [];
  for (const e of run.experiments) {
    if (e.variants.length === 0 && e.state !== 'finished') {
      const n = Object.values(e.samples).reduce((a, v) => a + (Object.values(v)[0]?.length ?? 0), 0);
      rows.push([`${e.experiment}: ${e.state}, ${n} recorded iteration${n === 1 ? '' : 's'} without summary`, '', '', '', '', '']);
    }
    for (const v of e.variants) {
      const r = variantRows(e.experiment, v);
      rows.push(...r.rows);
      memory.push(...r.memory);
    }
  }
  if (rows.length > 1) out.push('', formatTable(rows));
  if (memory.length > 0) out.push('', ...memory);
  for (const s of run.skipped) out.push(`skipped ${s.experiment}${s.variant ? ` ${s.variant}` : ''}: ${s.reason}`);
  for (const e of run.errors) {
    const where = Object.entries(e.where).map(([k, v]) => `${k} ${String(v)}`).join(', ');
    out.push(`error ${e.code}${where ? ` (${where})` : ''}: ${e.message}${e.detail ? ` — ${e.detail}` : ''}${e.hint ? `\n  hint: ${e.hint}` : ''}`);
  }
  const verdict = deriveVerdict(run);
  if (verdict.length > 0) out.push('', 'verdict for this host:', ...verdict.map((l) => `  • ${l.text}`));
  if (run.simulated) out.push(`*** ${SIMULATED_BANNER} ***`);
  return out.join('\n') + '\n';
}
