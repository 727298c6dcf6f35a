// One build script for every part: esbuild bundles (type checking is separate: `npm run typecheck`)
// and the native addon + simulated NCCL. Flags: --watch, --production.
import * as esbuild from 'esbuild';
import { copyFileSync, existsSync, mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const watch = process.argv.includes('--watch');
const production = process.argv.includes('--production');

/** @type {esbuild.BuildOptions[]} */
const bundles = [
  // The VS Code extension host side.
  // web-tree-sitter's CommonJS build: its ESM build needs import.meta.url, which a cjs bundle lacks.
  { entryPoints: ['extension/extension.ts'], outfile: 'dist/extension.js', platform: 'node', format: 'cjs', external: ['vscode'], alias: { 'web-tree-sitter': './node_modules/web-tree-sitter/tree-sitter.cjs' } },
  // The headless CLI on the same engine (`commcost scan` parses with web-tree-sitter: its CommonJS build, as above).
  { entryPoints: ['cli/main.ts'], outfile: 'dist/cli.js', platform: 'node', format: 'cjs', alias: { 'web-tree-sitter': './node_modules/web-tree-sitter/tree-sitter.cjs' } },
  // The agent deployed to GPU hosts: one file, Node >= 18, no dependencies.
  { entryPoints: ['remote-agent/main.ts'], outfile: 'dist/agent.js', platform: 'node', format: 'cjs', target: 'node18' },
  // The webview app (also inlined into the HTML report).
  { entryPoints: ['webview/main.ts'], outfile: 'dist/webview.js', platform: 'browser', format: 'iife', target: 'es2022' },
];

const common = {
  absWorkingDir: root,
  bundle: true,
  sourcemap: production ? false : 'linked',
  minify: production,
  logLevel: 'warning',
  target: 'node18',
  // ssh2's optional native speed-ups are loaded in try/catch; the pure-JS paths are used.
  external: ['cpu-features', '*.node'],
};

const present = bundles.filter((b) => existsSync(join(root, b.entryPoints[0])));
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
  const native = join(root, 'native/build.mjs');
  if (existsSync(native)) {
    const { buildNative } = await import(native);
    // --production (what `npm run package` ships) also cross-compiles the prebuilt addon of every
    // architecture in dist/native/linux-<arch>/ (native/build.mjs).
    await buildNative({ outDir: join(root, 'dist/native'), prebuilt: production });
  }
}
