/**
 * Restores the results and comparison panels after a window reload (WebviewPanelSerializer;
 * package.json activation events `onWebviewPanel:commcost.results`, `onWebviewPanel:commcost.compare`).
 * The state kept is only the run file paths (panelSerializerState.ts); the files are read again
 * through client/resultsStore.ts `loadRun` (schema-validated), so a restored panel shows what is on
 * disk. A panel whose file is gone or invalid says so instead of showing stale figures; a panel
 * with no state (a live run that never finished) says that nothing was saved.
 */
import * as vscode from 'vscode';
import type { RunFile } from '../protocol/runFile';
import { errorText } from '../client/errors';
import { escapeHtml } from '../client/htmlReport';
import type { OutputLog } from './outputLog';
import { COMPARE_VIEW_TYPE, parseRestoreState, RESULTS_VIEW_TYPE } from './panelSerializerState';

/** A page with one message and no script (the panel could not be restored). */
function messagePage(title: string, lines: readonly string[]): string {
  return `<!DOCTYPE html><html lang="en"><head><meta charset="UTF-8"><meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'"><title>commcost</title></head>
<body style="font-family: var(--vscode-font-family); color: var(--vscode-foreground); padding: 1em 2em"><h2>${escapeHtml(title)}</h2>${lines.map((l) => `<p>${escapeHtml(l)}</p>`).join('')}</body></html>`;
}

/** Registers both serializers; owned by the returned disposables. */
export function registerPanelSerializers(extension: vscode.ExtensionContext, log: OutputLog): vscode.Disposable[] {
  const load = async (paths: readonly string[]): Promise<RunFile[]> => {
    const { loadRun } = await import('../client/resultsStore');
    return Promise.all(paths.map((p) => loadRun(p)));
  };
  const fail = (panel: vscode.WebviewPanel, what: string, err: unknown): void => {
    log.error(`could not restore the panel "${panel.title}": ${what}: ${errorText(err)}`);
    panel.webview.options = { enableScripts: false };
    panel.webview.html = messagePage('commcost: this panel could not be restored', [
      `${what}: ${errorText(err)}`,
      'Open the run again with "commcost: Open Run…" (Command Palette) or from the Runs view.',
    ]);
  };
  return [
    vscode.window.registerWebviewPanelSerializer(RESULTS_VIEW_TYPE, {
      async deserializeWebviewPanel(panel, state) {
        log.info(`restoring the results panel "${panel.title}"`);
        const restore = parseRestoreState(state);
        if (!restore || restore.kind !== 'run') {
          panel.webview.options = { enableScripts: false };
          panel.webview.html = messagePage('commcost: nothing to restore', [
            'This panel showed a run that was not saved (still running, failed or cancelled before anything was saved).',
            'Open a saved run with "commcost: Open Run…" (Command Palette) or from the Runs view.',
          ]);
          return;
        }
        try {
          const [run] = await load([restore.path]);
          if (!run) throw new Error('no run');
          const { ResultsPanel } = await import('./webviewPanel');
          const p = ResultsPanel.adopt(panel, extension.extensionUri, { cancel: () => undefined, showLog: () => log.show() }, restore.path);
          p.update({ run, live: false, savedPath: restore.path });
          log.info(`restored the panel of ${restore.path}`);
        } catch (err) {
          fail(panel, restore.path, err);
        }
      },
    }),
    vscode.window.registerWebviewPanelSerializer(COMPARE_VIEW_TYPE, {
      async deserializeWebviewPanel(panel, state) {
        log.info(`restoring the comparison panel "${panel.title}"`);
        const restore = parseRestoreState(state);
        if (!restore || restore.kind !== 'compare') {
          fail(panel, 'the comparison', new Error('no run files were kept for it'));
          return;
        }
        try {
          const runs = await load(restore.paths);
          const { ComparePanel } = await import('./webviewPanel');
          ComparePanel.adopt(panel, extension.extensionUri, runs, restore.paths);
          log.info(`restored the comparison of ${restore.paths.join(', ')}`);
        } catch (err) {
          fail(panel, restore.paths.join(', '), err);
        }
      },
    }),
  ];
}
