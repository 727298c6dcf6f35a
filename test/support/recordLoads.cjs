// Preloaded with `node --require` (test/unit/cliStart.test.ts): records every name given to
// Module._load — a package, a relative vendor file, a node: module — and writes them as a JSON
// array to $COMMCOST_RECORD_LOADS when the process exits.
'use strict';
const Module = require('node:module');
const { writeFileSync } = require('node:fs');
const seen = [];
const load = Module._load;
Module._load = function (request, ...rest) {
  seen.push(String(request));
  return load.call(this, request, ...rest);
};
process.on('exit', () => writeFileSync(process.env.COMMCOST_RECORD_LOADS, JSON.stringify(seen)));
