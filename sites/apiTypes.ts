/**
 * The API names the call-site finder reports (NCCL, c10d, frameworks, the first collective) and
 * the shapes of the mapping table of apiMap.ts (what entry, answer and step of a run say). No
 * `vscode` import; apiMap.ts re-exports everything here, so importers use either.
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
  'ncclCommDeregister',
  'ncclCommWindowRegister',
  'ncclCommWindowDeregister',
  'ncclCommSuspend',
  'ncclCommResume',
  'ncclCommMemStats',
  // NCCL's device API (2.28+): a device communicator made from a host communicator, and freed.
  'ncclDevCommCreate',
  'ncclDevCommDestroy',
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
  // `pg.shutdown()` (and torch's `_shutdown_backend(pg)` before 2.7): the graceful teardown that
  // destroy_process_group runs, on a group kept outside c10d's registry.
  'ProcessGroup.shutdown',
  'init_device_mesh',
  'DeviceMesh',
  // A mesh re-shaped: `mesh[("dp", "cp")]._flatten("dp_cp")` makes the group of the merged
  // dimension, `mesh._unflatten(0, (2, 4), ("dp", "tp"))` (torch ≥ 2.10) the groups of the dimensions it splits one into.
  'DeviceMesh._flatten',
  'DeviceMesh._unflatten',
] as const;

/**
 * Python entry points of frameworks and backends that create or tear down an NCCL communicator
 * (a call of one of them is a call site; which one is decided by imports and receivers in
 * pythonNames.ts): c10d backends built directly (`ProcessGroupNCCL`, its
 * `eager_connect_single_device`, the private `_new_process_group_helper`), vLLM's
 * `PyNcclCommunicator` (ctypes init plus a warm-up collective), Ray's collective groups,
 * DeepSpeed's `init_distributed`, torchcomms' `new_comm`, torchft's `configure` (aborts the old
 * communicator and makes a new one). nccl4py methods and ctypes wrappers are reported under the
 * NCCL function they end in ({@link NCCL_APIS}).
 */
export const FRAMEWORK_APIS = [
  'ProcessGroupNCCL',
  'eager_connect_single_device',
  '_new_process_group_helper',
  'PyNcclCommunicator',
  'init_collective_group',
  'destroy_collective_group',
  'init_distributed',
  'new_comm',
  'ProcessGroupNCCL.configure',
] as const;

/**
 * A lazy group's first collective: the call that pays the communicator's init and connect when
 * the creation left them to it (the group's `eager` is false). Not an API of its own: the
 * collective as written is the site, answered by the lazy c10d variants' `first` step.
 */
export const FIRST_COLLECTIVE = 'first_collective' as const;

export type NcclApi = (typeof NCCL_APIS)[number];
export type PythonApi = (typeof PYTHON_APIS)[number];
export type FrameworkApi = (typeof FRAMEWORK_APIS)[number];
export type ApiName = NcclApi | PythonApi | FrameworkApi | typeof FIRST_COLLECTIVE;

/**
 * What an API does to a communicator: decides which figure is the headline. `query` reads a
 * communicator (ncclCommMemStats); `firstCollective` is a lazy group's first collective.
 */
export type ApiRole = 'create' | 'teardown' | 'register' | 'suspend' | 'query' | 'firstCollective';

/** A step of a variant: by id first, else the first step of one of `kinds`. */
export interface StepRef {
  step: string;
  kinds?: readonly ('call' | 'first' | 'toFirst' | 'steady' | 'teardown')[];
}

/** What of a run the child-size rule reads: its world size and, over several hosts, its nodes. */
export interface RunShape {
  ranks: number;
  nodes?: readonly { ranks: readonly number[] }[];
}

/** Where in a run the figures of an API are. */
export interface Answer {
  /** Experiment id (may be one this version's catalogue does not have yet). */
  experiment: string;
  /**
   * Variant names (exact, or a prefix ending before a `/`) in order of preference; every present
   * one answers, the headline is chosen among them (figures.ts). Empty: every variant of the experiment.
   */
  variants: readonly string[];
  /**
   * The order of preference when the call site creates eagerly (`device_id=` at the call, or the
   * file's `init_process_group` passes it): c10d's eager variants first. Unset: `variants`.
   */
  whenEager?: readonly string[];
  /**
   * For a lazy group's first collective: the order of preference by the API that created the
   * group (CallSite `firstCollectiveOf.api`), so that the figures are those of that creation's
   * lazy variant (new_group → `new_group/lazy-default`, the default group → `init/lazy`). It
   * comes before `whenEager`; a creator not listed (or unknown) uses `variants`.
   */
  byCreator?: Readonly<Partial<Record<string, readonly string[]>>>;
  /**
   * For creation: how many ranks the communicator that `variant` produces has in a run of this
   * shape (the largest child when several are made), or undefined when the run does not say. A
   * one-rank child has nothing to connect: it never headlines while a larger child answers.
   */
  childRanks?: (variant: string, run: RunShape) => number | undefined;
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
  /** The language the API is declared in (an NCCL function may be called from Python through ctypes or nccl4py). */
  language: 'python' | 'cpp';
  role: ApiRole;
  /** The NCCL call it ends in (what a CallSite reports as `callsInto`). */
  callsInto: NcclApi;
  /** The primary answer. */
  answer: Answer;
  /**
   * For c10d wrappers: the NCCL experiment that times what the wrapper calls underneath, used
   * (and said so) while no run has the c10d experiment.
   */
  underlying?: Answer & { note: string };
}
