/**
 * The profile store: reads the saved runs the annotations can come from (the workspace's
 * `.commcost/runs/` first, then the extension's global storage) into {@link Profile}s, and keeps
 * which one is active. The rule of which runs may answer is readings/profiles.ts's. No `vscode`
 * import.
 *
 * Run files found in a workspace are untrusted: every one is read through
 * client/resultsStore.ts `loadRun` (schema-validated); a bad file is reported once and skipped.
 */
import { readdir, stat } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { loadRun } from './resultsStore';
import { answeringProfiles, isSimulatedProfile, runTime, type Profile, type ProfileSource } from '../readings/profiles';
import { mappedExperiments } from '../sites/apiMap';

/** Larger run files are not read (a real run is well under 1 MiB). */
export const MAX_RUN_FILE_BYTES = 16 * 1024 * 1024;

/** A folder to read runs from. */
export interface RunFolder {
  dir: string;
  source: ProfileSource;
  /** Global storage: file name → the workspace it was saved from (null = none), as recorded by the Measure command. */
  origins?: Readonly<Record<string, string | null>>;
}

/** The workspace state key of the run the user chose explicitly (a path). */
export const CHOSEN_PROFILE_KEY = 'commcost.chosenProfilePath';
/** The global state key of the origins of global-storage runs ({@link RunFolder.origins}). */
export const GLOBAL_ORIGINS_KEY = 'commcost.globalRunOrigins';

/**
 * The identity of a window's workspace: the workspace file, else the first folder (URIs as
 * strings), null for a window without either.
 */
export function workspaceIdOf(workspaceFile: string | undefined, folders: readonly string[]): string | null {
  return workspaceFile ?? folders[0] ?? null;
}

/** The origins map with `path`'s file recorded as saved from `workspace` (a new object). */
export function withOrigin(origins: unknown, path: string, workspace: string | null): Record<string, string | null> {
  const out: Record<string, string | null> = {};
  if (origins && typeof origins === 'object')
    for (const [k, v] of Object.entries(origins as Record<string, unknown>)) if (typeof v === 'string' || v === null) out[k] = v;
  out[basename(path)] = workspace;
  return out;
}

const MAPPED = new Set(mappedExperiments());

/** Whether `p` has figures for an experiment that answers call sites (not only field cases). */
function answersCallSites(p: Profile): boolean {
  return p.run.experiments.some((e) => MAPPED.has(e.experiment) && e.variants.length > 0);
}

/**
 * The runs of the workspace and global storage, which may answer in this window, and which is
 * active. Reload after a folder changes; problems are passed to `report` once per file and message.
 */
export class ProfileStore {
  private list: Profile[] = [];
  private readonly keys = new Map<string, string>();
  private readonly reported = new Set<string>();
  private chosenKey: string | undefined;

  /** @param report called once per bad file and problem (for the output channel) */
  constructor(private readonly report: (line: string) => void) {}

  /** Every usable profile (foreign and simulated ones included): workspace first, then global; newest first within each. */
  get profiles(): readonly Profile[] {
    return this.list;
  }

  byKey(key: string): Profile | undefined {
    return this.list.find((p) => p.key === key);
  }

  byPath(path: string): Profile | undefined {
    return this.list.find((p) => p.path === path);
  }

  /** The run the user chose explicitly (status bar, restored from the workspace state), while it is loaded. */
  get chosen(): Profile | undefined {
    return this.chosenKey ? this.byKey(this.chosenKey) : undefined;
  }

  /** The runs that may answer call sites ({@link answeringProfiles}). */
  get answering(): Profile[] {
    return answeringProfiles(this.list, this.chosen);
  }

  /**
   * The active profile: the one chosen, else the newest measured run (workspace, then global runs
   * of this window) with figures for an experiment that answers call sites (apiMap.ts
   * `mappedExperiments`: init, split, c10d, …), else — only runs of field cases (connect-mode,
   * init-abort, …) — the newest measured run. Never a simulated or foreign run unless chosen.
   */
  get active(): Profile | undefined {
    const runs = this.answering;
    return this.chosen ?? runs.find(answersCallSites) ?? runs[0];
  }

  /** Chooses the active profile by key (the user's choice); false when unknown. */
  setActiveKey(key: string): boolean {
    const known = this.byKey(key) !== undefined;
    if (known) this.chosenKey = key;
    return known;
  }

  /** Chooses the active profile by path (survives reloads; the user's choice); false when unknown. */
  setActivePath(path: string): boolean {
    const p = this.byPath(path);
    if (p) this.chosenKey = p.key;
    return p !== undefined;
  }

  /** Forgets the user's choice: the newest measured run is active again. */
  clearChoice(): void {
    this.chosenKey = undefined;
  }

  /**
   * A run a measurement just saved at `path` (after {@link reload}): a measured run of this window
   * becomes the active one (the choice is cleared, the newest measured run is active); a
   * simulated or foreign one never does by itself. Returns what happened.
   */
  runSaved(path: string): 'active' | 'simulated' | 'foreign' | 'unknown' {
    const p = this.byPath(path);
    if (!p) return 'unknown';
    if (p.foreign) return 'foreign';
    if (isSimulatedProfile(p)) return 'simulated';
    this.chosenKey = undefined;
    return 'active';
  }

  /**
   * Reads every `*.json` of `folders` (not recursive). Missing folders are fine; unreadable,
   * oversized, malformed or failed runs are skipped and reported once. Never throws.
   * @param folders where to read runs from
   * @param workspace this window's workspace ({@link workspaceIdOf}; null = a window without a
   *   folder): a global run saved from another one is foreign. Undefined: no global run is foreign.
   */
  async reload(folders: readonly RunFolder[], workspace?: string | null): Promise<void> {
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
        if (!p) continue;
        if (folder.source === 'global') {
          const origin = folder.origins && Object.hasOwn(folder.origins, name) ? folder.origins[name] : undefined;
          if (origin !== undefined) p.origin = origin;
          if (workspace !== undefined && (origin ?? null) !== workspace) p.foreign = true;
        }
        found.push(p);
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
