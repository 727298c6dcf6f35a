/**
 * The Runs view (view `commcost.runs` in the `commcost` view container): the saved runs grouped
 * by host (runsViewModel.ts builds the nodes), with open, set active, compare selected, reveal
 * file and delete. It shows the runs the annotations read (register.ts `RunsApi`): it refreshes
 * when they reload — the run folders' FileSystemWatchers in register.ts (`.commcost/runs/*.json`
 * of each workspace folder, and global storage) — and when the active run changes. With no runs
 * the view is empty and VS Code shows its welcome content (package.json `viewsWelcome`).
 *
 * Run files are untrusted: they were read through `loadRun` (schema-validated) by the store,
 * and every text shown is made plain (runsViewModel.ts); tooltips are plain strings.
 */
import * as vscode from 'vscode';
import type { Profile } from './annotations/profiles';
import type { RunsApi } from './annotations/register';
import type { ActionEnv } from './commandsActions';
import { pickRunsToCompare } from './commands';
import type { CommcostContext } from './extensionContext';
import { runsTree, type HostNode, type RunNode, type RunsTreeNode } from './runsViewModel';

/** The view's id (package.json `contributes.views.commcost`). */
export const RUNS_VIEW_ID = 'commcost.runs';

class RunsTreeProvider implements vscode.TreeDataProvider<RunsTreeNode> {
  private readonly changed = new vscode.EventEmitter<RunsTreeNode | undefined>();
  readonly onDidChangeTreeData = this.changed.event;
  private hosts: HostNode[] = [];

  constructor(private readonly runs: RunsApi) {}

  refresh(): void {
    this.changed.fire(undefined);
  }

  async getChildren(node?: RunsTreeNode): Promise<RunsTreeNode[]> {
    if (node?.kind === 'host') return node.runs;
    if (node) return [];
    await this.runs.ensureLoaded();
    const store = this.runs.store;
    this.hosts = runsTree(store.profiles, store.active, this.runs.rules());
    return this.hosts;
  }

  getParent(node: RunsTreeNode): RunsTreeNode | undefined {
    if (node.kind === 'host') return undefined;
    return this.hosts.find((h) => h.runs.some((r) => r.key === node.key));
  }

  getTreeItem(node: RunsTreeNode): vscode.TreeItem {
    if (node.kind === 'host') {
      const item = new vscode.TreeItem(node.label, vscode.TreeItemCollapsibleState.Expanded);
      item.id = `host:${node.host}`;
      item.description = node.description;
      item.iconPath = new vscode.ThemeIcon('server');
      item.contextValue = 'host';
      item.tooltip = `${node.label}: ${node.description}`;
      return item;
    }
    const item = new vscode.TreeItem(node.label, vscode.TreeItemCollapsibleState.None);
    item.id = `run:${node.path}`;
    item.description = node.description;
    item.tooltip = node.tooltip; // a plain string: never rendered as Markdown
    item.contextValue = node.contextValue;
    item.iconPath = new vscode.ThemeIcon(
      node.active ? 'pass-filled' : node.simulated ? 'beaker' : node.status !== 'complete' ? 'circle-slash' : node.stale.length > 0 ? 'history' : 'circle-large-outline',
    );
    item.accessibilityInformation = { label: `${node.label}${node.description ? `, ${node.description}` : ''}` };
    item.command = { command: 'commcost.runs.open', title: 'Open Run', arguments: [node] };
    return item;
  }
}

/** Registers the Runs view and its commands; all owned by `ctx`. */
export function registerRunsView(ctx: CommcostContext, env: ActionEnv, runs: RunsApi): void {
  const scope = ctx.subscriptions;
  const provider = new RunsTreeProvider(runs);
  const view = scope.add(vscode.window.createTreeView(RUNS_VIEW_ID, { treeDataProvider: provider, canSelectMany: true, showCollapseAll: true }));
  scope.add(runs.onDidChange(() => provider.refresh()));

  const actions = () => import('./commandsActions');
  /** The loaded run of a node passed by VS Code (only run nodes of this view carry a key). */
  const profileOf = (node: unknown): Profile | undefined => {
    const key = typeof node === 'object' && node !== null && (node as RunNode).kind === 'run' ? (node as RunNode).key : undefined;
    return typeof key === 'string' ? runs.store.byKey(key) : undefined;
  };
  /** The run nodes among the view's selection (and `node`, when the menu was opened on another). */
  const selectedRuns = (node: unknown, selection: unknown): Profile[] => {
    const nodes: unknown[] = Array.isArray(selection) && selection.length > 0 ? [...(selection as unknown[])] : view.selection.length > 0 ? [...view.selection] : [];
    if (node !== undefined && !nodes.includes(node)) nodes.unshift(node);
    return nodes.map(profileOf).filter((p, i, all): p is Profile => p !== undefined && all.indexOf(p) === i);
  };

  for (const d of [
    vscode.commands.registerCommand('commcost.runs.open', async (node?: unknown) => {
      const p = profileOf(node ?? view.selection[0]);
      if (p) (await actions()).openRunPanel(env, p.run, p.path);
    }),
    vscode.commands.registerCommand('commcost.runs.setActive', async (node?: unknown) => {
      const p = profileOf(node ?? view.selection[0]);
      if (p && (await runs.setActive(p.key))) void vscode.window.setStatusBarMessage(`commcost: annotations now come from ${p.run.host} · NCCL ${p.run.stamp?.ncclVersion ?? '?'}`, 4000);
    }),
    vscode.commands.registerCommand('commcost.runs.compare', async (node?: unknown, selection?: unknown) => {
      let chosen = selectedRuns(node, selection);
      if (chosen.length < 2) chosen = (await pickRunsToCompare(runs, chosen.map((p) => p.key))) ?? [];
      if (chosen.length >= 2) (await actions()).openComparePanel(env, chosen);
    }),
    vscode.commands.registerCommand('commcost.runs.reveal', async (node?: unknown) => {
      const p = profileOf(node ?? view.selection[0]);
      if (p) await (await actions()).revealRunFile(p.path);
    }),
    vscode.commands.registerCommand('commcost.runs.exportReport', async (node?: unknown) => {
      const p = profileOf(node ?? view.selection[0]);
      if (p) await (await actions()).exportRunReport(env, p.run, p.path);
    }),
    vscode.commands.registerCommand('commcost.runs.delete', async (node?: unknown) => {
      const p = profileOf(node ?? view.selection[0]);
      if (p && (await (await actions()).deleteRunFile(env, p, runs.folders()))) await runs.reload();
    }),
    vscode.commands.registerCommand('commcost.runs.refresh', () => runs.reload()),
  ])
    scope.add(d);
}
