/**
 * The Runs view's model and the quick-pick rows of the palette commands, with no `vscode` import
 * (unit-tested): saved runs grouped by host, each run with its NCCL version, date, real or
 * SIMULATED, stale, partial or complete, and whether it is the active run.
 *
 * Run files are untrusted (they come from the workspace): every text taken from a run goes
 * through annotationText.ts `plain` (control characters, line separators and bidirectional
 * overrides removed, length capped). Tooltips are plain strings, never Markdown.
 */
import { isAbsolute, relative, sep } from 'node:path';
import { isSimulatedRun } from '../protocol/runFile';
import { ncclText, plain, runLabel, runSizeText } from '../readings/annotationText';
import { staleReasons, type Profile, type StaleRules } from '../readings/profiles';
import { runName } from '../readings/runName';
import { type RunFolder } from '../client/profileStore';

/** One saved run in the tree. */
export interface RunNode {
  kind: 'run';
  /** The profile key (profiles.ts): what the commands carry, never a path. */
  key: string;
  path: string;
  /** "NCCL 2.28.9 · 2026-11-30 14:03 UTC". */
  label: string;
  /** "active · SIMULATED · stale · partial" (the words that apply; complete runs say nothing). */
  description: string;
  /** Plain text, several lines: host, NCCL, GPUs, date, status, experiments, file, why stale. */
  tooltip: string;
  /** For `view/item/context` menus: `run`, `run.active` (the active run cannot be made active again). */
  contextValue: 'run' | 'run.active';
  active: boolean;
  simulated: boolean;
  /** Why the run is stale for its own host ([] = fresh): profiles.ts `staleReasons`. */
  stale: string[];
  status: Profile['run']['status'];
}

/** One host (a run's `host`, the target it was measured on) with its runs, newest first. */
export interface HostNode {
  kind: 'host';
  host: string;
  /** The host name, made plain. */
  label: string;
  /** "3 runs" / "1 run", and "active run" when the active run is one of them. */
  description: string;
  runs: RunNode[];
}

export type RunsTreeNode = HostNode | RunNode;

/** "2026-11-30 14:03 UTC" for a time in ms since the epoch. */
export function utcMinute(ms: number): string {
  return `${new Date(ms).toISOString().slice(0, 16).replace('T', ' ')} UTC`;
}

/** The status words of a run: `active`, `SIMULATED`, `stale`, `partial` / `running` (complete says nothing). */
export function runFlags(p: Profile, active: boolean, stale: readonly string[]): string[] {
  const flags: string[] = [];
  if (active) flags.push('active');
  if (isSimulatedRun(p.run)) flags.push('SIMULATED');
  if (stale.length > 0) flags.push('stale');
  if (p.run.status !== 'complete') flags.push(p.run.status);
  if (p.foreign) flags.push('saved from another window');
  return flags;
}

/** The tree node of one run. `active` is the store's active profile, `profiles` all loaded ones. */
export function runNode(p: Profile, active: Profile | undefined, profiles: readonly Profile[], rules: StaleRules): RunNode {
  const isActive = p === active;
  const stale = staleReasons(p, p, profiles, rules);
  const simulated = isSimulatedRun(p.run);
  const s = p.run.stamp;
  const nccl = ncclText(s?.ncclVersion, (t) => plain(t, 20));
  const gpus = runSizeText(p.run.ranks, s?.gpus, (t) => plain(t, 40));
  const tooltip = [
    `${simulated ? 'SIMULATED NCCL (figures are not measurements) · ' : ''}${plain(p.run.host, 60)} · ${nccl} · ${gpus}`,
    `started ${utcMinute(p.time)} · ${p.run.status}${isActive ? ' · the active run (annotations come from it)' : ''}`,
    `experiments: ${plain(p.run.experiments.map((e) => e.experiment).join(', ') || 'none', 200)}`,
    ...stale.map((r) => `stale: ${plain(r, 200)}`),
    ...(p.foreign ? ['saved from another window: its figures are not used in this window unless chosen'] : []),
    plain(p.path, 300),
  ].join('\n');
  return {
    kind: 'run',
    key: p.key,
    path: p.path,
    // The run's one name (readings/runName.ts): its GPUs and count, NCCL and start; SIMULATED and a
    // status other than complete are said there, so the description does not repeat them.
    label: runName(p.run, { time: p.time }),
    description: runFlags(p, isActive, stale)
      .filter((f) => f !== 'SIMULATED' && f !== p.run.status)
      .join(' · '),
    tooltip,
    contextValue: isActive ? 'run.active' : 'run',
    active: isActive,
    simulated,
    stale,
    status: p.run.status,
  };
}

/**
 * The tree: one node per host, hosts in the order of their newest run (newest first), each
 * host's runs newest first.
 * @param profiles every loaded run (ProfileStore.profiles)
 * @param active the active run (ProfileStore.active)
 */
export function runsTree(profiles: readonly Profile[], active: Profile | undefined, rules: StaleRules): HostNode[] {
  const byHost = new Map<string, Profile[]>();
  for (const p of profiles) {
    const list = byHost.get(p.run.host) ?? [];
    list.push(p);
    byHost.set(p.run.host, list);
  }
  const hosts = [...byHost.entries()].map(([host, list]) => {
    const sorted = [...list].sort((a, b) => b.time - a.time || (a.path < b.path ? 1 : -1));
    const runs = sorted.map((p) => runNode(p, active, profiles, rules));
    const n = runs.length;
    return {
      node: {
        kind: 'host' as const,
        host,
        label: plain(host, 60) || '(no host)',
        description: `${n} run${n === 1 ? '' : 's'}${runs.some((r) => r.active) ? ' · active run' : ''}`,
        runs,
      },
      newest: sorted[0]?.time ?? 0,
    };
  });
  hosts.sort((a, b) => b.newest - a.newest || (a.node.host < b.node.host ? -1 : 1));
  return hosts.map((h) => h.node);
}

/** A quick-pick row for a run: label, description and detail (all plain text). */
export interface RunPickRow {
  key: string;
  label: string;
  description: string;
  detail: string;
}

/**
 * The row of `p` in the Open Run / Compare Runs / Export pickers: "2× H200 · NCCL 2.28.9 ·
 * 2026-11-30 00:22 UTC" (annotationText.ts `runLabel` on readings/runName.ts, told apart from
 * `profiles`), with its status words and experiments, and the file.
 */
export function runPickRow(p: Profile, active: Profile | undefined, profiles: readonly Profile[], rules: StaleRules): RunPickRow {
  const stale = staleReasons(p, p, profiles, rules);
  // runLabel says SIMULATED first and a status other than complete last.
  const flags = runFlags(p, p === active, stale).filter((f) => f !== 'SIMULATED' && f !== p.run.status);
  const experiments = plain(p.run.experiments.map((e) => e.experiment).join(', ') || 'no experiments', 120);
  return {
    key: p.key,
    label: runLabel(p, profiles),
    description: [...flags, experiments].join(' · '),
    detail: plain(p.path, 200),
  };
}

/**
 * Whether `path` is a run file the Runs view may delete: a `.json` file directly inside one of
 * the run folders the store reads. Returns the reason when it is not.
 */
export function deletableRunFile(path: string, folders: readonly RunFolder[]): { ok: true } | { ok: false; why: string } {
  if (!isAbsolute(path)) return { ok: false, why: `${path} is not an absolute path` };
  if (!path.endsWith('.json')) return { ok: false, why: `${path} is not a run file (.json)` };
  for (const f of folders) {
    const rel = relative(f.dir, path);
    if (rel && !rel.startsWith('..') && !isAbsolute(rel) && !rel.includes(sep)) return { ok: true };
  }
  return { ok: false, why: `${path} is not in a run folder (${folders.map((f) => f.dir).join(', ')})` };
}
