/**
 * What the palette commands, the Runs view and the completion message do with a saved run: open
 * it in a results panel, compare runs in a panel, write its HTML report (save dialog; atomic, never
 * through a link: client/safeWrite.ts), reveal its file, delete it (modal confirmation; the run
 * file only). Loaded on first use, not at activation.
 */
import { lstat, rm } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import * as vscode from 'vscode';
import type { RunFile } from '../protocol/runFile';
import type { TraceFile } from '../protocol/trace';
import { errorText } from '../client/errors';
import type { Profile } from '../readings/profiles';
import type { RunFolder } from '../client/profileStore';
import type { OutputLog } from './outputLog';
import { reportFileName } from './commandsModel';
import { deletableRunFile } from './runsViewModel';
import { ComparePanel, ResultsPanel } from './webviewPanel';
import { runLabel } from '../readings/labelText';
import { runName } from '../readings/runName';

/** What the actions need from the extension. */
export interface ActionEnv {
  extension: vscode.ExtensionContext;
  log: OutputLog;
}

/** "commcost: 1× H200 · NCCL 2.28.9 · 2026-12-01 23:37 UTC": a panel's title for `run`, its one name (readings/runName.ts; SIMULATED when so). */
export function panelTitle(run: RunFile): string {
  return `commcost: ${runName(run)}`;
}

/**
 * Shows the saved run `run` (read from `path`) in a results panel: the panel already showing that
 * file is revealed, else a new one opens (or the last one, with `commcost.reusePanel`).
 */
export function openRunPanel(env: ActionEnv, run: RunFile, path: string): ResultsPanel {
  const panel = ResultsPanel.show(env.extension.extensionUri, panelTitle(run), { cancel: () => undefined, showLog: () => env.log.show() }, { path });
  panel.update({ run, live: false, savedPath: path });
  return panel;
}

/** Opens a comparison panel of `profiles` (the first is run A, the baseline of every ratio). */
export function openComparePanel(env: ActionEnv, profiles: readonly Profile[]): ComparePanel {
  const title = `commcost: compare ${profiles.map((p) => runLabel(p, profiles)).join(' vs ')}`;
  return ComparePanel.show(
    env.extension.extensionUri,
    title.length > 120 ? `${title.slice(0, 119)}…` : title,
    profiles.map((p) => p.run),
    profiles.map((p) => p.path),
  );
}

/** Where a report of the run at `runPath` is offered by default: the workspace's first folder, else next to the run. */
function defaultReportUri(run: RunFile, runPath: string): vscode.Uri {
  const folder = vscode.workspace.workspaceFolders?.[0];
  const dir = folder && folder.uri.scheme === 'file' ? folder.uri.fsPath : dirname(runPath);
  return vscode.Uri.file(join(dir, reportFileName(run.id)));
}

const OPEN_IN_BROWSER = 'Open in Browser';
const REVEAL = 'Reveal File';

/**
 * Asks where to save `run`'s self-contained HTML report (save dialog), writes it atomically
 * without following a link at the target (client/safeWrite.ts `writeFileSafely`: a link is
 * refused with a message), then offers to open or reveal it. Resolves with the written path, or
 * undefined when cancelled or refused. Never throws: failures are shown with "Show Log".
 */
export async function exportRunReport(env: ActionEnv, run: RunFile, runPath: string): Promise<string | undefined> {
  const target = await vscode.window.showSaveDialog({
    title: 'commcost: save the HTML report',
    defaultUri: defaultReportUri(run, runPath),
    filters: { 'HTML report': ['html'] },
    saveLabel: 'Save Report',
  });
  if (!target) return undefined;
  if (target.scheme !== 'file') {
    void vscode.window.showErrorMessage(`commcost: the report can only be saved to a local file, not ${target.toString()}`);
    return undefined;
  }
  const out = target.fsPath;
  try {
    const [{ renderReportPieces }, { writeFileSafely }] = await Promise.all([import('../client/htmlReport'), import('../client/safeWrite')]);
    // In pieces: a large run's page is never one string.
    const html = renderReportPieces(run, { webviewJsPath: join(env.extension.extensionPath, 'dist', 'webview.js') });
    await writeFileSafely(out, html, 'the report');
  } catch (err) {
    const hint = typeof (err as { hint?: unknown }).hint === 'string' ? ` — what to do: ${(err as { hint: string }).hint}` : '';
    env.log.error(`report ${out}: ${errorText(err)}`);
    const a = await vscode.window.showErrorMessage(`commcost: could not save the report: ${errorText(err)}${hint}`, 'Show Log');
    if (a === 'Show Log') env.log.show();
    return undefined;
  }
  env.log.info(`report of ${runPath} saved to ${out}`);
  void vscode.window.showInformationMessage(`commcost: report saved to ${out}`, OPEN_IN_BROWSER, REVEAL).then((a) => {
    if (a === OPEN_IN_BROWSER) void vscode.env.openExternal(vscode.Uri.file(out));
    else if (a === REVEAL) void revealRunFile(out);
  });
  return out;
}

/**
 * "Open trace report": the report rendered afresh from the loaded (validated) trace into the
 * extension's storage (`trace-reports/`, 0700), opened in the browser; an `.html` beside the trace
 * is never opened (a repository may commit any page there). Errors are shown, not thrown.
 */
export async function openTraceReport(env: ActionEnv, trace: TraceFile, tracePath: string): Promise<void> {
  try {
    const { freshTraceReport } = await import('../client/trace/htmlTrace');
    const file = await freshTraceReport(trace, tracePath, join(env.extension.globalStorageUri.fsPath, 'trace-reports'), { bundlePath: join(env.extension.extensionPath, 'dist', 'traceReport.js') });
    await vscode.env.openExternal(vscode.Uri.file(file));
  } catch (err) {
    env.log.error(`trace report of ${tracePath}: ${errorText(err)}`);
    void vscode.window.showErrorMessage(`commcost: could not open the trace report: ${errorText(err)}`);
  }
}

/**
 * Shows the file at `path`: in the Explorer when it is inside a workspace folder, else in the
 * operating system's file manager on a local window, else (a remote window, whose files are not
 * on this computer) opened in an editor.
 */
export async function revealRunFile(path: string): Promise<void> {
  const uri = vscode.Uri.file(path);
  if (vscode.workspace.getWorkspaceFolder(uri)) await vscode.commands.executeCommand('revealInExplorer', uri);
  else if (vscode.env.remoteName === undefined) await vscode.commands.executeCommand('revealFileInOS', uri);
  else await vscode.window.showTextDocument(uri, { preview: true });
}

/**
 * Deletes the run file of `p` after a modal confirmation: only that file (no other run, no
 * report), and only a `.json` file directly inside a run folder the store reads (a link is
 * removed itself, never its target). Resolves true when deleted.
 */
export async function deleteRunFile(env: ActionEnv, p: Profile, folders: readonly RunFolder[]): Promise<boolean> {
  const allowed = deletableRunFile(p.path, folders);
  if (!allowed.ok) {
    void vscode.window.showErrorMessage(`commcost: will not delete ${p.path}: ${allowed.why}`);
    return false;
  }
  const remove = 'Delete';
  const answer = await vscode.window.showWarningMessage(
    `Delete the run file ${basename(p.path)}?`,
    {
      modal: true,
      detail: `${p.path}\n\n${runName(p.run, { time: p.time })}\nOnly this file is deleted; other runs and reports are kept. This cannot be undone.`,
    },
    remove,
  );
  if (answer !== remove) return false;
  try {
    const st = await lstat(p.path);
    if (!st.isFile() && !st.isSymbolicLink()) throw new Error(`${p.path} is not a file`);
    await rm(p.path);
  } catch (err) {
    env.log.error(`delete ${p.path}: ${errorText(err)}`);
    void vscode.window.showErrorMessage(`commcost: could not delete ${p.path}: ${errorText(err)}`);
    return false;
  }
  env.log.info(`deleted the run file ${p.path}`);
  return true;
}
