/**
 * The environment stamp every run carries (DESIGN.md, "Measurement method").
 */
import { execFileSync } from 'node:child_process';
import * as os from 'node:os';
import type { EnvironmentStamp } from '../protocol/events';
import { COMMCOST_VERSION } from '../protocol/version';
import type { DeviceInfo, LoadInfo } from './nativeBinding';

/**
 * Variables the coordinator sets in every rank process it starts, as part of the method
 * (docs/METHOD.md, "Rank processes"); recorded in the stamp as `rankEnv`.
 * - UV_THREADPOOL_SIZE=1: every library call of a rank runs on one OS thread, as in an
 *   application. Measured on 2×H200: with libuv's default 4 pool threads, init and split medians
 *   read 1.2–1.5× the independent reference; with one thread, 1.0–1.1×.
 * - MALLOC_ARENA_MAX=1: that thread is not the process's main thread, so glibc would give it a
 *   malloc arena of its own, where NCCL's large topology allocations cost more than in an
 *   application's main thread. Measured on 2×H200 (NCCL 2.28.9, 8 iterations, one session):
 *   ncclCommShrink to one rank 43.4 ms vs the reference's 26.2 ms, one-rank ncclCommSplit 50.0
 *   vs 36.6 ms; with one arena 22.8 and 36.8 ms. NCCL's own "Init timings" put the difference in
 *   its topology phase.
 */
export const RANK_METHOD_ENV: Readonly<Record<string, string>> = Object.freeze({ UV_THREADPOOL_SIZE: '1', MALLOC_ARENA_MAX: '1' });

/**
 * The whole environment of a rank process started on this host: this host's own environment,
 * then what the coordinator sent (`given`, which carries RANK_METHOD_ENV), then
 * - COMMCOST_APP_ENV: what this host's environment had for each method variable (JSON, null =
 *   unset), so that a process meant to look like the user's application (the c10d driver) can
 *   get them back with `applicationEnv`;
 * - GLIBC_TUNABLES without `glibc.malloc.arena_max`, which would override MALLOC_ARENA_MAX
 *   (removed when nothing else is left in it).
 * @param own this host's environment (the node's, on a run over several hosts).
 * @param given the variables the coordinator set for this rank.
 */
export function rankProcessEnv(own: NodeJS.ProcessEnv, given: Record<string, string>): NodeJS.ProcessEnv {
  const out: NodeJS.ProcessEnv = { ...own, ...given };
  const original = Object.fromEntries(Object.keys(RANK_METHOD_ENV).map((k) => [k, own[k] ?? null]));
  out.COMMCOST_APP_ENV = JSON.stringify(original);
  if (out.GLIBC_TUNABLES !== undefined && given.MALLOC_ARENA_MAX !== undefined) {
    const kept = out.GLIBC_TUNABLES.split(':').filter((t) => t !== '' && !t.startsWith('glibc.malloc.arena_max='));
    if (kept.length > 0) out.GLIBC_TUNABLES = kept.join(':');
    else delete out.GLIBC_TUNABLES;
  }
  return out;
}

/**
 * `env` with the method's variables put back as the agent had them (from COMMCOST_APP_ENV; when
 * that is missing or malformed, the method's variables are removed).
 */
export function applicationEnv(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  let original: Record<string, unknown> = {};
  try {
    const parsed: unknown = JSON.parse(env.COMMCOST_APP_ENV ?? '{}');
    if (parsed && typeof parsed === 'object' && !Array.isArray(parsed)) original = parsed as Record<string, unknown>;
  } catch {
    // keep {}: every method variable is removed
  }
  const out: NodeJS.ProcessEnv = { ...env };
  delete out.COMMCOST_APP_ENV;
  for (const k of Object.keys(RANK_METHOD_ENV)) {
    const v = original[k];
    if (typeof v === 'string') out[k] = v;
    else delete out[k];
  }
  return out;
}

/** Every NCCL_*, TORCH_NCCL_* (and, when simulated, COMMCOST_SIM_*) variable. */
export function ncclEnvironment(env: NodeJS.ProcessEnv, simulated: boolean): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(env)) {
    if (v === undefined) continue;
    if (k.startsWith('NCCL_') || k.startsWith('TORCH_NCCL_') || (simulated && k.startsWith('COMMCOST_SIM_'))) out[k] = v;
  }
  return out;
}

function run(cmd: string, args: string[], timeoutMs: number): string | undefined {
  try {
    return execFileSync(cmd, args, { timeout: timeoutMs, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  } catch {
    return undefined;
  }
}

/** `nvidia-smi topo -m`, or why it is missing. */
export function topology(simulated: boolean): string {
  if (simulated) return 'simulated: no interconnect';
  return run('nvidia-smi', ['topo', '-m'], 5000) ?? 'unknown: nvidia-smi topo -m did not run';
}

/**
 * The Python on this host that has torch, used by the c10d experiment, the torch version of the
 * stamp and the search of NCCL in torch's wheel. Precedence: the run's `python` option
 * (RunOptions.python: --python / commcost.python), else $COMMCOST_PYTHON, else `python3` (from
 * PATH). An empty value counts as not given.
 * @param option the run's `python` option, if any.
 * @param env where COMMCOST_PYTHON is read (default: this process's environment).
 * @returns a path or a command name, never empty; whether it exists is not checked here.
 */
export function hostPython(option?: string, env: NodeJS.ProcessEnv = process.env): string {
  return option || env.COMMCOST_PYTHON || 'python3';
}

/**
 * torch's version from the metadata of `python` (no import of torch; ≤ 5 s), if installed.
 * @param python the Python to ask (default: {@link hostPython} without an option).
 * @returns undefined when torch is not installed there or that Python does not run.
 */
export function torchVersion(python: string = hostPython()): string | undefined {
  const out = run(python, ['-c', "import importlib.metadata as m\ntry:\n print(m.version('torch'))\nexcept Exception:\n pass"], 5000);
  return out || undefined;
}

/** CUDA driver version code 13000 → "13.0". */
export function driverVersionString(code: number): string {
  return `${Math.floor(code / 1000)}.${(code % 1000) / 10}`;
}

/**
 * Builds the stamp from what the addon reported. Starts one or two short subprocesses (≤ 5 s each).
 * @param python the run's `python` option: the Python asked for the torch version ({@link hostPython}).
 */
export function environmentStamp(info: LoadInfo, gpus: DeviceInfo[], ncclSource: string, env: NodeJS.ProcessEnv = process.env, python?: string): EnvironmentStamp {
  return {
    hostname: os.hostname(),
    gpus,
    driverVersion: info.simulated ? `simulated (${driverVersionString(info.driverVersion)})` : driverVersionString(info.driverVersion),
    ncclVersion: info.ncclVersion,
    ncclVersionCode: info.ncclVersionCode,
    ncclPath: info.ncclPath,
    ncclSource,
    ncclSymbols: info.symbols,
    topology: topology(info.simulated),
    ncclEnv: ncclEnvironment(env, info.simulated),
    rankEnv: { ...RANK_METHOD_ENV },
    torchVersion: info.simulated ? undefined : torchVersion(hostPython(python, env)),
    commcostVersion: COMMCOST_VERSION,
    nodeVersion: process.version,
    platform: `${os.platform()}-${os.arch()} ${os.release()}`,
    startedAt: new Date().toISOString(),
    simulated: info.simulated,
  };
}
