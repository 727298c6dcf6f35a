/**
 * The one table that says which experiment, variant and steps of a run answer each annotated
 * API. No `vscode` import.
 *
 * Experiment ids are strings, not `ExperimentId`: `shrink`, `grow`, `revoke`, `registration`,
 * `suspend` and `c10d` are being added to the catalogue with the same shape (variants of steps
 * `call`, `first`, `total`); until a run has them, the annotation says "not measured in this run".
 *
 * Variant names are the agent's own (remote-agent/experiments/split.ts, c10d.ts and
 * c10d/driverSource.ts): `halves/splitShare=0`, `init/lazy`, `new_group/eager-default`, …. The
 * size of the communicator a creation variant produces is derived here from the variant's shape
 * and the run's ranks and nodes, by the agent's rules ({@link Answer.childRanks}).
 *
 * The API names and the table's types are in apiTypes.ts (re-exported here).
 */
import type { Answer, ApiEntry, ApiName, RunShape, StepRef } from './apiTypes';
import type { FirstUseKind } from '../protocol/runOptions';

export { NCCL_APIS, PYTHON_APIS, FRAMEWORK_APIS, FIRST_COLLECTIVE } from './apiTypes';
export type { NcclApi, PythonApi, FrameworkApi, ApiName, ApiRole, StepRef, RunShape, Answer, ApiEntry } from './apiTypes';

const CALL: StepRef = { step: 'call', kinds: ['call'] };
const FIRST: StepRef = { step: 'first', kinds: ['first'] };
const TOTAL: StepRef = { step: 'total', kinds: ['toFirst'] };
const create = (experiment: string, variants: readonly string[] = []): Answer => ({
  experiment,
  variants,
  call: CALL,
  first: FIRST,
  total: TOTAL,
});

/**
 * split's variants (remote-agent/experiments/split.ts), splitShare=0 first (what a user gets by
 * default), the split into parts before the split into one child; the child sizes then decide
 * which answers first.
 */
const SPLIT_VARIANTS = [
  'halves/splitShare=0',
  'whole/splitShare=0',
  'intra-node/splitShare=0',
  'inter-node/splitShare=0',
  'halves/splitShare=1',
  'whole/splitShare=1',
  'intra-node/splitShare=1',
  'inter-node/splitShare=1',
] as const;

/** Ranks on each node of the run; undefined when the run does not list its nodes. */
function ranksPerNode(run: RunShape): number[] | undefined {
  return run.nodes && run.nodes.length > 0 ? run.nodes.map((n) => n.ranks.length) : undefined;
}

/**
 * The largest child of a split of `variant`'s shape (split.ts `splitColor`): halves = the ranks
 * below n/2 (ceil(n/2)), whole = n, intra-node = the most ranks on one node, inter-node = the
 * number of nodes.
 */
export function splitChildRanks(variant: string, run: RunShape): number | undefined {
  const n = run.ranks;
  if (!Number.isInteger(n) || n < 1) return undefined;
  const shape = variant.split('/')[0];
  const perNode = ranksPerNode(run);
  switch (shape) {
    case 'halves':
      return Math.ceil(n / 2);
    case 'whole':
      return n;
    case 'intra-node':
      return perNode ? Math.max(...perNode) : undefined;
    case 'inter-node':
      return perNode?.length;
    default:
      return undefined;
  }
}

const worldSize = (_variant: string, run: RunShape): number | undefined =>
  Number.isInteger(run.ranks) && run.ranks >= 1 ? run.ranks : undefined;
/** shrink drops the last rank (experiment.ts `shrinkLastRank`; c10d `shrink_group` likewise). */
const allButOne = (_variant: string, run: RunShape): number | undefined =>
  Number.isInteger(run.ranks) && run.ranks >= 2 ? run.ranks - 1 : undefined;

const INIT = { ...create('init', ['default']), childRanks: worldSize };
const ABORT: Answer = {
  experiment: 'abort',
  variants: ['default'],
  call: { step: 'abort', kinds: ['teardown'] },
  extra: [{ step: 'reinit', kinds: ['call'] }, FIRST, TOTAL],
};
const DESTROY_TOTAL: StepRef = { step: 'total', kinds: ['teardown'] };
/** What a c10d teardown that destroys a group answers from when the run has no c10d figures: the NCCL finalize + destroy. */
const C10D_DESTROY_BENEATH: Answer & { note: string } = {
  experiment: 'destroy',
  variants: ['default'],
  call: DESTROY_TOTAL,
  extra: [{ step: 'finalize' }, { step: 'destroy' }],
  note: 'the NCCL finalize + destroy behind it',
};

/** A c10d abort of a group (`_abort_process_group`, `ProcessGroup.abort`): the c10d abort variant, else the ncclCommAbort beneath. */
const c10dAbort = (api: ApiName): ApiEntry => ({
  api,
  language: 'python',
  role: 'teardown',
  callsInto: 'ncclCommAbort',
  answer: { experiment: 'c10d', variants: ['abort'], call: { step: 'abort', kinds: ['teardown', 'call'] } },
  underlying: { ...ABORT, note: 'the ncclCommAbort behind it' },
});

/** c10d variants (remote-agent/experiments/c10d.ts), lazy first: what a call without device_id does. */
const C10D_INIT = ['init/lazy', 'init/eager'] as const;
const C10D_NEW_GROUP = ['new_group/lazy-default', 'new_group/eager-default'] as const;
const c10d = (variants: readonly string[], childRanks: Answer['childRanks'] = worldSize, whenEager?: readonly string[]): Answer => ({
  ...create('c10d', variants),
  childRanks,
  ...(whenEager ? { whenEager } : {}),
});
const SPLIT = { ...create('split', SPLIT_VARIANTS), childRanks: splitChildRanks };
const SHRINK = { ...create('shrink'), childRanks: allButOne };
const GROW = { ...create('grow'), childRanks: worldSize };

/**
 * The c10d variant whose `first` step is the first collective on a group made by each creating
 * API (remote-agent/experiments/c10d.ts variant names): the default group of
 * `init_process_group` (and DeepSpeed's `init_distributed`, which calls it) → `init/lazy`;
 * `new_group` and the backends built as it builds them → `new_group/lazy-default`; the others →
 * their own variant's first collective.
 */
const FIRST_COLLECTIVE_BY_CREATOR: Readonly<Partial<Record<ApiName, readonly string[]>>> = {
  init_process_group: ['init/lazy'],
  init_distributed: ['init/lazy'],
  new_group: ['new_group/lazy-default'],
  ProcessGroupNCCL: ['new_group/lazy-default'],
  _new_process_group_helper: ['new_group/lazy-default'],
  new_subgroups: ['new_subgroups'],
  split_group: ['split_group'],
  shrink_group: ['shrink_group'],
  init_device_mesh: ['init_device_mesh'],
  DeviceMesh: ['init_device_mesh'],
  'DeviceMesh._flatten': ['new_group/lazy-default'],
  'DeviceMesh._unflatten': ['new_group/lazy-default'],
};

/** The mapping table: one entry per API. */
export const API_MAP: Readonly<Record<ApiName, ApiEntry>> = {
  ncclCommInitRank: { api: 'ncclCommInitRank', language: 'cpp', role: 'create', callsInto: 'ncclCommInitRank', answer: INIT },
  ncclCommInitRankConfig: {
    api: 'ncclCommInitRankConfig',
    language: 'cpp',
    role: 'create',
    callsInto: 'ncclCommInitRankConfig',
    answer: INIT,
  },
  ncclCommInitAll: { api: 'ncclCommInitAll', language: 'cpp', role: 'create', callsInto: 'ncclCommInitAll', answer: INIT },
  ncclCommInitRankScalable: {
    api: 'ncclCommInitRankScalable',
    language: 'cpp',
    role: 'create',
    callsInto: 'ncclCommInitRankScalable',
    // init's own variant of this call (several unique ids) first; the ncclCommInitRankConfig one where the run lacks it.
    answer: { ...INIT, variants: ['scalable', 'default'] },
  },
  ncclCommSplit: { api: 'ncclCommSplit', language: 'cpp', role: 'create', callsInto: 'ncclCommSplit', answer: SPLIT },
  ncclCommShrink: { api: 'ncclCommShrink', language: 'cpp', role: 'create', callsInto: 'ncclCommShrink', answer: SHRINK },
  ncclCommGrow: { api: 'ncclCommGrow', language: 'cpp', role: 'create', callsInto: 'ncclCommGrow', answer: GROW },
  ncclCommRevoke: {
    api: 'ncclCommRevoke',
    language: 'cpp',
    role: 'teardown',
    callsInto: 'ncclCommRevoke',
    answer: { experiment: 'revoke', variants: [], call: { step: 'revoke', kinds: ['teardown', 'call'] }, total: DESTROY_TOTAL },
  },
  ncclCommFinalize: {
    api: 'ncclCommFinalize',
    language: 'cpp',
    role: 'teardown',
    callsInto: 'ncclCommFinalize',
    answer: {
      experiment: 'destroy',
      variants: ['default'],
      call: { step: 'finalize' },
      total: DESTROY_TOTAL,
      extra: [{ step: 'destroy' }],
    },
  },
  ncclCommDestroy: {
    api: 'ncclCommDestroy',
    language: 'cpp',
    role: 'teardown',
    callsInto: 'ncclCommDestroy',
    answer: {
      experiment: 'destroy',
      variants: ['default'],
      call: { step: 'destroy' },
      total: DESTROY_TOTAL,
      extra: [{ step: 'finalize' }],
    },
  },
  ncclCommAbort: { api: 'ncclCommAbort', language: 'cpp', role: 'teardown', callsInto: 'ncclCommAbort', answer: ABORT },
  ncclCommRegister: {
    api: 'ncclCommRegister',
    language: 'cpp',
    role: 'register',
    callsInto: 'ncclCommRegister',
    answer: { experiment: 'registration', variants: ['register'], call: { step: 'register', kinds: ['call'] }, first: FIRST, total: TOTAL },
  },
  ncclCommWindowRegister: {
    api: 'ncclCommWindowRegister',
    language: 'cpp',
    role: 'register',
    callsInto: 'ncclCommWindowRegister',
    answer: { experiment: 'registration', variants: ['window'], call: { step: 'register', kinds: ['call'] }, first: FIRST, total: TOTAL },
  },
  ncclCommSuspend: {
    api: 'ncclCommSuspend',
    language: 'cpp',
    role: 'suspend',
    callsInto: 'ncclCommSuspend',
    answer: { experiment: 'suspend', variants: [], call: { step: 'suspend', kinds: ['call'] }, first: FIRST, total: TOTAL },
  },
  init_process_group: {
    api: 'init_process_group',
    language: 'python',
    role: 'create',
    callsInto: 'ncclCommInitRankConfig',
    answer: c10d(C10D_INIT, worldSize, ['init/eager', 'init/lazy']),
    underlying: { ...INIT, note: 'the NCCL communicator init behind it' },
  },
  new_group: {
    api: 'new_group',
    language: 'python',
    role: 'create',
    callsInto: 'ncclCommInitRankConfig',
    answer: c10d(C10D_NEW_GROUP, worldSize, ['new_group/eager-default', 'new_group/lazy-default']),
    underlying: { ...INIT, note: 'the NCCL communicator init behind it' },
  },
  new_subgroups: {
    api: 'new_subgroups',
    language: 'python',
    role: 'create',
    callsInto: 'ncclCommInitRankConfig',
    answer: c10d(['new_subgroups']),
    underlying: { ...INIT, note: 'the NCCL communicator init behind each subgroup' },
  },
  split_group: {
    api: 'split_group',
    language: 'python',
    role: 'create',
    callsInto: 'ncclCommSplit',
    // The driver splits into one group of every rank (split_ranks=[everyone]).
    answer: c10d(['split_group']),
    underlying: { ...SPLIT, note: 'the ncclCommSplit behind it' },
  },
  shrink_group: {
    api: 'shrink_group',
    language: 'python',
    role: 'create',
    callsInto: 'ncclCommShrink',
    answer: c10d(['shrink_group'], allButOne),
    underlying: { ...SHRINK, note: 'the ncclCommShrink behind it' },
  },
  destroy_process_group: {
    api: 'destroy_process_group',
    language: 'python',
    role: 'teardown',
    callsInto: 'ncclCommDestroy',
    // The `destroy` step of the init variants: destroy_process_group after a lazy / eager init.
    answer: {
      experiment: 'c10d',
      variants: C10D_INIT,
      whenEager: ['init/eager', 'init/lazy'],
      call: { step: 'destroy', kinds: ['teardown'] },
    },
    underlying: C10D_DESTROY_BENEATH,
  },
  _abort_process_group: c10dAbort('_abort_process_group'),
  'ProcessGroup.abort': c10dAbort('ProcessGroup.abort'),
  'ProcessGroup.shutdown': {
    api: 'ProcessGroup.shutdown',
    language: 'python',
    role: 'teardown',
    callsInto: 'ncclCommDestroy',
    // The teardown destroy_process_group runs on each group it destroys: its `destroy` step. The
    // group is often one kept outside c10d's registry (a stateless group): no eager variant first.
    answer: {
      experiment: 'c10d',
      variants: C10D_INIT,
      call: { step: 'destroy', kinds: ['teardown'] },
    },
    underlying: C10D_DESTROY_BENEATH,
  },
  init_device_mesh: {
    api: 'init_device_mesh',
    language: 'python',
    role: 'create',
    callsInto: 'ncclCommInitRankConfig',
    answer: c10d(['init_device_mesh']),
    underlying: { ...INIT, note: 'the NCCL communicator init behind each mesh dimension' },
  },
  DeviceMesh: {
    api: 'DeviceMesh',
    language: 'python',
    role: 'create',
    callsInto: 'ncclCommInitRankConfig',
    answer: c10d(['init_device_mesh']),
    underlying: { ...INIT, note: 'the NCCL communicator init behind each mesh dimension' },
  },
  // A mesh re-shaped makes each new dimension's group through c10d's new_group (split_group where the
  // default group is bound to a device): the new_group variants answer, lazy first, as for new_group.
  'DeviceMesh._flatten': {
    api: 'DeviceMesh._flatten',
    language: 'python',
    role: 'create',
    callsInto: 'ncclCommInitRankConfig',
    answer: c10d(C10D_NEW_GROUP, worldSize, ['new_group/eager-default', 'new_group/lazy-default']),
    underlying: { ...INIT, note: 'the NCCL communicator init behind the group of the merged dimension' },
  },
  'DeviceMesh._unflatten': {
    api: 'DeviceMesh._unflatten',
    language: 'python',
    role: 'create',
    callsInto: 'ncclCommInitRankConfig',
    answer: c10d(C10D_NEW_GROUP, worldSize, ['new_group/eager-default', 'new_group/lazy-default']),
    underlying: { ...INIT, note: 'the NCCL communicator init behind the group of each dimension it makes' },
  },
  ncclCommDeregister: {
    api: 'ncclCommDeregister',
    language: 'cpp',
    role: 'teardown',
    callsInto: 'ncclCommDeregister',
    answer: { experiment: 'registration', variants: ['register'], call: { step: 'deregister', kinds: ['teardown'] } },
  },
  ncclCommWindowDeregister: {
    api: 'ncclCommWindowDeregister',
    language: 'cpp',
    role: 'teardown',
    callsInto: 'ncclCommWindowDeregister',
    answer: { experiment: 'registration', variants: ['window'], call: { step: 'deregister', kinds: ['teardown'] } },
  },
  ncclCommResume: {
    api: 'ncclCommResume',
    language: 'cpp',
    role: 'suspend',
    callsInto: 'ncclCommResume',
    answer: { experiment: 'suspend', variants: [], call: { step: 'resume', kinds: ['call'] }, first: FIRST, total: TOTAL },
  },
  ncclCommMemStats: {
    api: 'ncclCommMemStats',
    language: 'cpp',
    role: 'query',
    callsInto: 'ncclCommMemStats',
    // No experiment times the call itself (runs read it at memory points): the annotation says
    // it is not measured rather than borrowing another figure.
    answer: { experiment: 'memStats', variants: [], call: CALL },
  },
  // The device API (NCCL 2.28+): `ncclDevCommCreate(comm, &reqs, &devComm)` makes a device
  // communicator (the resources kernels use to communicate) on a host communicator;
  // `ncclDevCommDestroy(comm, &devComm)` frees it. No experiment times either: the annotation says
  // so (and, for a run of an older NCCL, that its library predates the call) rather than borrowing
  // init's or destroy's figure.
  ncclDevCommCreate: {
    api: 'ncclDevCommCreate',
    language: 'cpp',
    role: 'create',
    callsInto: 'ncclDevCommCreate',
    answer: { experiment: 'devComm', variants: [], call: CALL },
  },
  ncclDevCommDestroy: {
    api: 'ncclDevCommDestroy',
    language: 'cpp',
    role: 'teardown',
    callsInto: 'ncclDevCommDestroy',
    answer: { experiment: 'devComm', variants: [], call: CALL },
  },
  ProcessGroupNCCL: {
    api: 'ProcessGroupNCCL',
    language: 'python',
    role: 'create',
    callsInto: 'ncclCommInitRankConfig',
    // A backend built directly makes its communicator as new_group's does: lazily, unless
    // eager_connect_single_device follows.
    answer: c10d(C10D_NEW_GROUP, worldSize, ['new_group/eager-default', 'new_group/lazy-default']),
    underlying: { ...INIT, note: 'the NCCL communicator init behind it' },
  },
  eager_connect_single_device: {
    api: 'eager_connect_single_device',
    language: 'python',
    role: 'create',
    callsInto: 'ncclCommInitRankConfig',
    answer: c10d(['init/eager', 'new_group/eager-default']),
    underlying: { ...INIT, note: 'the NCCL communicator init it makes now' },
  },
  _new_process_group_helper: {
    api: '_new_process_group_helper',
    language: 'python',
    role: 'create',
    callsInto: 'ncclCommInitRankConfig',
    answer: c10d(C10D_NEW_GROUP, worldSize, ['new_group/eager-default', 'new_group/lazy-default']),
    underlying: { ...INIT, note: 'the NCCL communicator init behind it' },
  },
  PyNcclCommunicator: {
    api: 'PyNcclCommunicator',
    language: 'python',
    role: 'create',
    callsInto: 'ncclCommInitRank',
    // ncclCommInitRank through ctypes, then a warm-up all-reduce in the constructor: the line
    // pays init and connect, which is init's call + first collective.
    answer: INIT,
  },
  init_collective_group: { api: 'init_collective_group', language: 'python', role: 'create', callsInto: 'ncclCommInitRank', answer: INIT },
  destroy_collective_group: {
    api: 'destroy_collective_group',
    language: 'python',
    role: 'teardown',
    callsInto: 'ncclCommDestroy',
    answer: { experiment: 'destroy', variants: ['default'], call: DESTROY_TOTAL, extra: [{ step: 'finalize' }, { step: 'destroy' }] },
  },
  init_distributed: {
    api: 'init_distributed',
    language: 'python',
    role: 'create',
    callsInto: 'ncclCommInitRankConfig',
    answer: c10d(C10D_INIT, worldSize, ['init/eager', 'init/lazy']),
    underlying: { ...INIT, note: 'the NCCL communicator init behind it' },
  },
  new_comm: { api: 'new_comm', language: 'python', role: 'create', callsInto: 'ncclCommInitRankConfig', answer: INIT },
  'ProcessGroupNCCL.configure': {
    api: 'ProcessGroupNCCL.configure',
    language: 'python',
    role: 'create',
    callsInto: 'ncclCommInitRankConfig',
    // Aborts the communicator it had (if any) and makes a new one.
    answer: INIT,
  },
  first_collective: {
    api: 'first_collective',
    language: 'python',
    role: 'firstCollective',
    callsInto: 'ncclCommInitRankConfig',
    // The lazy variants' `first` step: the first collective on a group created without eager init,
    // of the variant of the API that created the group (byCreator); unknown creator: both lazy ones.
    answer: {
      experiment: 'c10d',
      variants: ['init/lazy', 'new_group/lazy-default'],
      byCreator: FIRST_COLLECTIVE_BY_CREATOR,
      childRanks: worldSize,
      call: FIRST,
    },
    underlying: { ...INIT, call: FIRST, note: 'the first collective after an NCCL init' },
  },
};

/**
 * The first-use kind of the run's variants (RunOptions.firstUse: `…/first=broadcast`, `…/first=sendrecv`)
 * that answers a group first used by `collective` (its torch.distributed name, CallSite
 * `firstCollectiveOf.collective`): a broadcast, a send/recv (send, recv, isend, irecv,
 * batch_isend_irecv), an allreduce; undefined for another collective (an allgather: no variant times it,
 * the allreduce's figure stands in and the reading says so).
 */
export function firstUseKindOf(collective: string | undefined): FirstUseKind | undefined {
  if (!collective) return undefined;
  if (collective === 'broadcast' || collective === 'broadcast_object_list') return 'broadcast';
  if (['send', 'recv', 'isend', 'irecv', 'batch_isend_irecv'].includes(collective)) return 'sendrecv';
  if (collective === 'all_reduce') return 'allreduce';
  return undefined;
}

/** The entry of `api`. */
export function apiEntry(api: ApiName): ApiEntry {
  return API_MAP[api];
}

/** Every experiment id the table refers to (present and future). */
export function mappedExperiments(): string[] {
  const ids = new Set<string>();
  for (const e of Object.values(API_MAP)) {
    ids.add(e.answer.experiment);
    if (e.underlying) ids.add(e.underlying.experiment);
  }
  return [...ids];
}
