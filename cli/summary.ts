/**
 * The CLI's text output: a header (host, GPUs, NCCL) and a table per experiment / variant / step
 * with median, p90, min, max (ms) and n, NCCL's view of a cold start, plus memory lines (with
 * NCCL's own count beside the free-memory delta). Pure: run in, text out.
 *
 * Run files are untrusted: every string (and object key) taken from a run is passed through
 * {@link terminalSafe} before it is printed, so a file cannot send escape sequences to the terminal.
 */
import type { StepStats, VariantSummary } from '../protocol/events';
import { isSimulatedRun, memoryPointLabel, memStatsNote, type RunFile } from '../protocol/runFile';
import { compareRuns, differenceRuleText, differenceWords, formatRatio, rankCountNote, simulatedMixNote } from '../protocol/compare';
import { deriveVerdict, shrinkAbortOutcomes } from '../readings/verdict';
import { fieldCaseLabel } from '../readings/verdict/fieldCases';
import { curveTables, manyCommsCurve } from '../readings/manyComms';
import { nodeGpus, nodesText } from '../protocol/runNodes';
import { runName } from '../readings/runName';
import { errorAdvice } from '../readings/failureAdvice';
import { releaseSkewLines, wallSplitLines } from './wallSplit';
import { terminalSafe } from './terminalText';

/** Shown whenever a run was measured on the simulated NCCL. */
export const SIMULATED_BANNER = 'SIMULATED NCCL — these figures are not measurements';

// Kept here too: the CLI's text modules import them from summary.ts.
export { terminalSafe, terminalSafeLines } from './terminalText';

/**
 * A deep copy of `value` with every string and object key passed through {@link terminalSafe}.
 * An array of numbers only (a run's samples: 100,000 a step in a large run) holds nothing to make
 * safe and is shared, not copied: the copy is to be read, never changed.
 */
export function sanitizeForTerminal<T>(value: T): T {
  const walk = (v: unknown): unknown => {
    if (typeof v === 'string') return terminalSafe(v);
    if (Array.isArray(v)) return v.every((x) => typeof x === 'number') ? v : v.map(walk);
    if (v !== null && typeof v === 'object') {
      const out: Record<string, unknown> = {};
      for (const [k, x] of Object.entries(v)) out[terminalSafe(k)] = walk(x);
      return out;
    }
    return v;
  };
  return walk(value) as T;
}

const KIND_ORDER = ['call', 'first', 'toFirst', 'steady', 'teardown'];
const KIND_LABEL: Record<string, string> = {
  call: 'call',
  first: 'first collective',
  toFirst: 'total (to first collective)',
  steady: 'steady',
  teardown: 'teardown',
};

/** A table cell in ms: "176.3", "17.41", "0.280", "0.00038" (never "0.000" for a figure above 0), "0". */
function ms(x: number): string {
  if (x === 0) return '0';
  if (Math.abs(x) < 0.001) return String(Number(x.toPrecision(2)));
  return x >= 100 ? x.toFixed(1) : x >= 1 ? x.toFixed(2) : x.toFixed(3);
}

/** bytes → "484.0 MiB"; "0 MiB" for no bytes, never "0.0 MiB" (a figure that reads no change). */
function mib(bytes: number): string {
  return `${mibCell(bytes)} MiB`;
}

/** bytes → MiB with one decimal ("484.0"), "0" for 0, "0.04" below 0.05 MiB (never "0.0" for a figure above 0). */
function mibCell(bytes: number): string {
  const m = bytes / (1 << 20);
  if (m === 0) return '0';
  return Math.abs(m) < 0.05 ? String(Number(m.toPrecision(1))) : m.toFixed(1);
}

/** Pads rows into aligned columns (first column left-aligned, the others right-aligned). */
export function formatTable(rows: string[][]): string {
  const widths: number[] = [];
  for (const r of rows) r.forEach((c, i) => (widths[i] = Math.max(widths[i] ?? 0, c.length)));
  return rows
    .map((r) => r.map((c, i) => (i === 0 ? c.padEnd(widths[i] ?? 0) : c.padStart(widths[i] ?? 0))).join('  ').trimEnd())
    .join('\n');
}

/**
 * One line: host, GPU count and model ("simulated, 2 ranks" for a simulated run: the simulator's
 * device name is no GPU model), NCCL version and path (or what is unknown). A run over
 * several nodes names each node with its GPUs and ranks (protocol/runNodes.ts, as the results
 * page and the HTML report do; the stamp is of one of them, said so).
 * A run without a stamp but with figures says the file has none (GPUs and NCCL version not
 * recorded); without figures either, that the agent stopped before its plan.
 */
export function headerLine(run: RunFile): string {
  const s = run.stamp;
  const sim = isSimulatedRun(run) ? ' · SIMULATED NCCL' : '';
  const ranks = `${run.ranks} rank${run.ranks === 1 ? '' : 's'}`;
  const each = nodesText(run);
  if (!s) {
    const measured = run.experiments.some((e) => e.variants.length > 0 || Object.keys(e.samples ?? {}).length > 0);
    // A run over several nodes still names them: the nodes come from the coordinator's plan, not the stamp.
    const where = each !== undefined ? `${run.nodes!.length} nodes from ${run.host}: ${each}` : `host ${run.host}`;
    return measured
      ? `${where}: no environment stamp in this file (GPUs and NCCL version not recorded) · ${ranks}${sim}`
      : `${where}: no environment stamp (the agent stopped before its plan)${sim}`;
  }
  const nodeGpuList = nodeGpus(run);
  // A simulated run's devices are the simulator's: its stamp's "Simulated GPU" is no GPU model.
  const simulatedGpus = sim ? `simulated, ${ranks}` : undefined;
  if (each !== undefined && nodeGpuList !== undefined) {
    const gpus = nodeGpuList.length;
    const names = [...new Set(nodeGpuList)].join(', ') || 'no GPU';
    return `${run.nodes!.length} nodes from ${run.host}: ${each} · ${simulatedGpus ?? `${gpus} GPU${gpus === 1 ? '' : 's'} ${names} · ${ranks}`} · NCCL ${s.ncclVersion} ${s.ncclPath} (stamp of ${s.hostname})${sim}`;
  }
  const names = [...new Set(s.gpus.map((g) => g.name))].join(', ') || 'no GPU';
  return `host ${run.host} (${s.hostname}) · ${simulatedGpus ?? `${s.gpus.length} GPU${s.gpus.length === 1 ? '' : 's'} ${names} · ${ranks}`} · NCCL ${s.ncclVersion} ${s.ncclPath}${sim}`;
}

function statRow(label: string, st: StepStats): string[] {
  return [label, ms(st.median), ms(st.p90), ms(st.min), ms(st.max), String(st.n)];
}

function variantRows(experiment: string, v: VariantSummary): { rows: string[][]; memory: string[] } {
  const steps = [...v.steps].sort((a, b) => KIND_ORDER.indexOf(a.kind) - KIND_ORDER.indexOf(b.kind));
  const rows = steps.map((s) => statRow(`${experiment} ${v.variant} · ${KIND_LABEL[s.kind] ?? s.kind}: ${s.label}`, s.stats));
  const points = [...new Set([...Object.keys(v.memoryBytes ?? {}), ...Object.keys(v.memStats ?? {})])];
  const memory = points.map((point) => {
    const b = v.memoryBytes?.[point];
    const m = v.memStats?.[point];
    const delta = b === undefined ? 'no free-memory figure' : `${mib(b)} per GPU (median of the per-GPU max)`;
    const count = m ? `; NCCL's count (MemStats): ${mib(m.totalBytes)} (suspendable ${mib(m.suspendableBytes)}, persistent ${mib(m.persistentBytes)})` : '';
    return `  memory ${experiment} ${v.variant} ${memoryPointLabel(point)}: ${delta}${count}`;
  });
  return { rows, memory };
}

/** NCCL's parts in the order its Init timings line prints them; other parts follow as found. */
const NCCL_PARTS = ['total', 'kernels', 'alloc', 'bootstrap', 'allgathers', 'topo', 'graphs', 'connections', 'rest'];

/**
 * A variant's ratios (medians first, then the ratio) and NCCL's view of its creations (`ncclInit`:
 * its Init timings lines, ms, each part the MAX over ranks, median over iterations; NCCL prints
 * seconds with two decimals, so 10 ms steps) as text lines; why the view is missing when it is.
 * Empty when the variant has neither. `v` must already be terminal-safe.
 */
export function ncclViewLines(experiment: string, v: VariantSummary): string[] {
  const out: string[] = [];
  const ratios = (v.ratios ?? []).filter((r) => Number.isFinite(r.value));
  if (ratios.length > 0) out.push(`  ${experiment} ${v.variant} · ratios of the medians: ${ratios.map((r) => `${r.label} ${formatRatio(r.value)}`).join('; ')}`);
  const view = v.ncclInit;
  if (!view) return out;
  const creations = Object.keys(view.medians ?? {});
  if (creations.length > 0) {
    const parts = NCCL_PARTS.filter((p) => creations.some((c) => view.medians[c]?.[p] !== undefined));
    for (const c of creations) for (const p of Object.keys(view.medians[c] ?? {})) if (!parts.includes(p)) parts.push(p);
    out.push(`  ${experiment} ${v.variant} · NCCL's view (Init timings, ms; 10 ms resolution; MAX over ranks, median over iterations):`);
    const rows = [
      ['part', ...creations],
      ...parts.map((p) => [p, ...creations.map((c) => (view.medians[c]?.[p] === undefined ? '–' : String(Math.round(view.medians[c]![p]!))))]),
      ['iterations read', ...creations.map((c) => String(view.iterations?.[c] ?? 0))],
    ];
    out.push(...formatTable(rows).split('\n').map((l) => `    ${l}`));
  }
  if (view.malformedLines > 0) out.push(`    ${view.malformedLines} unreadable Init timings line${view.malformedLines === 1 ? '' : 's'} skipped`);
  if (view.note) out.push(`    NCCL's view ${creations.length > 0 ? 'is partial' : 'is missing'}: ${view.note}`);
  else if (creations.length === 0) out.push(`  ${experiment} ${v.variant} · NCCL's view (Init timings) is missing: no line was read`);
  return out;
}

/**
 * Field case C5 as a table, headed by its label named in words as the verdict names it
 * ('Field case C5, "shrink with abort, then destroy, hangs" (shrink-abort) on NCCL 2.28.9'), as it
 * comes before the verdict: one row per combination of the shrink-abort experiment (shrink flag,
 * the survivors' release of the parent, the excluded rank's) with its outcome on this run's NCCL:
 * timed (medians, ms), stopped by the hang guard (its message), failed, or not run. Empty when
 * the run did not plan the experiment. `run` must already be terminal-safe.
 */
export function formatShrinkAbortTable(run: RunFile): string[] {
  const outcomes = shrinkAbortOutcomes(run);
  if (!outcomes) return [];
  const rows = [['shrink flag', 'survivors release the parent', 'excluded rank', 'outcome'], ...outcomes.map((o) => [o.flag, o.release, o.excluded, o.text])];
  const widths = [0, 1, 2].map((i) => Math.max(...rows.map((r) => r[i]!.length)));
  return [
    `${fieldCaseLabel('C5', 'shrink-abort')} on ${run.stamp?.ncclVersion ? `NCCL ${run.stamp.ncclVersion}` : 'NCCL version not recorded'}: after ncclCommShrink drops the last rank, each way to release the parent:`,
    ...rows.map((r) => `  ${r.map((c, i) => (i < 3 ? c.padEnd(widths[i]!) : c)).join('  ')}`),
  ];
}

/** What the summary shows beyond a user's first screen. */
export interface SummaryOptions {
  /**
   * `--verbose`: also commcost's own diagnostics — where the wall time went and the efficiency
   * targets (wallSplit.ts), the barrier's release skew. They say how well commcost ran, not what
   * the communicators cost, so they stay off the first screen otherwise.
   */
  verbose?: boolean;
}

/**
 * The whole summary: banner when simulated (first and last line; see isSimulatedRun), the run's
 * name (readings/runName.ts: "1× H200 · NCCL 2.28.9 · 2026-12-01 23:37 UTC"), header, status,
 * with `options.verbose` the wall split and barrier skew ({@link SummaryOptions}), the step table (ms), the ratios and NCCL's view of a cold start (Init timings), memory
 * lines (the free-memory delta and NCCL's count, ncclCommMemStats, or why the run has none),
 * skipped experiments, errors, the C5 table when the run has it, and the verdict. Every string
 * of the run is made terminal-safe first.
 */
export function formatSummary(untrusted: RunFile, options: SummaryOptions = {}): string {
  const simulated = isSimulatedRun(untrusted);
  // The verdict is derived from the figures, then escaped like everything else.
  const run = sanitizeForTerminal({ ...untrusted, simulated });
  const verdict = sanitizeForTerminal(deriveVerdict({ ...untrusted, simulated }));
  const out: string[] = [];
  if (simulated) out.push(`*** ${SIMULATED_BANNER} ***`);
  out.push(terminalSafe(runName(untrusted)));
  out.push(headerLine(run));
  out.push(`run ${run.id}: ${run.status}${run.wallMs !== undefined ? ` in ${(run.wallMs / 1000).toFixed(1)} s` : ''}`);
  if (options.verbose) out.push(...wallSplitLines(run), ...releaseSkewLines(run));
  const rows: string[][] = [['experiment variant · step', 'median ms', 'p90 ms', 'min ms', 'max ms', 'n']];
  const memory: string[] = [];
  const views: string[] = [];
  for (const e of run.experiments) {
    if (e.variants.length === 0 && e.state !== 'finished') {
      const n = Object.values(e.samples).reduce((a, v) => a + (Object.values(v)[0]?.length ?? 0), 0);
      rows.push([`${e.experiment}: ${e.state}, ${n} recorded iteration${n === 1 ? '' : 's'} without summary`, '', '', '', '', '']);
    }
    for (const v of e.variants) {
      const r = variantRows(e.experiment, v);
      rows.push(...r.rows);
      // many-comms' memory points are its curve, shown as a table below (manyCommsLines).
      if (e.experiment !== 'many-comms') memory.push(...r.memory);
      views.push(...ncclViewLines(e.experiment, v));
    }
  }
  if (rows.length > 1) out.push('', formatTable(rows));
  if (views.length > 0) out.push('', ...views);
  if (memory.length > 0) out.push('', ...memory);
  const many = manyCommsLines(run);
  if (many.length > 0) out.push('', ...many);
  // Why NCCL's own count of its memory is missing (read from the run's stamp).
  const note = memStatsNote(run);
  if (memory.length + many.length > 0 && note && !run.experiments.some((e) => e.variants.some((v) => Object.keys(v.memStats ?? {}).length > 0))) {
    out.push(`  NCCL's count (MemStats): ${note}`);
  }
  for (const s of run.skipped) out.push(`skipped ${s.experiment}${s.variant ? ` ${s.variant}` : ''}: ${s.reason}`);
  // A run that ended without measuring anything says so, rather than only "complete".
  if (rows.length === 1 && run.skipped.length > 0 && (run.errors ?? []).length === 0) {
    out.push('nothing was measured: every experiment asked for was skipped on this host (reasons above)');
  }
  const simulatedRun = isSimulatedRun(run);
  for (const e of run.errors) {
    const where = Object.entries(e.where).map(([k, v]) => `${k} ${String(v)}`).join(', ');
    // A hang that is a field case's result is its outcome, not an error.
    const head = e.expected ? `expected hang${where ? ` (${where})` : ''}` : `error ${e.code}${where ? ` (${where})` : ''}`;
    // The advice follows from what failed and the run's regime (readings/failureAdvice.ts).
    const advice = errorAdvice(e, simulatedRun);
    out.push(`${head}: ${e.message}${e.detail ? ` — ${e.detail}` : ''}${advice ? `\n  ${e.expected ? 'why' : 'hint'}: ${advice}` : ''}`);
  }
  const c5 = formatShrinkAbortTable(run);
  if (c5.length > 0) out.push('', ...c5);
  // The C5 table above already lists each combination; the verdict keeps its overall line.
  const shown = verdict.filter((l) => !l.id.startsWith('shrink-abort:'));
  if (shown.length > 0) out.push('', 'verdict for this host:', ...shown.map((l) => `  • ${l.text}`));
  if (simulated) out.push(`*** ${SIMULATED_BANNER} ***`);
  return out.join('\n') + '\n';
}

/**
 * The many-comms curve as text tables (readings/manyComms.ts `curveTables`): memory per GPU after
 * N communicators per variant, NCCL's count where the run has it, the N-th creation's time; each
 * variant's variables named under the tables. Empty when the run has no such figures. `run` must
 * already be terminal-safe.
 */
export function manyCommsLines(run: RunFile): string[] {
  const curve = manyCommsCurve(run);
  if (!curve) return [];
  const out: string[] = [];
  for (const t of curveTables(curve)) {
    out.push(t.title + ':', ...formatTable(t.rows).split('\n').map((l) => `  ${l}`));
    for (const n of t.notes ?? []) out.push(`  note: ${n}`);
  }
  const envs = curve.variants.filter((v) => v.env).map((v) => `${v.variant}: ${Object.entries(v.env!).map(([k, x]) => `${k}=${x}`).join(' ')}`);
  if (envs.length > 0) out.push(`  in rank processes of their own: ${envs.join('; ')}`);
  return out;
}

/** `text` in lines of at most `width` characters, broken at spaces. */
function wrapText(text: string, width: number): string[] {
  const lines: string[] = [];
  let line = '';
  for (const word of text.split(' ')) {
    if (line && line.length + 1 + word.length > width) {
      lines.push(line);
      line = word;
    } else line = line ? `${line} ${word}` : word;
  }
  if (line) lines.push(line);
  return lines;
}

/**
 * The comparison of several runs as text: a legend (key = label: host · NCCL · differing env,
 * SIMULATED when so), then per experiment / variant / step the median (ms) of each run and, for
 * every run after the first, the ratio of its median to the first run's, followed by "beyond
 * spread" when the difference is beyond the spread of both runs' samples, "too few samples" or
 * "no spread" when that cannot be told (protocol/compare.ts `judgeDifference`; the rule is printed
 * under the table). The SIMULATED banner comes first and last when any run is simulated. Every
 * string from the runs is terminal-safe.
 */
export function formatComparison(untrusted: readonly RunFile[]): string {
  const c = sanitizeForTerminal(compareRuns(untrusted));
  const out: string[] = [];
  if (c.anySimulated) out.push(`*** ${SIMULATED_BANNER} (in the runs marked SIMULATED) ***`);
  out.push(`comparison of ${c.runs.length} runs (ratio = median / median of ${c.runs[0]?.key ?? 'A'}):`);
  for (const r of c.runs) out.push(`  ${r.key} = ${r.label} (run ${r.id}, ${r.status})`);
  const rankNote = rankCountNote(c.runs);
  if (rankNote) out.push(`  ${rankNote}`);
  const simNote = simulatedMixNote(c.runs);
  if (simNote) out.push(`  ${simNote}`);
  const head = ['experiment variant · step'];
  c.runs.forEach((r, i) => {
    head.push(`${r.key} median ms`);
    if (i > 0) head.push(`${r.key}/${c.runs[0]!.key}`);
  });
  const rows: string[][] = [head];
  for (const e of c.experiments) {
    for (const v of e.variants) {
      for (const s of v.steps) {
        const row = [`${e.experiment} ${v.variant} · ${s.kind ? `${KIND_LABEL[s.kind] ?? s.kind}: ` : ''}${s.label}`];
        s.cells.forEach((cell, i) => {
          row.push(cell && Number.isFinite(cell.median) ? ms(cell.median) : '–');
          if (i > 0) {
            const words = cell?.ratio !== undefined ? differenceWords(cell.difference) : '';
            row.push(`${formatRatio(cell?.ratio)}${words ? ` ${words}` : ''}`);
          }
        });
        rows.push(row);
      }
      for (const m of v.memory) {
        const row = [`${e.experiment} ${v.variant} · memory ${memoryPointLabel(m.point)} (MiB per GPU)`];
        m.bytes.forEach((b, i) => {
          row.push(b === null ? '–' : mibCell(b));
          if (i > 0) row.push(formatRatio(m.ratio[i]));
        });
        rows.push(row);
      }
    }
  }
  if (rows.length > 1) out.push('', formatTable(rows), '', ...wrapText(differenceRuleText(), 100));
  else out.push('', 'no experiment figures to compare');
  if (c.anySimulated) out.push(`*** ${SIMULATED_BANNER} (in the runs marked SIMULATED) ***`);
  return out.join('\n') + '\n';
}
