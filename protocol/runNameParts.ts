/**
 * The pure parts of a run's name that every room below the surfaces shares: what a run ran on,
 * its GPUs and their count ("1× H200", "16× H100 over 2 hosts"), "SIMULATED · 2 ranks" for a
 * simulated run, "vm (GPUs not recorded)" when the stamp names no GPU. readings/runName.ts builds
 * the full name on these; the comparison's labels (compareLabels.ts) and the study charts use them
 * too, so one run reads the same everywhere. Imports only protocol/; run files are untrusted, so
 * every field is read defensively and the caller escapes the text for its surface.
 */
import { isSimulatedRun, type RunFile } from './runFile';
import { nodeGpus } from './runNodes';

/** The parts of a run file its GPUs are read from (loose: run data may be untrusted). */
export type GpuNamedRun = Pick<RunFile, 'host' | 'ranks' | 'simulated'> & Partial<Pick<RunFile, 'stamp' | 'nodes' | 'id'>>;

/**
 * A name taken from a run file (a GPU model, a host, a version) as one line of at most `max`
 * characters: control characters, line separators and bidirectional overrides become a space;
 * longer text ends in "…". Never throws.
 */
export function namePart(text: unknown, max = 40): string {
  // eslint-disable-next-line no-control-regex
  const one = String(text ?? '').replace(/[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]+/g, ' ').trim();
  return one.length > max ? `${one.slice(0, max - 1)}…` : one;
}

/** A GPU model as the driver names it, short: "NVIDIA H200" → "H200", "NVIDIA A100-SXM4-80GB" → "A100-SXM4-80GB"; "unnamed GPU" for an empty name. */
export function gpuModelName(name: string): string {
  return namePart(name).replace(/^NVIDIA\s+/i, '') || 'unnamed GPU';
}

/** "1× H200", "8× H100 + 8× A100": each model (full driver names) once with its count, in first-seen order. */
export function countModels(models: readonly string[]): string {
  const counts = new Map<string, number>();
  for (const m of models) counts.set(gpuModelName(m), (counts.get(gpuModelName(m)) ?? 0) + 1);
  return [...counts].map(([m, n]) => `${n}× ${m}`).join(' + ');
}

/** The run's rank count when it is a positive whole number, else undefined. */
export function rankCount(run: Pick<RunFile, 'ranks'>): number | undefined {
  return typeof run.ranks === 'number' && Number.isInteger(run.ranks) && run.ranks > 0 ? run.ranks : undefined;
}

/** "simulated, 2 ranks" / "SIMULATED · 2 ranks" style rank words: "2 ranks", "1 rank", "ranks not recorded". */
export function rankWords(run: Pick<RunFile, 'ranks'>): string {
  const ranks = rankCount(run);
  return ranks === undefined ? 'ranks not recorded' : `${ranks} rank${ranks === 1 ? '' : 's'}`;
}

/**
 * What a run ran on, in words: "1× H200", "2× H200", "16× H100 over 2 hosts"; "SIMULATED · 2 ranks"
 * for a simulated run (no GPU model: the simulator's devices are none); "localhost (GPUs not
 * recorded)" when the stamp names no GPU. One rank drives one GPU, so a run of fewer ranks than the
 * host's visible GPUs counts the ones its ranks used (ordinals 0…ranks−1, in the stamp's order).
 * Read from the run file's stamp, nodes, ranks and host only.
 */
export function runGpusText(run: GpuNamedRun): string {
  if (isSimulatedRun(run)) return `SIMULATED · ${rankWords(run)}`;
  return recordedGpusText(run) ?? `${namePart(run.host) || 'host not named'} (GPUs not recorded)`;
}

/**
 * The GPUs a run's file names, as {@link runGpusText} counts them ("1× H200", "16× H100 over 2
 * hosts"); undefined for a simulated run (its devices are no model) and for a run whose stamp
 * names no GPU (no stamp, an empty list: old run files).
 */
export function recordedGpusText(run: GpuNamedRun): string | undefined {
  if (isSimulatedRun(run)) return undefined;
  const ranks = rankCount(run);
  const perNode = nodeGpus(run);
  if (perNode !== undefined && perNode.length > 0) return `${countModels(perNode)} over ${Array.isArray(run.nodes) ? run.nodes.length : 'several'} hosts`;
  const stamped = Array.isArray(run.stamp?.gpus) ? run.stamp.gpus.map((g) => String(g?.name ?? '')) : [];
  if (stamped.length === 0) return undefined;
  const used = ranks !== undefined && ranks <= stamped.length ? stamped.slice(0, ranks) : stamped;
  return countModels(used);
}

/**
 * The host a run's skip or gate happened on, with the GPUs and count its run is named by
 * ({@link recordedGpusText}, the run name's words): "localhost (1× H200)", "vm (16× H100 over 2
 * hosts)"; the host alone where the run names no GPU (simulated, no stamp). `more`, when given,
 * joins the GPUs in the same parentheses: "localhost (1× H200; the ncclCommShrink behind it, …)".
 * Never throws.
 */
export function hostGpusText(run: GpuNamedRun, more?: string): string {
  const host = namePart(run.host) || 'host not named';
  const inside = [recordedGpusText(run), more].filter(Boolean).join('; ');
  return inside ? `${host} (${inside})` : host;
}

/**
 * What a trace ran on, as a run's name says it: "2× H200" (one GPU per traced rank, the model of
 * device 0 of each process), "2× H200 over 2 hosts", "H200 / A40 over …" without a count when the
 * processes saw several models. Undefined when the trace's environment names no GPU (files from
 * before its environment record) or the trace is simulated (the simulator's devices are no model):
 * the caller names the host then.
 * @param env the trace's environment (protocol/trace.ts TraceEnvironment's gpuModels and hosts)
 * @param ranks the traced processes (ranks) with the profiler plugin
 * @param simulated whether the trace ran on commcost's simulated NCCL
 */
export function traceGpusText(env: { gpuModels?: unknown; hosts?: unknown } | undefined, ranks: number, simulated: boolean): string | undefined {
  if (simulated || !env || !Array.isArray(env.gpuModels)) return undefined;
  const models = [...new Set(env.gpuModels.map((m) => gpuModelName(String(m ?? ''))))];
  if (models.length === 0) return undefined;
  const hosts = Array.isArray(env.hosts) && env.hosts.length > 1 ? ` over ${env.hosts.length} hosts` : '';
  return models.length === 1 && ranks > 0 ? `${ranks}× ${models[0]}${hosts}` : `${models.join(' / ')}${hosts}`;
}
