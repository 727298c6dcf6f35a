/**
 * The palette commands over saved runs (category `commcost`, package.json `contributes.commands`
 * with their `when` clauses), the Restricted Mode status item and the `commcost.runs.count`
 * context key. Every command works from the keyboard: a command without an argument asks with
 * a quick pick.
 *
 * - `commcost.openRun` — Open Run…: a run by its profile key (hover links, the Runs view), else a
 *   quick pick of the saved runs (host · NCCL · date, SIMULATED, stale) → results panel.
 * - `commcost.compareRuns` — Compare Runs…: a multi-select quick pick of two or more runs →
 *   comparison panel.
 * - `commcost.exportReport` — Export HTML Report…: a run → save dialog → atomic write.
 * - `commcost.openWalkthrough` — the extension's walkthrough when one is contributed, else VS
 *   Code's Welcome page (its walkthroughs) and a message saying how to start.
 * - `commcost.measureSimulated` — Measure on the simulated NCCL (no GPU), trusted workspaces only.
 * `commcost.selectProfile` (Select Active Run…) is registered with the annotations (register.ts).
 *
 * Arguments are untrusted (command URIs can be put in Markdown by anyone): only profile keys of
 * loaded runs are accepted, never paths.
 */
import * as vscode from 'vscode';
import type { Profile } from '../readings/profiles';
import type { RunsApi } from './annotations/runsApi';
import { compareChoice, MANAGE_TRUST, RESTRICTED_LINE, whenTrusted, type RestrictedAction } from './commandsModel';
import type { CommcostContext } from './extensionContext';
import type { OutputLog } from './outputLog';
import { runPickRow } from './runsViewModel';

/** Everything the commands need. */
export interface CommandsEnv {
  ctx: CommcostContext;
  extension: vscode.ExtensionContext;
  log: OutputLog;
  runs: RunsApi;
}

/** The context key holding how many saved runs are loaded (undefined until they are). */
export const RUN_COUNT_KEY = 'commcost.runs.count';

const MEASURE = 'Measure';
const RUN_SIMULATED = 'Run Simulated';

/** Says there are no saved runs, offering Measure and Run Simulated (trusted workspaces only). */
function noRuns(): void {
  const actions = vscode.workspace.isTrusted ? [MEASURE, RUN_SIMULATED] : [];
  void vscode.window
    .showInformationMessage(
      `commcost: no saved runs in this workspace or in global storage${vscode.workspace.isTrusted ? ': measure on a GPU host, or try the simulated NCCL' : ''}`,
      ...actions,
    )
    .then((a) => {
      if (a === MEASURE) void vscode.commands.executeCommand('commcost.measure');
      else if (a === RUN_SIMULATED) void vscode.commands.executeCommand('commcost.measureSimulated');
    });
}

type RunItem = vscode.QuickPickItem & { key: string };

/** Quick-pick rows of every loaded run, workspace runs first, with separators. */
function runItems(runs: RunsApi, preselected: readonly string[] = []): (RunItem | (vscode.QuickPickItem & { key?: undefined }))[] {
  const store = runs.store;
  const rules = runs.rules();
  const items: (RunItem | (vscode.QuickPickItem & { key?: undefined }))[] = [];
  let source: Profile['source'] | undefined;
  for (const p of store.profiles) {
    if (p.source !== source) {
      source = p.source;
      items.push({ label: source === 'workspace' ? 'Workspace (.commcost/runs)' : 'Global storage', kind: vscode.QuickPickItemKind.Separator });
    }
    const row = runPickRow(p, store.active, store.profiles, rules);
    items.push({ ...row, ...(p === store.active ? { iconPath: new vscode.ThemeIcon('check') } : {}), picked: preselected.includes(p.key) });
  }
  return items;
}

/** One saved run chosen with a quick pick (undefined: none, or cancelled). */
export async function pickRun(runs: RunsApi, title: string): Promise<Profile | undefined> {
  await runs.ensureLoaded();
  if (runs.store.profiles.length === 0) {
    noRuns();
    return undefined;
  }
  const picked = await vscode.window.showQuickPick(runItems(runs), { title, placeHolder: 'Choose a saved run (type to filter: host, NCCL version, date)', matchOnDescription: true, matchOnDetail: true });
  return picked?.key ? runs.store.byKey(picked.key) : undefined;
}

/**
 * Two or more saved runs chosen with a multi-select quick pick, in the store's order (newest first
 * within a folder; the first is run A, the baseline of every ratio). `preselected`: keys ticked.
 */
export async function pickRunsToCompare(runs: RunsApi, preselected: readonly string[] = []): Promise<Profile[] | undefined> {
  await runs.ensureLoaded();
  const n = runs.store.profiles.length;
  if (n === 0) {
    noRuns();
    return undefined;
  }
  if (n < 2) {
    void vscode.window.showInformationMessage('commcost: only one saved run: a comparison needs at least two');
    return undefined;
  }
  const picked = await vscode.window.showQuickPick(runItems(runs, preselected), {
    title: 'commcost: runs to compare (two or more; the first is the baseline, A)',
    placeHolder: 'Down arrow to the list, Space ticks a run, Enter compares',
    canPickMany: true,
    matchOnDescription: true,
  });
  if (!picked) return undefined;
  const choice = compareChoice(picked.map((p) => p.key).filter((k): k is string => typeof k === 'string'));
  if (!choice.ok) {
    void vscode.window.showInformationMessage(`commcost: ${choice.why}`);
    return undefined;
  }
  return choice.keys.map((k) => runs.store.byKey(k)).filter((p): p is Profile => p !== undefined);
}

/** Shows a Restricted Mode refusal (commandsModel.ts `untrustedRefusal`) with "Manage Workspace Trust". */
export function showUntrustedRefusal(message: string): void {
  void vscode.window.showWarningMessage(message, MANAGE_TRUST).then((a) => {
    if (a === MANAGE_TRUST) void vscode.commands.executeCommand('workbench.trust.manage');
  });
}

/**
 * A command handler that runs only in a trusted workspace (commandsModel.ts `whenTrusted` with
 * VS Code's trust state): otherwise the refusal is shown and nothing runs. For every command that
 * starts a program: measure, deploy, trace.
 */
export function trustedOnly<A extends unknown[], R>(action: RestrictedAction, handler: (...args: A) => R): (...args: A) => R | undefined {
  return whenTrusted(action, () => vscode.workspace.isTrusted, showUntrustedRefusal, handler);
}

/** The walkthrough ids package.json contributes (none until the onboarding adds one). */
function walkthroughIds(extension: vscode.ExtensionContext): string[] {
  const contributes = (extension.extension.packageJSON as { contributes?: { walkthroughs?: { id?: unknown }[] } }).contributes;
  return (contributes?.walkthroughs ?? []).map((w) => w.id).filter((id): id is string => typeof id === 'string');
}

/** Registers the palette commands and the Restricted Mode item; all owned by `env.ctx`. */
export function registerCommands(env: CommandsEnv): void {
  const scope = env.ctx.subscriptions;
  const { runs } = env;
  const actions = () => import('./commandsActions');

  for (const d of [
    vscode.commands.registerCommand('commcost.openRun', async (key?: unknown) => {
      await runs.ensureLoaded();
      const p = typeof key === 'string' ? runs.store.byKey(key) : await pickRun(runs, 'commcost: open a saved run');
      if (p) (await actions()).openRunPanel(env, p.run, p.path);
    }),
    vscode.commands.registerCommand('commcost.compareRuns', async () => {
      const chosen = await pickRunsToCompare(runs);
      if (chosen) (await actions()).openComparePanel(env, chosen);
    }),
    vscode.commands.registerCommand('commcost.exportReport', async (key?: unknown) => {
      await runs.ensureLoaded();
      const p = typeof key === 'string' ? runs.store.byKey(key) : await pickRun(runs, 'commcost: export a run as an HTML report');
      if (p) await (await actions()).exportRunReport(env, p.run, p.path);
    }),
    vscode.commands.registerCommand('commcost.openWalkthrough', async () => {
      const id = walkthroughIds(env.extension)[0];
      const extensionId = env.extension.extension.id;
      if (id) {
        await vscode.commands.executeCommand('workbench.action.openWalkthrough', `${extensionId}#${id}`, false);
        return;
      }
      // None contributed yet: VS Code's Welcome page with its walkthroughs, and where to start.
      await vscode.commands.executeCommand('workbench.action.openWalkthrough');
      void vscode.window.showInformationMessage(
        'commcost: this version has no walkthrough yet. To start: "commcost: Measure communicator rebuild" on a GPU host, or "commcost: Measure on the Simulated NCCL" without one',
      );
    }),
    vscode.commands.registerCommand(
      'commcost.measureSimulated',
      trustedOnly('measure', () => vscode.commands.executeCommand('commcost.measure', { simulate: true })),
    ),
  ])
    scope.add(d);

  // How many runs are loaded: the palette hides Open Run, Compare Runs… when there are too few.
  const updateCount = (): void => void vscode.commands.executeCommand('setContext', RUN_COUNT_KEY, runs.store.profiles.length);
  scope.add(runs.onDidChange(updateCount));

  // Restricted Mode: one status bar item says what works and what does not.
  if (!vscode.workspace.isTrusted) {
    const item = scope.add(vscode.window.createStatusBarItem('commcost.restricted', vscode.StatusBarAlignment.Right, 99));
    item.name = 'commcost Restricted Mode';
    item.text = '$(shield) commcost: read-only';
    item.tooltip = `${RESTRICTED_LINE}. Saved runs are read and validated, never run. Click to manage workspace trust.`;
    item.command = 'workbench.trust.manage';
    item.show();
    scope.add(vscode.workspace.onDidGrantWorkspaceTrust(() => item.hide()));
    env.log.info(RESTRICTED_LINE);
  }
}
