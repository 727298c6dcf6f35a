/**
 * The results webview panels: one per run shown (a new run opens its own panel unless the
 * setting `commcost.reusePanel` asks to reuse the last one; a saved run already shown is only
 * revealed), and the comparison panels (several runs, webview/compareView.ts). Each page carries
 * what it shows as run file paths (`data-commcost-state`, panelSerializerState.ts), which the
 * webview keeps as its state so that extension/panelSerializer.ts restores it after a reload.
 *
 * Security (vscode-extension-samples): CSP `default-src 'none'` with a per-load script nonce,
 * `localResourceRoots` narrowed to `dist/`. The webview bundle is inlined in the page
 * (panelPage.ts), not loaded by URL: a page restored beside another after a window reload
 * could otherwise lose its script to VS Code's webview service worker and stay blank.
 * Protocol (GitLens): the webview sends `webview/ready` after every load and the panel answers
 * with the complete current state; then the same run's next states go out as deltas
 * (`state/run/delta`, protocol/runDelta.ts: what was appended since the last post), another run's
 * as `state/run/update`. Posting is
 * back-pressured: while one post is in flight only the newest state is kept, so a fast run never
 * queues stale snapshots (the webview itself renders at most once per frame).
 */
import * as vscode from 'vscode';
import { COMPARE_ELEMENT_ID } from '../protocol/compare';
import type { RunFile } from '../protocol/runFile';
import { jsonForScript } from '../client/htmlReport';
import { runDelta, runForView, sentCountsOf, type SentCounts } from '../protocol/runDelta';
import {
  CancelRunCommand,
  createMessage,
  ReadyCommand,
  RunDeltaNotification,
  RunStateNotification,
  ShowLogCommand,
  ShowPlanNotification,
  type PlanRequest,
  type RunState,
} from '../protocol/webviewMessages';
import { panelPageHtml, webviewScript } from './panelPage';
import { COMPARE_VIEW_TYPE, RESULTS_VIEW_TYPE, type PanelRestoreState } from './panelSerializerState';

/** What the panel's buttons do; replaced per run. */
export interface PanelActions {
  cancel(): void;
  showLog(): void;
}

/** How {@link ResultsPanel.show} picks its panel. */
export interface ShowOptions {
  /** Reuse the panel shown last (default: the setting `commcost.reusePanel`, false). */
  reuse?: boolean;
  /** The saved run file the panel will show (absolute path): a panel already showing it is revealed. */
  path?: string;
}

/** The panels' webview options: scripts on, local resources only from `dist/`. */
function webviewOptions(extensionUri: vscode.Uri): vscode.WebviewOptions & vscode.WebviewPanelOptions {
  return { enableScripts: true, localResourceRoots: [vscode.Uri.joinPath(extensionUri, 'dist')] };
}

/** The page of a panel (panelPage.ts): the webview bundle inlined, `state` and `embedded` as given. */
function shellHtml(webview: vscode.Webview, extensionUri: vscode.Uri, state?: PanelRestoreState, embedded?: { id: string; json: string }): string {
  return panelPageHtml({ cspSource: webview.cspSource, script: webviewScript(extensionUri.fsPath), state, embedded });
}

/** The results panels; {@link ResultsPanel.show} creates or reveals one. */
export class ResultsPanel implements vscode.Disposable {
  private static readonly panels = new Set<ResultsPanel>();
  /** The panel shown last (the one `commcost.reusePanel` reuses). */
  private static current: ResultsPanel | undefined;
  /** The saved run file shown (absolute path), once known. */
  private path: string | undefined;

  private state: RunState | undefined;
  /** A "show plan" request not yet sent: it follows the state it applies to. */
  private planRequest: PlanRequest | undefined;
  private inFlight = false;
  private pending = false;
  private ready = false;
  private counter = 0;
  private readonly disposables: vscode.Disposable[] = [];

  private constructor(
    private readonly panel: vscode.WebviewPanel,
    private readonly extensionUri: vscode.Uri,
    private actions: PanelActions,
    path?: string,
  ) {
    this.path = path;
    panel.webview.options = webviewOptions(extensionUri);
    panel.webview.html = this.html();
    this.disposables.push(
      panel.webview.onDidReceiveMessage((msg: unknown) => this.onMessage(msg)),
      panel.onDidDispose(() => this.dispose()),
    );
  }

  /**
   * Shows the panel (creating it beside the active editor if needed) with `actions` for its
   * Cancel and Show Log buttons. The caller's scope should own the returned panel only if it
   * wants it closed with the scope; the extension scope owns it by default.
   */
  static show(extensionUri: vscode.Uri, title: string, actions: PanelActions, opts: ShowOptions = {}): ResultsPanel {
    const same = opts.path ? [...ResultsPanel.panels].find((p) => p.path === opts.path) : undefined;
    const reuse = opts.reuse ?? vscode.workspace.getConfiguration('commcost').get<boolean>('reusePanel') === true;
    const existing = same ?? (reuse ? ResultsPanel.current : undefined);
    if (existing) {
      existing.actions = actions;
      existing.panel.title = title;
      existing.panel.reveal(undefined, true);
      ResultsPanel.current = existing;
      return existing;
    }
    const panel = vscode.window.createWebviewPanel(
      RESULTS_VIEW_TYPE,
      title,
      { viewColumn: vscode.ViewColumn.Beside, preserveFocus: true },
      webviewOptions(extensionUri),
    );
    return ResultsPanel.adopt(panel, extensionUri, actions, opts.path);
  }

  /**
   * Takes over `panel` (a new one, or one VS Code restores after a reload:
   * extension/panelSerializer.ts): sets its options and page and listens to it.
   * @param path the saved run file it shows, when known
   */
  static adopt(panel: vscode.WebviewPanel, extensionUri: vscode.Uri, actions: PanelActions, path?: string): ResultsPanel {
    const p = new ResultsPanel(panel, extensionUri, actions, path);
    ResultsPanel.panels.add(p);
    ResultsPanel.current = p;
    return p;
  }

  /** The panel shown last, if any is open. */
  static get open(): ResultsPanel | undefined {
    return ResultsPanel.current;
  }

  /** How many results panels are open. */
  static get count(): number {
    return ResultsPanel.panels.size;
  }

  /** Closes every results panel. */
  static disposeAll(): void {
    for (const p of [...ResultsPanel.panels]) p.dispose();
  }

  /** Renames the panel's tab (a live run's title once its stamp names the GPUs); nothing once closed. */
  retitle(title: string): void {
    if (!this.disposed && this.panel.title !== title) this.panel.title = title;
  }

  /** Sets the complete state and sends it (coalesced while a post is in flight). */
  update(state: RunState): void {
    if (state.savedPath) this.path = state.savedPath;
    this.state = state;
    if (!this.ready || this.disposed) return; // sent on `webview/ready`
    this.flush();
  }

  /**
   * Shows the Plan section with `request`'s inputs (shapes, interval, step, budget; where they
   * came from), after the current state: sent once the webview is ready and the state has gone
   * out, so the section plans the run it is meant for. A newer request replaces one not yet sent.
   */
  showPlan(request: PlanRequest): void {
    this.planRequest = request;
    this.panel.reveal(undefined, false);
    if (!this.ready || this.disposed) return; // sent after the state on `webview/ready`
    this.flush();
  }

  private flush(): void {
    if (this.inFlight) {
      this.pending = true;
      return;
    }
    const state = this.state;
    if (!state) return;
    if (!this.pending && this.sentState === state && this.planRequest) {
      this.sendPlan();
      return;
    }
    this.inFlight = true;
    this.sentState = state;
    this.pending = false;
    // What the panel reads of the run: finished experiments without their raw arrays (runForView).
    const run = runForView(state.run);
    // The same run as the last post: only what changed (protocol/runDelta.ts); else all of it.
    const delta = this.sent?.runId === run.id ? runDelta(run, this.sent.counts) : undefined;
    let msg;
    if (delta) {
      const rest: Partial<RunState> = { ...state };
      delete rest.run;
      msg = createMessage(RunDeltaNotification, { ...(rest as Omit<RunState, 'run'>), runId: run.id, delta }, 'host', ++this.counter);
    } else {
      msg = createMessage(RunStateNotification, { ...state, run }, 'host', ++this.counter);
      this.sent = { runId: run.id, counts: sentCountsOf(run) };
    }
    if (this.disposed) return;
    this.panel.webview.postMessage(msg).then(
      () => this.afterPost(),
      () => {
        this.sent = undefined; // lost: the next post is a complete snapshot
        this.afterPost();
      },
    );
  }

  private afterPost(): void {
    this.inFlight = false;
    if (this.pending) this.flush();
    else if (this.planRequest) this.sendPlan();
  }

  /** The state it applies to has gone out: send the plan request (then forget it). */
  private sendPlan(): void {
    const request = this.planRequest;
    if (!request || this.disposed) return;
    this.planRequest = undefined;
    void this.panel.webview.postMessage(createMessage(ShowPlanNotification, request, 'host', ++this.counter));
  }

  private sentState: RunState | undefined;
  /** What the webview holds: the run's id and its sample counts (deltas go from there). */
  private sent: { runId: string; counts: SentCounts } | undefined;

  private onMessage(msg: unknown): void {
    if (ReadyCommand.is(msg)) {
      this.ready = true;
      this.pending = false;
      this.sentState = undefined; // a (re)loaded webview has no state yet
      this.sent = undefined;
      this.flush();
    } else if (CancelRunCommand.is(msg)) {
      this.actions.cancel();
    } else if (ShowLogCommand.is(msg)) {
      this.actions.showLog();
    }
  }

  private html(): string {
    return shellHtml(this.panel.webview, this.extensionUri, this.path ? { kind: 'run', path: this.path } : undefined);
  }

  private disposed = false;

  /** Closes the panel and releases its listeners. Idempotent. */
  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    ResultsPanel.panels.delete(this);
    if (ResultsPanel.current === this) ResultsPanel.current = [...ResultsPanel.panels].pop();
    while (this.disposables.length > 0) this.disposables.pop()?.dispose();
    this.panel.dispose();
  }
}

/**
 * A comparison of saved runs in a panel of its own: the webview's comparison view (grouped bars
 * per step, each run's median and ratio to run A; webview/compareView.ts) over the runs embedded
 * in the page, as in the HTML comparison report. Static: no messages after the page loads.
 */
export class ComparePanel implements vscode.Disposable {
  private static readonly panels = new Set<ComparePanel>();
  private disposed = false;
  private readonly listener: vscode.Disposable;

  private constructor(private readonly panel: vscode.WebviewPanel) {
    this.listener = panel.onDidDispose(() => this.dispose());
  }

  /**
   * Opens a comparison panel of `runs` (run A first: the baseline of every ratio), read from
   * `paths` (absolute, in the same order; kept for the restore after a reload).
   */
  static show(extensionUri: vscode.Uri, title: string, runs: readonly RunFile[], paths: readonly string[]): ComparePanel {
    const panel = vscode.window.createWebviewPanel(COMPARE_VIEW_TYPE, title, { viewColumn: vscode.ViewColumn.Beside, preserveFocus: false }, webviewOptions(extensionUri));
    return ComparePanel.adopt(panel, extensionUri, runs, paths);
  }

  /** Fills `panel` (new or restored) with the comparison of `runs` read from `paths`. */
  static adopt(panel: vscode.WebviewPanel, extensionUri: vscode.Uri, runs: readonly RunFile[], paths: readonly string[]): ComparePanel {
    panel.webview.options = webviewOptions(extensionUri);
    panel.webview.html = shellHtml(panel.webview, extensionUri, { kind: 'compare', paths: [...paths] }, { id: COMPARE_ELEMENT_ID, json: jsonForScript({ runs }) });
    const p = new ComparePanel(panel);
    ComparePanel.panels.add(p);
    return p;
  }

  /** How many comparison panels are open. */
  static get count(): number {
    return ComparePanel.panels.size;
  }

  /** Closes every comparison panel. */
  static disposeAll(): void {
    for (const p of [...ComparePanel.panels]) p.dispose();
  }

  /** Closes the panel. Idempotent. */
  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    ComparePanel.panels.delete(this);
    this.listener.dispose();
    this.panel.dispose();
  }
}
