/**
 * Profiles: the saved runs the annotations can come from (the workspace's `.commcost/runs/`
 * first, then the extension's global storage), the active one, which runs may answer in this
 * window, and the staleness rules. Pure: no `vscode`, no I/O (client/profileStore.ts reads the
 * run files into {@link Profile}s).
 *
 * Which runs may answer (figures.ts applies the rest of the rule, ARCHITECTURE.md "annotations"):
 * the workspace's runs, and global-storage runs saved from this same workspace (or, in a window
 * without a folder, from none); simulated runs only once the user chose a simulated run as the
 * active one, and then only simulated runs, so that one file never mixes simulated and measured
 * figures. The run the user chose explicitly always may.
 * */
import { isSimulatedRun, type RunFile } from '../protocol/runFile';

export type ProfileSource = 'workspace' | 'global';

/** One usable saved run. */
export interface Profile {
  /** Our own id for this file in this session (`p0`, `p1`, …): the only thing command links carry. */
  key: string;
  path: string;
  source: ProfileSource;
  run: RunFile;
  /** When the run started, ms since the epoch (stamp, else the id's timestamp, else the file's mtime). */
  time: number;
  /**
   * Global storage only: the workspace the run was saved from ({@link workspaceIdOf}), null for a
   * window without a folder; undefined when not recorded (runs saved before it was: those came
   * from windows without a folder, the only ones that save to global storage).
   */
  origin?: string | null;
  /** A global-storage run saved from another workspace than this window's: answers only when chosen. */
  foreign?: boolean;
}

/** True when the run's figures are simulated (protocol/runFile.ts `isSimulatedRun`, the one rule). */
export function isSimulatedProfile(p: Profile): boolean {
  return isSimulatedRun(p.run);
}

/**
 * The runs that may answer call sites in this window, in `profiles`' order: not foreign, and
 * simulated exactly when `chosen` is (none chosen: measured runs only); plus `chosen` itself.
 */
export function answeringProfiles(profiles: readonly Profile[], chosen: Profile | undefined): Profile[] {
  const simulated = chosen ? isSimulatedProfile(chosen) : false;
  return profiles.filter((p) => p === chosen || (!p.foreign && isSimulatedProfile(p) === simulated));
}

/** `20261129-194828-localhost` → its UTC time, ms; NaN when the id has no timestamp. */
function timeFromId(id: string): number {
  const m = /^(\d{4})(\d{2})(\d{2})-(\d{2})(\d{2})(\d{2})/.exec(id);
  if (!m) return NaN;
  return Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3]), Number(m[4]), Number(m[5]), Number(m[6]));
}

/** When `run` started, ms (stamp.startedAt, else the id's timestamp, else `fallback`). */
export function runTime(run: RunFile, fallback: number): number {
  const t = run.stamp ? Date.parse(run.stamp.startedAt) : NaN;
  if (Number.isFinite(t)) return t;
  const fromId = timeFromId(run.id);
  return Number.isFinite(fromId) ? fromId : fallback;
}

// ---------------------------------------------------------------------------------------------
// Staleness

/** The user's staleness settings and the clock. */
export interface StaleRules {
  /** ms since the epoch. */
  now: number;
  /** Older runs are stale (commcost.staleAfterDays). */
  staleAfterDays: number;
  /** The NCCL version the workspace's environment loads (commcost.expectedNcclVersion); "" = unknown. */
  expectedNcclVersion: string;
}

/** The NCCL version the workspace is expected to load, and why: the setting, else the last real run on `host`. */
export function expectedNccl(host: string, profiles: readonly Profile[], rules: StaleRules): { version: string; why: string } | undefined {
  if (rules.expectedNcclVersion) return { version: rules.expectedNcclVersion, why: 'setting commcost.expectedNcclVersion' };
  const last = latestOnHost(host, profiles);
  return last?.run.stamp ? { version: last.run.stamp.ncclVersion, why: `the last run on ${host}` } : undefined;
}

/** The newest non-simulated run on target `host`. */
function latestOnHost(host: string, profiles: readonly Profile[]): Profile | undefined {
  let best: Profile | undefined;
  for (const p of profiles)
    if (p.run.host === host && !isSimulatedProfile(p) && !p.foreign && p.run.stamp && (!best || p.time > best.time)) best = p;
  return best;
}

/**
 * Why figures from `source` are stale for annotations on the `active` profile ([] = fresh):
 * another NCCL version than the workspace loads, older than the configured age, or another host
 * than the profile's (or the same target now reaching another machine).
 */
export function staleReasons(source: Profile, active: Profile, profiles: readonly Profile[], rules: StaleRules): string[] {
  const reasons: string[] = [];
  const stamp = source.run.stamp;
  const expected = expectedNccl(active.run.host, profiles, rules);
  if (stamp && expected && stamp.ncclVersion !== expected.version) {
    reasons.push(`measured with NCCL ${stamp.ncclVersion}; this workspace loads ${expected.version} (${expected.why})`);
  }
  const days = (rules.now - source.time) / 86_400_000;
  if (days > rules.staleAfterDays) {
    reasons.push(`measured ${Math.floor(days)} days ago (older than ${rules.staleAfterDays} days)`);
  }
  if (source.run.host !== active.run.host) {
    reasons.push(`measured on ${source.run.host}, the active profile is ${active.run.host}`);
  } else {
    const last = latestOnHost(source.run.host, profiles);
    const then = stamp?.hostname;
    const now = last?.run.stamp?.hostname;
    if (then && now && then !== now) reasons.push(`${source.run.host} was machine ${then} when measured, it is now ${now}`);
  }
  return reasons;
}
