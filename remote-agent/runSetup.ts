/**
 * What a run needs before any rank starts: the host's options checked and completed, and the
 * addon, NCCL and the CUDA driver loaded (simulated, an explicit path, or found by
 * ncclLocator.ts). Every failure here is a {@link RunSetupError} that names what to do.
 */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import { commCountsProblem, DEFAULT_RUN_OPTIONS, EXPERIMENT_IDS, firstUseOptionProblem, OPTION_LIMITS, pythonOptionProblem, withinLimit, type ErrorCode, type RunOptions } from '../protocol/events';
import { hostPython } from './environment';
import { loadBinding, simulatedLibraryPath, type LoadInfo, type NativeBinding } from './nativeBinding';
import { locateNccl, searchedPlaces } from './ncclLocator';

/** The options of a run once checked and completed with the defaults (normalizeOptions). */
export type NormalizedOptions = Required<Omit<RunOptions, 'ncclPath' | 'ranks' | 'python'>> & RunOptions;

/** A failure that ends the run before anything is measured. */
export class RunSetupError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly hint?: string,
    readonly detail?: string,
  ) {
    super(message);
  }
}

/**
 * Checks and completes the host's options.
 * @throws RunSetupError BAD_COMMAND naming the bad field and value.
 */
export function normalizeOptions(input: Partial<RunOptions>): NormalizedOptions {
  const o = { ...DEFAULT_RUN_OPTIONS, ...input } as NormalizedOptions;
  const bad = (what: string): never => {
    throw new RunSetupError('BAD_COMMAND', what, 'fix the option and run again');
  };
  if (!Array.isArray(o.experiments) || o.experiments.length === 0) bad('no experiments selected');
  for (const e of o.experiments) {
    if (!(EXPERIMENT_IDS as readonly string[]).includes(e)) bad(`unknown experiment "${String(e)}" (known: ${EXPERIMENT_IDS.join(', ')})`);
  }
  const L = OPTION_LIMITS;
  if (!withinLimit(o.iterations, L.iterations, true)) bad(`iterations must be an integer from ${L.iterations.min} to ${L.iterations.max}, got ${String(o.iterations)}`);
  if (!withinLimit(o.warmup, L.warmup, true)) bad(`warmup must be an integer from ${L.warmup.min} to ${L.warmup.max}, got ${String(o.warmup)}`);
  if (!withinLimit(o.deadlineSeconds, L.deadlineSeconds, false)) bad(`deadlineSeconds must be a number of seconds from ${L.deadlineSeconds.min} to ${L.deadlineSeconds.max}, got ${String(o.deadlineSeconds)}`);
  if (o.ranks !== undefined && !withinLimit(o.ranks, L.ranks, true)) bad(`ranks must be an integer from ${L.ranks.min} to ${L.ranks.max}, got ${String(o.ranks)}`);
  for (const k of ['firstCollectiveBytes', 'steadyBytes'] as const) {
    const v = o[k];
    if (!withinLimit(v, L.collectiveBytes, true)) bad(`${k} must be an integer from 4 to 16 GiB, got ${String(v)}`);
  }
  const countsProblem = o.commCounts === undefined ? undefined : commCountsProblem(o.commCounts);
  if (countsProblem) bad(`commCounts ${countsProblem}`);
  const firstUseProblem = o.firstUse === undefined ? undefined : firstUseOptionProblem(o.firstUse);
  if (firstUseProblem) bad(`firstUse ${firstUseProblem}: give a list of allreduce, broadcast, sendrecv`);
  const pythonProblem = o.python === undefined ? undefined : pythonOptionProblem(o.python);
  if (pythonProblem) {
    const shown = typeof o.python === 'string' && o.python.length > 80 ? `${JSON.stringify(o.python.slice(0, 80))}…` : JSON.stringify(o.python) ?? String(o.python);
    bad(
      `python ${pythonProblem}, got ${shown}: give the path of the Python with torch on the GPU host (one line, ${L.pythonChars.min} to ${L.pythonChars.max} characters, no NUL), or leave python out to use $COMMCOST_PYTHON, else python3`,
    );
  }
  return o;
}

/** True when this host shows signs of an NVIDIA driver. */
export function hasNvidiaDriver(): boolean {
  if (fs.existsSync('/dev/nvidiactl')) return true;
  try {
    execFileSync('sh', ['-c', 'ldconfig -p 2>/dev/null | grep -q "libcuda\\.so\\.1"'], { timeout: 3000, stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}


/**
 * Loads the addon, then NCCL and the CUDA driver as `options` say (simulated, explicit path, or
 * found: ncclLocator.ts). Loading the same libraries again in one process is a no-op.
 * @throws RunSetupError NO_GPU, NCCL_NOT_FOUND or LOAD_FAILED with what to do.
 */
export function loadLibrary(options: RunOptions): { native: NativeBinding; info: LoadInfo; location: { path: string; source: string } } {
  const host = os.hostname();
  let location: { path: string; source: string };
  let cudaPath: string | undefined;
  if (options.simulate) {
    // The simulated library shows as many GPUs as ranks asked for, unless told otherwise.
    if (options.ranks !== undefined && process.env.COMMCOST_SIM_GPUS === undefined) process.env.COMMCOST_SIM_GPUS = String(options.ranks);
    location = { path: simulatedLibraryPath(), source: 'simulated' };
    cudaPath = location.path;
  } else {
    if (!hasNvidiaDriver()) {
      throw new RunSetupError(
        'NO_GPU',
        `no NVIDIA GPU driver on ${host}: /dev/nvidiactl and libcuda.so.1 not found`,
        'run on a GPU host, or use --simulate (the simulated NCCL; its figures are not measurements)',
      );
    }
    let found;
    try {
      found = locateNccl(options.ncclPath, process.env, options.python);
    } catch (e) {
      throw new RunSetupError('NCCL_NOT_FOUND', (e as Error).message, 'fix --nccl / commcost.ncclPath / COMMCOST_NCCL_PATH');
    }
    if (!found) {
      throw new RunSetupError(
        'NCCL_NOT_FOUND',
        `no libnccl.so.2 found on ${host}`,
        'install NCCL (e.g. pip install nvidia-nccl-cu12) or give its path with --nccl / commcost.ncclPath',
        `searched: ${searchedPlaces(options.ncclPath, hostPython(options.python)).join('; ')}`,
      );
    }
    location = found;
  }
  let native: NativeBinding;
  try {
    native = loadBinding();
  } catch (e) {
    throw new RunSetupError('LOAD_FAILED', `the commcost native addon did not load on ${host}`, 'see the detail: a missing prebuilt is built on the host with c++ (install a C++17 compiler), otherwise redeploy the agent', (e as Error).message);
  }
  try {
    const info = native.load({ ncclPath: location.path, ...(cudaPath ? { cudaPath } : {}) });
    return { native, info, location };
  } catch (e) {
    const text = e instanceof Error ? e.message : String(e);
    if (/libcuda/.test(text)) throw new RunSetupError('NO_GPU', `the CUDA driver did not load on ${host}`, 'install the NVIDIA driver, or use --simulate', text);
    throw new RunSetupError('LOAD_FAILED', `${location.path} did not load on ${host}`, 'give another NCCL with --nccl / commcost.ncclPath', text);
  }
}