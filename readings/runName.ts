/**
 * The one name of a run, said wherever a run is named (the status bar, the Runs view and its
 * pickers, the annotations, the CLI's summary and plan headers, the HTML report's and the panel's
 * title, the Measure picker's previous runs): the GPUs it ran on and their count, the NCCL it
 * loaded and when it started, read from the run file's environment stamp — "1× H200 · NCCL 2.28.9
 * · 2026-12-01 23:37 UTC". Never the target's name ("localhost", "vm") where the stamp names the
 * GPUs. Pure and browser-safe; run files are untrusted, so every field is read defensively and the
 * caller escapes the text for its surface.
 *
 * The regimes: a simulated run (protocol/runFile.ts `isSimulatedRun`) says "SIMULATED" and its
 * rank count, never a GPU model it did not run on; a run whose stamp names no GPU (no stamp, an
 * empty list) names its host and says the GPUs were not recorded; a run over several hosts counts
 * every node's GPUs and says how many hosts; a failed or partial run says so last.
 */
import { isSimulatedRun, type RunFile } from '../protocol/runFile';
import { nodeGpus } from '../protocol/runNodes';
import { plain } from './formatText';
import { runTime } from './profiles';

/** The parts of a run file its name is read from (loose: run data may be untrusted). */
export type NamedRun = Pick<RunFile, 'host' | 'id' | 'ranks' | 'status' | 'simulated'> & Partial<Pick<RunFile, 'stamp' | 'nodes'>>;

/** A name taken from a run file (a GPU model, a host, a version) as one line of at most 40 characters (formatText.ts `plain`). */
function part(text: unknown): string {
  return plain(String(text ?? ''), 40);
}

/** A GPU model as the driver names it, short: "NVIDIA H200" → "H200", "NVIDIA A100-SXM4-80GB" → "A100-SXM4-80GB". */
export function gpuModelName(name: string): string {
  return part(name).replace(/^NVIDIA\s+/i, '') || 'unnamed GPU';
}

/** "1× H200", "8× H100 + 8× A100": each model once with its count, in first-seen order. */
function countModels(models: readonly string[]): string {
  const counts = new Map<string, number>();
  for (const m of models) counts.set(gpuModelName(m), (counts.get(gpuModelName(m)) ?? 0) + 1);
  return [...counts].map(([m, n]) => `${n}× ${m}`).join(' + ');
}

/** The run's rank count when it is a positive whole number, else undefined. */
function rankCount(run: NamedRun): number | undefined {
  return typeof run.ranks === 'number' && Number.isInteger(run.ranks) && run.ranks > 0 ? run.ranks : undefined;
}

/**
 * What a run ran on, in words: "1× H200", "2× H200", "16× H100 over 2 hosts"; "SIMULATED · 2 ranks"
 * for a simulated run (no GPU model: the simulator's devices are none); "localhost (GPUs not
 * recorded)" when the stamp names no GPU. One rank drives one GPU, so a run of fewer ranks than the
 * host's visible GPUs counts the ones its ranks used (ordinals 0…ranks−1, in the stamp's order).
 */
export function runGpusText(run: NamedRun): string {
  const ranks = rankCount(run);
  if (isSimulatedRun(run)) return `SIMULATED · ${ranks === undefined ? 'ranks not recorded' : `${ranks} rank${ranks === 1 ? '' : 's'}`}`;
  const perNode = nodeGpus(run);
  if (perNode !== undefined && perNode.length > 0) return `${countModels(perNode)} over ${Array.isArray(run.nodes) ? run.nodes.length : 'several'} hosts`;
  const stamped = Array.isArray(run.stamp?.gpus) ? run.stamp.gpus.map((g) => String(g?.name ?? '')) : [];
  if (stamped.length === 0) return `${part(run.host) || 'host not named'} (GPUs not recorded)`;
  const used = ranks !== undefined && ranks <= stamped.length ? stamped.slice(0, ranks) : stamped;
  return countModels(used);
}

/** "2026-12-01 23:37 UTC": when the run started (stamp, else the id's timestamp, else `fallback`), to the minute; "time not recorded". */
export function runTimeText(run: NamedRun, fallback: number = NaN): string {
  const t = runTime(run as RunFile, fallback);
  return Number.isFinite(t) ? minuteText(t) : 'time not recorded';
}

/** ms since the epoch → "2026-12-01 23:37 UTC". */
function minuteText(t: number): string {
  return `${new Date(t).toISOString().slice(0, 16).replace('T', ' ')} UTC`;
}

/**
 * The name of a run: "1× H200 · NCCL 2.28.9 · 2026-12-01 23:37 UTC", "2× H200 · NCCL 2.28.3 · …",
 * "SIMULATED · 2 ranks · NCCL 2.28.9 · …", "localhost (GPUs not recorded) · NCCL version not
 * recorded · …", with " · failed" or " · partial" last for a run that did not complete (what it
 * lacks was not measured, never zero). Read from the run file only ({@link runGpusText}); the time
 * is `options.time` when given (a saved run's profile time, readings/profiles.ts `runTime`, which
 * falls back to the file's mtime), else the stamp's start, else the id's timestamp. Never throws,
 * whatever the file holds.
 * @param options.time the start time to show, ms since the epoch
 */
export function runName(run: NamedRun, options: { time?: number } = {}): string {
  const v = run.stamp?.ncclVersion;
  const nccl = typeof v === 'string' && v.trim() ? `NCCL ${part(v)}` : 'NCCL version not recorded';
  const state = run.status === 'failed' || run.status === 'partial' || run.status === 'running' ? ` · ${run.status}` : '';
  return `${runGpusText(run)} · ${nccl} · ${options.time !== undefined && Number.isFinite(options.time) ? minuteText(options.time) : runTimeText(run)}${state}`;
}
