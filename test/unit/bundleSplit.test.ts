// The extension's bundles as scripts/build.mjs splits them: dist/extension.js (what activation
// evaluates) holds none of the lazy bundles' own modules (the Measure command's engine, SSH, the
// trace engine), and a lazy bundle holds no copy of a module of dist/extension.js: it takes that
// module's one instance from dist/extension.js's `__shared`. Checked on the built files (esbuild's
// `// <path>` module comments) and by loading them in Node with a stand-in `vscode`.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';

const root = join(__dirname, '..', '..');
const dist = join(root, 'dist');
const LAZY = ['measureCommand', 'traceCommand', 'experimentInfo'];
const skip = [join(dist, 'extension.js'), ...LAZY.map((n) => join(dist, `${n}.js`))].find((f) => !existsSync(f));

/** Our modules (not node_modules, not shims) a bundle holds, from esbuild's `// <path>` comments. */
function ownModules(file: string): Set<string> {
  const out = new Set<string>();
  for (const m of readFileSync(file, 'utf8').matchAll(/^\/\/ ((?:client|extension|protocol|cli|remote-agent|webview)\/[\w./-]+\.ts)$/gm)) out.add(m[1]!);
  return out;
}

describe('extension bundles', { skip: skip ? `${skip} not built (node scripts/build.mjs)` : false }, () => {
  test('activation evaluates none of the lazy modules; no lazy bundle copies a module of the entry', () => {
    const entry = ownModules(join(dist, 'extension.js'));
    assert.ok(entry.has('extension/extension.ts') && entry.size > 20, `unexpected entry modules: ${[...entry].slice(0, 5).join(', ')}`);
    for (const heavy of ['extension/measureCommand.ts', 'extension/traceCommand.ts', 'client/sshSession.ts', 'client/trace/merge.ts', 'client/runSession.ts', 'client/agentStart.ts', 'client/agentDrive.ts', 'client/nodeAgents.ts'])
      assert.ok(!entry.has(heavy), `dist/extension.js holds ${heavy}: activation evaluates it`);
    for (const name of LAZY) {
      const text = readFileSync(join(dist, `${name}.js`), 'utf8');
      const copied = [...ownModules(join(dist, `${name}.js`))].filter((m) => entry.has(m));
      assert.deepEqual(copied, [], `dist/${name}.js copies ${copied.join(', ')} of dist/extension.js (a second instance)`);
      if (name !== 'experimentInfo') assert.match(text, /^\/\/ entry-shared:client\/errors\.ts$/m, `dist/${name}.js does not take client/errors.ts from the entry`);
    }
  });

  test('the lazy bundles load after the entry and reach its instances', () => {
    const script = `
      const Module = require('module');
      const h = { get: (t, p) => (p === 'then' || typeof p === 'symbol' ? undefined : p in t.o ? t.o[p] : mk()), apply: () => mk(), construct: () => mk() };
      function mk(o = {}) { const f = function () {}; f.o = o; return new Proxy(f, h); }
      const vscode = mk({ workspace: mk({ getConfiguration: () => ({ get: () => undefined }), workspaceFolders: undefined, textDocuments: [] }), window: mk({ visibleTextEditors: [] }) });
      const resolve = Module._resolveFilename;
      Module._resolveFilename = function (r, ...a) { return r === 'vscode' ? 'vscode' : resolve.call(this, r, ...a); };
      require.cache.vscode = { id: 'vscode', filename: 'vscode', loaded: true, exports: vscode };
      const entry = require(${JSON.stringify(join(dist, 'extension.js'))});
      const measure = require(${JSON.stringify(join(dist, 'measureCommand.js'))});
      const trace = require(${JSON.stringify(join(dist, 'traceCommand.js'))});
      const Errors = entry.__shared['client/errors.ts'];
      process.stdout.write(JSON.stringify({ activate: typeof entry.activate, measure: typeof measure.measureCommand, trace: typeof trace.traceFileCommand, errors: typeof Errors.CommcostError }));
      process.exit(0);`;
    const r = JSON.parse(execFileSync(process.execPath, ['-e', script], { encoding: 'utf8', timeout: 60_000 }));
    assert.deepEqual(r, { activate: 'function', measure: 'function', trace: 'function', errors: 'function' });
  });
});
