/**
 * What the Measure command's experiment picker says about each experiment: a description, what it
 * needs (GPUs, NCCL version), whether the chosen host can run it, and how long it is expected to
 * take at the chosen iterations.
 *
 * Requirements are not a table of our own: they are read from the experiment modules' `plan`
 * (remote-agent/experiments/*.ts), asked at a host that lacks everything ("needs NCCL ≥ 2.29.2 …",
 * "needs 2 GPUs …"), so a gate changed in a module changes the picker. Durations are never
 * invented: from a saved run of the same host that measured the experiment (its step medians ×
 * the iterations, a lower bound: setup between timed steps is not in it), else "unknown until
 * measured". No `vscode` import (unit-tested); loaded with the Measure command, not at activation.
 */
import { DEFAULT_RUN_OPTIONS, EXPERIMENT_IDS, type ExperimentId } from '../protocol/events';
import type { RunFile } from '../protocol/runFile';
import { CATALOGUE } from '../remote-agent/experiments/catalogue';
import { versionCode } from '../remote-agent/experiments/experiment';

/** One line per experiment, in the field's terms (docs/METHOD.md "Steps by experiment" has the detail). */
export const EXPERIMENT_DESCRIPTIONS: Record<ExperimentId, string> = {
  init: 'ncclCommInitRankConfig over all ranks, its first collective, and a steady 64 MiB allreduce (the bandwidth reference)',
  split: "ncclCommSplit of a warm parent into halves and whole, splitShare 0 and 1, and the child's first collective",
  shrink: "ncclCommShrink dropping the last rank (DEFAULT, ABORT, ABORT with work in flight), and the child's first collective",
  grow: 'ncclCommGrow: a communicator of n−1 ranks takes the last rank back, then its first collective',
  destroy: 'ncclCommFinalize and ncclCommDestroy of a warm communicator',
  abort: 'ncclCommAbort of a warm communicator, then a fresh init and its first collective',
  revoke: 'ncclCommRevoke, idle and with work in flight, then destroy or shrink (abort)',
  registration: 'ncclCommRegister / ncclCommWindowRegister of buffers, their first use, and deregister',
  drain: 'teardown with allreduces still in flight: finalize + stream synchronize until quiet, by message size',
  pool: 'a pool of TP-shape communicators split from the full one: memory per shape, the switch in the pool against a rebuild',
  'connect-mode': 'init with NCCL_RUNTIME_CONNECT=1 and =0 (lazy or eager connect), per algorithm, and a one-rank communicator',
  suspend: 'ncclCommSuspend (memory) and ncclCommResume, and the first collective after it',
  c10d: 'torch.distributed with the host’s torch: init_process_group lazy/eager, new_group, split_group, shrink_group, abort',
  'split-share': 'field case C2: memory per GPU as 1…k groups are split from one parent, by splitShare',
  'split-subset': 'field case C4: a split half the ranks skip with NCCL_SPLIT_NOCOLOR, and one only half call (expected hang, stopped by the hang guard)',
  'shrink-abort': "field case C5: twelve ways to release a shrunk parent; some are stopped by the hang guard",
  'init-abort': 'field case C6: aborting a non-blocking init that a rank never joins; the blocking one hangs until the hang guard',
  'cold-start': "a fresh process's first init (library load, CUDA context, kernel load) against a second init in the same process",
};

/** What an experiment needs, read from its module's plan. */
export interface ExperimentNeeds {
  /** Oldest NCCL the module plans it on ("2.29.2"), when it has a gate. */
  minNccl?: string;
  /** Fewest GPUs (ranks) it runs on, when more than 1. */
  minGpus?: number;
  /** Other needs the plan cannot be asked about here (c10d: the host's torch). */
  other?: string;
}

const ALL_SYMBOLS = new Proxy({} as Record<string, boolean>, { get: () => true });

/** The first reason of `plan` at a host with `ranks` GPUs and NCCL `code`, every symbol present; undefined when it plans. */
function skipAt(id: ExperimentId, ranks: number, code: number): string | undefined {
  const p = CATALOGUE[id].plan({ ranks, ncclVersionCode: code, symbols: ALL_SYMBOLS, options: { ...DEFAULT_RUN_OPTIONS, experiments: [id] } });
  return 'skip' in p ? p.skip : undefined;
}

const needsCache = new Map<ExperimentId, ExperimentNeeds>();

/**
 * What `id` needs: its module's plan asked at NCCL 0.0.0 with many GPUs (→ "needs NCCL ≥ X"), then
 * at a recent NCCL with 1 GPU (→ "needs N GPUs"). c10d is not asked (its plan runs the host's
 * Python to probe torch): its need is said in words.
 */
export function experimentNeeds(id: ExperimentId): ExperimentNeeds {
  const cached = needsCache.get(id);
  if (cached) return cached;
  let needs: ExperimentNeeds;
  if (id === 'c10d') needs = { minGpus: 1, other: "the GPU host's torch with NCCL and CUDA (probed there); not on the simulated NCCL" };
  else {
    needs = {};
    const nccl = /needs NCCL ≥ (\d+\.\d+\.\d+)/.exec(skipAt(id, 1024, 0) ?? '');
    if (nccl) needs.minNccl = nccl[1]!;
    const gpus = /needs (\d+) GPUs/.exec(skipAt(id, 1, 99_99_99) ?? '');
    if (gpus && Number(gpus[1]) > 1) needs.minGpus = Number(gpus[1]);
  }
  needsCache.set(id, needs);
  return needs;
}

/** "NCCL ≥ 2.29.2 · ≥ 2 GPUs", or "" when it runs anywhere. */
export function needsText(n: ExperimentNeeds): string {
  return [n.minNccl ? `NCCL ≥ ${n.minNccl}` : '', n.minGpus && n.minGpus > 1 ? `≥ ${n.minGpus} GPUs` : '', n.other ?? ''].filter((s) => s).join(' · ');
}

/** What is known of the chosen host from its last saved run. */
export interface HostFacts {
  /** GPUs (ranks) of that run. */
  ranks: number;
  /** Its NCCL version ("2.28.9"), when the stamp has one. */
  ncclVersion?: string;
  /** The run measured on the simulated NCCL. */
  simulated: boolean;
}

/** The host facts of a saved run (its rank count, its stamp's NCCL version). */
export function hostFactsOf(run: RunFile): HostFacts {
  const v = run.stamp?.ncclVersion;
  return { ranks: run.ranks, ...(typeof v === 'string' && /^\d+\.\d+\.\d+$/.test(v) ? { ncclVersion: v } : {}), simulated: run.simulated === true };
}

/**
 * Why `id` cannot run on a host with `facts`, or undefined when it can (or nothing is known).
 * Only the needs above are checked; the agent still plans on the host and reports any other skip.
 */
export function unavailableReason(id: ExperimentId, facts: HostFacts | undefined, simulate: boolean): string | undefined {
  if (id === 'c10d' && simulate) return 'c10d runs torch with its own NCCL on real GPUs: not with the simulated NCCL';
  if (!facts) return undefined;
  const n = experimentNeeds(id);
  if (n.minGpus && facts.ranks < n.minGpus) return `needs ${n.minGpus} GPUs, the host's last run had ${facts.ranks}`;
  if (!simulate && n.minNccl && facts.ncclVersion && versionCode(facts.ncclVersion) < versionCode(n.minNccl))
    return `needs NCCL ≥ ${n.minNccl}, the host's last run loaded ${facts.ncclVersion}`;
  return undefined;
}

/**
 * The expected duration of `id` at `iterations` (+ `warmup`) per variant, from the newest run in
 * `runs` that measured it (caller passes the chosen host's runs, newest first): the sum over its
 * variants of the medians of the timed steps (derived sums left out) × (warmup + iterations).
 * A lower bound: untimed setup and process starts are not in it.
 * @returns the text for the picker, e.g. "≥ 1.3 s timed at 10 iterations (from the run of 2026-12-01)",
 *   or "duration unknown until measured" when no run measured it.
 */
export function expectedDuration(id: ExperimentId, iterations: number, warmup: number, runs: readonly RunFile[]): string {
  for (const run of runs) {
    const e = run.experiments.find((x) => x.experiment === id && x.state === 'finished' && x.variants.length > 0);
    if (!e) continue;
    let perIterationMs = 0;
    for (const v of e.variants) for (const s of v.steps) if (!s.sumOf && Number.isFinite(s.stats?.median)) perIterationMs += s.stats.median;
    if (perIterationMs <= 0) continue;
    const ms = perIterationMs * (iterations + warmup);
    const day = (run.stamp?.startedAt ?? run.id).slice(0, 10);
    return `≥ ${formatDuration(ms)} timed at ${iterations} iterations (${e.variants.length} variant${e.variants.length === 1 ? '' : 's'}, from the ${run.simulated ? 'SIMULATED ' : ''}run of ${day})`;
  }
  return 'duration unknown until measured';
}

/** 850 → "0.9 s", 75_000 → "1.3 min", 5_400_000 → "1.5 h". */
export function formatDuration(ms: number): string {
  const s = ms / 1000;
  if (s < 90) return `${s < 10 ? s.toFixed(1) : Math.round(s)} s`;
  if (s < 5400) return `${(s / 60).toFixed(1)} min`;
  return `${(s / 3600).toFixed(1)} h`;
}

/**
 * The skipped experiments of a finished run, for its completion message: " — skipped: grow (needs
 * NCCL ≥ 2.29.2, host has 2.28.9)", or "" when nothing was skipped. Reasons are the agent's own.
 */
export function skippedNote(run: Pick<RunFile, 'skipped' | 'experiments'>): string {
  const whole = run.skipped.filter((s) => !s.variant);
  if (whole.length === 0) return '';
  const measured = run.experiments.some((e) => e.variants.length > 0);
  const list = whole.map((s) => `${s.experiment} (${s.reason})`).join('; ');
  return measured ? ` — skipped: ${list}` : ` — nothing measured: every experiment was skipped: ${list}`;
}

/** Every experiment id with its description, in catalogue order (for package.json's enumDescriptions). */
export function experimentDescriptions(): { id: ExperimentId; description: string }[] {
  return EXPERIMENT_IDS.map((id) => ({ id, description: EXPERIMENT_DESCRIPTIONS[id] }));
}
