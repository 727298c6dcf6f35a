// One build script for every part: esbuild bundles (type checking is separate: `npm run typecheck`)
// and the native addon + simulated NCCL. Flags: --watch, --production.
import * as esbuild from 'esbuild';
import { copyFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, sep } from 'node:path';
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
/** Last statement of dist/extension.js: when its evaluation ended (the wait for the extension host to call activate() starts here). */
const LOAD_END_MARK = 'globalThis.__commcostLoadEnd = performance.now();';

/** Libraries the extension loads from dist/vendor/<name>.js (built below) instead of inlining them. */
const VENDOR = ['ssh2', 'ajv', 'web-tree-sitter'];
/** A vendor bundle's entry: the package, or the file to bundle (web-tree-sitter's CommonJS build, as below). */
const vendorEntry = (name) => (name === 'web-tree-sitter' ? './node_modules/web-tree-sitter/tree-sitter.cjs' : name);
/**
 * Our own modules bundled on their own beside dist/extension.js and required from it at first use,
 * so that activation evaluates none of them: the Measure command (the engine, SSH, deploy, the
 * experiment picker), Trace Python File (the trace engine) and the experiment picker's facts
 * (readings/experimentInfo.ts, with the catalogue's table). A module such a bundle shares with
 * dist/extension.js is not copied: it resolves to the one instance dist/extension.js holds
 * (`__shared`, see {@link lazyPlugin}), so module state and classes (instanceof) stay one. A module
 * that several lazy bundles hold and dist/extension.js does not is copied into each: it must be
 * listed in {@link LAZY_COPIES_OK} (stateless), or the build fails.
 */
const LAZY = [
  ['readings/experimentInfo.ts', 'experimentInfo'],
  ['extension/measureCommand.ts', 'measureCommand'],
  ['extension/traceCommand.ts', 'traceCommand'],
  ['extension/annotations/annotationEngine.ts', 'annotationEngine'],
];
/** Our modules that may be copied into several lazy bundles: no module state, no class another bundle tests with instanceof. */
const LAZY_COPIES_OK = ['protocol/ncclInitLog.ts', 'client/deploy.ts', 'client/hosts.ts', 'client/knownHosts.ts', 'client/shellQuote.ts', 'client/slurm.ts', 'client/sshSession.ts', 'extension/hostEntries.ts', 'extension/hostKeyPrompt.ts'];
/** The extension's entry: extension/extension.ts plus `__shared`, the modules the lazy bundles take from it (key: path from the root). */
function entryContents(shared) {
  const lines = ["export * from './extension/extension.ts';"];
  shared.forEach((m, i) => lines.push(`import * as shared${i} from ${JSON.stringify(`./${m}`)};`));
  lines.push(`export const __shared = { ${shared.map((m, i) => `${JSON.stringify(m)}: shared${i}`).join(', ')} };`);
  return lines.join('\n');
}
/**
 * esbuild plugin of a lazy bundle: an import of a module of `shared` (path from the root) becomes
 * the instance dist/extension.js exports in `__shared` (already loaded: the extension host loaded it
 * first), marked as an ES module so that named and default imports read through to it.
 */
function lazyPlugin(shared, self) {
  const set = new Set(shared);
  return {
    name: 'lazy-shared',
    setup: (b) => {
      b.onResolve({ filter: /^\.\/extension\.js$/ }, (a) => (a.namespace === 'entry-shared' ? { path: a.path, external: true } : undefined));
      b.onResolve({ filter: /^\.\.?\// }, async (a) => {
        if (a.pluginData?.lazyShared) return undefined;
        const r = await b.resolve(a.path, { resolveDir: a.resolveDir, kind: a.kind, importer: a.importer, pluginData: { lazyShared: true } });
        if (r.errors.length > 0 || r.external) return undefined;
        const rel = relative(root, r.path).split(sep).join('/');
        return set.has(rel) && rel !== self ? { path: rel, namespace: 'entry-shared' } : undefined;
      });
      b.onLoad({ filter: /.*/, namespace: 'entry-shared' }, (a) => ({
        loader: 'js',
        contents: [
          `const entry = require('./extension.js');`,
          `const m = entry.__shared && entry.__shared[${JSON.stringify(a.path)}];`,
          `if (!m) throw new Error(${JSON.stringify(`dist/extension.js does not export ${a.path} (scripts/build.mjs LAZY): rebuild`)});`,
          `Object.defineProperty(exports, '__esModule', { value: true });`,
          `for (const k of Object.keys(m)) Object.defineProperty(exports, k, { enumerable: true, get: () => m[k] });`,
        ].join('\n'),
      }));
    },
  };
}
/**
 * Validators compiled here, at build time, by ajv's standalone code generation: the bare name
 * client code requires → dist/vendor/<file>.js. Compiling the run-file schema at run time costs
 * ~150 ms (~0.9 s in a busy extension host) on the path to the first CodeLens; its precompiled code
 * loads in a few ms. The module carries the SHA-1 of the schema it was made from: the client falls
 * back to compiling with ajv when it differs (client/runFileSchema.ts `precompiledValidator`).
 */
const PRECOMPILED = [{ name: 'commcost-run-file-validator', file: 'run-file-validator', module: './client/runFileSchema.ts', schema: 'runFileJsonSchema', options: 'RUN_FILE_AJV_OPTIONS' }];
/** esbuild plugin: a {@link PRECOMPILED} name resolves to its dist/vendor/ file at run time (every bundle in dist/). */
function precompiledPlugin() {
  return {
    name: 'precompiled',
    setup: (b) => {
      for (const p of PRECOMPILED) b.onResolve({ filter: new RegExp(`^${p.name}$`) }, () => ({ path: `./vendor/${p.file}.js`, external: true }));
    },
  };
}
/** Writes each {@link PRECOMPILED} validator: the schema read from its TypeScript module, ajv's standalone code bundled with ajv's runtime helpers. */
async function buildPrecompiled() {
  const { createHash } = await import('node:crypto');
  const { createRequire } = await import('node:module');
  const { rmSync } = await import('node:fs');
  const require = createRequire(import.meta.url);
  const Ajv = require('ajv').default;
  const standaloneCode = require('ajv/dist/standalone').default;
  for (const p of PRECOMPILED) {
    // The schema object, from the module that defines it (bundled to a temporary CommonJS file).
    const tmp = join(root, 'dist', `.schema-${p.file}.cjs`);
    await esbuild.build({ ...common, stdin: { contents: `export { ${p.schema}, ${p.options} } from ${JSON.stringify(p.module)};`, resolveDir: root, loader: 'ts' }, outfile: tmp, platform: 'node', format: 'cjs', sourcemap: false, plugins: [precompiledPlugin()] });
    let schema, options;
    try {
      ({ [p.schema]: schema, [p.options]: options } = require(tmp));
    } finally {
      rmSync(tmp, { force: true });
    }
    const ajv = new Ajv({ ...options, code: { source: true } });
    const code = standaloneCode(ajv, ajv.compile(schema));
    const hash = createHash('sha1').update(JSON.stringify(schema)).digest('hex');
    await esbuild.build({ ...common, stdin: { contents: `${code}\nmodule.exports.schemaHash = ${JSON.stringify(hash)};\n`, resolveDir: root, loader: 'js' }, outfile: `dist/vendor/${p.file}.js`, platform: 'node', format: 'cjs' });
  }
}
/**
 * esbuild plugin: `ssh2`, `ajv` and `web-tree-sitter` resolve to the vendor bundles, and (`lazy`,
 * the extension's bundles) {@link LAZY} modules to theirs; external to the one being built.
 */
function vendorPlugin({ lazy = true } = {}) {
  const filter = new RegExp(`^(${VENDOR.join('|')})$`);
  return {
    name: 'vendor',
    setup: (b) => {
      // Through a CommonJS shim, so that a dynamic import() of one (web-tree-sitter) becomes a lazy
      // require of dist/vendor/<name>.js too, not an ESM import() of a CommonJS file at run time.
      b.onResolve({ filter }, (a) => ({ path: a.path, namespace: 'vendor-shim' }));
      b.onLoad({ filter: /.*/, namespace: 'vendor-shim' }, (a) => ({ contents: `module.exports = require(${JSON.stringify(`./vendor/${a.path}.js`)});`, loader: 'js', resolveDir: root }));
      b.onResolve({ filter: /^\.\/vendor\// }, (a) => ({ path: a.path, external: true }));
      // From any folder (./name, ../name, ../../readings/name): every bundle lies flat in dist/, beside ./name.js.
      if (lazy) for (const [, name] of LAZY) b.onResolve({ filter: new RegExp(`^\\.\\.?/([\\w.-]+/)*${name}$`) }, () => ({ path: `./${name}.js`, external: true }));
    },
  };
}

/** @type {esbuild.BuildOptions[]} */
const bundles = [
  ...VENDOR.map((name) => ({ entryPoints: [vendorEntry(name)], outfile: `dist/vendor/${name}.js`, platform: 'node', format: 'cjs' })),
  // The VS Code extension host side.
  // web-tree-sitter's CommonJS build: its ESM build needs import.meta.url, which a cjs bundle lacks.
  // ssh2, ajv and web-tree-sitter are bundles of their own beside it (dist/vendor/), required only by
  // the Measure command, the first run file read and the first source file: activation reads and
  // compiles less than half the code.
  // The headless CLI on the same engine (`commcost scan` parses with web-tree-sitter: its CommonJS build, as above).
  // Its libraries are the extension's vendor bundles (dist/vendor/), required only by the verb that
  // needs them: each verb's module is imported inside its action (cli/program.ts), so `--version`,
  // `report`, `scan` and `plan` never evaluate ssh2, and dist/cli.js stays small to read and compile
  // (test/unit/cliStart.test.ts; the bench's cli.version row: its start against `node -e 0`).
  { entryPoints: ['cli/main.ts'], outfile: 'dist/cli.js', platform: 'node', format: 'cjs', plugins: [vendorPlugin({ lazy: false }), precompiledPlugin()] },
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

/**
 * A library module, or esbuild's own (`<ns>:…`): never one of ours. A linked node_modules (the
 * mutants' scratch copy) shows in the metafile by its real path, e.g. ../../repo/node_modules/….
 */
const isLibrary = (m) => m.startsWith('node_modules/') || m.includes('/node_modules/') || m.includes(':');

/** dist/extension.js (banner and footer: the load marks extension.ts logs) and its {@link LAZY} bundles. */
const extensionBundle = { entryPoints: ['extension/extension.ts'], outfile: 'dist/extension.js', platform: 'node', format: 'cjs', external: ['vscode'], banner: { js: LOAD_MARK }, footer: { js: LOAD_END_MARK } };
const lazyBundle = ([entry, name]) => ({ entryPoints: [entry], outfile: `dist/${name}.js`, platform: 'node', format: 'cjs', external: ['vscode'] });
/**
 * Builds dist/extension.js and the lazy bundles: first without writing, to learn which modules they
 * share (esbuild metafiles), then for real with those modules exported by the entry and taken from it.
 * @throws Error when a module of ours is copied into several lazy bundles and is not in LAZY_COPIES_OK
 */
async function buildExtension() {
  const opts = (b, plugins) => ({ ...common, ...b, external: [...common.external, ...(b.external ?? [])], plugins: [...plugins, vendorPlugin(), precompiledPlugin()] });
  const inputs = async (b) => Object.keys((await esbuild.build({ ...opts(b, []), write: false, metafile: true })).metafile.inputs);
  const entryIn = new Set(await inputs(extensionBundle));
  const lazyIn = await Promise.all(LAZY.map((l) => inputs(lazyBundle(l))));
  const shared = [...new Set(lazyIn.flat().filter((m) => entryIn.has(m) && !isLibrary(m)))].sort();
  const copies = new Map();
  lazyIn.forEach((ins, i) => ins.filter((m) => !entryIn.has(m) && !isLibrary(m) && m !== LAZY[i][0]).forEach((m) => copies.set(m, [...(copies.get(m) ?? []), LAZY[i][1]])));
  const bad = [...copies].filter(([m, by]) => by.length > 1 && !LAZY_COPIES_OK.includes(m));
  if (bad.length > 0)
    throw new Error(`build: ${bad.map(([m, by]) => `${m} (in ${by.join(', ')})`).join('; ')} would be copied into several lazy bundles: list it in LAZY_COPIES_OK if it holds no state, or import it from extension/extension.ts's side (scripts/build.mjs LAZY)`);
  const { entryPoints, ...entry } = extensionBundle;
  await esbuild.build({ ...opts(entry, []), stdin: { contents: entryContents(shared), resolveDir: root, sourcefile: entryPoints[0].replace(/\.ts$/, '.entry.ts'), loader: 'ts' } });
  await Promise.all(LAZY.map((l) => esbuild.build(opts(lazyBundle(l), [lazyPlugin(shared, l[0])]))));
}

const present = bundles.filter((b) => VENDOR.map(vendorEntry).includes(b.entryPoints[0]) || existsSync(join(root, b.entryPoints[0])));
if (watch) {
  for (const b of present) {
    const ctx = await esbuild.context({ ...common, ...b, external: [...common.external, ...(b.external ?? [])] });
    await ctx.watch();
  }
  // The extension and its lazy bundles build together (buildExtension): a change to any of their inputs rebuilds all of them.
  const ext = await esbuild.context({
    ...common,
    entryPoints: [extensionBundle.entryPoints[0], ...LAZY.map(([entry]) => entry)],
    outdir: join(root, 'dist', '.watch'),
    write: false,
    external: [...common.external, 'vscode'],
    plugins: [vendorPlugin(), precompiledPlugin(), { name: 'rebuild-extension', setup: (b) => b.onEnd(() => buildExtension().catch((e) => console.error(e.message))) }],
  });
  await ext.watch();
  console.log('watching', [...present.map((b) => b.outfile), extensionBundle.outfile, ...LAZY.map(([, name]) => `dist/${name}.js`)].join(', '));
} else {
  await Promise.all([
    ...present.map((b) => esbuild.build({ ...common, ...b, external: [...common.external, ...(b.external ?? [])] })),
    buildExtension(),
    buildPrecompiled(),
  ]);
  // The tree-sitter runtime and grammars the annotations load (sites/callSites.ts).
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
