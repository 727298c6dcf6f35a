/**
 * The environment variables `commcost trace` adds for NCCL's own log and for the C interposer
 * (pure; the engine, client/trace/run.ts `traceEnv`, merges them into the job's environment).
 * Only variables are added or prepended; a variable the user set is never replaced or lost.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { CommcostError } from '../errors';
import { NCCL_LOG_SUFFIX } from './ncclView';

/**
 * The C interposer library (libcommcost-interposer.so) next to the running bundle: `<base>/native`
 * or `<base>/../dist/native`, the per-architecture copy first.
 * @throws CommcostError BAD_INPUT when it is not there (with how to build it)
 */
export function interposerPath(base: string): string {
  for (const d of [join(base, 'native'), join(base, '..', 'dist', 'native')])
    for (const f of [join(d, `linux-${process.arch}`, 'libcommcost-interposer.so'), join(d, 'libcommcost-interposer.so')]) if (existsSync(f)) return f;
  throw new CommcostError('BAD_INPUT', `commcost trace --interpose: the interposer libcommcost-interposer.so was not found next to ${base}`, { hint: 'build it: node native/build.mjs (or reinstall commcost)' });
}

/** Whether and how NCCL's log is asked for: the variables to add, or why it is not. */
export interface NcclLogEnv {
  add: Record<string, string>;
  /** Why NCCL's view will be missing (said in the trace), when the log is not asked for. */
  skipped?: string;
}

/**
 * NCCL's `Init timings` log: NCCL_DEBUG=INFO, NCCL_DEBUG_SUBSYS=INIT and a per-process
 * NCCL_DEBUG_FILE `<recordsDir>/%h-%p.nccl.log` (NCCL expands %h to the host name, %p to the pid),
 * only when the user set neither NCCL_DEBUG nor NCCL_DEBUG_FILE: otherwise the user's own log
 * settings (and where their log goes: stdout or their file) stay exactly as they were, and the
 * trace says that NCCL's view was not read. NCCL_DEBUG_SUBSYS without NCCL_DEBUG prints nothing,
 * so replacing it changes nothing the user sees. With NCCL_DEBUG unset NCCL prints nothing at all,
 * so moving its INFO lines to a file leaves the job's output as it was.
 * @param base the job's environment before tracing
 * @param recordsDir the folder of the per-process records (absolute)
 * @param enabled false: the user turned it off (--no-nccl-log)
 * @param elsewhere why the job's ranks may run on other hosts ({@link ranksElsewhere}), where
 *   `recordsDir` (this machine's) does not exist: NCCL would then fail to open its file and print
 *   its INFO lines into the job's output, so the log is not asked for (null/absent: all ranks here)
 */
export function ncclLogEnv(base: NodeJS.ProcessEnv, recordsDir: string, enabled = true, elsewhere?: string | null): NcclLogEnv {
  if (!enabled) return { add: {}, skipped: "NCCL's log was not asked for (--no-nccl-log)" };
  if (base.NCCL_DEBUG !== undefined && base.NCCL_DEBUG !== '')
    return { add: {}, skipped: `NCCL_DEBUG=${base.NCCL_DEBUG} was set by you: your NCCL log settings were kept, so NCCL's Init timings were not read` };
  if (base.NCCL_DEBUG_FILE !== undefined && base.NCCL_DEBUG_FILE !== '')
    return { add: {}, skipped: 'NCCL_DEBUG_FILE was set by you: your NCCL log settings were kept, so NCCL\'s Init timings were not read' };
  if (elsewhere)
    return { add: {}, skipped: `NCCL's log was not asked for: ${elsewhere}, where this machine's records folder does not exist (NCCL would print its log into the job's output); trace with --host on a node whose home the ranks share, or set NCCL_DEBUG_FILE yourself` };
  return { add: { NCCL_DEBUG: 'INFO', NCCL_DEBUG_SUBSYS: 'INIT', NCCL_DEBUG_FILE: `${recordsDir}/%h-%p${NCCL_LOG_SUFFIX}` } };
}

/** Programs that only start other commands (skipped to find the launcher). */
const WRAPPERS = new Set(['env', 'nohup', 'time', 'nice', 'ionice', 'stdbuf', 'taskset', 'numactl', 'exec', 'command']);
/** Launchers that start ranks on other hosts whatever their flags. */
const REMOTE_LAUNCHERS = new Set(['srun', 'salloc', 'sbatch', 'pdsh', 'clush', 'ssh', 'pbsdsh', 'aprun', 'jsrun', 'flux', 'qsub', 'bsub']);
/** MPI launchers: other hosts when given hosts, or inside a batch allocation (they read it). */
const MPI_LAUNCHERS = new Set(['mpirun', 'mpiexec', 'orterun', 'prterun', 'mpiexec.hydra', 'horovodrun', 'deepspeed']);
const HOST_FLAGS = /^--?(H|host|hosts|hostfile|machinefile|f|hostlist|default-hostfile|include|num_nodes)(=|$)/;
const ALLOCATION_VARS = ['SLURM_JOB_NODELIST', 'SLURM_NODELIST', 'PBS_NODEFILE', 'LSB_HOSTS', 'LSB_MCPU_HOSTS', 'OMPI_MCA_orte_default_hostfile', 'PRTE_MCA_prte_default_hostfile'];

/**
 * Why the job's ranks may run on hosts other than this one, or null when its launcher keeps them
 * here. Looks at the program (after wrappers like `env A=B`, `nohup`, `time`): srun, salloc, sbatch,
 * pdsh, ssh… always place ranks elsewhere; mpirun, mpiexec, horovodrun and deepspeed do when given
 * hosts (-H, --host, --hostfile, …) or inside a Slurm, PBS or LSF allocation. torchrun and
 * `python -m torch.distributed.run` start local ranks only (each node runs its own).
 * @param command the job's program and arguments
 * @param env the job's environment (the batch allocation variables are read from it)
 * @returns a phrase like `the launcher srun may place ranks on other hosts`, or null
 */
export function ranksElsewhere(command: readonly string[], env: NodeJS.ProcessEnv): string | null {
  let i = 0;
  const name = (a: string | undefined) => (a ?? '').split('/').pop() ?? '';
  while (i < command.length && (WRAPPERS.has(name(command[i])) || /^\w+=/.test(command[i]!) || (i > 0 && /^-/.test(command[i]!) && WRAPPERS.has(name(command[i - 1]))))) i++;
  const prog = name(command[i]);
  if (REMOTE_LAUNCHERS.has(prog)) return `the launcher ${prog} may place ranks on other hosts`;
  if (MPI_LAUNCHERS.has(prog)) {
    const flag = command.slice(i + 1).find((a) => HOST_FLAGS.test(a));
    if (flag) return `${prog} ${flag.split('=')[0]} places ranks on the hosts given`;
    const alloc = ALLOCATION_VARS.find((v) => env[v]);
    if (alloc) return `${prog} runs inside a batch allocation (${alloc} is set) and may place ranks on its other hosts`;
  }
  return null;
}

/**
 * The C interposer (native/interposer/): its library first in LD_PRELOAD, the user's preloads kept
 * after it (LD_PRELOAD is separated by spaces or colons; ours is joined with a colon, the user's
 * text is kept as it was).
 * @param base the job's environment before tracing
 * @param lib the interposer's absolute path (no space or colon in it, else it is refused)
 * @throws Error when `lib` holds a space or a colon (LD_PRELOAD could not carry it)
 */
export function interposerEnv(base: NodeJS.ProcessEnv, lib: string): Record<string, string> {
  if (/[\s:]/.test(lib)) throw new Error(`the interposer's path ${lib} holds a space or a colon: LD_PRELOAD cannot carry it; install commcost in a folder without them`);
  const user = base.LD_PRELOAD?.trim();
  return { LD_PRELOAD: user ? `${lib}:${user}` : lib };
}

/** Path lists commcost prepends to (a Ray worker keeps its own value after ours). */
const PREPENDED = ['PYTHONPATH', 'LD_LIBRARY_PATH', 'LD_PRELOAD'];

/**
 * COMMCOST_TRACE_RAY: what the Python hook adds to the runtime_env of a Ray driver's `ray.init`
 * (native/pyhook/commcost_ray.py), so that every worker Ray starts for the job — on this node or
 * another of a running cluster — gets the trace's variables: the variables the trace changed
 * (`set`), and for PYTHONPATH, LD_LIBRARY_PATH and LD_PRELOAD only the part prepended
 * (`prepend`: the worker's own value is kept after it). RAY_ADDRESS (--ray-address) is the
 * driver's, not forwarded.
 * @param base the job's environment before tracing
 * @param env the job's environment as traced
 * @returns the JSON text of `{ set, prepend }`
 */
export function rayForwardEnv(base: NodeJS.ProcessEnv, env: NodeJS.ProcessEnv): string {
  const set: Record<string, string> = {}, prepend: Record<string, string> = {};
  for (const [name, value] of Object.entries(env)) {
    if (value === undefined || value === base[name] || name === 'COMMCOST_TRACE_RAY' || name === 'RAY_ADDRESS') continue;
    const user = base[name];
    if (PREPENDED.includes(name)) {
      prepend[name] = user && value.endsWith(user) ? value.slice(0, value.length - user.length).replace(/[:\s]$/, '') : value;
    } else set[name] = value;
  }
  return JSON.stringify({ set, prepend });
}
