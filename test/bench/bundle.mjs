#!/usr/bin/env node
// Bundles the bench for a copy of the repository without node_modules (a GPU host): dist/bench.js,
// with web-tree-sitter, ajv and the precompiled run-file validator taken at run time from
// dist/vendor/ of the working directory (the repository root, where the bench runs), as the
// product's bundles take them (scripts/build.mjs), and the first-file child made ahead
// (dist/firstFile.js, test/bench/startup.ts --prebuild-first-file).
//   node test/bench/bundle.mjs && node dist/bench.js        # from the repository root
import { execFileSync } from 'node:child_process';
import * as esbuild from 'esbuild';

const VENDOR = { 'web-tree-sitter': 'web-tree-sitter.js', ajv: 'ajv.js', 'commcost-run-file-validator': 'run-file-validator.js' };
await esbuild.build({
  entryPoints: ['test/bench/bench.ts'],
  outfile: 'dist/bench.js',
  bundle: true,
  platform: 'node',
  format: 'cjs',
  target: 'node18',
  logLevel: 'warning',
  external: ['vscode', 'esbuild', 'playwright-core'],
  plugins: [
    {
      name: 'vendor',
      setup: (b) => {
        b.onResolve({ filter: /^(web-tree-sitter|ajv|commcost-run-file-validator)$/ }, (a) => ({ path: a.path, namespace: 'vendor-shim' }));
        b.onResolve({ filter: /[\\/]dist[\\/]vendor[\\/]/ }, (a) => ({ path: a.path, external: true }));
        b.onLoad({ filter: /.*/, namespace: 'vendor-shim' }, (a) => ({
          contents: `module.exports = require(require('node:path').join(process.cwd(), 'dist', 'vendor', ${JSON.stringify(VENDOR[a.path])}));`,
          loader: 'js',
        }));
      },
    },
  ],
});
execFileSync(process.execPath, ['--import', 'tsx', 'test/bench/startup.ts', '--prebuild-first-file'], { stdio: 'inherit' });
console.log('wrote dist/bench.js');
