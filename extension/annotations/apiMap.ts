/**
 * The one table that says which experiment, variant and steps of a run answer each annotated
 * API. No `vscode` import.
 *
 * Experiment ids are strings, not `ExperimentId`: `shrink`, `grow`, `revoke`, `registration`,
 * `suspend` and `c10d` are being added to the catalogue with the same shape (variants of steps
 * `call`, `first`, `total`); until a run has them, the annotation says "not measured in this run".
 */

/** C/C++ NCCL entry points the finder reports. */
export const NCCL_APIS = [
  'ncclCommInitRank',
  'ncclCommInitRankConfig',
  'ncclCommInitAll',
  'ncclCommInitRankScalable',
  'ncclCommSplit',
  'ncclCommShrink',
  'ncclCommGrow',
  'ncclCommRevoke',
  'ncclCommFinalize',
  'ncclCommDestroy',
  'ncclCommAbort',
  'ncclCommRegister',
  'ncclCommWindowRegister',
  'ncclCommSuspend',
] as const;

/** PyTorch (c10d) entry points, by the canonical name the finder resolves aliases to. */
export const PYTHON_APIS = [
  'init_process_group',
  'new_group',
  'new_subgroups',
  'split_group',
  'shrink_group',
  'destroy_process_group',
  '_abort_process_group',
  'ProcessGroup.abort',
  'init_device_mesh',
  'DeviceMesh',
] as const;

export type NcclApi = (typeof NCCL_APIS)[number];
export type PythonApi = (typeof PYTHON_APIS)[number];
export type ApiName = NcclApi | PythonApi;

/** What an API does to a communicator: decides which figure is the headline. */
export type ApiRole = 'create' | 'teardown' | 'register' | 'suspend';

/** A step of a variant: by id first, else the first step of one of `kinds`. */
export interface StepRef {
  step: string;
  kinds?: readonly ('call' | 'first' | 'toFirst' | 'steady' | 'teardown')[];
}

/** Where in a run the figures of an API are. */
export interface Answer {
  /** Experiment id (may be one this version's catalogue does not have yet). */
  experiment: string;
  /** Variant names or name prefixes in order of preference; the first present is used. Empty: the first variant. */
  variants: readonly string[];
  /** The API call itself. */
  call?: StepRef;
  /** The first collective on the communicator it produced. */
  first?: StepRef;
  /** The whole: call + first collective, or the whole teardown. */
  total?: StepRef;
  /** Further steps shown in the hover (e.g. the re-init after an abort). */
  extra?: readonly StepRef[];
}

export interface ApiEntry {
  api: ApiName;
  language: 'python' | 'cpp';
  role: ApiRole;
  /** The primary answer. */
  answer: Answer;
  /**
   * For c10d wrappers: the NCCL experiment that times what the wrapper calls underneath, used
   * (and said so) while no run has the c10d experiment.
   */
  underlying?: Answer & { note: string };
}

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

const SPLIT_VARIANTS = ['halves/splitShare=0', 'halves/splitShare=1', 'whole/splitShare=0', 'whole/splitShare=1'] as const;
const INIT = create('init', ['default']);
const ABORT: Answer = {
  experiment: 'abort',
  variants: ['default'],
  call: { step: 'abort', kinds: ['teardown'] },
  extra: [{ step: 'reinit', kinds: ['call'] }, FIRST, TOTAL],
};
const DESTROY_TOTAL: StepRef = { step: 'total', kinds: ['teardown'] };

const c10d = (variant: string): Answer => create('c10d', [variant]);

/** The mapping table: one entry per API. */
export const API_MAP: Readonly<Record<ApiName, ApiEntry>> = {
  ncclCommInitRank: { api: 'ncclCommInitRank', language: 'cpp', role: 'create', answer: INIT },
  ncclCommInitRankConfig: { api: 'ncclCommInitRankConfig', language: 'cpp', role: 'create', answer: INIT },
  ncclCommInitAll: { api: 'ncclCommInitAll', language: 'cpp', role: 'create', answer: INIT },
  ncclCommInitRankScalable: { api: 'ncclCommInitRankScalable', language: 'cpp', role: 'create', answer: INIT },
  ncclCommSplit: { api: 'ncclCommSplit', language: 'cpp', role: 'create', answer: create('split', SPLIT_VARIANTS) },
  ncclCommShrink: { api: 'ncclCommShrink', language: 'cpp', role: 'create', answer: create('shrink') },
  ncclCommGrow: { api: 'ncclCommGrow', language: 'cpp', role: 'create', answer: create('grow') },
  ncclCommRevoke: {
    api: 'ncclCommRevoke',
    language: 'cpp',
    role: 'teardown',
    answer: { experiment: 'revoke', variants: [], call: { step: 'revoke', kinds: ['teardown', 'call'] }, total: DESTROY_TOTAL },
  },
  ncclCommFinalize: {
    api: 'ncclCommFinalize',
    language: 'cpp',
    role: 'teardown',
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
    answer: {
      experiment: 'destroy',
      variants: ['default'],
      call: { step: 'destroy' },
      total: DESTROY_TOTAL,
      extra: [{ step: 'finalize' }],
    },
  },
  ncclCommAbort: { api: 'ncclCommAbort', language: 'cpp', role: 'teardown', answer: ABORT },
  ncclCommRegister: {
    api: 'ncclCommRegister',
    language: 'cpp',
    role: 'register',
    answer: { experiment: 'registration', variants: ['register'], call: { step: 'register', kinds: ['call'] }, first: FIRST, total: TOTAL },
  },
  ncclCommWindowRegister: {
    api: 'ncclCommWindowRegister',
    language: 'cpp',
    role: 'register',
    answer: { experiment: 'registration', variants: ['window'], call: { step: 'register', kinds: ['call'] }, first: FIRST, total: TOTAL },
  },
  ncclCommSuspend: {
    api: 'ncclCommSuspend',
    language: 'cpp',
    role: 'suspend',
    answer: { experiment: 'suspend', variants: [], call: { step: 'suspend', kinds: ['call'] }, first: FIRST, total: TOTAL },
  },
  init_process_group: {
    api: 'init_process_group',
    language: 'python',
    role: 'create',
    answer: c10d('init_process_group'),
    underlying: { ...INIT, note: 'the NCCL communicator init behind it' },
  },
  new_group: {
    api: 'new_group',
    language: 'python',
    role: 'create',
    answer: c10d('new_group'),
    underlying: { ...INIT, note: 'the NCCL communicator init behind it' },
  },
  new_subgroups: {
    api: 'new_subgroups',
    language: 'python',
    role: 'create',
    answer: c10d('new_subgroups'),
    underlying: { ...INIT, note: 'the NCCL communicator init behind each subgroup' },
  },
  split_group: {
    api: 'split_group',
    language: 'python',
    role: 'create',
    answer: c10d('split_group'),
    underlying: { ...create('split', SPLIT_VARIANTS), note: 'the ncclCommSplit behind it' },
  },
  shrink_group: {
    api: 'shrink_group',
    language: 'python',
    role: 'create',
    answer: c10d('shrink_group'),
    underlying: { ...create('shrink'), note: 'the ncclCommShrink behind it' },
  },
  destroy_process_group: {
    api: 'destroy_process_group',
    language: 'python',
    role: 'teardown',
    answer: { experiment: 'c10d', variants: ['destroy_process_group'], call: { step: 'call', kinds: ['call', 'teardown'] } },
    underlying: {
      experiment: 'destroy',
      variants: ['default'],
      call: DESTROY_TOTAL,
      extra: [{ step: 'finalize' }, { step: 'destroy' }],
      note: 'the NCCL finalize + destroy behind it',
    },
  },
  _abort_process_group: {
    api: '_abort_process_group',
    language: 'python',
    role: 'teardown',
    answer: { experiment: 'c10d', variants: ['abort'], call: { step: 'call', kinds: ['call', 'teardown'] } },
    underlying: { ...ABORT, note: 'the ncclCommAbort behind it' },
  },
  'ProcessGroup.abort': {
    api: 'ProcessGroup.abort',
    language: 'python',
    role: 'teardown',
    answer: { experiment: 'c10d', variants: ['abort'], call: { step: 'call', kinds: ['call', 'teardown'] } },
    underlying: { ...ABORT, note: 'the ncclCommAbort behind it' },
  },
  init_device_mesh: {
    api: 'init_device_mesh',
    language: 'python',
    role: 'create',
    answer: c10d('init_device_mesh'),
    underlying: { ...INIT, note: 'the NCCL communicator init behind each mesh dimension' },
  },
  DeviceMesh: {
    api: 'DeviceMesh',
    language: 'python',
    role: 'create',
    answer: c10d('init_device_mesh'),
    underlying: { ...INIT, note: 'the NCCL communicator init behind each mesh dimension' },
  },
};

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
