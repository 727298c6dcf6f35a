/**
 * The environment stamp of a trace (protocol/trace.ts `TraceEnvironment`) from the profiler plugin's
 * `proc` records (pure): a trace is a record like a run, saying which GPUs, driver, CUDA and NCCL
 * library its figures came from.
 */
import { ncclVersionText, type TraceEnvironment } from '../../protocol/trace';

/** What one process's `proc` record says of its environment (empty or 0 where it did not know). */
export interface ProcEnvironment {
  host: string;
  nccl: number | null;
  ncclPath: string;
  cuda: number;
  devices: number;
  model: string;
  driver: string;
  sim: boolean;
}

/** The env fields of a `proc` record (absent fields read as unknown). */
export function procEnvironment(r: Record<string, unknown>, host: string): Omit<ProcEnvironment, 'nccl' | 'sim'> {
  const s = (v: unknown) => (typeof v === 'string' ? v : '');
  const n = (v: unknown) => (typeof v === 'number' && Number.isInteger(v) && v > 0 ? v : 0);
  return { host, ncclPath: s(r.ncclPath), cuda: n(r.cuda), devices: n(r.devices), model: s(r.model), driver: s(r.driver) };
}

const distinct = (xs: string[]) => [...new Set(xs.filter((x) => x !== ''))];

/** The CUDA driver API version code (12080) as "12.8". */
export function cudaVersionText(code: number): string {
  return `${Math.floor(code / 1000)}.${Math.floor((code % 1000) / 10)}`;
}

/**
 * The trace's stamp from its processes' records (those with a plugin `proc` record; the hook-only ones
 * count as processes and hosts). `tracedFrom`: the host commcost trace ran on.
 */
export function traceEnvironment(procs: readonly (ProcEnvironment & { plugin: boolean })[], tracedFrom: string): TraceEnvironment {
  const withPlugin = procs.filter((p) => p.plugin);
  const counts = withPlugin.map((p) => p.devices).filter((d) => d > 0);
  const cudas = withPlugin.map((p) => p.cuda).filter((c) => c > 0);
  const drivers = distinct(withPlugin.map((p) => p.driver));
  return {
    hosts: distinct(procs.map((p) => p.host)),
    gpuModels: distinct(withPlugin.map((p) => p.model)),
    gpuCount: counts.length ? Math.max(...counts) : null,
    processes: procs.length,
    driverVersion: drivers.length ? drivers.join(', ') : null,
    cudaVersion: cudas.length ? distinct(cudas.map(cudaVersionText)).join(', ') : null,
    ncclVersions: distinct(withPlugin.map((p) => (p.nccl ? ncclVersionText(p.nccl) : ''))),
    ncclPaths: distinct(withPlugin.map((p) => p.ncclPath)),
    ncclSource: withPlugin.some((p) => p.sim) ? 'simulated' : 'job',
    tracedFrom,
  };
}

export { environmentText } from '../../protocol/trace';
