/**
 * Which Python calls are NCCL lifecycle call sites, by name: the fully qualified names of
 * torch.distributed (c10d), of frameworks and backends that create or tear down a communicator,
 * of nccl4py, of CuPy's NCCL binding and of NCCL itself reached through ctypes; the methods that count only on a
 * receiver known to be a communicator of one of those libraries; and the backend argument that
 * tells an NCCL group from a gloo / mpi / xccl / mooncake one. Pure data and string rules: the
 * tree is read by pythonSites.ts. No `vscode` import.
 */
import { FRAMEWORK_APIS, NCCL_APIS, PYTHON_APIS, type ApiName, type NcclApi } from './apiMap';

export const DIST = 'torch.distributed';

/** Every NCCL lifecycle function (also the names ctypes wrappers call them by). */
export const NCCL_NAMES: ReadonlySet<string> = new Set(NCCL_APIS);

/** Fully qualified Python callee → API (c10d, frameworks, nccl4py's module-level entry points). */
export const PY_QUALIFIED = new Map<string, ApiName>();
// The module-level functions of torch.distributed (the mesh and method entries are mapped below).
const MESH_OR_METHOD: readonly string[] = [
  'ProcessGroup.abort',
  'ProcessGroup.shutdown',
  'init_device_mesh',
  'DeviceMesh',
  'DeviceMesh._flatten',
  'DeviceMesh._unflatten',
];
for (const name of PYTHON_APIS.filter((n) => !MESH_OR_METHOD.includes(n))) {
  PY_QUALIFIED.set(`${DIST}.${name}`, name);
  PY_QUALIFIED.set(`${DIST}.distributed_c10d.${name}`, name);
}
for (const prefix of [`${DIST}.device_mesh`, DIST]) {
  PY_QUALIFIED.set(`${prefix}.init_device_mesh`, 'init_device_mesh');
  PY_QUALIFIED.set(`${prefix}.DeviceMesh`, 'DeviceMesh');
}
PY_QUALIFIED.set(`${DIST}.ProcessGroup.abort`, 'ProcessGroup.abort');
PY_QUALIFIED.set(`${DIST}.distributed_c10d.ProcessGroup.abort`, 'ProcessGroup.abort');
PY_QUALIFIED.set(`${DIST}.ProcessGroup.shutdown`, 'ProcessGroup.shutdown');
PY_QUALIFIED.set(`${DIST}.distributed_c10d.ProcessGroup.shutdown`, 'ProcessGroup.shutdown');
// new_subgroups_by_enumeration makes the subgroups new_subgroups makes (a new_group each, the same
// backend argument at the same place), from listed ranks: reported as new_subgroups.
for (const m of [DIST, `${DIST}.distributed_c10d`]) PY_QUALIFIED.set(`${m}.new_subgroups_by_enumeration`, 'new_subgroups');
// torch's private helper that shut a group's NCCL backend down before ProcessGroup.shutdown (< 2.7).
PY_QUALIFIED.set(`${DIST}.distributed_c10d._shutdown_backend`, 'ProcessGroup.shutdown');
// c10d backends built directly.
for (const m of [DIST, `${DIST}.distributed_c10d`, 'torch._C._distributed_c10d'])
  PY_QUALIFIED.set(`${m}.ProcessGroupNCCL`, 'ProcessGroupNCCL');
PY_QUALIFIED.set(`${DIST}.distributed_c10d._new_process_group_helper`, '_new_process_group_helper');
// Ray's collective groups (the NCCL backend is the default; the backend argument is checked).
for (const m of ['ray.util.collective', 'ray.util.collective.collective']) {
  PY_QUALIFIED.set(`${m}.init_collective_group`, 'init_collective_group');
  PY_QUALIFIED.set(`${m}.destroy_collective_group`, 'destroy_collective_group');
}
// DeepSpeed's communication module wraps torch.distributed one to one.
for (const m of ['deepspeed.comm', 'deepspeed.comm.comm']) {
  PY_QUALIFIED.set(`${m}.new_group`, 'new_group');
  PY_QUALIFIED.set(`${m}.destroy_process_group`, 'destroy_process_group');
  PY_QUALIFIED.set(`${m}.init_distributed`, 'init_distributed');
  PY_QUALIFIED.set(`${m}.initialize_mesh_device`, 'init_device_mesh');
}
PY_QUALIFIED.set('deepspeed.init_distributed', 'init_distributed');
// torchcomms.
for (const m of ['torchcomms', 'torchcomms._comms']) PY_QUALIFIED.set(`${m}.new_comm`, 'new_comm');
// nccl4py (package `nccl`): the class's constructors and the Cython bindings' functions.
const NCCL4PY_CLASS = ['nccl.core.Communicator', 'nccl.core.communicator.Communicator', 'nccl.Communicator'];
for (const c of NCCL4PY_CLASS) {
  PY_QUALIFIED.set(`${c}.init`, 'ncclCommInitRankScalable');
  PY_QUALIFIED.set(`${c}.init_all`, 'ncclCommInitAll');
}
/** nccl4py's Cython binding function (`nccl.bindings.nccl.comm_split`) → the NCCL function it calls. */
const NCCL4PY_BINDINGS: Record<string, NcclApi> = {
  comm_init_rank: 'ncclCommInitRank',
  comm_init_rank_config: 'ncclCommInitRankConfig',
  comm_init_all: 'ncclCommInitAll',
  comm_init_rank_scalable: 'ncclCommInitRankScalable',
  comm_split: 'ncclCommSplit',
  comm_shrink: 'ncclCommShrink',
  comm_grow: 'ncclCommGrow',
  comm_finalize: 'ncclCommFinalize',
  comm_destroy: 'ncclCommDestroy',
  comm_abort: 'ncclCommAbort',
  comm_revoke: 'ncclCommRevoke',
  comm_suspend: 'ncclCommSuspend',
  comm_resume: 'ncclCommResume',
  comm_register: 'ncclCommRegister',
  comm_deregister: 'ncclCommDeregister',
  comm_window_register: 'ncclCommWindowRegister',
  comm_window_deregister: 'ncclCommWindowDeregister',
  comm_mem_stats: 'ncclCommMemStats',
};
for (const m of ['nccl.bindings.nccl', 'nccl.bindings'])
  for (const [f, api] of Object.entries(NCCL4PY_BINDINGS)) PY_QUALIFIED.set(`${m}.${f}`, api);

// CuPy's NCCL binding (`from cupy.cuda import nccl`): the communicator class's constructor calls
// ncclCommInitRank (ncclCommInitRankConfig from NCCL 2.18, with the config it is given or none),
// its static `initAll` ncclCommInitAll.
const CUPY_NCCL_MODULES = ['cupy.cuda.nccl', 'cupy_backends.cuda.libs.nccl'];
for (const m of CUPY_NCCL_MODULES) {
  PY_QUALIFIED.set(`${m}.NcclCommunicator`, 'ncclCommInitRank');
  PY_QUALIFIED.set(`${m}.NcclCommunicator.initAll`, 'ncclCommInitAll');
}

/**
 * Module paths of vLLM-style `PyNcclCommunicator` classes (vLLM, SGLang): any
 * `….pynccl.PyNcclCommunicator`, or `….pynccl.NCCLCommunicator` (the same class's name in vLLM 0.4.0).
 */
const PYNCCL = /(^|\.)pynccl\.(PyNccl|NCCL)Communicator$/;
/** torchft's reconfigurable NCCL process groups (their constructor makes no communicator: `configure` does). */
const TORCHFT_NCCL = /^torchft(\.process_group)?\.(ProcessGroupNCCL|ProcessGroupBabyNCCL)$/;

const PY_COLLECTIVE_NAMES = [
  'all_reduce',
  'all_gather',
  'all_gather_into_tensor',
  'all_gather_object',
  'broadcast',
  'broadcast_object_list',
  'reduce',
  'reduce_scatter',
  'reduce_scatter_tensor',
  'all_to_all',
  'all_to_all_single',
  'barrier',
  'gather',
  'scatter',
  'send',
  'recv',
  'isend',
  'irecv',
  'batch_isend_irecv',
];
/**
 * The collectives by fully qualified name: torch.distributed's, and DeepSpeed's `deepspeed.comm`
 * ones, which pass their arguments on one to one (the group at the same place) to torch.distributed.
 */
export const PY_COLLECTIVES: ReadonlySet<string> = new Set(
  PY_COLLECTIVE_NAMES.flatMap((n) => [`${DIST}.${n}`, `${DIST}.distributed_c10d.${n}`, `deepspeed.comm.${n}`, `deepspeed.comm.comm.${n}`]),
);

/**
 * The positional index of the `group` parameter of the torch.distributed collectives (a call
 * with fewer positional arguments and no `group=` runs on the default group).
 */
export const GROUP_POSITION: Readonly<Record<string, number>> = {
  all_reduce: 2,
  all_gather: 2,
  all_gather_into_tensor: 2,
  all_gather_object: 2,
  broadcast: 2,
  broadcast_object_list: 2,
  reduce: 3,
  reduce_scatter: 3,
  reduce_scatter_tensor: 3,
  all_to_all: 2,
  all_to_all_single: 4,
  barrier: 0,
  gather: 3,
  scatter: 3,
  send: 2,
  recv: 2,
  isend: 2,
  irecv: 2,
  batch_isend_irecv: 99,
};

/**
 * Methods that are call sites only on a receiver known to be a communicator of their library
 * (`comm.split(...)` of nccl4py, never `"a,b".split(",")`): method → API.
 */
export const NCCL4PY_METHODS: Readonly<Record<string, NcclApi>> = {
  split: 'ncclCommSplit',
  shrink: 'ncclCommShrink',
  grow: 'ncclCommGrow',
  destroy: 'ncclCommDestroy',
  abort: 'ncclCommAbort',
  finalize: 'ncclCommFinalize',
  revoke: 'ncclCommRevoke',
  suspend: 'ncclCommSuspend',
  resume: 'ncclCommResume',
  register_buffer: 'ncclCommRegister',
  register_window: 'ncclCommWindowRegister',
  get_mem_stat: 'ncclCommMemStats',
};
/** CuPy's `NcclCommunicator` methods: `commSplit` makes a child with ncclCommSplit; `destroy`, `abort`. */
export const CUPY_METHODS: Readonly<Record<string, NcclApi>> = {
  commSplit: 'ncclCommSplit',
  destroy: 'ncclCommDestroy',
  abort: 'ncclCommAbort',
};
/** torchcomms' `TorchComm` methods: `split` makes a child with ncclCommSplit, `finalize` destroys the communicator. */
export const TORCHCOMMS_METHODS: Readonly<Record<string, NcclApi>> = { split: 'ncclCommSplit', finalize: 'ncclCommDestroy' };

/** A receiver named like a communicator (`nccl_comm`, `comm`, `self.nccl_communicator`, `parent_tc`, `torchcomm`). */
export const COMM_RECEIVER = /(^|[._])([a-z_]*comm[a-z_]*|[a-z_]*_tc|tc)$/i;
/** Receivers of `.abort()` and `.shutdown()` taken for a process group (besides variables assigned from a group-creating call). */
export const GROUP_RECEIVER = /(^|[._])(pg|process_group|[a-z]*group)$/i;

/**
 * torch's `DeviceMesh` methods that make groups (private names, common elsewhere: pytrees, tensor
 * utilities): call sites only on a receiver known to be a device mesh (pythonSites.ts).
 */
export const MESH_METHODS: Readonly<Record<string, ApiName>> = { _flatten: 'DeviceMesh._flatten', _unflatten: 'DeviceMesh._unflatten' };
/** A receiver named like a device mesh (`mesh`, `world_mesh`, `self.device_mesh`, `mesh_2d`), taken for one in a file that imports torch's device mesh. */
export const MESH_RECEIVER = /(^|[._])([a-z_]*_)?mesh(_?[0-9]+d)?$/i;

/** The last name of every method above. */
export const METHOD_NAMES: readonly string[] = [
  ...new Set([
    ...Object.keys(NCCL4PY_METHODS),
    ...Object.keys(TORCHCOMMS_METHODS),
    ...Object.keys(CUPY_METHODS),
    'configure',
    'eager_connect_single_device',
    'abort',
    'shutdown',
  ]),
];

/** The libraries whose imports make their method names worth looking for. */
export interface Libraries {
  nccl4py: boolean;
  torchcomms: boolean;
  torchft: boolean;
  /** CuPy's NCCL binding (`cupy.cuda.nccl`). */
  cupy: boolean;
  /** torch's device mesh (`torch.distributed.device_mesh`, `DeviceMesh`, `init_device_mesh`). */
  torchMesh: boolean;
}

export function librariesOf(bindings: ReadonlyMap<string, readonly string[]>): Libraries {
  const libs: Libraries = { nccl4py: false, torchcomms: false, torchft: false, cupy: false, torchMesh: false };
  for (const fulls of bindings.values())
    for (const f of fulls) {
      if (f === 'nccl' || f.startsWith('nccl.')) libs.nccl4py = true;
      if (f === 'torchcomms' || f.startsWith('torchcomms.')) libs.torchcomms = true;
      if (f === 'torchft' || f.startsWith('torchft.')) libs.torchft = true;
      if (CUPY_NCCL_MODULES.some((m) => f === m || f.startsWith(`${m}.`))) libs.cupy = true;
      if (/^torch\.distributed\.(device_mesh(\.|$)|DeviceMesh$|init_device_mesh$)/.test(f)) libs.torchMesh = true;
    }
  return libs;
}

/**
 * Every fully qualified name `callee` can denote through the file's imports (`bindings`: local
 * name → the names it is bound to, in the order imported; a name imported in two branches has
 * both). Unbound `dist` is taken for torch.distributed by convention; a bare name under
 * `from torch.distributed import *` is torch.distributed's. Empty when `callee` is not a dotted name.
 */
export function qualifyAll(callee: string, bindings: ReadonlyMap<string, readonly string[]>, star: boolean): string[] {
  if (!/^[A-Za-z_][A-Za-z0-9_]*(\s*\.\s*[A-Za-z_][A-Za-z0-9_]*)*$/.test(callee)) return [];
  const parts = callee.split('.').map((p) => p.trim());
  const head = parts[0] ?? '';
  const rest = parts.slice(1);
  const bound = bindings.get(head);
  if (bound && bound.length > 0) return bound.map((b) => [b, ...rest].join('.'));
  if (head === 'dist') return [[DIST, ...rest].join('.')];
  // `torch` reached through a relative star import (`from .utils import *`) is torch.
  if (head === 'torch' && rest.length > 0) return [parts.join('.')];
  if (star && parts.length === 1) return [`${DIST}.${head}`];
  return [];
}

/** The API a fully qualified callee is (c10d, frameworks, nccl4py), or undefined. */
export function qualifiedApi(full: string): ApiName | undefined {
  const api = PY_QUALIFIED.get(full);
  if (api) return api;
  if (PYNCCL.test(full)) return 'PyNcclCommunicator';
  return undefined;
}

/** Is `full` torchft's reconfigurable NCCL process group class? */
export function isTorchftNccl(full: string): boolean {
  return TORCHFT_NCCL.test(full);
}

/** The last names of every qualified callee above (what the text is searched for). */
export const QUALIFIED_LAST_NAMES: readonly string[] = [
  ...new Set(
    [...PY_QUALIFIED.keys(), ...PY_COLLECTIVES, 'x.PyNcclCommunicator', 'x.NCCLCommunicator', 'x.ProcessGroupBabyNCCL'].map((q) =>
      q.slice(q.lastIndexOf('.') + 1),
    ),
  ),
];

/** Where each API's backend (or device type) argument is: its keyword and positional index. */
export const BACKEND_ARG: Partial<Record<ApiName, { keyword: string; position: number; deviceType?: boolean }>> = {
  init_process_group: { keyword: 'backend', position: 0 },
  new_group: { keyword: 'backend', position: 2 },
  new_subgroups: { keyword: 'backend', position: 2 },
  _new_process_group_helper: { keyword: 'backend', position: 3 },
  init_collective_group: { keyword: 'backend', position: 2 },
  init_distributed: { keyword: 'dist_backend', position: 0 },
  new_comm: { keyword: 'backend', position: 0 },
  init_device_mesh: { keyword: 'device_type', position: 0, deviceType: true },
  DeviceMesh: { keyword: 'device_type', position: 0, deviceType: true },
};

/** An argument as the backend rule reads it. */
export interface ArgumentText {
  /** The keyword, for a keyword argument. */
  keyword?: string;
  /** Tree-sitter node type of the value (`string`, `attribute`, `identifier`, …). */
  type: string;
  text: string;
}

/**
 * Whether a call of `api` with `args` makes an NCCL communicator, from its backend argument:
 * false for a literal or `Backend.X` naming another backend (gloo, mpi, xccl, ucc, mooncake, a
 * CPU device mesh, …), true otherwise (NCCL named — `"nccl"`, `"cuda:nccl"`,
 * `"cpu:gloo,cuda:nccl"` —, the default, or a value the code does not spell out). A `**kwargs`
 * splat may carry the backend: taken as NCCL.
 */
export function makesNccl(api: ApiName, args: readonly ArgumentText[]): boolean {
  const spec = BACKEND_ARG[api];
  if (!spec) return true;
  const positional = args.filter((a) => a.keyword === undefined && !a.text.startsWith('*'));
  const value = args.find((a) => a.keyword === spec.keyword) ?? positional[spec.position];
  if (!value) return true;
  if (value.type === 'string' || value.type === 'concatenated_string') {
    const literal = value.text.toLowerCase();
    // An f-string's holes may name NCCL (`f"cpu:gloo,{dev}:{get_nccl_backend()}"`).
    if (/\{[^}]*\}/.test(literal) && /^[a-z]*f/.test(literal)) return true;
    if (spec.deviceType) return !/^[a-z]*["']+cpu["']+$/.test(literal);
    return /nccl/.test(literal);
  }
  if (value.type === 'attribute') {
    const last = value.text.slice(value.text.lastIndexOf('.') + 1);
    if (/^[A-Z_]+$/.test(last)) return spec.deviceType ? last !== 'CPU' : /NCCL/.test(last);
  }
  if (value.type === 'none') return true;
  return true;
}

/** Names of backend classes that are not NCCL (an `eager_connect_single_device` on one of them is no call site). */
export const OTHER_BACKEND = /ProcessGroup(Gloo|XCCL|MPI|UCC|HCCL)|Gloo|XCCL/;

/** Every API a Python call site may have. */
export const PYTHON_SITE_APIS: readonly ApiName[] = [...PYTHON_APIS, ...FRAMEWORK_APIS, ...NCCL_APIS];
