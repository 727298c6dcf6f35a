/**
 * The `commcost.measure` command: pick a host, a group of hosts, a Slurm login node (see
 * hostEntries.ts) or the simulated NCCL, then experiments and iterations, then run under a
 * cancellable progress notification with the results panel open.
 * The engine (client/) is loaded only here, on first use, to keep activation cheap.
 */
import { mkdir } from 'node:fs/promises';
import * as vscode from 'vscode';
import { CommcostError } from '../client/errors';
import { EXPERIMENT_IDS, type ExperimentId, type RunOptions } from '../protocol/events';
import type { RunFile } from '../protocol/runFile';
import type { CommcostContext } from './extensionContext';
import type { OutputLog } from './outputLog';
import { confirmUnknownHostKey } from './hostKeyPrompt';
import { describeHostEntry, entryRequest, parseHostEntry, type EntryRequest, type HostEntry } from './hostEntries';
import { runController, type RunOutcome, type RunRequest } from './runController';
import { hostChoices, pushRecent, measureRunOptions, readSettings, SettingsError, validateIterations, type CommcostSettings, type HostChoice } from './settings';
import { GLOBAL_ORIGINS_KEY, withOrigin, workspaceIdOf } from '../client/profileStore';
import { ResultsPanel } from './webviewPanel';
import * as info from '../readings/experimentInfo';
import { liveRunTitle } from '../readings/runName';

const RECENT_KEY = 'commcost.recentHosts';
const ENTER_HOST = 'Enter a host…';

/**
 * What a caller may preselect (the annotations' "Measure this on …"): experiments and a host.
 * Untrusted shape: unknown experiment ids and bad host names are dropped.
 */
export interface MeasureArgs {
  experiments?: string[];
  host?: string;
  /** true: on this computer with the simulated NCCL, no host picker ("Run simulated" buttons). */
  simulate?: boolean;
}

/** The valid part of a `commcost.measure` argument. */
export function measureArgs(arg: unknown): { experiments: ExperimentId[]; unknown: string[]; host?: string; simulate?: true } {
  const a = typeof arg === 'object' && arg !== null ? (arg as Record<string, unknown>) : {};
  const asked = Array.isArray(a.experiments) ? a.experiments.filter((e): e is string => typeof e === 'string') : [];
  const known: readonly string[] = EXPERIMENT_IDS;
  const host = typeof a.host === 'string' && a.host.trim() !== '' && !/[\s\0]/.test(a.host.trim()) ? a.host.trim() : undefined;
  return {
    experiments: asked.filter((e): e is ExperimentId => known.includes(e)),
    unknown: asked.filter((e) => !known.includes(e)),
    ...(host ? { host } : {}),
    ...(a.simulate === true ? { simulate: true as const } : {}),
  };
}

/** Everything the command needs from the extension. */
export interface MeasureEnv {
  ctx: CommcostContext;
  extension: vscode.ExtensionContext;
  log: OutputLog;
}

/** Shows a bad setting: the message (and a CommcostError's hint), with "Open Settings" on `setting`. */
function showSettingError(log: OutputLog, setting: string, message: string): void {
  log.error(message);
  void vscode.window.showErrorMessage(`commcost: ${message}`, 'Open Settings').then((a) => {
    if (a === 'Open Settings') void vscode.commands.executeCommand('workbench.action.openSettings', setting);
  });
}

/** `setting <key>: <message> — what to do: <hint>` for a CommcostError found in a setting's value. */
function settingProblem(setting: string, err: unknown): string {
  const message = err instanceof Error ? err.message : String(err);
  const hint = err instanceof CommcostError && err.hint ? ` — what to do: ${err.hint}` : '';
  return `setting ${setting}: ${message}${hint}`;
}

/**
 * Reads and validates the settings, and parses every `commcost.hosts` entry; shows the error naming
 * the setting and returns undefined when invalid.
 */
function settingsOrError(log: OutputLog): CommcostSettings | undefined {
  let settings: CommcostSettings;
  try {
    const config = vscode.workspace.getConfiguration('commcost');
    settings = readSettings((key) => config.get(key));
  } catch (err) {
    showSettingError(log, err instanceof SettingsError ? err.setting : 'commcost', err instanceof SettingsError ? err.message : String(err));
    return undefined;
  }
  try {
    for (const h of settings.hosts) parseHostEntry(h);
  } catch (err) {
    showSettingError(log, 'commcost.hosts', settingProblem('commcost.hosts', err));
    return undefined;
  }
  return settings;
}

async function pickHost(settings: CommcostSettings, env: MeasureEnv, preferred?: string): Promise<{ entry: HostEntry; simulate: boolean } | undefined> {
  let sshHosts: string[] = [];
  try {
    const { listConfiguredHosts } = await import('../client/hosts');
    sshHosts = await listConfiguredHosts();
  } catch (err) {
    env.log.error(`could not read ~/.ssh/config: ${err instanceof Error ? err.message : String(err)}`);
  }
  const recent = env.extension.globalState.get<string[]>(RECENT_KEY, []).filter((r) => typeof r === 'string');
  if (preferred) recent.unshift(preferred);
  type Item = vscode.QuickPickItem & { choice?: HostChoice; entry?: HostEntry };
  const items: Item[] = [];
  for (const choice of hostChoices(settings.hosts, sshHosts, recent)) {
    let entry: HostEntry;
    try {
      entry = parseHostEntry(choice.target);
    } catch (err) {
      // The setting's entries were checked before; an old recent entry or an odd ssh alias is left out.
      env.log.info(`host ${choice.target} (${choice.source}) left out: ${err instanceof Error ? err.message : String(err)}`);
      continue;
    }
    const what = choice.simulate ? 'figures are simulated, not measured' : describeHostEntry(entry, settings.slurm);
    items.push({ label: choice.label, description: what && !choice.simulate ? `${what} · ${choice.source}` : (what ?? choice.source), choice, entry });
  }
  items.push({ label: ENTER_HOST, description: 'user@host[:port], an ssh alias, gpu-a + gpu-b, or slurm:login1', alwaysShow: true });
  const picked = await vscode.window.showQuickPick(items, { title: 'commcost: target host', placeHolder: 'Where to measure', ignoreFocusOut: true });
  if (!picked) return undefined;
  if (picked.choice && picked.entry) return { entry: picked.entry, simulate: picked.choice.simulate };
  const typed = await vscode.window.showInputBox({
    title: 'commcost: target host',
    prompt: 'localhost, an ssh alias, or user@host[:port]; several hosts in one run as gpu-a + gpu-b; a Slurm login node as slurm:login1',
    ignoreFocusOut: true,
    validateInput: (text) => {
      try {
        parseHostEntry(text);
        return undefined;
      } catch (err) {
        return err instanceof Error ? err.message : String(err);
      }
    },
  });
  return typed ? { entry: parseHostEntry(typed), simulate: false } : undefined;
}

/** What the experiment picker knows of the chosen host: its saved runs (newest first) and the run mode. */
interface PickerContext {
  runs: RunFile[];
  simulate: boolean;
  iterations: number;
  warmup: number;
  /** The host's name as the picker says it. */
  hostLabel: string;
}

/**
 * The experiment picker: each experiment with its description, what it needs (read from the
 * experiment modules), and its expected duration at the settings' iterations (from a saved run of
 * the host, else "unknown until measured"). Those the host's last run shows it cannot run are
 * listed under their own separator with why; picking one anyway is allowed (the agent then skips it
 * with the reason).
 */
async function pickExperiments(preselected: readonly ExperimentId[], pc: PickerContext): Promise<ExperimentId[] | undefined> {
  // A failed run (no GPU, a host that did not answer) is no record of what the host can run.
  const facts = info.hostFactsFrom(pc.runs);
  const ticked = info.defaultExperiments(preselected, pc.runs, pc.simulate);
  type Item = vscode.QuickPickItem & { id?: ExperimentId };
  const available: Item[] = [];
  const unavailable: Item[] = [];
  for (const id of EXPERIMENT_IDS) {
    const needs = info.needsText(info.experimentNeeds(id));
    const why = info.unavailableReason(id, facts, pc.simulate);
    const item: Item = {
      label: id,
      description: info.EXPERIMENT_DESCRIPTIONS[id],
      detail: [why ? `$(circle-slash) ${why}` : '', `needs ${needs || 'any GPU host'}`, info.expectedDuration(id, pc.iterations, pc.warmup, pc.runs)].filter((x) => x).join(' · '),
      picked: ticked.includes(id),
      id,
    };
    (why ? unavailable : available).push(item);
  }
  const known = info.lastRunText(pc.hostLabel, pc.runs);
  const items: Item[] = [
    ...available,
    ...(unavailable.length > 0 ? [{ label: `not on ${pc.hostLabel} (from its last run)`, kind: vscode.QuickPickItemKind.Separator } as Item, ...unavailable] : []),
  ];
  const picked = await vscode.window.showQuickPick(items, {
    title: 'commcost: experiments',
    placeHolder: `${known} · durations at ${pc.iterations} iterations + ${pc.warmup} warmup`,
    canPickMany: true,
    matchOnDescription: true,
    ignoreFocusOut: true,
  });
  if (!picked || picked.length === 0) return undefined;
  return picked.flatMap((p) => (p.id ? [p.id] : []));
}

/**
 * The saved runs of `host` (workspace folders first, then global storage), newest first, measured
 * or simulated as `simulate` says. Unreadable files are left out (the Runs view reports them).
 */
async function savedRunsOf(extension: vscode.ExtensionContext, host: string, simulate: boolean): Promise<RunFile[]> {
  const { listRuns } = await import('../client/resultsStore');
  const dirs = [
    ...(vscode.workspace.workspaceFolders ?? []).map((f) => vscode.Uri.joinPath(f.uri, '.commcost', 'runs').fsPath),
    vscode.Uri.joinPath(extension.globalStorageUri, 'runs').fsPath,
  ];
  const runs: RunFile[] = [];
  for (const dir of dirs) {
    try {
      for (const l of await listRuns(dir)) if (l.run && l.run.host === host && l.run.simulated === simulate) runs.push(l.run);
    } catch {
      /* an unreadable folder: nothing known from it */
    }
  }
  return runs.sort((a, b) => (b.stamp?.startedAt ?? b.id).localeCompare(a.stamp?.startedAt ?? a.id));
}

/** Action on a missing-GPU error: measure again on this computer's simulated NCCL. */
export const RUN_SIMULATED = 'Run Simulated';


async function askIterations(dflt: number): Promise<number | undefined> {
  const text = await vscode.window.showInputBox({
    title: 'commcost: recorded iterations per step',
    value: String(dflt),
    ignoreFocusOut: true,
    validateInput: validateIterations,
  });
  return text === undefined ? undefined : Number(text.trim());
}

/** Where runs are saved: the first workspace folder's `.commcost/runs`, else global storage (`global` true). */
async function resultsDir(extension: vscode.ExtensionContext): Promise<{ dir: string; global: boolean }> {
  const folder = vscode.workspace.workspaceFolders?.[0];
  const uri = folder ? vscode.Uri.joinPath(folder.uri, '.commcost', 'runs') : vscode.Uri.joinPath(extension.globalStorageUri, 'runs');
  // A committed .commcost or .commcost/runs that is a link (even a dangling one) is refused (SECURITY.md).
  const { linkedCommcostDirProblem } = await import('../client/safeWrite');
  const linked = await linkedCommcostDirProblem(uri.fsPath, 'the runs folder .commcost/runs');
  if (linked) throw linked;
  await mkdir(uri.fsPath, { recursive: true });
  return { dir: uri.fsPath, global: !folder };
}

/**
 * Records which workspace a run saved to global storage came from (none: null), so that the
 * annotations of other windows leave it out (readings/profiles.ts `foreign`).
 */
async function recordGlobalOrigin(extension: vscode.ExtensionContext, path: string): Promise<void> {
  const workspace = workspaceIdOf(
    vscode.workspace.workspaceFile?.toString(),
    (vscode.workspace.workspaceFolders ?? []).map((f) => f.uri.toString()),
  );
  await extension.globalState.update(GLOBAL_ORIGINS_KEY, withOrigin(extension.globalState.get<unknown>(GLOBAL_ORIGINS_KEY), path, workspace));
}

function openResults(env: MeasureEnv, run: RunFile, label: string, path: string): void {
  // The finished run's name (its stamp), the target only when the run has none.
  const panel = ResultsPanel.show(env.extension.extensionUri, liveRunTitle(label, run, false), { cancel: () => undefined, showLog: () => env.log.show() }, { path });
  panel.update({ run, live: false, savedPath: path });
}

/**
 * Handler of `commcost.measure`. Never throws: failures are shown with "Show Log".
 * @param arg optional {@link MeasureArgs}: preselects experiments and puts the host first
 */
export async function measureCommand(env: MeasureEnv, arg?: unknown): Promise<RunOutcome | undefined> {
  if (!vscode.workspace.isTrusted) {
    // Restricted Mode: measuring runs programs the workspace's settings choose (extension.ts refuses with the message first).
    return undefined;
  }
  const wanted = measureArgs(arg);
  if (wanted.unknown.length > 0 && wanted.experiments.length === 0) {
    void vscode.window.showInformationMessage(`commcost: this version cannot measure ${wanted.unknown.join(', ')} yet`);
    return undefined;
  }
  const active = env.ctx.activeRun;
  if (active) {
    const a = await vscode.window.showInformationMessage(`commcost: a run on ${active.target} is in progress`, 'Cancel Run');
    if (a === 'Cancel Run') active.cancel();
    return undefined;
  }
  const settings = settingsOrError(env.log);
  if (!settings) return undefined;
  const host = wanted.simulate ? { entry: parseHostEntry('localhost'), simulate: true } : await pickHost(settings, env, wanted.host);
  if (!host) return undefined;
  // A group's coordinator address and a Slurm entry's srun arguments, checked before more questions.
  let where: EntryRequest;
  try {
    where = entryRequest(host.entry, settings);
  } catch (err) {
    showSettingError(env.log, 'commcost.slurm', settingProblem('commcost.slurm', err));
    return undefined;
  }
  const label = where.label ?? where.target;
  const simulateAll = host.simulate || vscode.workspace.getConfiguration('commcost').get<boolean>('simulate') === true;
  const experiments = await pickExperiments(wanted.experiments.length > 0 ? wanted.experiments : settings.experiments, {
    runs: await savedRunsOf(env.extension, host.entry.entry, simulateAll),
    simulate: simulateAll,
    iterations: settings.iterations,
    warmup: settings.warmup,
    hostLabel: label,
  });
  if (!experiments) return undefined;
  const iterations = await askIterations(settings.iterations);
  if (iterations === undefined) return undefined;

  // commcost.simulate: every host runs the simulated NCCL (trying the tool, or the UI tests over
  // SSH on a machine without a GPU); the picker's "localhost (simulated NCCL)" does it for one run.
  const simulate = simulateAll;
  const options: RunOptions = measureRunOptions(settings, experiments, iterations, simulate);
  const request: RunRequest = { ...where, options, ...(settings.remoteNodePath ? { nodePath: settings.remoteNodePath } : {}) };
  if (!host.simulate) {
    await env.extension.globalState.update(RECENT_KEY, pushRecent(env.extension.globalState.get<string[]>(RECENT_KEY, []), host.entry.entry));
  }

  try {
    return await env.ctx.withRun(label, async (scope) => {
      const [{ runMeasurement }, { saveRun }, results] = await Promise.all([
        import('../client/runSession'),
        import('../client/resultsStore'),
        resultsDir(env.extension),
      ]);
      // Named by what is known: the target and "starting", then the run's name once its stamp arrives.
      const title = liveRunTitle(label, undefined, simulate);
      const panel = ResultsPanel.show(env.extension.extensionUri, title, { cancel: () => scope.cancel(), showLog: () => env.log.show() });
      // What the messages below need to know of the run: a missing GPU (→ "Run Simulated"), the skipped experiments.
      let lastState: Parameters<typeof panel.update>[0] | undefined;
      const watchedPanel = {
        update: (state: Parameters<typeof panel.update>[0]) => {
          lastState = state;
          panel.retitle(liveRunTitle(label, state.run, simulate));
          panel.update(state);
        },
      };
      const noGpu = (): boolean =>
        !simulate && (lastState?.failure?.code === 'NO_GPU' || lastState?.run.errors?.some((e) => e.code === 'NO_GPU') === true);
      return vscode.window.withProgress(
        { location: vscode.ProgressLocation.Notification, title, cancellable: true },
        (progress, token) => {
          scope.add(token.onCancellationRequested(() => scope.cancel()));
          let lastPercent = 0;
          return runController(request, {
            runMeasurement,
            saveRun,
            resultsDir: results.dir,
            ...(results.global ? { onSaved: (path: string) => recordGlobalOrigin(env.extension, path) } : {}),
            progress: {
              report: (message, percent) => {
                const increment = percent === undefined ? undefined : Math.max(0, percent - lastPercent);
                if (percent !== undefined) lastPercent = Math.max(lastPercent, percent);
                progress.report(increment ? { message, increment } : { message });
              },
            },
            panel: watchedPanel,
            log: env.log,
            signal: scope.signal,
            confirmHostKey: confirmUnknownHostKey,
            showInfo: (message, ...actions) =>
              Promise.resolve(vscode.window.showInformationMessage(`${message}${lastState ? info.skippedNote(lastState.run) : ''}`, ...actions)),
            showError: async (message, ...actions) => {
              if (!noGpu()) return vscode.window.showErrorMessage(message, ...actions);
              // No GPU here: offer the same experiments on the simulated NCCL (figures marked SIMULATED).
              // The agent's hint names the CLI's flag; here the button does it.
              const text = message.replace(/use --simulate\b/, 'use "Run Simulated"');
              const a = await vscode.window.showErrorMessage(
                text === message ? `${message} — no GPU here: "Run Simulated" measures on commcost's simulated NCCL (figures marked SIMULATED)` : text,
                ...actions,
                RUN_SIMULATED,
              );
              if (a === RUN_SIMULATED) void vscode.commands.executeCommand('commcost.measure', { simulate: true, experiments });
              return a === RUN_SIMULATED ? undefined : a;
            },
            openResults: (run, path) => openResults(env, run, label, path),
            openReport: (run, path) => void import('./commandsActions').then((a) => a.exportRunReport(env, run, path)),
            revealFile: (path) => void import('./commandsActions').then((a) => a.revealRunFile(path)),
            showLog: () => env.log.show(),
          });
        },
      );
    });
  } catch (err) {
    // Only reached when the engine could not be loaded or the results folder not created.
    const message = err instanceof Error ? err.message : String(err);
    env.log.error(`commcost: could not start the run: ${message}`);
    const a = await vscode.window.showErrorMessage(`commcost: could not start the run on ${label}: ${message}`, 'Show Log');
    if (a === 'Show Log') env.log.show();
    return undefined;
  }
}
