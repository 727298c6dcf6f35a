/**
 * Wires the call-site annotations into VS Code: hover, CodeLens, after-line labels, diagnostics
 * and quick fixes on Python and C/C++ documents, the profile status bar item, the run-folder
 * watchers and the commands behind the links. Everything registered here is owned by the
 * extension context's scope.
 *
 * Activation stays cheap: the engine, tree-sitter and the Python grammar load in the background
 * just after activate() returns (warmStart.ts), the C/C++ grammar on the first C/C++ document;
 * documents are parsed on open and re-parsed incrementally (debounced) on edit.
 */
import { join } from 'node:path';
import * as vscode from 'vscode';
import type { RunsApi } from './runsApi';
import { EXPERIMENT_IDS } from '../../protocol/events';
import type { CommcostContext } from '../extensionContext';
import type { OutputLog } from '../outputLog';
import { SettingsError } from '../settings';
import { samplesFolder, SAMPLES_SHOWN_KEY } from '../samples';
import type { AnnotationModel } from './annotationModel';
import { ANNOTATION_DEFAULTS, type AnnotationSettings } from '../../readings/annotationSettings';
import { readAnnotationSettings } from './annotationSettings';
import { mappedExperiments } from '../../sites/apiMap';
import { isSourceLanguage } from '../../sites/callSiteTypes';
import { AnnotationCodeLensProvider } from './codeLens';
import { CostDecorations } from './decorations';
import { updateDiagnostics } from './diagnostics';
import { AnnotationHoverProvider } from './hoverProvider';
import { registerPlanLens } from './planLensProvider';
import { CHOSEN_PROFILE_KEY, GLOBAL_ORIGINS_KEY, ProfileStore, workspaceIdOf, type RunFolder } from '../../client/profileStore';
import type { StaleRules } from '../../readings/profiles';
import { AnnotationQuickFixes } from './quickFixes';
import { CLEAR_TRACE, pickProfile, ProfileStatusBar } from './statusBar';
import { TraceAnnotations } from './tracesWatch';
import { DEEP_WARM_ROUNDS, inSlices, WarmStart } from './warmStart';

const REPARSE_DELAY_MS = 150;
/** ms after activation before the engine and the Python grammar start loading in the background. */
const WARM_START_DELAY_MS = 0;
const RELOAD_DELAY_MS = 200;
const SELECTOR: vscode.DocumentSelector = ['python', 'cpp', 'c'].flatMap((language) => [
  { language, scheme: 'file' },
  { language, scheme: 'untitled' },
]);

export interface AnnotationEnv {
  ctx: CommcostContext;
  extension: vscode.ExtensionContext;
  log: OutputLog;
}

/** Registers every annotation surface; all of it is disposed with `env.ctx`. Returns the saved runs' API. */
export function registerAnnotations(env: AnnotationEnv): RunsApi {
  const scope = env.ctx.subscriptions;
  const { extension, log } = env;
  const store = new ProfileStore((line) => log.error(line));
  const changed = scope.add(new vscode.EventEmitter<void>());
  const runsChanged = scope.add(new vscode.EventEmitter<void>());
  const decorations = scope.add(new CostDecorations());
  const diagnostics = scope.add(vscode.languages.createDiagnosticCollection('commcost'));
  const statusBar = scope.add(new ProfileStatusBar());
  const timers = new Map<string, NodeJS.Timeout>();
  scope.add({ dispose: () => timers.forEach((t) => clearTimeout(t)) });

  let settings = readSettingsReported(log);
  const rules = (): StaleRules => ({
    now: Date.now(),
    staleAfterDays: settings.staleAfterDays,
    expectedNcclVersion: settings.expectedNcclVersion,
  });
  let model: AnnotationModel | undefined;
  let loading: Promise<AnnotationModel | undefined> | undefined;
  let profilesLoaded = false;
  scope.add({ dispose: () => model?.dispose() });
  // Traces of the user's job (.commcost/traces): traced lines give the observed figures first.
  const traces = scope.add(new TraceAnnotations(extension, log, () => model));
  const observed = (d: vscode.TextDocument) => traces.observed(d);

  const folders = (): RunFolder[] => {
    const origins = extension.globalState.get<unknown>(GLOBAL_ORIGINS_KEY);
    return [
      ...(vscode.workspace.workspaceFolders ?? []).map((f) => ({
        dir: join(f.uri.fsPath, '.commcost', 'runs'),
        source: 'workspace' as const,
      })),
      {
        dir: join(extension.globalStorageUri.fsPath, 'runs'),
        source: 'global' as const,
        ...(origins && typeof origins === 'object' ? { origins: origins as Record<string, string | null> } : {}),
      },
      // The bundled 2×H200 samples, once the user opened one (samples.ts): foreign, so they answer only when chosen.
      ...[samplesFolder(extension.extensionPath, extension.globalState.get(SAMPLES_SHOWN_KEY))].filter((f) => f !== undefined),
    ];
  };
  /** This window's workspace: global runs saved from another one stay out of its annotations. */
  const windowWorkspace = (): string | null =>
    workspaceIdOf(
      vscode.workspace.workspaceFile?.toString(),
      (vscode.workspace.workspaceFolders ?? []).map((f) => f.uri.toString()),
    );
  const updateStatus = (): void => {
    if (profilesLoaded) statusBar.update(store, rules(), model?.answeredElsewhere() ?? [], traces.store);
  };

  const refreshDocument = (document: vscode.TextDocument): void => {
    for (const editor of vscode.window.visibleTextEditors) {
      if (editor.document === document) decorations.update(editor, model, settings.decorations, settings, observed(document));
    }
    updateDiagnostics(diagnostics, document, model, settings.diagnostics);
    updateStatus();
  };
  /** Open documents whose sites through wrappers changed (wrapperWatch.ts). */
  const refreshUris = (uris: readonly string[]): void => {
    changed.fire();
    for (const d of vscode.workspace.textDocuments) if (uris.includes(d.uri.toString())) refreshDocument(d);
  };
  const refreshAll = (): void => {
    model?.invalidate();
    changed.fire();
    for (const d of vscode.workspace.textDocuments) if (model?.has(d.uri.toString())) refreshDocument(d);
    updateStatus();
    runsChanged.fire();
  };

  // The active run: the one the user chose (status bar), else the newest measured run with
  // figures for annotated calls (profiles.ts `active`: not a newer run of field cases only). A run a
  // measurement saves becomes active only when it is measured: a simulated one never does by itself.
  const reloadProfiles = async (newPath?: string): Promise<void> => {
    await store.reload(folders(), windowWorkspace());
    profilesLoaded = true;
    const saved = extension.workspaceState.get<unknown>(CHOSEN_PROFILE_KEY);
    if (typeof saved === 'string') store.setActivePath(saved);
    if (newPath) {
      const outcome = store.runSaved(newPath);
      if (outcome === 'active') await extension.workspaceState.update(CHOSEN_PROFILE_KEY, undefined);
      else if (outcome === 'simulated')
        log.info(
          `annotations: ${newPath} is a simulated run: the annotations keep the measured figures; choose it from the status bar to see it`,
        );
    }
    refreshAll();
  };

  // The engine bundle, tree-sitter and the Python grammar: started in the background just after
  // activation (WARM_START_DELAY_MS), so the first Python document waits at most for what is left;
  // the C/C++ grammar (3.4 MB of WebAssembly) still loads on the first C/C++ document.
  const engineLoad = scope.add(
    new WarmStart(async () => {
      const started = performance.now();
      const background = !loading;
      // The engine is a bundle of its own (annotationEngine.ts), evaluated here: not in activate().
      const engine = await import('./annotationEngine');
      const finder = scope.add(await engine.CallSiteFinder.load(engine.shippedGrammars(join(extension.extensionPath, 'dist', 'grammars')), { lazyCpp: true }));
      // V8 compiles each WebAssembly function on its first call: a few lines parsed now, not in the first document.
      if (!scope.isDisposed) finder.warmUp();
      log.info(`annotations: tree-sitter and the Python grammar loaded and warmed in ${Math.round(performance.now() - started)} ms (${background ? 'in the background after activation' : 'on the first document'})`);
      // In the background only: more rounds, one per turn of the event loop, until a document asks
      // for the engine (its own scan warms it from then on).
      if (background) {
        const deep = performance.now();
        void inSlices(() => finder.warmUp(), DEEP_WARM_ROUNDS, () => scope.isDisposed || loading !== undefined).then((rounds) =>
          log.info(`annotations: ${rounds} more warm-up rounds in the background in ${Math.round(performance.now() - deep)} ms${rounds < DEEP_WARM_ROUNDS ? ' (stopped: a document came first)' : ''}`),
        );
      }
      return { engine, finder };
    }),
  );
  engineLoad.startSoon(WARM_START_DELAY_MS, () => undefined); // its error is logged by ensureModel, on the first document

  const ensureModel = (): Promise<AnnotationModel | undefined> =>
    (loading ??= (async () => {
      const started = performance.now();
      const [{ engine, finder }] = await Promise.all([engineLoad.get(), reloadProfiles(), traces.ensureLoaded()]);
      model = scope.isDisposed ? undefined : new engine.AnnotationModel(finder, store, rules);
      if (model) {
        // The Measure picker's gate (its own lazy bundle, dist/experimentInfo.js: the agent's
        // experiment needs), so a site its host cannot run says so rather than offer a Measure.
        const gateStarted = performance.now();
        void import('../../readings/experimentInfo')
          .then((info) => {
            if (!model || scope.isDisposed) return;
            model.setGate(info.unavailableReason);
            log.info(`annotations: the experiments' needs loaded in ${Math.round(performance.now() - gateStarted)} ms (a call its host cannot run says so)`);
            refreshAll();
          })
          .catch((err: unknown) => log.error(`annotations: could not load the experiments' needs: ${err instanceof Error ? err.message : String(err)}`));
        // Callers of the workspace's wrapper functions become call sites (built in the background).
        void engine.startWrapperIndex(scope, finder, model, log, refreshUris).catch((err: unknown) =>
          log.error(`annotations: wrapper index: ${err instanceof Error ? err.message : String(err)}`),
        );
      }
      log.info(`annotations: engine, grammars and runs ready for the first document in ${Math.round(performance.now() - started)} ms`);
      return model;
    })().catch((err: unknown) => {
      log.error(`annotations: could not load tree-sitter: ${err instanceof Error ? err.message : String(err)}`);
      return undefined;
    }));

  const openDocument = async (document: vscode.TextDocument): Promise<void> => {
    if (!isSourceLanguage(document.languageId) || (document.uri.scheme !== 'file' && document.uri.scheme !== 'untitled')) return;
    const opened = performance.now();
    const first = !loading;
    const m = await ensureModel();
    if (!m || document.isClosed) return;
    try {
      await m.ready(document.languageId);
    } catch (err) {
      log.error(`annotations: could not load the C/C++ grammar: ${err instanceof Error ? err.message : String(err)}`);
      return;
    }
    if (document.isClosed) return;
    const cachedBefore = m.cachedOpens;
    try {
      m.open(document.uri.toString(), document.languageId, document.getText(), document.version);
    } catch (err) {
      log.error(`annotations: could not parse ${document.uri.fsPath}: ${err instanceof Error ? err.message : String(err)}`);
      return;
    }
    changed.fire();
    refreshDocument(document);
    // Read by test/bench/startup.ts: how long the extension's part of a first CodeLens takes.
    const how = m.cachedOpens > cachedBefore ? 'from the kept scan' : first ? 'first of the session: grammars and runs loaded, parsed, scanned' : 'parsed and scanned';
    log.info(`annotations: ${document.uri.path.split('/').pop()} (${document.lineCount} lines) annotated in ${Math.round(performance.now() - opened)} ms (${how})`);
  };

  const reparseSoon = (document: vscode.TextDocument): void => {
    const uri = document.uri.toString();
    clearTimeout(timers.get(uri));
    timers.set(
      uri,
      setTimeout(() => {
        timers.delete(uri);
        if (document.isClosed || !model?.has(uri)) return;
        try {
          model.reparse(uri, document.getText(), document.version);
        } catch (err) {
          log.error(`annotations: could not re-parse ${document.uri.fsPath}: ${err instanceof Error ? err.message : String(err)}`);
          return;
        }
        changed.fire();
        refreshDocument(document);
        // Other open documents may call a wrapper this edit made or removed.
        const others = model.refreshCallers();
        if (others.length > 0) refreshUris(others);
      }, REPARSE_DELAY_MS),
    );
  };

  // Providers.
  const getModel = (): AnnotationModel | undefined => model;
  scope.add(vscode.languages.registerHoverProvider(SELECTOR, new AnnotationHoverProvider(getModel, observed)));
  scope.add(
    vscode.languages.registerCodeLensProvider(SELECTOR, new AnnotationCodeLensProvider(getModel, () => settings.codeLens, changed.event, observed)),
  );
  // "plan this reshape" over a function that creates groups in a loop or tears down and creates them.
  registerPlanLens(env, getModel, store, changed.event);
  scope.add(
    vscode.languages.registerCodeActionsProvider(SELECTOR, new AnnotationQuickFixes(getModel, () => settings.diagnostics), {
      providedCodeActionKinds: [vscode.CodeActionKind.QuickFix],
    }),
  );

  // Documents.
  scope.add(vscode.workspace.onDidOpenTextDocument((d) => void openDocument(d)));
  scope.add(
    vscode.workspace.onDidChangeTextDocument((e) => {
      const uri = e.document.uri.toString();
      if (!model?.has(uri) || e.contentChanges.length === 0) return;
      model.edit(uri, e.contentChanges);
      reparseSoon(e.document);
    }),
  );
  scope.add(
    vscode.workspace.onDidCloseTextDocument((d) => {
      const uri = d.uri.toString();
      clearTimeout(timers.get(uri));
      timers.delete(uri);
      model?.close(uri);
      traces.forget(uri);
      diagnostics.delete(d.uri);
    }),
  );
  scope.add(
    vscode.window.onDidChangeVisibleTextEditors((editors) =>
      editors.forEach((e) => model?.has(e.document.uri.toString()) && decorations.update(e, model, settings.decorations, settings, observed(e.document))),
    ),
  );
  for (const d of vscode.workspace.textDocuments) void openDocument(d);

  // Settings.
  scope.add(
    vscode.workspace.onDidChangeConfiguration((e) => {
      if (!e.affectsConfiguration('commcost')) return;
      settings = readSettingsReported(log);
      refreshAll();
    }),
  );

  // Run folders: a new measured run (e.g. saved by the Measure command) becomes the active profile.
  let reloadTimer: NodeJS.Timeout | undefined;
  let createdPath: string | undefined;
  scope.add({ dispose: () => clearTimeout(reloadTimer) });
  const reloadSoon = (created?: vscode.Uri): void => {
    if (!profilesLoaded && !loading) return;
    if (created) createdPath = created.fsPath;
    clearTimeout(reloadTimer);
    reloadTimer = setTimeout(() => {
      const path = createdPath;
      createdPath = undefined;
      void reloadProfiles(path);
    }, RELOAD_DELAY_MS);
  };
  const watch = (pattern: vscode.RelativePattern): void => {
    const w = scope.add(vscode.workspace.createFileSystemWatcher(pattern));
    scope.add(w.onDidCreate((u) => reloadSoon(u)));
    scope.add(w.onDidChange(() => reloadSoon()));
    scope.add(w.onDidDelete(() => reloadSoon()));
  };
  for (const f of vscode.workspace.workspaceFolders ?? []) watch(new vscode.RelativePattern(f, '.commcost/runs/*.json'));
  watch(new vscode.RelativePattern(extension.globalStorageUri, 'runs/*.json'));
  scope.add(vscode.workspace.onDidChangeWorkspaceFolders(() => reloadSoon()));
  scope.add(traces.onDidChange(() => refreshAll()));

  // Commands behind the status bar, the CodeLens and the hover links. Arguments are checked:
  // command URIs can be written by anyone who can put Markdown in front of the user.
  scope.add(
    vscode.commands.registerCommand('commcost.selectProfile', async () => {
      if (!profilesLoaded) await reloadProfiles();
      await traces.ensureLoaded();
      const key = await pickProfile(store, traces.store);
      // A trace: it answers traced lines first (the runs' choice is left as it is).
      const t = key === CLEAR_TRACE ? undefined : key ? traces.store.byKey(key) : undefined;
      if (key === CLEAR_TRACE || t) return traces.choose(t?.path);
      const p = key ? store.byKey(key) : undefined;
      if (!p) return;
      store.setActiveKey(p.key);
      await extension.workspaceState.update(CHOSEN_PROFILE_KEY, p.path);
      refreshAll();
    }),
  );
  // commcost.openRun (links carry a profile key) is registered with the palette commands (extension/commands.ts).
  const experiments = new Set(mappedExperiments());
  scope.add(
    vscode.commands.registerCommand('commcost.remeasure', async (key: unknown, experiment: unknown) => {
      if (typeof experiment !== 'string' || !experiments.has(experiment)) return;
      const p = typeof key === 'string' ? store.byKey(key) : undefined;
      if (!(EXPERIMENT_IDS as readonly string[]).includes(experiment)) {
        void vscode.window.showInformationMessage(`commcost: this version cannot measure the ${experiment} experiment yet`);
        return;
      }
      await vscode.commands.executeCommand('commcost.measure', { experiments: [experiment], ...(p ? { host: p.run.host } : {}) });
    }),
  );

  return {
    store,
    rules,
    ensureLoaded: async () => {
      if (!profilesLoaded) await reloadProfiles();
    },
    reload: () => reloadProfiles(),
    setActive: async (key) => {
      const p = store.byKey(key);
      if (!p) return false;
      store.setActiveKey(p.key);
      await extension.workspaceState.update(CHOSEN_PROFILE_KEY, p.path);
      refreshAll();
      return true;
    },
    folders,
    onDidChange: runsChanged.event,
    traces,
  };
}

function readSettingsReported(log: OutputLog): AnnotationSettings {
  try {
    const config = vscode.workspace.getConfiguration('commcost');
    return readAnnotationSettings((key) => config.get(key));
  } catch (err) {
    const message = err instanceof SettingsError ? err.message : String(err);
    log.error(message);
    void vscode.window.showErrorMessage(`commcost: ${message}`);
    return ANNOTATION_DEFAULTS;
  }
}
