/**
 * The status bar item that names the active run (host · NCCL version · date, SIMULATED, stale),
 * says in its tooltip which calls another run answers and why, and, on click, lets the user
 * switch between saved runs (workspace first, then global storage; runs left out of this window's
 * annotations are marked).
 */
import * as vscode from 'vscode';
import type { AnsweredElsewhere } from './annotationModel';
import { formatMs, plain, statusText } from '../../readings/annotationText';
import { runLabel } from '../../readings/labelText';

export { profileLabel } from '../../readings/annotationText';
import { isSimulatedProfile, staleReasons, type Profile, type StaleRules } from '../../readings/profiles';
import { type ProfileStore } from '../../client/profileStore';
import { isSimulatedTrace } from '../../protocol/trace';
import type { TraceStore } from '../../client/traceStore';
import { traceLabel } from '../../readings/tracesText';

/**
 * The status bar tooltip's line about traces: which trace answers traced lines (the chosen one, or
 * the newest that observed each line), and the simulated traces left out. Undefined without traces.
 */
export function traceStatusLine(traces: TraceStore | undefined): string | undefined {
  if (!traces || traces.traces.length === 0) return undefined;
  const answering = traces.answering;
  const left = traces.traces.length - answering.length;
  const leftText = left > 0 ? `; ${left} ${traces.chosen && isSimulatedTrace(traces.chosen.trace) ? 'measured' : 'simulated'} trace${left === 1 ? '' : 's'} not used (choose one to see it)` : '';
  const chosen = traces.chosen;
  if (chosen) return `Traced lines: observed figures from ${traceLabel(chosen)} (the trace you chose)${leftText}`;
  const newest = answering[0];
  return newest
    ? `Traced lines: observed figures from the newest trace that observed each line — ${traceLabel(newest)}${answering.length > 1 ? ` and ${answering.length - 1} older` : ''}${leftText}`
    : `Traced lines: none shown${leftText}`;
}

/** The picker's key for "the newest trace answers" (no trace chosen). */
export const CLEAR_TRACE = 'trace:newest';

export class ProfileStatusBar implements vscode.Disposable {
  private readonly item = vscode.window.createStatusBarItem('commcost.profile', vscode.StatusBarAlignment.Right, 100);

  constructor() {
    this.item.name = 'commcost profile';
    this.item.command = 'commcost.selectProfile';
  }

  /**
   * Shows the active profile of `store`; `elsewhere`: calls of open documents answered by another
   * run; `traces`: the tooltip names the trace in use ({@link traceStatusLine}).
   */
  update(store: ProfileStore, rules: StaleRules, elsewhere: readonly AnsweredElsewhere[] = [], traces?: TraceStore): void {
    const p = store.active;
    const answering = new Set(store.answering);
    const left = store.profiles.filter((x) => !answering.has(x));
    const t = statusText(p, p !== undefined && p === store.chosen, p ? staleReasons(p, p, store.profiles, rules) : [], elsewhere, {
      simulated: left.filter((x) => !x.foreign && isSimulatedProfile(x)).length,
      foreign: left.filter((x) => x.foreign).length,
      measured: left.filter((x) => !x.foreign && !isSimulatedProfile(x)).length,
    }, store.profiles);
    this.item.text = t.text;
    const traced = traceStatusLine(traces);
    this.item.tooltip = traced ? t.tooltip.replace(/\nClick to switch runs$|$/, (end) => `\n${traced}${end}`) : t.tooltip;
    this.item.show();
  }

  dispose(): void {
    this.item.dispose();
  }
}

/**
 * The QuickPick of saved runs, then (when `traces` is given) the traces of `.commcost/traces/` in
 * a section of their own; resolves to the chosen profile's key ("p…") or trace's key ("t…"), or
 * `CLEAR_TRACE` for "newest trace answers".
 */
export async function pickProfile(store: ProfileStore, traces?: TraceStore): Promise<string | undefined> {
  type Item = vscode.QuickPickItem & { key?: string };
  const items: Item[] = [];
  let source: Profile['source'] | undefined;
  for (const p of store.profiles) {
    if (p.source !== source) {
      source = p.source;
      items.push({
        label: source === 'workspace' ? 'Workspace (.commcost/runs)' : 'Global storage',
        kind: vscode.QuickPickItemKind.Separator,
      });
    }
    const init = p.run.experiments.find((e) => e.experiment === 'init')?.variants[0]?.steps.find((s) => s.step === 'total');
    const note = p.foreign ? ' · saved from another window' : '';
    items.push({
      // The run's one name (readings/runName.ts, SIMULATED for a simulated run), told apart from its twins as every picker does.
      label: `${p === store.active ? '$(check) ' : ''}${runLabel(p, store.profiles)}`,
      description: `${p.run.experiments.map((e) => e.experiment).join(', ')}${init ? ` · init to first collective ${formatMs(init.stats.median)}` : ''}${note}`,
      detail: plain(p.path, 200),
      key: p.key,
    });
  }
  if (traces && traces.traces.length > 0) {
    items.push({ label: 'Traces of your job (.commcost/traces) — the observed figures of traced lines', kind: vscode.QuickPickItemKind.Separator });
    const chosen = traces.chosen;
    items.push({ label: `${chosen ? '' : '$(check) '}Newest trace that observed each line`, description: 'measured traces only', key: CLEAR_TRACE });
    for (const t of traces.traces) {
      const sites = t.trace.sites.filter((x) => x.file !== null).length;
      items.push({
        label: `${t === chosen ? '$(check) ' : ''}$(pulse) ${traceLabel(t)}`,
        description: `${plain(t.trace.command.join(' '), 80)} · ${sites} call site${sites === 1 ? '' : 's'}`,
        detail: plain(t.path, 200),
        key: t.key,
      });
    }
  }
  if (items.length === 0) {
    void vscode.window.showInformationMessage('commcost: no saved runs: run "commcost: Measure communicator rebuild" first');
    return undefined;
  }
  const picked = await vscode.window.showQuickPick(items, { title: 'commcost: annotations come from', placeHolder: 'Choose a saved run' });
  return picked?.key;
}
