/**
 * The flags of `commcost measure`: parsing and checking them (limits, deadlines, experiments,
 * NCCL paths, the Slurm job step), before anything is measured. Errors are BAD_INPUT
 * CommcostErrors that say what, where and what to do (exit 2).
 */
import { availableParallelism, cpus } from 'node:os';
import { resolve as resolvePath } from 'node:path';
import { commCountsProblem, DEFAULT_RUN_OPTIONS, EXPERIMENT_IDS, FIRST_USE_KINDS, firstUseOptionProblem, OPTION_LIMITS, pythonOptionProblem, withinLimit, type ExperimentId, type FirstUseKind, type OptionLimit, type RunOptions } from '../protocol/events';
import { CommcostError } from '../client/errors';
import { isLocalTarget, parseTargetSpec } from '../client/hosts';
import { srunArgsFor, type SlurmOptions } from '../client/slurm';

export function bad(message: string, hint?: string): CommcostError {
  return new CommcostError('BAD_INPUT', message, hint ? { hint } : {});
}

export function intOption(name: string, limit: OptionLimit) {
  return (text: string): number => {
    const n = /^-?\d+$/.test(text.trim()) ? Number(text) : NaN;
    if (!withinLimit(n, limit, true)) throw bad(`--${name} ${JSON.stringify(text)} must be a whole number from ${limit.min} to ${limit.max}`);
    return n;
  };
}

export function deadlineOption(text: string): number {
  // Decimal seconds only: Number() would also take 0x10, 1e3 or 0b1.
  const n = /^\s*\d+(\.\d+)?\s*$/.test(text) ? Number(text) : NaN;
  const { min, max } = OPTION_LIMITS.deadlineSeconds;
  if (!withinLimit(n, OPTION_LIMITS.deadlineSeconds, false)) throw bad(`--deadline ${JSON.stringify(text)} must be seconds, from ${min} to ${max} (one day)`);
  return n;
}

/**
 * Checks `--python <path>` (a path on one line, 1 to OPTION_LIMITS.pythonChars characters).
 * @throws CommcostError BAD_INPUT naming the flag.
 */
export function pythonFlag(text: string): string {
  const problem = pythonOptionProblem(text);
  if (problem) {
    const shown = text.length > 80 ? `${JSON.stringify(text.slice(0, 80))}…` : JSON.stringify(text);
    throw bad(`--python ${shown} ${problem}`, `give the path of the Python with torch on the host, on one line (at most ${OPTION_LIMITS.pythonChars.max} characters), or leave --python out to use COMMCOST_PYTHON, else python3`);
  }
  return text;
}

/** `--comm-counts 1,2,4`: the many-comms experiment's communicator counts (protocol/runOptions.ts `commCountsProblem`). */
export function commCountsFlag(text: string): number[] {
  const parts = text.split(',').map((x) => x.trim());
  const counts = parts.map((x) => (/^\d+$/.test(x) ? Number(x) : NaN));
  const problem = commCountsProblem(counts);
  if (problem) throw bad(`--comm-counts ${JSON.stringify(text)} ${problem.replace(/, got .*$/, '')}`, 'give ascending whole numbers, e.g. --comm-counts 1,2,4,8,16');
  return counts;
}

/** Parses `a,b,c` into known experiment ids, in the given order, without duplicates. */
export function parseExperiments(text: string): ExperimentId[] {
  const ids = text.split(',').map((s) => s.trim()).filter((s) => s !== '');
  if (ids.length === 0) throw bad('--experiments is empty', `known experiments: ${EXPERIMENT_IDS.join(', ')}`);
  const out: ExperimentId[] = [];
  for (const id of ids) {
    if (!(EXPERIMENT_IDS as readonly string[]).includes(id)) {
      throw bad(`unknown experiment ${JSON.stringify(id)}`, `known experiments: ${EXPERIMENT_IDS.join(', ')}`);
    }
    if (!out.includes(id as ExperimentId)) out.push(id as ExperimentId);
  }
  return out;
}

/**
 * Parses `--first-use allreduce,broadcast,sendrecv`: the first uses init and split time after creation.
 * @throws CommcostError (bad flag) on an empty list, an unknown kind or a repeat.
 */
export function parseFirstUse(text: string): FirstUseKind[] {
  const kinds = text.split(',').map((s) => s.trim()).filter((s) => s !== '');
  const problem = firstUseOptionProblem(kinds);
  if (problem) throw bad(`--first-use ${JSON.stringify(text)} ${problem}`, `give a comma-separated list of ${FIRST_USE_KINDS.join(', ')}`);
  return kinds as FirstUseKind[];
}

export interface MeasureFlags {
  /** The first --host: the coordinator's host (or the Slurm login node with --slurm). */
  host: string;
  /** Every --host after the first: more hosts in the same run, one agent each. */
  moreHosts?: string[];
  /** The address the other hosts reach the first one at (default: discovered). */
  coordinatorAddress?: string;
  /** --host is a Slurm login node: the ranks are started with srun. */
  slurm?: boolean;
  partition?: string;
  account?: string;
  slurmNodes?: number;
  gpusPerNode?: number;
  time?: string;
  srunArg?: string[];
  srun?: string;
  experiments: ExperimentId[];
  /** True when --experiments was not given (the agent may adapt the default set to one GPU). */
  experimentsByDefault?: boolean;
  iterations: number;
  warmup: number;
  deadline: number;
  ranks?: number;
  /** The many-comms experiment's communicator counts (default 1,2,4,8,16). */
  commCounts?: number[];
  /** One library, or several (`--nccl` repeated): each is measured in turn, then compared. */
  nccl?: string | string[];
  /** The Python with torch on the host (c10d, the NCCL wheel search); default: COMMCOST_PYTHON, else python3. */
  python?: string;
  /** --first-use: the first uses init and split time (default: allreduce only). */
  firstUse?: FirstUseKind[];
  node?: string;
  json?: string;
  html?: string;
  simulate?: boolean;
  simulateIfNoGpu?: boolean;
  acceptNewHostKey?: boolean;
  saveDir: string;
  verbose?: boolean;
  sshConfig?: string;
  knownHosts?: string;
  agentDir?: string;
}

/** The `--nccl` libraries in the order given (none: the agent searches). */
export function ncclPaths(f: Pick<MeasureFlags, 'nccl'>): string[] {
  if (f.nccl === undefined) return [];
  return (Array.isArray(f.nccl) ? f.nccl : [f.nccl]).filter((p) => p !== '');
}

/** commander's collector of a repeatable option. */
export function collect(value: string, previous: string[] | undefined): string[] {
  return [...(previous ?? []), value];
}

/**
 * Makes the agent's options from the flags.
 * @param nccl the library of this run (one of {@link ncclPaths}); default: the only `--nccl`, if one
 */
export function runOptionsFrom(f: MeasureFlags, nccl: string | undefined = ncclPaths(f).length === 1 ? ncclPaths(f)[0] : undefined): RunOptions {
  const o: RunOptions = { ...DEFAULT_RUN_OPTIONS, experiments: f.experiments, iterations: f.iterations, warmup: f.warmup, deadlineSeconds: f.deadline };
  if (f.ranks !== undefined) o.ranks = f.ranks;
  if (f.commCounts !== undefined) o.commCounts = f.commCounts;
  if (nccl) o.ncclPath = nccl;
  if (f.python !== undefined) o.python = f.python;
  if (f.firstUse !== undefined) o.firstUse = f.firstUse;
  if (f.simulate) o.simulate = true;
  if (f.experimentsByDefault) o.experimentsByDefault = true;
  return o;
}

/** The job step the Slurm flags ask for. */
export function slurmOptionsFrom(f: MeasureFlags): SlurmOptions {
  return {
    ...(f.partition !== undefined ? { partition: f.partition } : {}),
    ...(f.account !== undefined ? { account: f.account } : {}),
    ...(f.slurmNodes !== undefined ? { nodes: f.slurmNodes } : {}),
    ...(f.gpusPerNode !== undefined ? { gpusPerNode: f.gpusPerNode } : {}),
    ...(f.time !== undefined ? { time: f.time } : {}),
    ...(f.srunArg !== undefined ? { extraArgs: f.srunArg } : {}),
  };
}

/** CPUs of this machine (the ranks of a local run are processes here). */
export function localCpuCount(): number {
  return typeof availableParallelism === 'function' ? availableParallelism() : cpus().length;
}

/**
 * Flags that conflict or do nothing: throws BAD_INPUT for a conflict; returns warnings to print.
 * @param cpuCount CPUs of this machine (a parameter for tests)
 */
export function checkFlags(f: MeasureFlags, cpuCount = localCpuCount()): string[] {
  if (f.nccl !== undefined && f.simulate) {
    throw bad('--nccl and --simulate conflict: --simulate runs on the simulated NCCL, so no NCCL path is used', 'give one of them');
  }
  if (f.saveDir.trim() === '') throw bad('--save-dir is empty', 'give a folder, e.g. --save-dir .commcost/runs');
  if (f.json !== undefined && f.html !== undefined && resolvePath(f.json) === resolvePath(f.html)) {
    throw bad(`--json and --html name the same file (${f.json}): one would overwrite the other`, 'give two file names, e.g. --json run.json --html run.html');
  }
  if (f.json?.trim() === '' || f.html?.trim() === '') throw bad(`${f.json?.trim() === '' ? '--json' : '--html'} is empty`, 'give a file name');
  const libraries = ncclPaths(f);
  if (libraries.length > 1 && f.json !== undefined) {
    throw bad('--json takes one run, and --nccl was given several times', 'each run is saved in --save-dir (the paths are printed); compare saved runs with: commcost report a.json b.json --html out.html');
  }
  // A hostile or malformed host name is refused before anything else happens.
  for (const h of [f.host, ...(f.moreHosts ?? [])]) if (!isLocalTarget(h)) parseTargetSpec(h);
  const hosts = [f.host, ...(f.moreHosts ?? [])];
  const again = hosts.filter((h, i) => hosts.indexOf(h) !== i);
  if (again.length > 0) throw bad(`--host ${again[0]} is given twice`, 'name each host of the run once (one agent per host, one rank per GPU)');
  if (f.slurm && (f.moreHosts?.length ?? 0) > 0) throw bad('--slurm takes one --host (the login node): srun places the ranks on the compute nodes', 'give the nodes with --slurm-nodes and --gpus-per-node');
  if (f.slurm && isLocalTarget(f.host)) {
    throw bad(`--slurm needs --host <login node>, reached over SSH${f.host === 'localhost' ? ' (localhost cannot be one: the agent runs srun over SSH)' : ''}`, 'e.g. --host login1 --slurm --partition gpu');
  }
  const slurmOnly = (['partition', 'account', 'slurmNodes', 'gpusPerNode', 'time', 'srunArg', 'srun'] as const).filter((k) => f[k] !== undefined);
  if (!f.slurm && slurmOnly.length > 0) {
    throw bad(`${slurmOnly.map((k) => `--${k.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`).join(', ')} only ${slurmOnly.length === 1 ? 'applies' : 'apply'} with --slurm`, 'add --slurm (the host is a Slurm login node)');
  }
  if (f.slurm) srunArgsFor(slurmOptionsFrom(f));
  if (f.coordinatorAddress !== undefined && (f.moreHosts?.length ?? 0) === 0) throw bad('--coordinator-address only applies to a run over several hosts', 'repeat --host for each host of the run');
  const warnings: string[] = [];
  const twice = libraries.filter((p, i) => libraries.indexOf(p) !== i);
  if (twice.length > 0) warnings.push(`--nccl ${[...new Set(twice)].join(', ')} given more than once: it is measured each time`);
  if (f.node !== undefined && isLocalTarget(f.host)) {
    warnings.push(`--node is only used for remote hosts: on localhost the agent runs on this Node (${process.execPath}); ${f.node} is ignored`);
  }
  if (f.ranks !== undefined && isLocalTarget(f.host) && f.ranks > cpuCount) {
    warnings.push(
      `--ranks ${f.ranks} is more than the ${cpuCount} CPU${cpuCount === 1 ? '' : 's'} of this machine: each rank is a process, so the figures will be dominated by CPU contention`,
    );
  }
  return warnings;
}
