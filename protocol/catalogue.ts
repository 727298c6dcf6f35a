/**
 * The catalogue: each experiment's one-line description and what it needs (the oldest NCCL it is
 * planned on, the fewest GPUs), in one place that both sides read. The agent's experiment modules
 * (remote-agent/experiments/*.ts) gate their `plan` on {@link EXPERIMENT_NEEDS}; the Measure
 * picker and the annotations' host gate (readings/experimentInfo.ts) read the same table, so a
 * gate changed here changes both. test/unit/experimentInfo.test.ts asks every module's `plan` at a
 * host that lacks everything and checks it skips for the reason this table gives.
 * Imports nothing outside protocol/.
 */
import type { ExperimentId } from './runOptions';

/** Version code of a dotted version: "2.18.1" → 21801 (missing parts are 0). */
export function versionCode(version: string): number {
  const [major = 0, minor = 0, patch = 0] = version.split('.').map((x) => Number(x));
  return major * 10000 + minor * 100 + patch;
}

/** Dotted version of a code: 22809 → "2.28.9". */
export function versionString(code: number): string {
  return `${Math.floor(code / 10000)}.${Math.floor((code % 10000) / 100)}.${code % 100}`;
}

/** One line per experiment, in the field's terms (docs/METHOD.md "Steps by experiment" has the detail; package.json's enumDescriptions repeat these). */
export const EXPERIMENT_DESCRIPTIONS: Record<ExperimentId, string> = {
  init: 'ncclCommInitRankConfig over all ranks, its first collective, and a steady 64 MiB allreduce (the bandwidth reference); the same by ncclCommInitRankScalable with several unique ids (NCCL ≥ 2.23.4)',
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
  'shrink-abort': 'field case C5: twelve ways to release a shrunk parent; some are stopped by the hang guard',
  'init-abort': 'field case C6: aborting a non-blocking init that a rank never joins; the blocking one hangs until the hang guard',
  'cold-start': "a fresh process's first init (library load, CUDA context, kernel load) against a second init in the same process",
  'many-comms': 'memory per GPU and the k-th creation as N = 1…16 communicators are made by init or split (splitShare 0/1), and over NCCL_BUFFSIZE, CTAs, runtime connect, cuMem, maxP2pPeers',
};

/** What an experiment needs of its host as a whole (a variant may need more: its module's plan says so at run time). */
export interface ExperimentNeeds {
  /** Oldest NCCL the module plans it on ("2.29.2"), when it has a gate. */
  minNccl?: string;
  /** Fewest GPUs (ranks) it runs on, when more than 1 (c10d: 1, said for the picker). */
  minGpus?: number;
  /** Other needs no table can answer before the host is asked (c10d: the host's torch). */
  other?: string;
}

/**
 * Each experiment's needs: the gates its module's `plan` applies (`needsNccl`, `needsRanks` in
 * remote-agent/experiments/experiment.ts). The NCCL versions are those whose release added the
 * API the experiment calls (nccl-api.md): 2.18.1 ncclCommSplit and the config, 2.19.1
 * ncclCommRegister, 2.22.3 NCCL_RUNTIME_CONNECT, 2.27.3 ncclCommShrink and windows, 2.28.7
 * ncclCommRevoke, 2.29.2 ncclCommGrow, 2.29.7 ncclCommSuspend.
 */
export const EXPERIMENT_NEEDS: Readonly<Record<ExperimentId, Readonly<ExperimentNeeds>>> = {
  init: { minNccl: '2.18.1' },
  split: { minNccl: '2.18.1', minGpus: 2 },
  shrink: { minNccl: '2.27.3', minGpus: 2 },
  grow: { minNccl: '2.29.2', minGpus: 2 },
  destroy: {},
  abort: {},
  revoke: { minNccl: '2.28.7' },
  registration: { minNccl: '2.19.1' },
  drain: {},
  pool: { minNccl: '2.18.1' },
  'connect-mode': { minNccl: '2.22.3' },
  suspend: { minNccl: '2.29.7' },
  c10d: { minGpus: 1, other: "the GPU host's torch with NCCL and CUDA (probed there); not on the simulated NCCL" },
  'split-share': { minNccl: '2.18.1', minGpus: 2 },
  'split-subset': { minNccl: '2.18.1', minGpus: 2 },
  'shrink-abort': { minNccl: '2.27.3', minGpus: 2 },
  'init-abort': { minNccl: '2.18.1', minGpus: 2 },
  'cold-start': { minNccl: '2.18.1' },
  'many-comms': { minNccl: '2.18.1' },
};

/** The oldest NCCL `id` is planned on ("2.18.1"), for a module's gate; "0.0.0" when it has none. */
export function minNcclOf(id: ExperimentId): string {
  return EXPERIMENT_NEEDS[id].minNccl ?? '0.0.0';
}

/** The fewest GPUs `id` runs on (1 when it has no such need), for a module's gate. */
export function minGpusOf(id: ExperimentId): number {
  return EXPERIMENT_NEEDS[id].minGpus ?? 1;
}

/** "NCCL ≥ 2.29.2 · ≥ 2 GPUs", or "" when it runs anywhere. */
export function needsText(n: ExperimentNeeds): string {
  return [n.minNccl ? `NCCL ≥ ${n.minNccl}` : '', n.minGpus && n.minGpus > 1 ? `≥ ${n.minGpus} GPUs` : '', n.other ?? ''].filter((s) => s).join(' · ');
}
