// One build script for every part: esbuild bundles (type checking is separate: `npm run typecheck`)
// and the native addon + simulated NCCL. Flags: --watch, --production.
import * as esbuild from 'esbuild';
import { copyFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const watch = process.argv.includes('--watch');
const production = process.argv.includes('--production');

/** The host name of the bundled sample runs (extension/samples.ts SAMPLE_HOST says the same). */
const SAMPLE_HOST = 'SAMPLE from 2×H200';
/** docs/results runs bundled as samples → their name in dist/samples/. */
const SAMPLE_RUNS = [
  ['docs/results/h200x2-2026-12-01/h200x2-nccl2.28.9-wheel.json', 'sample-2xH200-nccl2.28.9.json'],
  ['docs/results/h200x2-2026-12-01/h200x2-nccl2.30.7-source.json', 'sample-2xH200-nccl2.30.7.json'],
];

/** First statement of dist/extension.js: when the extension host began to evaluate it (extension.ts logs activation from it). */
const LOAD_MARK = 'globalThis.__commcostLoadStart = performance.now();';

/** Libraries the extension loads from dist/vendor/<name>.js (built below) instead of inlining them. */
const VENDOR = ['ssh2', 'ajv', 'web-tree-sitter'];
/** A vendor bundle's entry: the package, or the file to bundle (web-tree-sitter's CommonJS build, as below). */
const vendorEntry = (name) => (name === 'web-tree-sitter' ? './node_modules/web-tree-sitter/tree-sitter.cjs' : name);
/**
 * Our own modules bundled on their own beside dist/extension.js and required from it at first use:
 * the experiment picker's facts (extension/experimentInfo.ts) carry the agent's experiment modules
 * (~80 KB) that only the Measure command needs. Each must be stateless (it is a second copy).
 */
const LAZY = [['extension/experimentInfo.ts', 'experimentInfo']];
/** esbuild plugin: `ssh2` and `ajv` resolve to the vendor bundles, {@link LAZY} modules to theirs; external to the one being built. */
function vendorPlugin() {
  const filter = new RegExp(`^(${VENDOR.join('|')})$`);
  return {
    name: 'vendor',
    setup: (b) => {
      // Through a CommonJS shim, so that a dynamic import() of one (web-tree-sitter) becomes a lazy
      // require of dist/vendor/<name>.js too, not an ESM import() of a CommonJS file at run time.
      b.onResolve({ filter }, (a) => ({ path: a.path, namespace: 'vendor-shim' }));
      b.onLoad({ filter: /.*/, namespace: 'vendor-shim' }, (a) => ({ contents: `module.exports = require(${JSON.stringify(`./vendor/${a.path}.js`)});`, loader: 'js', resolveDir: root }));
      b.onResolve({ filter: /^\.\/vendor\// }, (a) => ({ path: a.path, external: true }));
      for (const [, name] of LAZY) b.onResolve({ filter: new RegExp(`^\\./${name}$`) }, () => ({ path: `./${name}.js`, external: true }));
    },
  };
}

/** @type {esbuild.BuildOptions[]} */
const bundles = [
  ...VENDOR.map((name) => ({ entryPoints: [vendorEntry(name)], outfile: `dist/vendor/${name}.js`, platform: 'node', format: 'cjs' })),
  ...LAZY.map(([entry, name]) => ({ entryPoints: [entry], outfile: `dist/${name}.js`, platform: 'node', format: 'cjs' })),
  // The VS Code extension host side.
  // web-tree-sitter's CommonJS build: its ESM build needs import.meta.url, which a cjs bundle lacks.
  // ssh2, ajv and web-tree-sitter are bundles of their own beside it (dist/vendor/), required only by
  // the Measure command, the first run file read and the first source file: activation reads and
  // compiles less than half the code.
  { entryPoints: ['extension/extension.ts'], outfile: 'dist/extension.js', platform: 'node', format: 'cjs', external: ['vscode'], plugins: [vendorPlugin()], banner: { js: LOAD_MARK } },
  // The headless CLI on the same engine (`commcost scan` parses with web-tree-sitter: its CommonJS build, as above).
  { entryPoints: ['cli/main.ts'], outfile: 'dist/cli.js', platform: 'node', format: 'cjs', alias: { 'web-tree-sitter': './node_modules/web-tree-sitter/tree-sitter.cjs' } },
  // The agent deployed to GPU hosts: one file, Node >= 18, no dependencies.
  { entryPoints: ['remote-agent/main.ts'], outfile: 'dist/agent.js', platform: 'node', format: 'cjs', target: 'node18' },
  // The webview app (also inlined into the HTML report).
  { entryPoints: ['webview/main.ts'], outfile: 'dist/webview.js', platform: 'browser', format: 'iife', target: 'es2022' },
  // The trace report of `commcost trace --html` (timeline SVG and tables; no chart library), inlined by client/trace/htmlTrace.ts.
  { entryPoints: ['webview/traceMain.ts'], outfile: 'dist/traceReport.js', platform: 'browser', format: 'iife', target: 'es2022' },
];

const common = {
  absWorkingDir: root,
  bundle: true,
  sourcemap: production ? false : 'linked',
  minify: production,
  logLevel: 'warning',
  target: 'node18',
  // ssh2's optional native speed-ups are loaded in try/catch; the pure-JS paths are used (its
  // sshcrypto.node is a NAN addon for one Node ABI, not VS Code's). Small SFTP messages stay fast
  // through TCP_NODELAY (client/sshSession.ts; test/integration/sshUpload.test.ts runs this bundle).
  external: ['cpu-features', '*.node'],
};

const present = bundles.filter((b) => VENDOR.map(vendorEntry).includes(b.entryPoints[0]) || existsSync(join(root, b.entryPoints[0])));
if (watch) {
  for (const b of present) {
    const ctx = await esbuild.context({ ...common, ...b, external: [...common.external, ...(b.external ?? [])] });
    await ctx.watch();
  }
  console.log('watching', present.map((b) => b.outfile).join(', '));
} else {
  await Promise.all(
    present.map((b) => esbuild.build({ ...common, ...b, external: [...common.external, ...(b.external ?? [])] })),
  );
  // The tree-sitter runtime and grammars the annotations load (extension/annotations/callSites.ts).
  mkdirSync(join(root, 'dist/grammars'), { recursive: true });
  for (const wasm of ['web-tree-sitter/tree-sitter.wasm', 'tree-sitter-python/tree-sitter-python.wasm', 'tree-sitter-cpp/tree-sitter-cpp.wasm']) {
    copyFileSync(join(root, 'node_modules', wasm), join(root, 'dist/grammars', wasm.split('/')[1]));
  }
  // The sample runs offered to a workspace without runs (extension/samples.ts): real 2×H200 runs from
  // docs/results, their host renamed so that every label (status bar, hovers, Runs view) says SAMPLE.
  mkdirSync(join(root, 'dist/samples'), { recursive: true });
  for (const [from, to] of SAMPLE_RUNS) {
    const run = JSON.parse(readFileSync(join(root, from), 'utf8'));
    writeFileSync(join(root, 'dist/samples', to), JSON.stringify({ ...run, host: SAMPLE_HOST }));
  }
  // The packaged README (npm run package: vsce --readme-path dist/readme/README.md): README.vsix.md
  // with its images inlined as data: URIs. VS Code's extension details page loads images only from
  // https: and data: (a relative path in the package shows broken), and this repository has no
  // public https address to point at.
  mkdirSync(join(root, 'dist/readme'), { recursive: true });
  const readme = readFileSync(join(root, 'README.vsix.md'), 'utf8').replace(/!\[([^\]]*)\]\((docs\/images\/[\w.-]+\.png)\)/g, (_, alt, file) =>
    `![${alt}](data:image/png;base64,${readFileSync(join(root, file)).toString('base64')})`,
  );
  writeFileSync(join(root, 'dist/readme/README.md'), readme);
  const native = join(root, 'native/build.mjs');
  if (existsSync(native)) {
    const { buildNative } = await import(native);
    // --production (what `npm run package` ships) also cross-compiles the prebuilt addon of every
    // architecture in dist/native/linux-<arch>/ (native/build.mjs).
    await buildNative({ outDir: join(root, 'dist/native'), prebuilt: production });
  }
}
