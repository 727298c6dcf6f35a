/**
 * `commcost plan --recovery --run FILE [--run FILE …] [--json]`: the recovery paths after one
 * rank is lost (readings/plan/recovery.ts) on the runs' figures. Prints one row per path (the
 * job's wait after the loss, the background work, the wait when the rank returns, the two waits
 * together, the in-flight work dropped), then every term with its median, p90 and the run step it
 * came from (or why it is missing), the sentences. `--json`: the plan and its sentences.
 * cli/plan.ts hands `--recovery` here; the reshape flags do not apply.
 */
import { CommcostError, errorText } from '../client/errors';
import { droppedText, planRecovery, recoveryApplies, recoverySumText, type RecoveryPath, type RecoveryPhase, type RecoveryPlan, type RecoveryTerm } from '../readings/plan/recovery';
import { recoverySentences } from '../readings/plan/recoverySentences';
import { termSourceText, type PlanRun } from '../readings/plan/terms';
import { msText, PlanInputError } from '../readings/plan/units';
import { terminalSafeLines } from './summary';


function row(p: RecoveryPath): string[] {
  const background = [...p.afterLoss.background, ...(p.onReturn?.background ?? [])];
  const bgMs = p.afterLoss.backgroundMs === undefined || (p.onReturn && p.onReturn.backgroundMs === undefined) ? undefined : p.afterLoss.backgroundMs + (p.onReturn?.backgroundMs ?? 0);
  return [
    p.name,
    recoverySumText(p.afterLoss.criticalMs, p.afterLoss.critical),
    recoverySumText(bgMs, background),
    p.onReturn ? recoverySumText(p.onReturn.criticalMs, p.onReturn.critical) : '– (full size)',
    p.cycleMs === undefined ? 'incomplete' : msText(p.cycleMs),
    droppedText(p),
    p.complete ? 'complete' : 'incomplete',
  ];
}

function table(rows: string[][]): string {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  return rows.map((r) => r.map((c, i) => c.padEnd(widths[i]!)).join('  ').trimEnd()).join('\n') + '\n';
}

/** "506 ms (p90 506 ms)  ncclCommRevoke until quiet (2 ranks) — revoke/inflight/shrink-abort/revoke (median, f.json)". */
function termLine(t: RecoveryTerm): string {
  const value = t.value === undefined ? 'missing' : `${msText(t.value)}${t.p90 !== undefined ? ` (p90 ${msText(t.p90)})` : ''}`;
  return `      ${value}  ${t.what} — ${t.value === undefined ? (t.missing?.why ?? 'no figure') : termSourceText(t)}`;
}

function phaseLines(label: string, ph: RecoveryPhase): string[] {
  const out: string[] = [];
  for (const [part, terms] of [[`${label}, the job waits`, ph.critical], [`${label}, in the background`, ph.background]] as const) {
    if (terms.length === 0) continue;
    out.push(`    ${part}:`, ...terms.map(termLine));
  }
  return out;
}

/** The recovery plan as text: header, the table, every path's terms with their steps, the sentences. */
export function formatRecovery(plan: RecoveryPlan): string {
  const h = plan.host;
  const lines: string[] = [];
  if (h.simulated) lines.push("SIMULATED: figures come from commcost's simulated NCCL, not from a measurement", '');
  // Named by the run's name (readings/runName.ts: its GPUs and count, NCCL, start; over several nodes
  // their names after it), never the host alone.
  lines.push(`recovery plan for ${h.name !== undefined ? `${h.name}${h.nodes !== undefined ? ` (${h.hostname})` : ''}` : `${h.text}${h.ncclVersion ? `, NCCL ${h.ncclVersion}` : ''}`} — runs ${h.files.join(', ')}`);
  // One rank: the one line of what the run can and cannot show (recovery.ts oneRankLine), then only
  // the full rebuilds it measured, never rows of "incomplete" for paths that need a survivor.
  const shown = plan.oneRank !== undefined ? plan.paths.filter((p) => recoveryApplies(p, h.ranks) && p.complete) : plan.paths;
  if (plan.oneRank !== undefined) lines.push(plan.oneRank, '');
  else lines.push(`one of ${h.ranks} ranks lost; every figure is of ${h.files.length > 1 ? "these runs'" : "this run's"} ${h.ranks} ranks; paths by the job's wait after the loss`, '');
  if (shown.length === 0) return lines.join('\n');
  const header = ['path', 'after the loss (waits)', 'background (all)', 'rank returns (waits)', 'both waits', 'in-flight work', 'terms'];
  lines.push(table([header, ...shown.map(row)]));
  lines.push('terms (median of each step, its p90 beside it):');
  for (const p of shown) {
    lines.push(`  ${p.name} (${p.sizes}) — ${p.how}${p.note ? ` (${p.note})` : ''}`);
    lines.push(...phaseLines('after the loss', p.afterLoss));
    if (p.onReturn) lines.push(...phaseLines('when the rank returns', p.onReturn));
    else if (p.onReturnNone) lines.push(`    when the rank returns: ${p.onReturnNone}`);
    lines.push(`    in-flight work: ${p.drops.text}`);
  }
  if (plan.oneRank !== undefined) return lines.join('\n') + '\n';
  lines.push('', ...recoverySentences(plan).map((s) => `- ${s}`), '');
  return lines.join('\n');
}

/** The reshape flags `--recovery` does not take. */
const RESHAPE_FLAGS = [
  ['shapes', '--shapes'],
  ['switchEvery', '--switch-every'],
  ['step', '--step'],
  ['kvBudget', '--kv-budget'],
  ['gpus', '--gpus'],
  ['trace', '--trace'],
] as const;

/**
 * Runs `commcost plan --recovery`: plans the recovery paths of the loaded runs and prints them.
 * @param flags the plan flags (only `json` and the reshape flags, which are refused, are read)
 * @param runs the runs, loaded and validated by the caller (cli/plan.ts)
 * @returns the exit code (0)
 * @throws CommcostError BAD_INPUT for a reshape flag, no run, or runs that cannot be combined
 */
export function recoveryCommand(flags: Partial<Record<(typeof RESHAPE_FLAGS)[number][0], unknown>> & { json?: boolean }, runs: readonly PlanRun[], out: (text: string) => void): number {
  for (const [key, flag] of RESHAPE_FLAGS) {
    if (flags[key] !== undefined) throw new CommcostError('BAD_INPUT', `${flag} plans a reshape, not a recovery`, { hint: 'give --recovery with --run (and --json) only, or plan the reshape without --recovery' });
  }
  let plan: RecoveryPlan;
  try {
    plan = planRecovery(runs);
  } catch (e) {
    if (e instanceof PlanInputError) throw new CommcostError('BAD_INPUT', e.message, { hint: e.hint });
    throw new CommcostError('INTERNAL', `planning failed: ${errorText(e)}`, { cause: e });
  }
  out(flags.json ? `${JSON.stringify({ commcostRecovery: 1, ...plan, sentences: recoverySentences(plan) }, null, 2)}\n` : terminalSafeLines(formatRecovery(plan)));
  return 0;
}
