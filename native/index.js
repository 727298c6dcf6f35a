'use strict';
// Loader of the commcost addon (types: index.d.ts). Tries, in order: $COMMCOST_NATIVE (a file),
// the prebuilt <bundle>/native/linux-<arch>/commcost.node, the on-host build
// <bundle>/native/build/linux-<arch>/ (remote-agent/addonBuild.ts), commcost.node next to the
// running bundle, <bundle>/native/, and dist/native/ of this checkout.
// Throws an error naming every path tried when none loads.
const path = require('node:path');

function candidates() {
  const list = [];
  if (process.env.COMMCOST_NATIVE) list.push(path.resolve(process.env.COMMCOST_NATIVE));
  const mainFile = require.main && require.main.filename;
  const bundleDir = mainFile ? path.dirname(mainFile) : undefined;
  const platformArch = `${process.platform}-${process.arch}`;
  for (const dir of [bundleDir, __dirname]) {
    if (!dir) continue;
    list.push(path.join(dir, 'native', platformArch, 'commcost.node'));
    list.push(path.join(dir, 'native', 'build', platformArch, 'commcost.node'));
  }
  for (const dir of [__dirname, bundleDir]) {
    if (!dir) continue;
    list.push(path.join(dir, 'commcost.node'));
    list.push(path.join(dir, 'native', 'commcost.node'));
    list.push(path.join(dir, 'dist', 'native', 'commcost.node'));
    list.push(path.join(dir, '..', 'dist', 'native', 'commcost.node'));
  }
  return [...new Set(list)];
}

function loadBinding() {
  const tried = [];
  for (const file of candidates()) {
    try {
      return require(file);
    } catch (err) {
      const reason = err && err.code === 'MODULE_NOT_FOUND' ? 'not found' : String((err && err.message) || err);
      tried.push(`  ${file}: ${reason}`);
    }
  }
  const err = new Error(
    'cannot load the commcost native addon (commcost.node). Build it with `node native/build.mjs` ' +
      '(needs a C++17 compiler) or set COMMCOST_NATIVE to its path. Tried:\n' + tried.join('\n'),
  );
  err.code = 'LOAD';
  err.call = 'require';
  err.where = 'native/index.js';
  throw err;
}

module.exports = loadBinding();
