/**
 * How a comparison of runs names each run: a key (A, B, …), a label that tells it from the others
 * (its GPUs and their count as the run's name says them, protocol/runNameParts.ts; NCCL version;
 * the NCCL_* variables that differ; the host only where that is what tells two runs apart), and the notes a comparison of unlike runs needs (different rank counts, simulated
 * against measured). Pure; run files may be untrusted: every field is read defensively and the
 * text returned as data (the caller escapes it). Re-exported by compare.ts.
 */
import { isSimulatedRun, type RunFile } from './runFile';
import { runGpusText } from './runNameParts';
import { nodeNamesText } from './runNodes';

/** One run as the comparison names it. */
export interface ComparedRunInfo {
  /** 0-based position; run 0 is the baseline of every ratio. */
  index: number;
  /** A short key for column headers: "A", "B", … ("Z", then "R27", …). */
  key: string;
  /** What tells this run from the others, e.g. "2× H200 · NCCL 2.28.9 · NCCL_RUNTIME_CONNECT=0", "SIMULATED · 2 ranks · NCCL 2.28.9". */
  label: string;
  id: string;
  host: string;
  /** The host's own name from the environment stamp, when known. */
  hostname?: string;
  ncclVersion?: string;
  ncclPath?: string;
  simulated: boolean;
  status: string;
  ranks?: number;
  /** Environment stamp variables whose values differ between the runs (`undefined`: unset in this run). */
  envDiff: Record<string, string | undefined>;
}

/** "A", "B", … "Z", then "R27", "R28", …. */
export function runKey(index: number): string {
  return index < 26 ? String.fromCharCode(65 + index) : `R${index + 1}`;
}

/**
 * The note a comparison of runs of different world sizes needs: a ratio then sets communicators
 * of different sizes side by side (a one-rank communicator has no peer to connect to), which the
 * table alone does not say. `runs`: each run's key (A, B, …) and rank count, in order.
 * @returns the sentence, or undefined when every run has the same rank count (or none is known)
 */
export function rankCountNote(runs: readonly { key: string; ranks?: number }[]): string | undefined {
  const known = runs.filter((r) => typeof r.ranks === 'number');
  if (new Set(known.map((r) => r.ranks)).size < 2) return undefined;
  return `the runs have different rank counts (${runs.map((r) => `${r.key} ${typeof r.ranks === 'number' ? r.ranks : '?'}`).join(', ')}): each ratio sets communicators of different sizes side by side, not the same call on other hardware or NCCL`;
}

/**
 * The note a comparison of simulated and measured runs needs: no ratio is given between a run of
 * one kind and a baseline (run A) of the other, since simulated figures are not measurements.
 * `runs`: each run's key and whether it is simulated (isSimulatedRun), in order.
 * @returns the sentence, or undefined when every run is of the baseline's kind
 */
export function simulatedMixNote(runs: readonly { key: string; simulated: boolean }[]): string | undefined {
  const base = runs[0];
  if (!base) return undefined;
  const other = runs.filter((r) => r.simulated !== base.simulated);
  if (other.length === 0) return undefined;
  const kind = (r: { simulated: boolean }): string => (r.simulated ? 'SIMULATED' : 'measured');
  return `no ratio is given between ${other.map((r) => r.key).join(', ')} (${kind(other[0]!)}) and ${base.key} (${kind(base)}): simulated figures are not measurements, so they are shown side by side only`;
}

/** Appends the items of `next` that `order` lacks, keeping first-seen order. */
export function union<T>(order: T[], next: Iterable<T>): void {
  // A Set over what is there: a run with thousands of memory points per variant stays linear.
  const seen = new Set(order);
  for (const x of next) {
    if (seen.has(x)) continue;
    seen.add(x);
    order.push(x);
  }
}

/**
 * NCCL_* variables of a stamp that configure nothing, left out of the labels: NCCL_VERSION is set
 * by NVIDIA's container images to the image's NCCL, which need not be the library a run loaded
 * (a label "NCCL 2.28.9 · NCCL_VERSION=2.28.3-1" reads as a contradiction); NCCL 2.30.7's source
 * reads no such variable (its params are NCCL_PARAM names; "VERSION" there is only an
 * NCCL_DEBUG_SUBSYS option).
 */
const NOT_SETTINGS: ReadonlySet<string> = new Set(['NCCL_VERSION']);

/** Prefix of the rank method variables (stamp.rankEnv) among a run's compared variables. */
const RANK_ENV = 'rank ';

/**
 * The variables a run is compared by: its NCCL_* / TORCH_NCCL_* variables, and the variables
 * commcost set in its rank processes (`rank NAME`, from stamp.rankEnv; "not recorded" when the
 * stamp predates rankEnv: those runs' ranks ran without MALLOC_ARENA_MAX=1).
 */
function envOf(run: RunFile, rankNames: readonly string[]): Record<string, string> {
  const env = run.stamp?.ncclEnv;
  const out: Record<string, string> = {};
  if (env && typeof env === 'object') for (const [k, v] of Object.entries(env)) if (!NOT_SETTINGS.has(k)) out[k] = String(v);
  const rankEnv = run.stamp?.rankEnv;
  if (rankEnv && typeof rankEnv === 'object') for (const [k, v] of Object.entries(rankEnv)) out[RANK_ENV + k] = String(v);
  else for (const k of rankNames) out[RANK_ENV + k] = 'not recorded';
  return out;
}

/**
 * Labels that tell the runs apart, named as the run's name names them (readings/runName.ts): the
 * GPUs and their count ("2× H200", "16× H100 over 2 hosts"; "SIMULATED · 2 ranks" for a simulated
 * run, never a GPU model; "gpu1 (GPUs not recorded)" without a stamp) · NCCL version · the ranks
 * when they differ and the GPU count does not already say them · every NCCL_* / TORCH_NCCL_*
 * variable of the stamps whose value differs (`NAME=value`, `NAME unset`), and every rank method
 * variable that differs (`rank MALLOC_ARENA_MAX=1`, `… =not recorded` for runs from before the
 * stamp had rankEnv). When two labels are still equal, the host is added (the stamp's hostname,
 * else the target; a run over several nodes its nodes, "gpu0 and gpu1 (2 nodes)"), then the NCCL
 * path, then the start time, then "#n".
 */
export function describeRuns(runs: readonly RunFile[]): ComparedRunInfo[] {
  const rankNames: string[] = [];
  for (const r of runs) if (r.stamp?.rankEnv && typeof r.stamp.rankEnv === 'object') union(rankNames, Object.keys(r.stamp.rankEnv).sort());
  const envs = runs.map((r) => envOf(r, rankNames));
  const names: string[] = [];
  for (const e of envs) union(names, Object.keys(e).sort());
  const differing = names.filter((k) => new Set(envs.map((e) => e[k])).size > 1);
  const ranksDiffer = new Set(runs.map((r) => r.ranks)).size > 1;
  const infos = runs.map((run, index): ComparedRunInfo => {
    const s = run.stamp;
    const envDiff: Record<string, string | undefined> = {};
    for (const k of differing) envDiff[k] = envs[index]![k];
    const simulated = isSimulatedRun(run);
    const gpus = runGpusText(run);
    const parts = [gpus, s?.ncclVersion ? `NCCL ${String(s.ncclVersion)}` : 'NCCL version not recorded'];
    // The GPU count says the ranks (one GPU per rank) unless it is not recorded or counts others.
    if (ranksDiffer && !simulated && !gpus.startsWith(`${String(run.ranks)}× `)) parts.push(`${typeof run.ranks === 'number' ? run.ranks : '?'} rank${run.ranks === 1 ? '' : 's'}`);
    for (const k of differing) parts.push(envDiff[k] === undefined ? `${k} unset` : `${k}=${envDiff[k]}`);
    const info: ComparedRunInfo = {
      index,
      key: runKey(index),
      label: parts.join(' · '),
      id: String(run.id ?? ''),
      host: String(run.host ?? ''),
      simulated,
      status: String(run.status ?? ''),
      envDiff,
    };
    if (s?.hostname) info.hostname = String(s.hostname);
    if (s?.ncclVersion) info.ncclVersion = String(s.ncclVersion);
    if (s?.ncclPath) info.ncclPath = String(s.ncclPath);
    if (typeof run.ranks === 'number') info.ranks = run.ranks;
    return info;
  });
  const disambiguate = (extra: (i: number) => string | undefined): void => {
    const counts = new Map<string, number>();
    for (const i of infos) counts.set(i.label, (counts.get(i.label) ?? 0) + 1);
    for (const i of infos) {
      if ((counts.get(i.label) ?? 0) < 2) continue;
      const e = extra(i.index);
      if (e) i.label = `${i.label} · ${e}`;
    }
  };
  disambiguate((i) => {
    // A run over several nodes is named by its nodes: its stamp is of one host only.
    const run = runs[i]!;
    const nodes = nodeNamesText(run);
    return nodes !== undefined ? `${nodes} (${run.nodes!.length} nodes)` : String(run.stamp?.hostname || run.host || '') || undefined;
  });
  disambiguate((i) => infos[i]!.ncclPath);
  disambiguate((i) => (runs[i]!.stamp?.startedAt ? String(runs[i]!.stamp!.startedAt) : undefined));
  disambiguate((i) => `#${i + 1}`);
  return infos;
}
