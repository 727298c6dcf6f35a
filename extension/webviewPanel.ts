/**
 * The results webview panel (one at a time, reused across runs).
 *
 * Security (vscode-extension-samples): CSP `default-src 'none'` with a per-load script nonce,
 * `localResourceRoots` narrowed to `dist/`, the script URL through `asWebviewUri`.
 * Protocol (GitLens): the webview sends `webview/ready` after every load and the panel answers
 * with the complete current state; then every state goes out as `state/run/update`. Posting is
 * back-pressured: while one post is in flight only the newest state is kept, so a fast run never
 * queues stale snapshots (the webview itself renders at most once per frame).
 */
import { randomBytes } from 'node:crypto';
import * as vscode from 'vscode';
import {
  CancelRunCommand,
  createMessage,
  ReadyCommand,
  RunStateNotification,
  ShowLogCommand,
  ShowPlanNotification,
  type PlanRequest,
  type RunState,
} from '../protocol/webviewMessages';

/** What the panel's buttons do; replaced per run. */
export interface PanelActions {
  cancel(): void;
  showLog(): void;
}

/** The results panel; {@link ResultsPanel.show} creates or reveals it. */
export class ResultsPanel implements vscode.Disposable {
  private static current: ResultsPanel | undefined;

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
  ) {
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
  static show(extensionUri: vscode.Uri, title: string, actions: PanelActions): ResultsPanel {
    const existing = ResultsPanel.current;
    if (existing) {
      existing.actions = actions;
      existing.panel.title = title;
      existing.panel.reveal(undefined, true);
      return existing;
    }
    const panel = vscode.window.createWebviewPanel(
      'commcost.results',
      title,
      { viewColumn: vscode.ViewColumn.Beside, preserveFocus: true },
      { enableScripts: true, localResourceRoots: [vscode.Uri.joinPath(extensionUri, 'dist')] },
    );
    ResultsPanel.current = new ResultsPanel(panel, extensionUri, actions);
    return ResultsPanel.current;
  }

  /** The open panel, if any. */
  static get open(): ResultsPanel | undefined {
    return ResultsPanel.current;
  }

  /** Sets the complete state and sends it (coalesced while a post is in flight). */
  update(state: RunState): void {
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
    const msg = createMessage(RunStateNotification, state, 'host', ++this.counter);
    if (this.disposed) return;
    this.panel.webview.postMessage(msg).then(
      () => this.afterPost(),
      () => this.afterPost(),
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

  private onMessage(msg: unknown): void {
    if (ReadyCommand.is(msg)) {
      this.ready = true;
      this.pending = false;
      this.sentState = undefined; // a (re)loaded webview has no state yet
      this.flush();
    } else if (CancelRunCommand.is(msg)) {
      this.actions.cancel();
    } else if (ShowLogCommand.is(msg)) {
      this.actions.showLog();
    }
  }

  private html(): string {
    const webview = this.panel.webview;
    const nonce = randomBytes(16).toString('base64');
    const script = webview.asWebviewUri(vscode.Uri.joinPath(this.extensionUri, 'dist', 'webview.js'));
    const csp = [
      "default-src 'none'",
      `script-src 'nonce-${nonce}'`,
      `style-src ${webview.cspSource} 'unsafe-inline'`,
      `img-src ${webview.cspSource} data:`,
      `font-src ${webview.cspSource}`,
    ].join('; ');
    return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="${csp}">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<title>commcost</title>
</head>
<body>
<div id="app"></div>
<script nonce="${nonce}" src="${script.toString()}"></script>
</body>
</html>`;
  }

  private disposed = false;

  /** Closes the panel and releases its listeners. Idempotent. */
  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    if (ResultsPanel.current === this) ResultsPanel.current = undefined;
    while (this.disposables.length > 0) this.disposables.pop()?.dispose();
    this.panel.dispose();
  }
}
