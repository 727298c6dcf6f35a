#!/usr/bin/env node
// The `commcost` CLI: the bundle is built by `npm run build` (npm start and npm test build it).
// A Ctrl-C while the bundle loads is remembered here and handed to the CLI (cli/main.ts), which
// then cancels the measurement before it starts instead of losing the signal.
const early = { count: 0, listener: () => (early.count += 1) };
globalThis.__commcostEarlySigint = early;
process.on('SIGINT', early.listener);
require('../dist/cli.js');
