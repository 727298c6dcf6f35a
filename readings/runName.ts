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
import { gpuModelName, namePart, runGpusText } from '../protocol/runNameParts';
import { runTime } from './profiles';

/** The parts of a run file its name is read from (loose: run data may be untrusted). */
export type NamedRun = Pick<RunFile, 'host' | 'id' | 'ranks' | 'status' | 'simulated'> & Partial<Pick<RunFile, 'stamp' | 'nodes'>>;

// What a run ran on is named in protocol/runNameParts.ts (the comparison's labels use it too).
export { gpuModelName, runGpusText };

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
  const nccl = typeof v === 'string' && v.trim() ? `NCCL ${namePart(v)}` : 'NCCL version not recorded';
  const state = run.status === 'failed' || run.status === 'partial' || run.status === 'running' ? ` · ${run.status}` : '';
  // A bundled sample (extension/samples.ts renames its host "SAMPLE from 2×H200") is named by that host, so every place that names it says SAMPLE.
  const what = isSampleHost(run.host) ? namePart(run.host) : runGpusText(run);
  return `${what} · ${nccl} · ${options.time !== undefined && Number.isFinite(options.time) ? minuteText(options.time) : runTimeText(run)}${state}`;
}

/** True for the host name of the extension's bundled sample runs ("SAMPLE from 2×H200"): a run the user did not measure. */
export function isSampleHost(host: unknown): boolean {
  return typeof host === 'string' && /^SAMPLE from /.test(host);
}

/**
 * A live run's panel title, named by what is known so far: before the environment stamp arrives,
 * the target it runs on and "starting" ("commcost: localhost · starting"; "… · SIMULATED ·
 * starting" for a simulated run; "failed" or "partial" instead of "starting" when it ended without a
 * stamp); once the stamp is there, the run's one name ({@link runName}: "commcost: 1× H200 · NCCL
 * 2.28.9 · 2026-12-01 09:24 UTC · running"). Never throws.
 * @param target the host or entry the run was started on, as the user chose it
 * @param run the run as received so far (undefined before the first event)
 * @param simulated whether the run was started on the simulated NCCL
 */
export function liveRunTitle(target: string, run: NamedRun | undefined, simulated: boolean): string {
  if (run?.stamp && typeof run.stamp === 'object') return `commcost: ${runName(run)}`;
  const state = run?.status === 'failed' || run?.status === 'partial' ? run.status : 'starting';
  return `commcost: ${namePart(target) || 'host not named'}${simulated || (run !== undefined && isSimulatedRun(run)) ? ' · SIMULATED' : ''} · ${state}`;
}
