/**
 * CallSiteFinder `lazyCpp` (the extension's load): Python parses as soon as the finder is loaded,
 * C/C++ once `ready('cpp')` resolved (the first ready('cpp') starts its load); before that a parse says to wait. The default load (CLI,
 * tests) has both grammars.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import { CallSiteFinder, nodeModulesGrammars } from '../../sites/callSites';

const root = join(__dirname, '..', '..');
const CPP = 'void f(ncclComm_t c) { ncclCommDestroy(c); }\n';

test('lazyCpp: Python at once, C/C++ loaded by the first ready("cpp"); a parse before says to wait', async () => {
  const finder = await CallSiteFinder.load(nodeModulesGrammars(root), { lazyCpp: true });
  try {
    const py = finder.parse('python', 'import torch.distributed as dist\ndist.destroy_process_group()\n');
    assert.equal(finder.scan('python', py, 'import torch.distributed as dist\ndist.destroy_process_group()\n').sites.length, 1);
    py.delete();
    // The C/C++ grammar loads on first need only (off the path to a Python file's first CodeLens):
    // even after a while, a parse before ready('cpp') says to wait.
    await new Promise((r) => setTimeout(r, 300));
    assert.throws(() => finder.parse('cpp', CPP), /not loaded yet: await CallSiteFinder\.ready\("cpp"\)/);
    await finder.ready('cpp');
    await finder.ready('cpp'); // once
    const tree = finder.parse('cpp', CPP);
    assert.deepEqual(finder.scan('cpp', tree, CPP).sites.map((s) => s.api), ['ncclCommDestroy']);
    tree.delete();
  } finally {
    finder.dispose();
  }
});

test('the default load has both grammars at once', async () => {
  const finder = await CallSiteFinder.load(nodeModulesGrammars(root));
  try {
    const tree = finder.parse('cpp', CPP);
    assert.equal(finder.scan('cpp', tree, CPP).sites.length, 1);
    tree.delete();
  } finally {
    finder.dispose();
  }
});
