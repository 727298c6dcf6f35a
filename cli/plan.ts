/**
 * `commcost plan --run FILE [--run FILE …] [--trace FILE] [--shapes tp4,tp2,tp1] [--switch-every 2s]
 * [--step 30ms] [--kv-budget 60GiB|0.4] [--gpus n] [--json]`: the study's reshape method on the
 * runs' figures (readings/plan/planner.ts), with a trace's observed figures preferred where it has
 * them (readings/plan/traceTerms.ts). Prints one row per strategy (critical path per switch, shares of the
 * step and the interval, prepaid, deferred, memory per GPU and its shares, break-even against the
 * on-demand rebuild), then every term with the run step it came from (or why it is missing), the
 * sentences and the pool at n GPUs. Exit 2 on bad input.
 */
import { readBoundedText } from '../client/boundedRead';
import { CommcostError, errorText } from '../client/errors';
import { MAX_INPUT_FILE_BYTES } from '../client/safeWrite';
import { validateTraceFile } from '../client/traceSchema';
import type { TraceFile } from '../protocol/trace';
import { loadRun } from '../client/resultsStore';
import { planReshape, type BreakEven, type Plan, type StrategyPlan } from '../readings/plan/planner';
import { criticalCell, deferredCell, planSentences } from '../readings/plan/sentences';
import { termSourceText, type PlanRun, type Term } from '../readings/plan/terms';
import { bytesText, msText, parseBudget, parseDuration, parseShapes, percentText, PlanInputError, stepShareText, type Budget } from '../readings/plan/units';
import { recoveryCommand } from './planRecovery';
import { terminalSafeLines } from './summary';

/** The flags of `commcost plan` as commander gives them (strings, `run` repeatable). */
export interface PlanFlags {
  run?: string[];
  shapes?: string;
  switchEvery?: string;
  step?: string;
  kvBudget?: string;
  gpus?: string;
  trace?: string;
  json?: boolean;
  /** `--recovery`: the recovery paths after a lost rank instead of a reshape (cli/planRecovery.ts). */
  recovery?: boolean;
}

/** A planner input error as the CLI's BAD_INPUT (exit 2), with where and what to do. */
function badInput(e: PlanInputError): CommcostError {
  return new CommcostError('BAD_INPUT', e.message, { hint: e.hint });
}

/** Parses the flags (durations, sizes, shapes, GPU count) into planner inputs. @throws CommcostError BAD_INPUT */
export function planInputsFromFlags(f: PlanFlags): { shapes?: number[]; switchEveryMs?: number; stepMs?: number; budget?: Budget; gpus?: number } {
  try {
    let gpus: number | undefined;
    if (f.gpus !== undefined) {
      gpus = /^\s*\d+\s*$/.test(f.gpus) ? Number(f.gpus) : NaN;
      if (!(gpus >= 1 && gpus <= 4096)) throw new PlanInputError(`--gpus ${JSON.stringify(f.gpus)} is not a GPU count`, '--gpus', 'give a whole number from 1 to 4096, e.g. --gpus 16');
    }
    return {
      ...(f.shapes !== undefined ? { shapes: parseShapes(f.shapes, '--shapes') } : {}),
      ...(f.switchEvery !== undefined ? { switchEveryMs: parseDuration(f.switchEvery, '--switch-every') } : {}),
      ...(f.step !== undefined ? { stepMs: parseDuration(f.step, '--step') } : {}),
      ...(f.kvBudget !== undefined ? { budget: parseBudget(f.kvBudget, '--kv-budget') } : {}),
      ...(gpus !== undefined ? { gpus } : {}),
    };
  } catch (e) {
    if (e instanceof PlanInputError) throw badInput(e);
    throw e;
  }
}

const cell = (v: number | undefined, text: (x: number) => string): string => (v === undefined ? 'missing' : text(v));

/** "after 3 switches (6 s)", "ahead from the first switch", … against the on-demand rebuild. */
export function breakEvenText(b: BreakEven | undefined): string {
  if (!b) return '–';
  switch (b.kind) {
    case 'ahead':
      return 'ahead from the first switch';
    case 'behind':
      return 'never ahead';
    case 'same':
      return 'the same';
    case 'after':
      return `ahead after ${b.switches} switch${b.switches === 1 ? '' : 'es'}${b.afterMs !== undefined ? ` (${msText(b.afterMs)})` : ''}`;
    case 'until':
      return `ahead for ${Math.max(0, (b.switches ?? 1) - 1)} switch${b.switches === 2 ? '' : 'es'}, then behind`;
  }
}

function row(plan: Plan, s: StrategyPlan): string[] {
  const shares = (v: number | undefined) => (v === undefined ? '–' : percentText(v));
  // A switch to a shape the run did not time is "not measured" in its cell (sentences.ts criticalCell), never another shape's figure.
  return [
    s.name,
    criticalCell(s),
    plan.stepMs !== undefined ? (s.stepShare === undefined ? '–' : stepShareText(s.stepShare)) : '–',
    plan.switchEveryMs !== undefined ? shares(s.amortisedShare) : '–',
    cell(s.prepaidMs, msText),
    deferredCell(s),
    cell(s.memoryBytes, bytesText),
    shares(s.memoryShareOfGpu),
    plan.budgetBytes !== undefined ? shares(s.memoryShareOfBudget) : '–',
    s.id === 'lazy' ? '(reference)' : breakEvenText(s.breakEven.find((b) => b.against === 'lazy')),
  ];
}

function table(rows: string[][]): string {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  return rows.map((r) => r.map((c, i) => c.padEnd(widths[i]!)).join('  ').trimEnd()).join('\n') + '\n';
}

function termLine(t: Term): string {
  const times = t.times !== undefined && t.times !== 1 ? ` × ${t.times}` : '';
  const value = t.value === undefined ? 'missing' : t.unit === 'ms' ? msText(t.value) : bytesText(t.value);
  return `      ${value}${times}  ${t.what} — ${termSourceText(t)}`;
}

/** The plan as text: header, the table, every strategy's terms with their steps, the sentences, the pool at n GPUs. */
export function formatPlan(plan: Plan): string {
  const h = plan.host;
  const lines: string[] = [];
  if (h.simulated) lines.push("SIMULATED: figures come from commcost's simulated NCCL, not from a measurement", '');
  // Named by the run's name (readings/runName.ts: its GPUs and count, NCCL, start; over several
  // nodes their names after it), never the host alone; a trace alone by its largest communicator and its host.
  const named = h.name !== undefined ? `${h.name}${h.nodes !== undefined ? ` (${h.hostname})` : ''}` : `${h.text} (${h.hostname})${h.ncclVersion ? `, NCCL ${h.ncclVersion}` : ''}`;
  lines.push(`plan for ${named} — ${h.files.length > 0 ? `runs ${h.files.join(', ')}` : 'no run: only the trace\'s figures (every other term is missing)'}`);
  const inputs = [
    `shapes ${plan.shapes.map((s) => `TP${s}`).join(', ')}`,
    plan.switchEveryMs !== undefined ? `a switch every ${msText(plan.switchEveryMs)}` : 'no --switch-every (no amortised share)',
    plan.stepMs !== undefined ? `a ${msText(plan.stepMs)} step` : 'no --step (no share of a step)',
    plan.budgetBytes !== undefined
      ? `budget ${bytesText(plan.budgetBytes)} per GPU${plan.budgetGiven && 'fraction' in plan.budgetGiven ? ` (${plan.budgetGiven.fraction} of the GPU's ${bytesText(h.gpuBytes ?? 0)})` : ''}`
      : 'no --kv-budget (no share of a budget)',
  ];
  lines.push(inputs.join(' · '), '');
  const t = plan.trace;
  if (t) {
    lines.push(`trace ${t.file} (${t.host}${t.ncclVersion ? `, NCCL ${t.ncclVersion}` : ''}${t.simulated ? ', SIMULATED' : ''}):`);
    if (t.hostNote) lines.push(`  note: ${t.hostNote}`);
    if (plan.stepMs === undefined) lines.push('  a trace has no step time: give the step with --step (e.g. --step 30ms) for the share of a step');
    if (t.replaced.length === 0) lines.push('  no figure of the trace matches a term of the plan (same API and communicator size)');
    for (const r of t.replaced) {
      const n = r.strategies.length;
      lines.push(`  observed, preferred over the run's figure: ${r.what} ← ${r.site} (${r.phase}), in ${n === 1 ? r.strategies[0] : `${n} strategies`}`);
    }
    lines.push(...t.unused.map((u) => `  not used: ${u}`), '');
  }
  // One shape: nothing to switch between, said in one line (the first sentence, with the one
  // communicator's figures), never a table of "no switch" and "missing" (planner.ts noSwitchWhy).
  if (plan.noSwitch !== undefined) {
    lines.push(...planSentences(plan).map((s) => `- ${s}`), '');
    return lines.join('\n');
  }
  const header = ['strategy', 'critical path per switch', 'of a step', 'amortised', 'prepaid', 'deferred per switch', 'memory/GPU', 'of GPU', 'of budget', 'break-even vs on-demand'];
  lines.push(table([header, ...plan.strategies.map((s) => row(plan, s))]));
  if (plan.strategies.some((s) => s.perTarget?.some((x) => x.ms === undefined || x.deferredWhy !== undefined))) {
    lines.push('a switch to a shape the run did not time is "not measured", one whose step needs a communicator the strategy already destroyed "not priced" (why: its term below); a strategy with one has no figure per switch on average (critical path or deferred), and no break-even', '');
  }
  lines.push('terms (median of each step; memory: median of the per-GPU MAX):');
  for (const s of plan.strategies) {
    lines.push(`  ${s.name} — ${s.how}${s.note ? ` (${s.note})` : ''}`);
    for (const [part, terms] of [['critical path', s.critical], ['prepaid', s.prepaid], ['deferred', s.deferred], ['memory per GPU', s.memory]] as const) {
      if (terms.length === 0) continue;
      lines.push(`    ${part}:`, ...terms.map(termLine));
    }
  }
  lines.push('', ...planSentences(plan).map((s) => `- ${s}`), '');
  return lines.join('\n');
}

/**
 * Reads and validates a trace file of `commcost trace`: a regular file of at most 256 MiB
 * (MAX_INPUT_FILE_BYTES; a FIFO, `/dev/zero` or a link to one is refused before a byte is read).
 * @throws CommcostError BAD_INPUT when it cannot be read, is not a regular file, is too large or is
 *   not JSON; BAD_RUN_FILE when it is not a trace (validateTraceFile)
 */
export async function loadTrace(file: string): Promise<TraceFile> {
  const read = await readBoundedText(file, { maxBytes: MAX_INPUT_FILE_BYTES, followLinks: true });
  if (!read.ok) {
    throw new CommcostError('BAD_INPUT', `cannot read the trace ${file}: ${read.reason}`, { hint: 'give a trace saved by commcost trace (.commcost/traces/<name>.json)' });
  }
  let data: unknown;
  try {
    data = JSON.parse(read.text);
  } catch (e) {
    throw new CommcostError('BAD_INPUT', `the trace ${file} is not JSON: ${errorText(e)}`, { hint: 'give a trace saved by commcost trace (.commcost/traces/<name>.json)' });
  }
  return validateTraceFile(data, file);
}

/**
 * Runs `commcost plan`: loads the runs (loadRun validates each), plans, prints.
 * @returns the exit code (0)
 * @throws CommcostError BAD_INPUT (no --run and no --trace, bad flags, runs that cannot be combined, an unreadable trace), BAD_RUN_FILE
 */
export async function planCommand(flags: PlanFlags, out: (text: string) => void): Promise<number> {
  const files = flags.run ?? [];
  if (flags.recovery) {
    const loaded: PlanRun[] = [];
    for (const file of files) loaded.push({ file, run: await loadRun(file) });
    return recoveryCommand(flags, loaded, out);
  }
  if (files.length === 0 && flags.trace === undefined) {
    throw new CommcostError('BAD_INPUT', 'commcost plan needs a run or a trace', { hint: 'give one or more saved runs of one host: --run .commcost/runs/<run>.json, and/or a trace: --trace .commcost/traces/<name>.json' });
  }
  const inputs = planInputsFromFlags(flags);
  const runs: PlanRun[] = [];
  for (const file of files) runs.push({ file, run: await loadRun(file) });
  const trace = flags.trace !== undefined ? { file: flags.trace, trace: await loadTrace(flags.trace) } : undefined;
  let plan: Plan;
  try {
    plan = planReshape(runs, { ...inputs, ...(trace ? { trace } : {}) });
  } catch (e) {
    if (e instanceof PlanInputError) throw badInput(e);
    throw new CommcostError('INTERNAL', `planning failed: ${errorText(e)}`, { cause: e });
  }
  out(flags.json ? `${JSON.stringify({ commcostPlan: 1, ...plan, sentences: planSentences(plan) }, null, 2)}\n` : terminalSafeLines(formatPlan(plan)));
  return 0;
}
