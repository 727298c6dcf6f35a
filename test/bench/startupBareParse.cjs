// The anchor of the first-file rows (startup.ts): a process that only loads web-tree-sitter (the
// shipped copy, argv[2]), its runtime and the Python grammar (the shipped .wasm files, argv[3]) and
// parses the file argv[4] once — no engine, no query, no scan, no run. Its spawn → exit is the part
// of the first file of a session that tree-sitter itself costs on this machine.
const { readFileSync } = require('node:fs');
const path = require('node:path');
const ts = require(process.argv[2]);
const dir = process.argv[3];
(async () => {
  await ts.Parser.init({ locateFile: () => path.join(dir, 'tree-sitter.wasm') });
  const python = await ts.Language.load(path.join(dir, 'tree-sitter-python.wasm'));
  const parser = new ts.Parser();
  parser.setLanguage(python);
  const tree = parser.parse(readFileSync(process.argv[4], 'utf8'));
  if (!tree || tree.rootNode.childCount === 0) throw new Error(`no tree for ${process.argv[4]}`);
  process.stdout.write(JSON.stringify({ parsed: performance.now() }) + '\n');
  process.exit(0);
})().catch((e) => {
  process.stderr.write(`${e.stack ?? e}\n`);
  process.exit(1);
});
