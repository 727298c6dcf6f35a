// Loads the built extension (argv[2]) in a fresh Node process as the extension host would, with a
// stand-in `vscode` module whose every API returns another stand-in, calls activate(), and prints
// {"load": ms, "activate": ms}: the bundle's evaluation and activate() itself. Used by startup.ts.
const Module = require('module');
const handler = {
  get(t, p) {
    if (p === 'then' || typeof p === 'symbol') return undefined;
    if (p in t.o) return t.o[p];
    return mk();
  },
  set(t, p, v) {
    t.o[p] = v;
    return true;
  },
  apply() {
    return mk();
  },
  construct() {
    return mk();
  },
};
function mk(o = {}) {
  const f = function () {};
  f.o = o;
  return new Proxy(f, handler);
}
const names = ['window', 'workspace', 'languages', 'commands', 'env', 'extensions', 'Uri', 'EventEmitter', 'Disposable', 'RelativePattern', 'StatusBarAlignment', 'CodeActionKind', 'ProgressLocation', 'ThemeColor', 'ThemeIcon', 'Range', 'Position', 'Selection', 'MarkdownString', 'CodeLens', 'Hover', 'Diagnostic', 'DiagnosticSeverity', 'CodeAction', 'TreeItem', 'TreeItemCollapsibleState', 'ViewColumn', 'OverviewRulerLane', 'DecorationRangeBehavior', 'l10n', 'ConfigurationTarget', 'FileType', 'QuickPickItemKind'];
const root = mk({
  workspace: mk({ getConfiguration: () => ({ get: () => undefined }), workspaceFolders: undefined, textDocuments: [], isTrusted: true }),
  window: mk({ visibleTextEditors: [] }),
});
const vscode = {};
for (const n of names) vscode[n] = root[n];
const resolve = Module._resolveFilename;
Module._resolveFilename = function (request, ...rest) {
  return request === 'vscode' ? 'vscode' : resolve.call(this, request, ...rest);
};
require.cache.vscode = { id: 'vscode', filename: 'vscode', loaded: true, exports: vscode };
const t0 = performance.now();
const ext = require(process.argv[2]);
const t1 = performance.now();
ext.activate(mk({ subscriptions: [], extensionPath: '/nonexistent', globalState: mk({ get: () => undefined }), workspaceState: mk({ get: () => undefined }) }));
const t2 = performance.now();
process.stdout.write(JSON.stringify({ load: t1 - t0, activate: t2 - t1 }) + '\n');
// Timers the extension set (reload debounce…) must not keep the process: the figures are taken.
process.exit(0);
