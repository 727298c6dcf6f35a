/**
 * The status bar item that names the active profile (host, NCCL version, SIMULATED, stale) and,
 * on click, lets the user switch between saved runs (workspace first, then global storage).
 */
import * as vscode from 'vscode';
import { formatMs, plain } from './annotationText';
import { staleReasons, type Profile, type ProfileStore, type StaleRules } from './profiles';

export class ProfileStatusBar implements vscode.Disposable {
  private readonly item = vscode.window.createStatusBarItem('commcost.profile', vscode.StatusBarAlignment.Right, 100);

  constructor() {
    this.item.name = 'commcost profile';
    this.item.command = 'commcost.selectProfile';
  }

  /** Shows the active profile of `store`. */
  update(store: ProfileStore, rules: StaleRules): void {
    const p = store.active;
    if (!p) {
      this.item.text = '$(pulse) commcost: no runs';
      this.item.tooltip = 'No saved commcost run: click to choose, or run "commcost: Measure communicator rebuild"';
    } else {
      const stale = staleReasons(p, p, store.profiles, rules);
      this.item.text = `$(pulse) ${p.run.simulated ? 'SIMULATED ' : ''}${plain(p.run.host, 30)} · NCCL ${plain(p.run.stamp?.ncclVersion ?? '?', 16)}${stale.length ? ' (stale)' : ''}`;
      this.item.tooltip = [
        `commcost annotations come from ${profileLabel(p)}`,
        ...stale.map((s) => `stale: ${plain(s, 200)}`),
        'Click to switch runs',
      ].join('\n');
    }
    this.item.show();
  }

  dispose(): void {
    this.item.dispose();
  }
}

/** One line naming a run: host, NCCL, date, GPUs. */
export function profileLabel(p: Profile): string {
  const s = p.run.stamp;
  const gpus = s?.gpus.length ? `${s.gpus.length}× ${plain(s.gpus[0]?.name ?? 'GPU', 30)}` : `${p.run.ranks} ranks`;
  return `${plain(p.run.host, 40)} · NCCL ${plain(s?.ncclVersion ?? '?', 16)} · ${gpus} · ${new Date(p.time).toISOString().slice(0, 16).replace('T', ' ')}`;
}

/** The QuickPick of saved runs; resolves to the chosen profile's key. */
export async function pickProfile(store: ProfileStore): Promise<string | undefined> {
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
    items.push({
      label: `${p === store.active ? '$(check) ' : ''}${p.run.simulated ? 'SIMULATED · ' : ''}${profileLabel(p)}`,
      description: `${p.run.experiments.map((e) => e.experiment).join(', ')}${init ? ` · init to first collective ${formatMs(init.stats.median)}` : ''}`,
      detail: plain(p.path, 200),
      key: p.key,
    });
  }
  if (items.length === 0) {
    void vscode.window.showInformationMessage('commcost: no saved runs: run "commcost: Measure communicator rebuild" first');
    return undefined;
  }
  const picked = await vscode.window.showQuickPick(items, { title: 'commcost: annotations come from', placeHolder: 'Choose a saved run' });
  return picked?.key;
}
