/**
 * The recovery plan in sentences (readings/plan/recovery.ts), each chosen by the figures it
 * states: the paths by the job's wait after the loss, revoke + shrink against abort + re-init with
 * and without the grow back, the term that dominates a path (only where the run's figures show it
 * is more than half), the drop check as measured, the run's rank count, and what is incomplete and
 * why. Nothing here states a belief about NCCL: only the run's sums and shares. Pure.
 */
import type { RecoveryPath, RecoveryPlan, RecoveryTerm } from './recovery';
import { msText, percentText } from './units';

/** "on this host (2× NVIDIA H200, NCCL 2.30.7)", or the simulated run said first (as planWhere). */
export function recoveryWhere(plan: RecoveryPlan): string {
  const h = plan.host;
  const what = `${h.text}${h.ncclVersion ? `, NCCL ${h.ncclVersion}` : ''}`;
  return h.simulated ? `SIMULATED — in this simulated run (${what}; commcost's simulated NCCL, not a measurement)` : `on ${h.nodes !== undefined ? h.hostname : 'this host'} (${what})`;
}

const ranks = (n: number): string => `${n} rank${n === 1 ? '' : 's'}`;
const terms = (list: readonly RecoveryTerm[]): string => list.map((t) => `${t.what}: ${msText(t.value!)}`).join(' + ');

/** The first missing term of a path in words: "ncclCommGrow 1 → 2 ranks (not measured in this run: …)". */
export function recoveryMissingText(p: RecoveryPath): string {
  const t = p.missing[0];
  return t ? `${t.what} (${t.missing?.why ?? 'no figure'})` : '';
}

/** The headline: the paths by the job's wait after the loss, and those this run cannot complete. */
export function recoveryHeadline(plan: RecoveryPlan): string {
  const n = plan.host.ranks;
  const timed = plan.paths.filter((p) => p.afterLoss.criticalMs !== undefined);
  const untimed = plan.paths.filter((p) => p.afterLoss.criticalMs === undefined);
  const head = `${recoveryWhere(plan)}, ${n === 1 ? 'its 1 rank' : `one of ${ranks(n)}`} lost`;
  const order =
    timed.length === 0
      ? 'no path has a figure for the wait after the loss in this run'
      : timed.length === 1
        ? `after the loss the job waits ${msText(timed[0]!.afterLoss.criticalMs!)} with ${timed[0]!.name}`
        : `after the loss the job waits least with the ${timed.map((p) => `${p.name} (${msText(p.afterLoss.criticalMs!)})`).join(', then ')}`;
  const rest = untimed.length > 0 ? `; no total in this run for ${untimed.map((p) => p.name).join(', ')}` : '';
  return `${head}: ${order}${rest}`;
}

/**
 * Revoke + shrink against abort + re-init: after the loss, then over the loss and the rank's
 * return (the grow back); undefined when either wait after the loss is missing.
 */
export function revokeVersusAbort(plan: RecoveryPlan): string | undefined {
  const revoke = plan.paths.find((p) => p.id === 'revoke-shrink');
  const abort = plan.paths.find((p) => p.id === 'abort-reinit');
  const r = revoke?.afterLoss.criticalMs;
  const a = abort?.afterLoss.criticalMs;
  if (!revoke || !abort || r === undefined || a === undefined) return undefined;
  const diff = (x: number, y: number): string => (x === y ? 'the same' : `${msText(Math.abs(x - y))} ${x < y ? 'shorter' : 'longer'}`);
  let text = `revoke + shrink: the job waits ${msText(r)} after the loss against abort + re-init's ${msText(a)}, ${diff(r, a)}`;
  const back = revoke.onReturn;
  if (back?.criticalMs !== undefined && revoke.cycleMs !== undefined) {
    text += `; when the rank returns the grow back adds ${msText(back.criticalMs)} (${terms(back.critical)}), so over the loss and the return it waits ${msText(revoke.cycleMs)} against ${msText(a)}, ${diff(revoke.cycleMs, a)}`;
  } else {
    const t = back?.critical.find((x) => x.value === undefined);
    text += `; the grow back when the rank returns has no figure (${t ? `${t.what}: ${t.missing?.why ?? 'no figure'}` : 'missing'}), so its total over the loss and the return is incomplete`;
  }
  return `${text}. Abort + re-init rebuilds all ${ranks(plan.host.ranks)} at once: its figure has no wait for the lost rank's replacement`;
}

/**
 * The term that makes up more than half of a path's wait after the loss, with its share and the
 * run's rank count; undefined when no term does, or the wait has fewer than 2 terms or a missing one.
 */
export function dominantSentence(plan: RecoveryPlan, p: RecoveryPath): string | undefined {
  const total = p.afterLoss.criticalMs;
  const list = p.afterLoss.critical;
  if (total === undefined || total <= 0 || list.length < 2) return undefined;
  const top = list.reduce((a, b) => (b.value! > a.value! ? b : a));
  const share = top.value! / total;
  if (share <= 0.5) return undefined;
  return `${p.name}: ${top.what} is ${msText(top.value!)} of the ${msText(total)} the job waits after the loss (${percentText(share)}), at this run's ${ranks(plan.host.ranks)}`;
}

/** A path's in-flight work: the run's drop check, or why it has none. */
export function dropSentence(p: RecoveryPath): string {
  return `${p.name}, in-flight work: ${p.drops.text}`;
}

/** The rank count every figure is of; at one rank, which paths cannot exist. */
export function ranksSentence(plan: RecoveryPlan): string {
  const n = plan.host.ranks;
  const these = plan.host.files.length > 1 ? "these runs'" : "this run's";
  if (n < 2) {
    return `every figure is of ${these} 1 rank: losing it leaves no survivor, so only a full rebuild (abort + re-init, c10d re-create) applies; shrink, revoke + shrink, the grow back and the spare's switch need 2 GPUs. A run of several ranks is planned on its own, never set beside these figures`;
  }
  return `every figure is of ${these} ${ranks(n)} (one lost: shrink ${n} → ${ranks(n - 1)}, grow ${n - 1} → ${ranks(n)}); a run of another rank count is planned on its own, never set beside these figures`;
}

/** What every figure was timed with: every rank alive. */
export const ALIVE_NOTE =
  'every figure was timed with every rank alive (a shrink\'s excluded rank passes the barrier and does not call): the run does not time a rank that really failed';

/** One sentence per path: its waits and background work, or why it is incomplete. */
export function pathSentence(p: RecoveryPath): string {
  const a = p.afterLoss;
  const parts: string[] = [];
  parts.push(a.criticalMs !== undefined ? `${msText(a.criticalMs)} on the critical path after the loss` : 'the wait after the loss is incomplete');
  if (a.background.length > 0) parts.push(a.backgroundMs !== undefined ? `${msText(a.backgroundMs)} in the background` : 'the background work is incomplete');
  if (p.onReturn) {
    const r = p.onReturn;
    const wait = r.criticalMs === undefined ? 'incomplete' : r.critical.length === 0 ? 'no wait' : msText(r.criticalMs);
    const bg = r.background.length === 0 ? '' : r.backgroundMs !== undefined ? `, ${msText(r.backgroundMs)} in the background` : ', the background work incomplete';
    parts.push(`when the rank returns: ${wait}${bg}`);
  } else if (p.onReturnNone) parts.push(p.onReturnNone);
  const missing = p.complete ? '' : `; incomplete — ${recoveryMissingText(p)}`;
  return `${p.name}: ${parts.join('; ')}${missing}`;
}

/**
 * Every sentence of the recovery plan: the headline, revoke + shrink against abort + re-init, the
 * rank count, one per path, the dominant terms, the drop checks, the note on ranks alive. On a
 * simulated run every sentence after the headline starts "SIMULATED — ". At 1 rank, the one line
 * of what the run can and cannot show.
 */
export function recoverySentences(plan: RecoveryPlan): string[] {
  const mark = (line: string): string => (plan.host.simulated ? `SIMULATED — ${line}` : line);
  // One rank: what the section can and cannot show, in one line (recovery.ts oneRankLine), never
  // n-rank sentences ("one lost", "by the survivors", "grow back to 1 rank") or paths that cannot apply.
  if (plan.oneRank !== undefined) return [`${recoveryWhere(plan)}, ${plan.oneRank}`];
  const lines = [
    recoveryHeadline(plan),
    revokeVersusAbort(plan),
    ranksSentence(plan),
    ...plan.paths.map(pathSentence),
    ...plan.paths.map((p) => dominantSentence(plan, p)),
    ...plan.paths.filter((p) => p.drops.measured).map(dropSentence),
    ALIVE_NOTE,
  ].filter((x): x is string => x !== undefined);
  return [lines[0]!, ...lines.slice(1).map(mark)];
}
