/**
 * The `commcost.*` settings, read and validated. No `vscode` import: the caller passes a getter
 * (`workspace.getConfiguration('commcost').get`), so this is testable on its own.
 */
import type { SlurmOptions } from '../client/slurm';
import { commCountsProblem, DEFAULT_COMM_COUNTS, DEFAULT_EXPERIMENTS, DEFAULT_RUN_OPTIONS, EXPERIMENT_IDS, OPTION_LIMITS, pythonOptionProblem, withinLimit, type ExperimentId, type RunOptions } from '../protocol/events';

/**
 * The job step of `slurm:<login node>` entries (`commcost.slurm`), checked for shape here; the
 * values themselves (Slurm names, time limit, srun options) are checked by client/slurm.ts
 * `srunArgsFor` when such an entry is picked.
 */
export interface SlurmSettings extends SlurmOptions {
  /** Nodes of the job step, 1–1024 (default 1). */
  nodes: number;
  /** GPUs (= ranks) per node, 1–1024 (default 1). */
  gpusPerNode: number;
}

/** Validated settings. Times in seconds where named so. */
export interface CommcostSettings {
  /**
   * Entries of the host picker, trimmed, groups in the form `gpu-a + gpu-b` (see
   * {@link normalizeHostEntry}); parsed and checked by hostEntries.ts `parseHostEntry`.
   */
  hosts: string[];
  /** Recorded runs per step, within OPTION_LIMITS.iterations (1–100000). */
  iterations: number;
  /** Unrecorded warmup runs per step, within OPTION_LIMITS.warmup (0–1000). */
  warmup: number;
  /** Hang guard per step, s, within OPTION_LIMITS.deadlineSeconds (1–86400). */
  deadlineSeconds: number;
  /** The many-comms experiment's communicator counts (`commCounts` run option, `--comm-counts`), ascending. */
  commCounts: number[];
  /** libnccl.so.2 on the GPU host; "" = search. */
  ncclPath: string;
  /** The Python with torch on the GPU host (c10d, the NCCL wheel search); "" = $COMMCOST_PYTHON, else python3. */
  python: string;
  /** Node on the GPU host; "" = search. */
  remoteNodePath: string;
  /** Preselected experiments. */
  experiments: ExperimentId[];
  /** The address the other hosts of a group reach its first host at; "" = discovered. */
  coordinatorAddress: string;
  /** The job step of `slurm:<login node>` entries. */
  slurm: SlurmSettings;
}

/** A setting with a bad value: `setting` is the full key, e.g. `commcost.iterations`. */
export class SettingsError extends Error {
  readonly code = 'BAD_SETTING';
  constructor(
    readonly setting: string,
    readonly value: unknown,
    expected: string,
  ) {
    super(`setting ${setting} has a bad value ${JSON.stringify(value) ?? String(value)}: expected ${expected}`);
    this.name = 'SettingsError';
  }
}

const DEFAULTS: CommcostSettings = {
  hosts: ['localhost'],
  iterations: 10,
  warmup: 1,
  deadlineSeconds: 60,
  commCounts: [...DEFAULT_COMM_COUNTS],
  ncclPath: '',
  python: '',
  remoteNodePath: '',
  experiments: [...DEFAULT_EXPERIMENTS],
  coordinatorAddress: '',
  slurm: { nodes: 1, gpusPerNode: 1 },
};

/** Most nodes or GPUs per node of a Slurm job step (client/slurm.ts `srunArgsFor` takes 1–1024). */
export const SLURM_COUNT_MAX = 1024;

/** The properties of `commcost.slurm`, as in package.json. */
export const SLURM_KEYS = ['partition', 'account', 'nodes', 'gpusPerNode', 'time', 'extraArgs', 'srunPath'] as const;

/** The separator of the hosts of a group entry. */
export const GROUP_SEPARATOR = '+';

/**
 * An entry of `commcost.hosts` (or the picker) in its canonical form: trimmed, the hosts of a
 * group joined by ` + ` (`gpu-a+gpu-b` → `gpu-a + gpu-b`), `slurm: login1` → `slurm:login1`.
 * Only spacing changes; hostEntries.ts `parseHostEntry` checks the names.
 */
export function normalizeHostEntry(text: string): string {
  const t = text.trim();
  if (t.includes(GROUP_SEPARATOR)) return t.split(GROUP_SEPARATOR).map((part) => normalizeHostEntry(part)).join(` ${GROUP_SEPARATOR} `);
  const slurm = /^slurm:\s*/.exec(t);
  return slurm ? `slurm:${t.slice(slurm[0].length)}` : t;
}

/** True when a normalized entry has no whitespace other than the group separators, and no control character. */
function plainEntry(entry: string): boolean {
  // eslint-disable-next-line no-control-regex -- refusing control characters is the point
  return entry !== '' && !/[\s\x00-\x1f\x7f]/.test(entry.split(` ${GROUP_SEPARATOR} `).join(GROUP_SEPARATOR));
}

function slurmSettings(raw: unknown): SlurmSettings {
  const key = 'commcost.slurm';
  if (raw === undefined || raw === null) return { ...DEFAULTS.slurm };
  if (typeof raw !== 'object' || Array.isArray(raw)) throw new SettingsError(key, raw, `an object with ${SLURM_KEYS.join(', ')}`);
  const o = raw as Record<string, unknown>;
  const known: readonly string[] = SLURM_KEYS;
  const unknown = Object.keys(o).filter((k) => !known.includes(k));
  if (unknown.length > 0) throw new SettingsError(key, raw, `only the properties ${SLURM_KEYS.join(', ')} (not ${unknown.join(', ')})`);
  const out: SlurmSettings = { nodes: DEFAULTS.slurm.nodes, gpusPerNode: DEFAULTS.slurm.gpusPerNode };
  for (const k of ['nodes', 'gpusPerNode'] as const) {
    const v = o[k];
    if (v === undefined || v === null) continue;
    if (typeof v !== 'number' || !Number.isInteger(v) || v < 1 || v > SLURM_COUNT_MAX) throw new SettingsError(key, raw, `"${k}" to be a whole number from 1 to ${SLURM_COUNT_MAX}`);
    out[k] = v;
  }
  for (const k of ['partition', 'account', 'time', 'srunPath'] as const) {
    const v = o[k];
    if (v === undefined || v === null) continue;
    if (typeof v !== 'string' || /[\0\n\r]/.test(v)) throw new SettingsError(key, raw, `"${k}" to be text on one line`);
    if (v.trim() !== '') out[k] = v.trim();
  }
  const extra = o.extraArgs;
  if (extra !== undefined && extra !== null) {
    if (!Array.isArray(extra) || !extra.every((a) => typeof a === 'string' && !/[\0\n\r]/.test(a))) {
      throw new SettingsError(key, raw, '"extraArgs" to be a list of srun options, one per item (e.g. ["--qos=debug"])');
    }
    const args = (extra as string[]).map((a) => a.trim()).filter((a) => a !== '');
    if (args.length > 0) out.extraArgs = args;
  }
  return out;
}

function coordinatorAddress(raw: unknown): string {
  if (raw === undefined || raw === null) return '';
  // eslint-disable-next-line no-control-regex -- refusing control characters is the point
  if (typeof raw !== 'string' || /[\s\x00-\x1f\x7f]/.test(raw.trim()) || raw.trim().startsWith('-')) {
    throw new SettingsError('commcost.coordinatorAddress', raw, 'a host name or IP address without spaces (empty: discovered)');
  }
  return raw.trim();
}

function int(get: (k: string) => unknown, key: 'iterations' | 'warmup', dflt: number): number {
  const v = get(key);
  if (v === undefined || v === null) return dflt;
  const limit = OPTION_LIMITS[key];
  if (!withinLimit(v, limit, true)) throw new SettingsError(`commcost.${key}`, v, `an integer from ${limit.min} to ${limit.max}`);
  return v;
}

function str(get: (k: string) => unknown, key: string): string {
  const v = get(key);
  if (v === undefined || v === null) return '';
  if (typeof v !== 'string' || /[\0\n\r]/.test(v)) throw new SettingsError(`commcost.${key}`, v, 'a path on one line');
  return v.trim();
}

/** `commcost.python`: "" when unset or blank, else a path the agent accepts as the `python` run option. */
function pythonSetting(get: (k: string) => unknown): string {
  const v = str(get, 'python');
  if (v !== '' && pythonOptionProblem(v)) {
    throw new SettingsError('commcost.python', get('python'), `a path on one line of at most ${OPTION_LIMITS.pythonChars.max} characters (empty: $COMMCOST_PYTHON on the host, else python3)`);
  }
  return v;
}

/**
 * Reads every `commcost.*` setting through `get` (key without the `commcost.` prefix; undefined =
 * unset → default) and validates it.
 * @throws SettingsError naming the setting and the bad value.
 */
export function readSettings(get: (key: string) => unknown): CommcostSettings {
  const hostsRaw = get('hosts') ?? DEFAULTS.hosts;
  if (!Array.isArray(hostsRaw) || !hostsRaw.every((h) => typeof h === 'string' && plainEntry(normalizeHostEntry(h)))) {
    throw new SettingsError(
      'commcost.hosts',
      hostsRaw,
      'a list of host names (localhost, an ssh alias or user@host[:port]) without spaces, groups of them joined by + (gpu-a + gpu-b), or slurm:<login node>',
    );
  }
  const expRaw = get('experiments') ?? DEFAULTS.experiments;
  const known: readonly string[] = EXPERIMENT_IDS;
  if (!Array.isArray(expRaw) || !expRaw.every((e) => typeof e === 'string' && known.includes(e))) {
    throw new SettingsError('commcost.experiments', expRaw, `a list of experiment ids from ${EXPERIMENT_IDS.join(', ')}`);
  }
  const deadline = get('deadlineSeconds') ?? DEFAULTS.deadlineSeconds;
  const dl = OPTION_LIMITS.deadlineSeconds;
  if (!withinLimit(deadline, dl, false)) {
    throw new SettingsError('commcost.deadlineSeconds', deadline, `a number of seconds from ${dl.min} to ${dl.max}`);
  }
  const counts = get('commCounts') ?? DEFAULTS.commCounts;
  const countsWrong = commCountsProblem(counts);
  if (countsWrong) {
    const c = OPTION_LIMITS.commCount;
    throw new SettingsError('commcost.commCounts', counts, `a list of ${OPTION_LIMITS.commCounts.min} to ${OPTION_LIMITS.commCounts.max} whole numbers from ${c.min} to ${c.max}, strictly ascending (${countsWrong})`);
  }
  return {
    hosts: (hostsRaw as string[]).map(normalizeHostEntry),
    iterations: int(get, 'iterations', DEFAULTS.iterations),
    warmup: int(get, 'warmup', DEFAULTS.warmup),
    deadlineSeconds: deadline,
    commCounts: [...(counts as number[])],
    ncclPath: str(get, 'ncclPath'),
    python: pythonSetting(get),
    remoteNodePath: str(get, 'remoteNodePath'),
    experiments: [...new Set(expRaw as ExperimentId[])],
    coordinatorAddress: coordinatorAddress(get('coordinatorAddress')),
    slurm: slurmSettings(get('slurm')),
  };
}

/**
 * The run options of a Measure: the experiments and iterations picked, the rest from the settings
 * (`commCounts` only when it differs from the default, as `--comm-counts` on the CLI; the NCCL path
 * and Python only when set).
 */
export function measureRunOptions(settings: CommcostSettings, experiments: ExperimentId[], iterations: number, simulate: boolean): RunOptions {
  const defaultCounts = settings.commCounts.length === DEFAULT_COMM_COUNTS.length && settings.commCounts.every((n, i) => n === DEFAULT_COMM_COUNTS[i]);
  return {
    ...DEFAULT_RUN_OPTIONS,
    experiments,
    iterations,
    warmup: settings.warmup,
    deadlineSeconds: settings.deadlineSeconds,
    ...(settings.ncclPath ? { ncclPath: settings.ncclPath } : {}),
    ...(settings.python ? { python: settings.python } : {}),
    ...(defaultCounts ? {} : { commCounts: [...settings.commCounts] }),
    ...(simulate ? { simulate: true } : {}),
  };
}

/**
 * Validates the iterations InputBox text: undefined when valid, else the message to show.
 */
export function validateIterations(text: string): string | undefined {
  const { min, max } = OPTION_LIMITS.iterations;
  const message = `Enter a whole number from ${min} to ${max}`;
  const t = text.trim();
  if (!/^\d+$/.test(t)) return message;
  return withinLimit(Number(t), OPTION_LIMITS.iterations, true) ? undefined : message;
}

/** The pseudo-host of the simulated-NCCL choice. */
export const SIMULATED_LOCALHOST = 'localhost (simulated NCCL)';

/** One entry of the host QuickPick. */
export interface HostChoice {
  label: string;
  /**
   * The entry it stands for, normalized ({@link normalizeHostEntry}): one target, a group
   * `gpu-a + gpu-b` or `slurm:<login node>`, parsed by hostEntries.ts `parseHostEntry`.
   */
  target: string;
  simulate: boolean;
  /** Where it came from, shown as the item's description. */
  source: 'local' | 'setting' | 'ssh config' | 'recent' | 'simulated';
}

/**
 * The host QuickPick items in order: recent first, then `localhost`, the setting's entries, the
 * ssh config's hosts (each entry once, compared normalized), then `localhost (simulated NCCL)`.
 */
export function hostChoices(settingHosts: readonly string[], sshHosts: readonly string[], recent: readonly string[]): HostChoice[] {
  const out: HostChoice[] = [];
  const seen = new Set<string>();
  const add = (target: string, source: HostChoice['source']): void => {
    const t = normalizeHostEntry(target);
    if (seen.has(t) || !plainEntry(t)) return;
    seen.add(t);
    out.push({ label: t, target: t, simulate: false, source });
  };
  for (const r of recent) add(r, 'recent');
  add('localhost', 'local');
  for (const h of settingHosts) add(h, 'setting');
  // Patterns are not hosts; an alias with + would read as a group.
  for (const h of sshHosts) if (!/[*?!+]/.test(h)) add(h, 'ssh config');
  out.push({ label: SIMULATED_LOCALHOST, target: 'localhost', simulate: true, source: 'simulated' });
  return out;
}

/** Puts `target` first in the recent-hosts list, keeping at most `max` entries. */
export function pushRecent(recent: readonly string[], target: string, max = 8): string[] {
  return [target, ...recent.filter((r) => r !== target)].slice(0, max);
}
