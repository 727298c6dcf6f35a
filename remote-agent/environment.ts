/**
 * The environment stamp every run carries (DESIGN.md, "Measurement method").
 */
import { execFileSync } from 'node:child_process';
import * as os from 'node:os';
import type { EnvironmentStamp } from '../protocol/events';
import { COMMCOST_VERSION } from '../protocol/version';
import type { DeviceInfo, LoadInfo } from './nativeBinding';

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

/** torch's version from the host's python3 metadata (no import of torch), if installed. */
export function torchVersion(): string | undefined {
  const python = process.env.COMMCOST_PYTHON || 'python3';
  const out = run(python, ['-c', "import importlib.metadata as m\ntry:\n print(m.version('torch'))\nexcept Exception:\n pass"], 5000);
  return out || undefined;
}

/** CUDA driver version code 13000 → "13.0". */
export function driverVersionString(code: number): string {
  return `${Math.floor(code / 1000)}.${(code % 1000) / 10}`;
}

/** Builds the stamp from what the addon reported. Starts one or two short subprocesses (≤ 5 s each). */
export function environmentStamp(info: LoadInfo, gpus: DeviceInfo[], ncclSource: string, env: NodeJS.ProcessEnv = process.env): EnvironmentStamp {
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
    torchVersion: info.simulated ? undefined : torchVersion(),
    commcostVersion: COMMCOST_VERSION,
    nodeVersion: process.version,
    platform: `${os.platform()}-${os.arch()} ${os.release()}`,
    startedAt: new Date().toISOString(),
    simulated: info.simulated,
  };
}
