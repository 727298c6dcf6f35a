/**
 * The C/C++ scan queries only around NCCL names (cppSites.ts `relevantMatches`): it must find
 * exactly what the whole-tree query finds, on every C/C++ fixture and corpus file, including a
 * wrapper called in a loop far from its definition.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { before, test } from 'node:test';
import type { Language, Parser, Query } from 'web-tree-sitter';
import { nodeModulesGrammars } from '../../sites/callSites';
import { CPP_QUERY, scanCpp } from '../../sites/cppSites';
import { PY_CALL_QUERY } from '../../sites/pythonSites';
import { probeIndexScale } from '../../sites/rangedQuery';

const root = join(__dirname, '..', '..');
let parser: Parser;
let query: Query;
let scale: 0 | 1 | 2;

before(async () => {
  const files = nodeModulesGrammars(root);
  const ts = await import('web-tree-sitter');
  await ts.Parser.init({ locateFile: () => files.runtime });
  const [py, cpp] = (await Promise.all([ts.Language.load(files.python), ts.Language.load(files.cpp)])) as [Language, Language];
  const pyParser = new ts.Parser();
  pyParser.setLanguage(py);
  scale = probeIndexScale(pyParser, new ts.Query(py, PY_CALL_QUERY));
  parser = new ts.Parser();
  parser.setLanguage(cpp);
  query = new ts.Query(cpp, CPP_QUERY);
});

function both(text: string): { ranged: ReturnType<typeof scanCpp>; whole: ReturnType<typeof scanCpp> } {
  const tree = parser.parse(text)!;
  try {
    return { ranged: scanCpp(query, tree, text, scale), whole: scanCpp(query, tree, text, 0) };
  } finally {
    tree.delete();
  }
}

function cFiles(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) out.push(...cFiles(p));
    else if (/\.(c|cc|cpp|cxx|h|hpp|cu|cuh)$/.test(name)) out.push(p);
  }
  return out;
}

test('this web-tree-sitter can query a range (else the scan falls back to the whole tree)', () => {
  assert.notEqual(scale, 0);
});

test('ranged C/C++ scan = whole-tree scan on every C/C++ fixture and corpus file', () => {
  const files = cFiles(join(root, 'test', 'fixtures', 'callsites'));
  assert.ok(files.length >= 3, `C/C++ fixtures found: ${files.length}`);
  let sites = 0;
  for (const f of files) {
    const { ranged, whole } = both(readFileSync(f, 'utf8'));
    assert.deepEqual(ranged, whole, f);
    sites += whole.sites.length;
  }
  assert.ok(sites > 10, `the fixtures have NCCL sites: ${sites}`);
});

test('a wrapper called in a loop 400 lines away: its ncclCommInitRank is repeated per step, as with the whole tree', () => {
  const filler = Array.from({ length: 400 }, (_, i) => `static int helper${i}(int x) { return x * ${i} + 1; }`).join('\n');
  const text = `#include <nccl.h>
void makeComm(ncclComm_t* c, ncclUniqueId id, int r) {
  ncclCommInitRank(c, 2, id, r);
}
${filler}
void train(ncclComm_t* c, ncclUniqueId id, int r) {
  for (int step = 0; step < 100; step++) {
    makeComm(c, id, r);
  }
}
`;
  const { ranged, whole } = both(text);
  assert.deepEqual(ranged, whole);
  assert.equal(ranged.sites.length, 1);
  assert.equal(ranged.sites[0]!.repeated?.kind, 'perStep');
  assert.match(ranged.sites[0]!.repeated?.detail ?? '', /makeComm, which is called in a loop at line 407/);
});

test('a file without NCCL names has no sites (and is not queried)', () => {
  const { ranged } = both('int main() { for (int i = 0; i < 3; i++) puts("x"); return 0; }\n');
  assert.deepEqual(ranged.sites, []);
});
