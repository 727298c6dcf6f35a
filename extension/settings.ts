/**
 * The `commcost.*` settings, read and validated. No `vscode` import: the caller passes a getter
 * (`workspace.getConfiguration('commcost').get`), so this is testable on its own.
 */
import { DEFAULT_EXPERIMENTS, EXPERIMENT_IDS, OPTION_LIMITS, withinLimit, type ExperimentId } from '../protocol/events';

/** Validated settings. Times in seconds where named so. */
export interface CommcostSettings {
  hosts: string[];
  /** Recorded runs per step, within OPTION_LIMITS.iterations (1–100000). */
  iterations: number;
  /** Unrecorded warmup runs per step, within OPTION_LIMITS.warmup (0–1000). */
  warmup: number;
  /** Hang guard per step, s, within OPTION_LIMITS.deadlineSeconds (1–86400). */
  deadlineSeconds: number;
  /** libnccl.so.2 on the GPU host; "" = search. */
  ncclPath: string;
  /** Node on the GPU host; "" = search. */
  remoteNodePath: string;
  /** Preselected experiments. */
  experiments: ExperimentId[];
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
  ncclPath: '',
  remoteNodePath: '',
  experiments: [...DEFAULT_EXPERIMENTS],
};

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

/**
 * Reads every `commcost.*` setting through `get` (key without the `commcost.` prefix; undefined =
 * unset → default) and validates it.
 * @throws SettingsError naming the setting and the bad value.
 */
export function readSettings(get: (key: string) => unknown): CommcostSettings {
  const hostsRaw = get('hosts') ?? DEFAULTS.hosts;
  if (!Array.isArray(hostsRaw) || !hostsRaw.every((h) => typeof h === 'string' && h.trim() !== '' && !/[\s\0]/.test(h.trim()))) {
    throw new SettingsError('commcost.hosts', hostsRaw, 'a list of host names (localhost, an ssh alias or user@host[:port]) without spaces');
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
  return {
    hosts: (hostsRaw as string[]).map((h) => h.trim()),
    iterations: int(get, 'iterations', DEFAULTS.iterations),
    warmup: int(get, 'warmup', DEFAULTS.warmup),
    deadlineSeconds: deadline,
    ncclPath: str(get, 'ncclPath'),
    remoteNodePath: str(get, 'remoteNodePath'),
    experiments: [...new Set(expRaw as ExperimentId[])],
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
  /** The target passed to the engine. */
  target: string;
  simulate: boolean;
  /** Where it came from, shown as the item's description. */
  source: 'local' | 'setting' | 'ssh config' | 'recent' | 'simulated';
}

/**
 * The host QuickPick items in order: recent first, then `localhost`, the setting's hosts, the
 * ssh config's hosts (each target once), then `localhost (simulated NCCL)`.
 */
export function hostChoices(settingHosts: readonly string[], sshHosts: readonly string[], recent: readonly string[]): HostChoice[] {
  const out: HostChoice[] = [];
  const seen = new Set<string>();
  const add = (target: string, source: HostChoice['source']): void => {
    const t = target.trim();
    if (!t || seen.has(t) || /[\s\0]/.test(t)) return;
    seen.add(t);
    out.push({ label: t, target: t, simulate: false, source });
  };
  for (const r of recent) add(r, 'recent');
  add('localhost', 'local');
  for (const h of settingHosts) add(h, 'setting');
  for (const h of sshHosts) if (!/[*?!]/.test(h)) add(h, 'ssh config');
  out.push({ label: SIMULATED_LOCALHOST, target: 'localhost', simulate: true, source: 'simulated' });
  return out;
}

/** Puts `target` first in the recent-hosts list, keeping at most `max` entries. */
export function pushRecent(recent: readonly string[], target: string, max = 8): string[] {
  return [target, ...recent.filter((r) => r !== target)].slice(0, max);
}
