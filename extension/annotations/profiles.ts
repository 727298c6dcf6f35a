/**
 * Profiles: the saved runs the annotations can come from (the workspace's `.commcost/runs/`
 * first, then the extension's global storage), the active one, and the staleness rules.
 * No `vscode` import.
 *
 * Run files found in a workspace are untrusted: every one is read through
 * client/resultsStore.ts `loadRun` (schema-validated); a bad file is reported once and skipped.
 */
import { readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { loadRun } from '../../client/resultsStore';
import type { RunFile } from '../../protocol/runFile';

/** Larger run files are not read (a real run is well under 1 MiB). */
export const MAX_RUN_FILE_BYTES = 16 * 1024 * 1024;

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
}

/** A folder to read runs from. */
export interface RunFolder {
  dir: string;
  source: ProfileSource;
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

/**
 * The runs of the workspace and global storage, and which is active. Reload after a folder
 * changes; problems are passed to `report` once per file and message.
 */
export class ProfileStore {
  private list: Profile[] = [];
  private readonly keys = new Map<string, string>();
  private readonly reported = new Set<string>();
  private activeKey: string | undefined;

  /** @param report called once per bad file and problem (for the output channel) */
  constructor(private readonly report: (line: string) => void) {}

  /** Every usable profile: workspace first, then global; newest first within each. */
  get profiles(): readonly Profile[] {
    return this.list;
  }

  byKey(key: string): Profile | undefined {
    return this.list.find((p) => p.key === key);
  }

  byPath(path: string): Profile | undefined {
    return this.list.find((p) => p.path === path);
  }

  /** The active profile: the one chosen, else the newest workspace run, else the newest global run. */
  get active(): Profile | undefined {
    return (this.activeKey ? this.byKey(this.activeKey) : undefined) ?? this.list[0];
  }

  /** Chooses the active profile by key; false when unknown. */
  setActiveKey(key: string): boolean {
    const known = this.byKey(key) !== undefined;
    if (known) this.activeKey = key;
    return known;
  }

  /** Chooses the active profile (by path, which survives reloads); false when unknown. */
  setActivePath(path: string): boolean {
    const p = this.byPath(path);
    if (p) this.activeKey = p.key;
    return p !== undefined;
  }

  /**
   * Reads every `*.json` of `folders` (not recursive). Missing folders are fine; unreadable,
   * oversized, malformed or failed runs are skipped and reported once. Never throws.
   */
  async reload(folders: readonly RunFolder[]): Promise<void> {
    const out: Profile[] = [];
    for (const folder of folders) {
      let names: string[];
      try {
        names = (await readdir(folder.dir)).filter((n) => n.endsWith('.json'));
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== 'ENOENT')
          this.once(folder.dir, `cannot list runs in ${folder.dir}: ${(e as Error).message}`);
        continue;
      }
      const found: Profile[] = [];
      for (const name of names) {
        const path = join(folder.dir, name);
        const p = await this.read(path, folder.source);
        if (p) found.push(p);
      }
      found.sort((a, b) => b.time - a.time || (a.path < b.path ? 1 : -1));
      out.push(...found);
    }
    this.list = out;
  }

  private async read(path: string, source: ProfileSource): Promise<Profile | undefined> {
    try {
      const st = await stat(path);
      if (!st.isFile()) return undefined;
      if (st.size > MAX_RUN_FILE_BYTES) {
        this.once(path, `ignored run file ${path}: ${st.size} bytes is larger than ${MAX_RUN_FILE_BYTES}`);
        return undefined;
      }
      const run = await loadRun(path);
      if (run.status === 'failed') return undefined;
      let key = this.keys.get(path);
      if (!key) {
        key = `p${this.keys.size}`;
        this.keys.set(path, key);
      }
      return { key, path, source, run, time: runTime(run, st.mtimeMs) };
    } catch (e) {
      this.once(path, `ignored run file: ${e instanceof Error ? e.message : String(e)}`);
      return undefined;
    }
  }

  private once(path: string, line: string): void {
    const k = `${path}\n${line}`;
    if (this.reported.has(k)) return;
    this.reported.add(k);
    this.report(line);
  }
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
  for (const p of profiles) if (p.run.host === host && !p.run.simulated && p.run.stamp && (!best || p.time > best.time)) best = p;
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
