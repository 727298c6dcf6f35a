/**
 * The Runs view (view `commcost.runs` in the `commcost` view container): the saved runs grouped
 * by host (runsViewModel.ts builds the nodes), with open, set active, compare selected, reveal
 * file and delete. It shows the runs the annotations read (register.ts `RunsApi`): it refreshes
 * when they reload — the run folders' FileSystemWatchers in register.ts (`.commcost/runs/*.json`
 * of each workspace folder, and global storage) — and when the active run changes. With no runs
 * the view is empty and VS Code shows its welcome content (package.json `viewsWelcome`).
 *
 * A "Traces" group (runsViewTraces.ts) lists the traces of the user's own job
 * (`.commcost/traces/*.json`, the annotations' TraceStore, refreshed when it reloads): open (the
 * JSON; its HTML report, rendered afresh from the trace, never the `.html` beside it), use for annotations (the trace the annotations
 * ask first, as the profile picker's trace section chooses it), compare with a run (the run
 * selected with it, else one picked: runsViewTraces.ts `compareTraceWithRun`, shown as a Markdown
 * preview), reveal, delete with confirmation.
 *
 * Run files are untrusted: they were read through `loadRun` (schema-validated) by the store,
 * and every text shown is made plain (runsViewModel.ts); tooltips are plain strings. Trace files
 * likewise (`validateTraceFile`, runsViewTraces.ts).
 */
import { existsSync } from 'node:fs';
import { lstat, rm } from 'node:fs/promises';
import { basename } from 'node:path';
import * as vscode from 'vscode';
import type { Profile } from '../readings/profiles';
import { runLabel } from '../readings/labelText';
import type { RunsApi } from './annotations/runsApi';
import type { ActionEnv } from './commandsActions';
import { pickRun, pickRunsToCompare } from './commands';
import type { CommcostContext } from './extensionContext';
import { runsTree, type HostNode, type RunNode, type RunsTreeNode as RunTreeNode } from './runsViewModel';
import { comparisonMarkdown, compareTraceWithRun, deletableTraceFile, tracesGroup, type TraceNode, type TracesNode } from './runsViewTraces';

type RunsTreeNode = RunTreeNode | TracesNode | TraceNode;

/** The view's id (package.json `contributes.views.commcost`). */
export const RUNS_VIEW_ID = 'commcost.runs';

class RunsTreeProvider implements vscode.TreeDataProvider<RunsTreeNode> {
  private readonly changed = new vscode.EventEmitter<RunsTreeNode | undefined>();
  readonly onDidChangeTreeData = this.changed.event;
  private hosts: HostNode[] = [];
  private traces: TracesNode | null = null;

  constructor(private readonly runs: RunsApi) {}

  refresh(): void {
    this.changed.fire(undefined);
  }

  async getChildren(node?: RunsTreeNode): Promise<RunsTreeNode[]> {
    if (node?.kind === 'host') return node.runs;
    if (node?.kind === 'traces') return node.traces;
    if (node) return [];
    await Promise.all([this.runs.ensureLoaded(), this.runs.traces.ensureLoaded()]);
    const store = this.runs.store;
    this.hosts = runsTree(store.profiles, store.active, this.runs.rules());
    this.traces = tracesGroup(this.runs.traces.store.traces, this.runs.traces.store.chosen, existsSync);
    // No run and no trace: nothing, so that VS Code shows the welcome content.
    return this.traces ? [...this.hosts, this.traces] : this.hosts;
  }

  getParent(node: RunsTreeNode): RunsTreeNode | undefined {
    if (node.kind === 'host' || node.kind === 'traces') return undefined;
    if (node.kind === 'trace') return this.traces ?? undefined;
    return this.hosts.find((h) => h.runs.some((r) => r.key === node.key));
  }

  getTreeItem(node: RunsTreeNode): vscode.TreeItem {
    if (node.kind === 'traces') {
      const item = new vscode.TreeItem(node.label, vscode.TreeItemCollapsibleState.Expanded);
      item.id = 'traces';
      item.description = node.description;
      item.iconPath = new vscode.ThemeIcon('pulse');
      item.contextValue = 'traces';
      item.tooltip = `Traces of your own job (commcost trace), in .commcost/traces: ${node.description}`;
      return item;
    }
    if (node.kind === 'trace') {
      const item = new vscode.TreeItem(node.label, vscode.TreeItemCollapsibleState.None);
      item.id = `trace:${node.path}`;
      item.description = node.description;
      item.tooltip = node.tooltip; // a plain string: never rendered as Markdown
      item.contextValue = node.contextValue;
      item.iconPath = new vscode.ThemeIcon(node.chosen ? 'pass-filled' : node.simulated ? 'beaker' : node.status !== 'complete' ? 'circle-slash' : 'pulse');
      item.accessibilityInformation = { label: `trace ${node.label}, ${node.description}` };
      item.command = { command: 'commcost.runs.openTrace', title: 'Open Trace', arguments: [node] };
      return item;
    }
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
  scope.add(runs.traces.onDidChange(() => provider.refresh()));
  /** The loaded trace of a trace node passed by VS Code (checked against the store by key). */
  const traceOf = (node: unknown) => {
    const key = typeof node === 'object' && node !== null && (node as TraceNode).kind === 'trace' ? (node as TraceNode).key : undefined;
    return typeof key === 'string' ? runs.traces.store.byKey(key) : undefined;
  };

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
      if (p && (await runs.setActive(p.key))) void vscode.window.setStatusBarMessage(`commcost: annotations now come from ${runLabel(p, runs.store.profiles)}`, 4000);
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
    vscode.commands.registerCommand('commcost.runs.refresh', () => Promise.all([runs.reload(), runs.traces.reload()])),
    vscode.commands.registerCommand('commcost.runs.openTrace', async (node?: unknown) => {
      const t = traceOf(node ?? view.selection[0]);
      if (t) await vscode.window.showTextDocument(vscode.Uri.file(t.path), { preview: false });
    }),
    vscode.commands.registerCommand('commcost.runs.openTraceReport', async (node?: unknown) => {
      // Rendered afresh from the validated trace: a `.html` beside it may be anything a repository committed.
      const t = traceOf(node ?? view.selection[0]);
      if (t) await (await actions()).openTraceReport(env, t.trace, t.path);
    }),
    vscode.commands.registerCommand('commcost.runs.useTrace', async (node?: unknown) => {
      const t = traceOf(node ?? view.selection[0]);
      if (!t) return;
      await runs.traces.choose(t.path);
      void vscode.window.setStatusBarMessage(`commcost: traced lines now come from ${basename(t.path)} first`, 4000);
    }),
    // A trace beside a run: the run selected with it in the tree, else one picked.
    vscode.commands.registerCommand('commcost.runs.compareTrace', async (node?: unknown, selection?: unknown) => {
      const t = traceOf(node ?? view.selection[0]);
      if (!t) return;
      const p = selectedRuns(undefined, selection)[0] ?? (await pickRun(runs, `commcost: compare the trace ${basename(t.path)} with a run`));
      if (!p) return;
      const md = comparisonMarkdown(compareTraceWithRun(t.path, t.trace, p.path, p.run), basename(t.path), basename(p.path));
      const doc = await vscode.workspace.openTextDocument({ language: 'markdown', content: md });
      try {
        await vscode.commands.executeCommand('markdown.showPreview', doc.uri);
      } catch {
        await vscode.window.showTextDocument(doc, { preview: false });
      }
    }),
    vscode.commands.registerCommand('commcost.runs.revealTrace', async (node?: unknown) => {
      const t = traceOf(node ?? view.selection[0]);
      if (t) await (await actions()).revealRunFile(t.path);
    }),
    vscode.commands.registerCommand('commcost.runs.deleteTrace', async (node?: unknown) => {
      const t = traceOf(node ?? view.selection[0]);
      if (!t) return;
      const allowed = deletableTraceFile(t.path, runs.traces.dirs());
      if (!allowed.ok) {
        void vscode.window.showErrorMessage(`commcost: will not delete ${t.path}: ${allowed.why}`);
        return;
      }
      const remove = 'Delete';
      const answer = await vscode.window.showWarningMessage(`Delete the trace file ${basename(t.path)}?`, {
        modal: true,
        detail: `${t.path}\n\nOnly this file is deleted (an HTML report beside it is kept). This cannot be undone.`,
      }, remove);
      if (answer !== remove) return;
      try {
        const st = await lstat(t.path);
        if (!st.isFile() && !st.isSymbolicLink()) throw new Error(`${t.path} is not a file`);
        await rm(t.path);
        env.log.info(`deleted the trace file ${t.path}`);
      } catch (err) {
        void vscode.window.showErrorMessage(`commcost: could not delete ${t.path}: ${(err as Error).message}`);
      }
      if (runs.traces.store.chosen?.path === t.path) await runs.traces.choose(undefined);
      await runs.traces.reload();
    }),
  ])
    scope.add(d);
}
