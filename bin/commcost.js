#!/usr/bin/env node
// The `commcost` CLI: the bundle is built by `npm run build` (npm start and npm test build it).
require('../dist/cli.js');
