/**
 * The "commcost: plan this reshape (tp4 → tp2 → tp1)" CodeLens over a Python reshape routine
 * (planLens.ts finds it from the finder's sites) and its command, `commcost.planReshape`, which
 * opens the results panel on the run to plan from and shows its Plan section with the shapes the
 * code wrote (webviewPanel.ts `showPlan`, message `plan/show`). Off with
 * `commcost.annotations.planLens: false`. Also the "commcost: plan this recovery (ncclCommAbort, …)"
 * CodeLens over a Python, C or C++ function that aborts, revokes, shrinks or grows a communicator
 * (or destroys and re-creates a process group), and its command `commcost.planRecovery`, which
 * opens the panel's Recovery section (`plan/show` with `section: 'recovery'`); the same setting
 * turns it off. Everything registered is owned by `scope`.
 */
import { basename } from 'node:path';
import * as vscode from 'vscode';
import { tpShapes } from '../../readings/plan/strategies';
import type { CommcostContext } from '../extensionContext';
import type { OutputLog } from '../outputLog';
import type { AnnotationModel } from './annotationModel';
import { runLabel } from '../../readings/annotationText';
import { runName } from '../../readings/runName';
import { findRecoveryRoutines, findReshapeRoutines, planLensText, recoveryLensText } from '../../sites/planLens';
import type { Profile } from '../../readings/profiles';
import type { ProfileStore } from '../../client/profileStore';

/** The command the lens runs. */
export const PLAN_RESHAPE_COMMAND = 'commcost.planReshape';
/** The command the recovery lens runs: the panel's Recovery section (readings/plan/recovery.ts). */
export const PLAN_RECOVERY_COMMAND = 'commcost.planRecovery';

/** Experiments the recovery paths add up (readings/plan/recovery.ts). */
const RECOVERY_EXPERIMENTS = new Set(['abort', 'revoke', 'shrink', 'grow', 'c10d', 'pool', 'shrink-abort']);

/** The run a recovery is planned on: the active run when it has a recovery experiment, else the first answering run that has one. */
export function recoveryProfile(store: ProfileStore): Profile | undefined {
  const has = (p: Profile): boolean => p.run.experiments.some((e) => RECOVERY_EXPERIMENTS.has(e.experiment));
  const active = store.active;
  if (active && has(active)) return active;
  return store.answering.find(has);
}

/** Experiments the planner adds up (readings/plan/strategies.ts): a run without any has nothing to plan from. */
const PLAN_EXPERIMENTS = new Set(['init', 'pool', 'split', 'shrink', 'grow', 'suspend', 'destroy']);
const plans = (p: Profile): boolean => p.run.experiments.some((e) => PLAN_EXPERIMENTS.has(e.experiment));

/**
 * The run a plan is computed on: the active run when it has an experiment the planner uses,
 * else the first run that may answer in this window (profiles.ts order) that has one.
 */
export function planProfile(store: ProfileStore): Profile | undefined {
  const active = store.active;
  if (active && plans(active)) return active;
  return store.answering.find(plans);
}

/** Reads `commcost.annotations.planLens` (default true); a non-boolean is reported once and read as true. */
function planLensEnabled(log: OutputLog): boolean {
  const v = vscode.workspace.getConfiguration('commcost').get<unknown>('annotations.planLens');
  if (v === undefined || v === null || typeof v === 'boolean') return v !== false;
  log.error(`commcost.annotations.planLens is ${JSON.stringify(v)}: it must be true or false (the plan lens stays on)`);
  return true;
}

class PlanLensProvider implements vscode.CodeLensProvider {
  constructor(
    private readonly model: () => AnnotationModel | undefined,
    private readonly store: ProfileStore,
    private readonly enabled: () => boolean,
    readonly onDidChangeCodeLenses: vscode.Event<void>,
  ) {}

  provideCodeLenses(document: vscode.TextDocument): vscode.CodeLens[] {
    if (document.languageId !== 'python' || !this.enabled()) return [];
    const state = this.model()?.state(document.uri.toString());
    if (!state) return [];
    const profile = planProfile(this.store);
    const label = profile ? runLabel(profile, this.store.profiles) : undefined;
    return findReshapeRoutines(state.scan.sites, state.text).map((routine) => {
      const text = planLensText(routine, profile ? tpShapes(profile.run.ranks) : undefined, label);
      const range = new vscode.Range(routine.line, 0, routine.line, 0);
      if (!profile) {
        return new vscode.CodeLens(range, { title: text.title, command: 'commcost.measure', arguments: [{ experiments: ['init', 'pool'] }], tooltip: text.tooltip });
      }
      const origin = `from ${routine.functionName ?? 'module level'} in ${basename(document.uri.fsPath)}: ${
        routine.inferred.length > 0 ? routine.inferred.join('; ') : 'no shape is written as a literal'
      }${text.shapes ? '' : ' — the run\'s TP shapes'}`;
      return new vscode.CodeLens(range, {
        title: text.title,
        command: PLAN_RESHAPE_COMMAND,
        arguments: [{ key: profile.key, shapes: text.shapes ?? [], origin }],
        tooltip: text.tooltip,
      });
    });
  }
}

/** The "plan this recovery" lens over a function that aborts, revokes, shrinks or grows a communicator (sites/planLens.ts). */
class RecoveryLensProvider implements vscode.CodeLensProvider {
  constructor(
    private readonly model: () => AnnotationModel | undefined,
    private readonly store: ProfileStore,
    private readonly enabled: () => boolean,
    readonly onDidChangeCodeLenses: vscode.Event<void>,
  ) {}

  provideCodeLenses(document: vscode.TextDocument): vscode.CodeLens[] {
    if (!this.enabled()) return [];
    const state = this.model()?.state(document.uri.toString());
    if (!state) return [];
    const profile = recoveryProfile(this.store);
    const label = profile ? runLabel(profile, this.store.profiles) : undefined;
    return findRecoveryRoutines(state.scan.sites, state.text).map((routine) => {
      const text = recoveryLensText(routine, label, profile?.run.ranks);
      const range = new vscode.Range(routine.line, 0, routine.line, 0);
      if (!profile) return new vscode.CodeLens(range, { title: text.title, command: 'commcost.measure', arguments: [{ experiments: ['abort', 'revoke', 'shrink', 'grow'] }], tooltip: text.tooltip });
      const origin = `from ${routine.functionName ?? 'module level'} in ${basename(document.uri.fsPath)}: ${routine.why}`;
      return new vscode.CodeLens(range, { title: text.title, command: PLAN_RECOVERY_COMMAND, arguments: [{ key: profile.key, origin }], tooltip: text.tooltip });
    });
  }
}

/** The command's argument, checked: command URIs can be written by anyone who can show Markdown. */
function planArgument(arg: unknown): { key: string; shapes?: number[]; origin?: string } | undefined {
  if (typeof arg !== 'object' || arg === null) return undefined;
  const { key, shapes, origin } = arg as Record<string, unknown>;
  if (typeof key !== 'string') return undefined;
  const okShapes = Array.isArray(shapes) && shapes.length <= 64 && shapes.every((x) => Number.isSafeInteger(x) && (x as number) >= 1 && (x as number) <= 4096);
  return {
    key,
    ...(okShapes ? { shapes: shapes as number[] } : {}),
    ...(typeof origin === 'string' ? { origin: origin.slice(0, 500) } : {}),
  };
}

/**
 * Registers the plan lens and `commcost.planReshape`, the recovery lens and `commcost.planRecovery`.
 * @param model the annotation model, once loaded
 * @param store the runs (the plan's run: {@link planProfile})
 * @param changed fired when annotations change (re-asks the lenses)
 */
export function registerPlanLens(
  env: { ctx: CommcostContext; extension: vscode.ExtensionContext; log: OutputLog },
  model: () => AnnotationModel | undefined,
  store: ProfileStore,
  changed: vscode.Event<void>,
): void {
  const scope = env.ctx.subscriptions;
  let enabled = planLensEnabled(env.log);
  const toggled = scope.add(new vscode.EventEmitter<void>());
  scope.add(
    vscode.workspace.onDidChangeConfiguration((e) => {
      if (!e.affectsConfiguration('commcost.annotations.planLens')) return;
      enabled = planLensEnabled(env.log);
      toggled.fire();
    }),
  );
  const onChange = (listener: () => unknown, thisArgs?: unknown, disposables?: vscode.Disposable[]): vscode.Disposable => {
    const a = changed(listener, thisArgs);
    const b = toggled.event(listener, thisArgs);
    const both = vscode.Disposable.from(a, b);
    disposables?.push(both);
    return both;
  };
  scope.add(
    vscode.languages.registerCodeLensProvider(
      [{ language: 'python', scheme: 'file' }, { language: 'python', scheme: 'untitled' }],
      new PlanLensProvider(model, store, () => enabled, onChange),
    ),
  );
  scope.add(
    vscode.languages.registerCodeLensProvider(
      ['python', 'c', 'cpp'].flatMap((language) => [{ language, scheme: 'file' }, { language, scheme: 'untitled' }]),
      new RecoveryLensProvider(model, store, () => enabled, onChange),
    ),
  );
  const open = async (arg: unknown, section: 'reshape' | 'recovery'): Promise<void> => {
    const a = planArgument(arg);
    const p = a ? store.byKey(a.key) : undefined;
    if (!a || !p) return;
    const { ResultsPanel } = await import('../webviewPanel');
    const panel = ResultsPanel.show(env.extension.extensionUri, `commcost: ${runName(p.run, { time: p.time })}`, {
      cancel: () => undefined,
      showLog: () => env.log.show(),
    });
    panel.update({ run: p.run, live: false });
    panel.showPlan({ ...(a.shapes ? { shapes: a.shapes } : {}), ...(a.origin ? { origin: a.origin } : {}), ...(section === 'recovery' ? { section } : {}) });
  };
  scope.add(vscode.commands.registerCommand(PLAN_RESHAPE_COMMAND, (arg: unknown) => open(arg, 'reshape')));
  scope.add(vscode.commands.registerCommand(PLAN_RECOVERY_COMMAND, (arg: unknown) => open(arg, 'recovery')));
}
