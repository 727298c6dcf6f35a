/**
 * What the Measure command's experiment picker says about each experiment: a description, what it
 * needs (GPUs, NCCL version), whether the chosen host can run it, and how long it is expected to
 * take at the chosen iterations.
 *
 * Requirements are the catalogue's (protocol/catalogue.ts), the one table the agent's experiment
 * modules gate their plan on, so a gate changed there changes the picker and the agent together. Durations are never
 * invented: from a saved run of the same host that measured the experiment (its step medians ×
 * the iterations, a lower bound: setup between timed steps is not in it), else "unknown until
 * measured". Pure: no `vscode`, no I/O (unit-tested); bundled on its own (dist/experimentInfo.js), loaded with the
 * Measure command and by the annotations' host gate, not at activation.
 */
import { plain } from './formatText';
import { runName } from './runName';
import { EXPERIMENT_DESCRIPTIONS, EXPERIMENT_NEEDS, needsText, versionCode, type ExperimentNeeds } from '../protocol/catalogue';
import { EXPERIMENT_IDS, type ExperimentId } from '../protocol/runOptions';
import type { RunFile } from '../protocol/runFile';

export { EXPERIMENT_DESCRIPTIONS, needsText, type ExperimentNeeds };

/**
 * What `id` needs (the catalogue's table, protocol/catalogue.ts, which the agent's modules gate
 * their plan on).
 */
export function experimentNeeds(id: ExperimentId): ExperimentNeeds {
  return EXPERIMENT_NEEDS[id];
}

/** What is known of the chosen host from its last saved run. */
export interface HostFacts {
  /** GPUs (ranks) of that run. */
  ranks: number;
  /** Its NCCL version ("2.28.9"), when the stamp has one. */
  ncclVersion?: string;
  /** The run measured on the simulated NCCL. */
  simulated: boolean;
}

/** The host facts of a saved run (its rank count, its stamp's NCCL version). */
export function hostFactsOf(run: RunFile): HostFacts {
  const v = run.stamp?.ncclVersion;
  return { ranks: run.ranks, ...(typeof v === 'string' && /^\d+\.\d+\.\d+$/.test(v) ? { ncclVersion: v } : {}), simulated: run.simulated === true };
}

/**
 * Whether `run` may stand for what its host can do: it ran (not `failed`: a run that failed before
 * measuring, e.g. with no GPU, says nothing of the host's GPUs or NCCL) on at least one rank.
 */
export function isCapabilityRecord(run: Pick<RunFile, 'status' | 'ranks'>): boolean {
  return run.status !== 'failed' && Number.isFinite(run.ranks) && run.ranks >= 1;
}

/**
 * The host facts of the newest run of `runs` (the host's saved runs, newest first) that is a
 * capability record ({@link isCapabilityRecord}); undefined when none is: nothing known.
 */
export function hostFactsFrom(runs: readonly RunFile[]): HostFacts | undefined {
  const run = runs.find(isCapabilityRecord);
  return run ? hostFactsOf(run) : undefined;
}

/**
 * The Measure picker's line on the host's previous runs: "localhost's last run: 2× H200 · NCCL
 * 2.28.9 · 2026-11-29 19:48 UTC", the newest capability record of `runs` (newest first) by its
 * name (runName.ts: its GPUs and count, never the target; SIMULATED and its ranks when simulated),
 * or "nothing measured on localhost yet: …" when none is.
 * @param hostLabel the target as the picker names it (made plain here)
 */
export function lastRunText(hostLabel: string, runs: readonly RunFile[]): string {
  const host = plain(hostLabel, 60);
  const run = runs.find(isCapabilityRecord);
  return run ? `${host}'s last run: ${runName(run)}` : `nothing measured on ${host} yet: what it can run is known once it is measured`;
}

/**
 * The experiments the Measure picker ticks by default: those of `preselected` that the host's
 * facts ({@link hostFactsFrom} of `runs`, newest first) do not rule out. A failed run changes nothing.
 */
export function defaultExperiments(preselected: readonly ExperimentId[], runs: readonly RunFile[], simulate: boolean): ExperimentId[] {
  const facts = hostFactsFrom(runs);
  return EXPERIMENT_IDS.filter((id) => preselected.includes(id) && !unavailableReason(id, facts, simulate));
}

/**
 * Why `id` cannot run on a host with `facts`, or undefined when it can (or nothing is known).
 * Only the needs above are checked; the agent still plans on the host and reports any other skip.
 */
export function unavailableReason(id: ExperimentId, facts: HostFacts | undefined, simulate: boolean): string | undefined {
  if (id === 'c10d' && simulate) return 'c10d runs torch with its own NCCL on real GPUs: not with the simulated NCCL';
  if (!facts) return undefined;
  const n = experimentNeeds(id);
  if (n.minGpus && facts.ranks < n.minGpus) return `needs ${n.minGpus} GPUs, the host's last run had ${facts.ranks}`;
  if (!simulate && n.minNccl && facts.ncclVersion && versionCode(facts.ncclVersion) < versionCode(n.minNccl))
    return `needs NCCL ≥ ${n.minNccl}, the host's last run loaded ${facts.ncclVersion}`;
  return undefined;
}

/**
 * The expected duration of `id` at `iterations` (+ `warmup`) per variant, from the newest run in
 * `runs` that measured it (caller passes the chosen host's runs, newest first): the sum over its
 * variants of the medians of the timed steps (derived sums left out) × (warmup + iterations).
 * A lower bound: untimed setup and process starts are not in it.
 * @returns the text for the picker, e.g. "≥ 1.3 s timed at 10 iterations (from the run of 2026-12-01)",
 *   or "duration unknown until measured" when no run measured it.
 */
export function expectedDuration(id: ExperimentId, iterations: number, warmup: number, runs: readonly RunFile[]): string {
  for (const run of runs) {
    const e = run.experiments.find((x) => x.experiment === id && x.state === 'finished' && x.variants.length > 0);
    if (!e) continue;
    let perIterationMs = 0;
    for (const v of e.variants) for (const s of v.steps) if (!s.sumOf && Number.isFinite(s.stats?.median)) perIterationMs += s.stats.median;
    if (perIterationMs <= 0) continue;
    const ms = perIterationMs * (iterations + warmup);
    const day = (run.stamp?.startedAt ?? run.id).slice(0, 10);
    return `≥ ${formatDuration(ms)} timed at ${iterations} iterations (${e.variants.length} variant${e.variants.length === 1 ? '' : 's'}, from the ${run.simulated ? 'SIMULATED ' : ''}run of ${day})`;
  }
  return 'duration unknown until measured';
}

/** 850 → "0.9 s", 75_000 → "1.3 min", 5_400_000 → "1.5 h". */
export function formatDuration(ms: number): string {
  const s = ms / 1000;
  if (s < 90) return `${s < 10 ? s.toFixed(1) : Math.round(s)} s`;
  if (s < 5400) return `${(s / 60).toFixed(1)} min`;
  return `${(s / 3600).toFixed(1)} h`;
}

/**
 * The skipped experiments of a finished run, for its completion message: " — skipped: grow (needs
 * NCCL ≥ 2.29.2, host has 2.28.9)", or "" when nothing was skipped. Reasons are the agent's own.
 */
export function skippedNote(run: Pick<RunFile, 'skipped' | 'experiments'>): string {
  const whole = run.skipped.filter((s) => !s.variant);
  if (whole.length === 0) return '';
  const measured = run.experiments.some((e) => e.variants.length > 0);
  const list = whole.map((s) => `${s.experiment} (${s.reason})`).join('; ');
  return measured ? ` — skipped: ${list}` : ` — nothing measured: every experiment was skipped: ${list}`;
}

/** Every experiment id with its description, in catalogue order (for package.json's enumDescriptions). */
export function experimentDescriptions(): { id: ExperimentId; description: string }[] {
  return EXPERIMENT_IDS.map((id) => ({ id, description: EXPERIMENT_DESCRIPTIONS[id] }));
}
