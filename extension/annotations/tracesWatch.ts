/**
 * VS Code adapter of the traces (traces.ts): loads `.commcost/traces/*.json` of the workspace
 * folders, watches them as the run folders are watched, keeps the trace the user chose (workspace
 * state), answers "what did the trace observe on this document's lines" for the hover, the
 * CodeLens and the after-line labels (cached per document version and trace reload), and
 * registers `commcost.openTrace` (links carry a trace key, checked).
 */
import * as vscode from 'vscode';
import type { OutputLog } from '../outputLog';
import type { AnnotationModel } from './annotationModel';
import { CHOSEN_TRACE_KEY, observeDocument, TRACES_DIR, TraceStore } from '../../client/traceStore';
import { type DocSite, type TraceObservation } from '../../readings/traces';
import { join } from 'node:path';
import { isSimulatedTrace } from '../../protocol/trace';

const RELOAD_DELAY_MS = 200;

export class TraceAnnotations implements vscode.Disposable {
  readonly store: TraceStore;
  private readonly emitter = new vscode.EventEmitter<void>();
  /** Fires after the traces were reloaded or the chosen trace changed. */
  readonly onDidChange = this.emitter.event;
  private readonly disposables: vscode.Disposable[] = [this.emitter];
  private readonly cache = new Map<string, { key: string; lines: Map<number, TraceObservation> }>();
  private generation = 0;
  private loaded: Promise<void> | undefined;
  private timer: NodeJS.Timeout | undefined;

  /**
   * @param extension for the workspace state (the chosen trace)
   * @param log problems with trace files go here
   * @param model the annotation model, once loaded (its call sites are where traced lines land)
   */
  constructor(
    private readonly extension: vscode.ExtensionContext,
    log: OutputLog,
    private readonly model: () => AnnotationModel | undefined,
  ) {
    this.store = new TraceStore((line) => log.error(line));
    const watchFolder = (f: vscode.WorkspaceFolder) => {
      const w = vscode.workspace.createFileSystemWatcher(new vscode.RelativePattern(f, '.commcost/traces/*.json'));
      this.disposables.push(w, w.onDidCreate(() => this.reloadSoon()), w.onDidChange(() => this.reloadSoon()), w.onDidDelete(() => this.reloadSoon()));
    };
    for (const f of vscode.workspace.workspaceFolders ?? []) watchFolder(f);
    this.disposables.push(
      vscode.workspace.onDidChangeWorkspaceFolders((e) => {
        e.added.forEach(watchFolder);
        this.reloadSoon();
      }),
      // After "Trace Python File" saved `path`: reload; a simulated trace answers (the user asked for it),
      // a measured one makes the newest trace answer again. Only a loaded trace's path is acted on.
      vscode.commands.registerCommand('commcost.traceSaved', async (path: unknown) => {
        await this.reload();
        const t = typeof path === 'string' ? this.store.byPath(path) : undefined;
        if (!t) return;
        if (isSimulatedTrace(t.trace)) await this.choose(t.path);
        else if (this.store.chosen && isSimulatedTrace(this.store.chosen.trace)) await this.choose(undefined);
      }),
      vscode.commands.registerCommand('commcost.openTrace', async (key: unknown) => {
        const t = typeof key === 'string' ? this.store.byKey(key) : undefined;
        if (t) await vscode.window.showTextDocument(vscode.Uri.file(t.path), { preview: false });
      }),
    );
  }

  /** The workspace folders' trace folders. */
  dirs(): string[] {
    return (vscode.workspace.workspaceFolders ?? []).map((f) => join(f.uri.fsPath, TRACES_DIR));
  }

  /** Loads the traces once (later calls wait for the same load). */
  ensureLoaded(): Promise<void> {
    return (this.loaded ??= this.reload());
  }

  /** Reads the trace folders again and restores the chosen trace; fires {@link onDidChange}. */
  async reload(): Promise<void> {
    await this.store.reload(this.dirs());
    const saved = this.extension.workspaceState.get<unknown>(CHOSEN_TRACE_KEY);
    this.store.choose(typeof saved === 'string' ? saved : undefined);
    this.changed();
  }

  /** Makes the trace at `path` the one that answers first (undefined: the newest trace answers); kept per workspace. */
  async choose(path: string | undefined): Promise<void> {
    this.store.choose(path);
    await this.extension.workspaceState.update(CHOSEN_TRACE_KEY, path);
    this.changed();
  }

  private changed(): void {
    this.generation++;
    this.cache.clear();
    this.emitter.fire();
  }

  private reloadSoon(): void {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => void this.reload(), RELOAD_DELAY_MS);
  }

  /**
   * What the answering trace observed on each line of `document` (0-based line → observation);
   * empty before the traces or the model are loaded, or for a document that is not a file.
   */
  observed(document: vscode.TextDocument): Map<number, TraceObservation> {
    const model = this.model();
    const uri = document.uri.toString();
    const state = model?.state(uri);
    if (!state || document.uri.scheme !== 'file' || this.store.traces.length === 0) return new Map();
    const sites: DocSite[] = state.scan.sites.map((s) => ({ line: s.range.start.line, api: s.api, role: s.role }));
    const key = `${this.generation}|${state.version}|${sites.map((s) => `${s.line}:${s.api}:${s.role}`).join(',')}`;
    const hit = this.cache.get(uri);
    if (hit && hit.key === key) return hit.lines;
    const roots = (vscode.workspace.workspaceFolders ?? []).map((f) => f.uri.fsPath);
    const lines = observeDocument(document.uri.fsPath, roots, sites, this.store.answering);
    this.cache.set(uri, { key, lines });
    return lines;
  }

  /** Forgets a closed document's lines. */
  forget(uri: string): void {
    this.cache.delete(uri);
  }

  dispose(): void {
    clearTimeout(this.timer);
    for (const d of this.disposables.splice(0)) d.dispose();
  }
}
