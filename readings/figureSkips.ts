/**
 * Why a call site has no figure in a run: the skip that covers its experiment or variant, the call
 * beneath's skip and whether it holds for the call too, and the Measure picker's gate at the run's
 * host. Pure; used by figures.ts `resolveAnnotation`.
 */
import { EXPERIMENT_IDS, type ExperimentId } from '../protocol/runOptions';
import type { RunFile } from '../protocol/runFile';
import { hostGpusText } from '../protocol/runNameParts';
import type { Answer, ApiEntry } from '../sites/apiMap';
import type { unavailableReason } from './experimentInfo';

/** Whether a run's variant `name` is the variant `wanted` or one of its sub-variants (`wanted/…`). */
export function matchesVariant(name: string, wanted: string): boolean {
  return name === wanted || name.startsWith(`${wanted}/`);
}

/** One skipped experiment (or variant) of a run file, with the agent's reason. */
export type Skip = RunFile['skipped'][number];

/**
 * The skip of `run` that covers `answer`: a skip of one of its variants by name (a one-GPU c10d
 * run skips `shrink_group` alone, with its own reason), else of its whole experiment. A skip of
 * another variant of the same experiment (c10d's `init/eager` on an old torch) never answers for
 * this one. Undefined when none covers it.
 */
export function skipOf(run: RunFile, answer: Answer): Skip | undefined {
  const of = (run.skipped ?? []).filter((x) => x.experiment === answer.experiment);
  const byVariant = of.find((x) => x.variant !== undefined && answer.variants.some((w) => matchesVariant(x.variant as string, w)));
  return byVariant ?? of.find((x) => x.variant === undefined);
}

/**
 * Whether `reason`, the skip of the call beneath (the agent's "needs N GPUs, host has M"), holds
 * for `answer` too on `run`'s host: its communicator has a size with N ranks and none with the
 * run's (apiMap.ts `childRanks`: c10d's shrink_group drops a rank, so one GPU leaves it nothing).
 * A gate on the NCCL version never holds for it: c10d uses the NCCL torch loads, not the run's.
 */
export function sameRankGate(answer: Answer, reason: string, run: RunFile): boolean {
  const gate = /^needs (\d+) GPUs, host has \d+$/.exec(reason);
  if (!gate || !answer.childRanks) return false;
  const variant = answer.variants[0] ?? '';
  return answer.childRanks(variant, { ranks: Number(gate[1]) }) !== undefined && answer.childRanks(variant, run) === undefined;
}

/** The call beneath `entry`'s API, named with its experiment: "the ncclCommShrink behind it, experiment shrink". */
export function beneathName(entry: ApiEntry): string {
  return `${entry.underlying?.note ?? 'the call beneath'}, experiment ${entry.underlying?.experiment ?? '?'}`;
}

/**
 * The skip of the call beneath, after "not measured in this run", where the call itself can still
 * be measured on that host (c10d's split_group on one GPU): "; the ncclCommSplit behind it
 * (experiment split) was skipped on localhost (1× H200): needs 2 GPUs, host has 1" (the host with
 * the GPUs its run is named by: protocol/runNameParts.ts `hostGpusText`), and, where its
 * communicator would have one rank there, that measuring it there gives a one-rank communicator.
 */
export function beneathSkipped(entry: ApiEntry, reason: string, run: RunFile): string {
  const underlying = entry.underlying;
  if (!underlying) return '';
  const one = oneRankThere(entry, run);
  return `; ${underlying.note} (experiment ${underlying.experiment}) was skipped on ${hostGpusText(run)}: ${reason}${
    one ? '; measured there, it makes a one-rank communicator: nothing to connect' : ''
  }`;
}

/**
 * Whether `entry`'s own communicator, measured on `run`'s host, would have one rank: a creation
 * whose answer's first variant makes a one-rank child at the run's size (apiMap.ts `childRanks`:
 * c10d's split_group on one GPU; never shrink_group there, which has none).
 */
export function oneRankThere(entry: ApiEntry, run: RunFile): boolean {
  const variant = entry.answer.variants[0] ?? '';
  return entry.role === 'create' && entry.answer.childRanks?.(variant, run) === 1;
}

/**
 * Why `run`'s host cannot run `experiment`, by `gate` (experimentInfo.ts `unavailableReason`) at
 * the host's GPUs (its stamp's list; the run's ranks when more, as over several nodes) and the
 * run's NCCL version. Undefined without a gate, without a stamp that lists GPUs, for a simulated
 * or failed run (no record of what the host can do), for an id that is no experiment, or when the host can run it.
 */
export function hostGate(experiment: string, run: RunFile, gate: typeof unavailableReason | undefined): string | undefined {
  const gpus = run.stamp?.gpus?.length;
  if (!gate || !gpus || run.simulated === true || run.status === 'failed' || !(EXPERIMENT_IDS as readonly string[]).includes(experiment)) return undefined;
  const v = run.stamp?.ncclVersion;
  const nccl = typeof v === 'string' && /^\d+\.\d+\.\d+$/.test(v) ? { ncclVersion: v } : {};
  return gate(experiment as ExperimentId, { ranks: Math.max(gpus, run.ranks), ...nccl, simulated: false }, false);
}
