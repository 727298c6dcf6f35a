// The prefilter (sites/prefilter.ts, issue #27): every file where the finder finds a site passes
// it, and the wrapper index's wake test reads a file's calls as the index resolves them. The
// index's use of it: wrapperPrefilter.test.ts.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import type { SourceLanguage } from '../../sites/callSites';
import { mayHaveSites, textCalls, wrapperWakeTest } from '../../sites/prefilter';
import { CALLSITES, fixtureFiles, languageOf, scanText } from '../support/annotationFixtures';

const METHOD_USER = `from pkg import Backend

def setup():
    b = Backend()
    return b.build([0, 1])
`;
const PLAIN = `import os

def make_group(ranks):  # its own, not the wrapper
    return list(ranks)

def main():
    print(make_group([1]), os.getcwd())
`;

describe('mayHaveSites is a superset of the finder', () => {
  test('every fixture file where the finder finds a site passes the prefilter', async () => {
    for (const name of fixtureFiles()) {
      const text = readFileSync(join(CALLSITES, name), 'utf8');
      const language: SourceLanguage = languageOf(name);
      const scan = await scanText(language, text);
      if (scan.sites.length > 0) assert.ok(mayHaveSites(language, text), `${name}: ${scan.sites.length} sites, turned away`);
    }
  });

  test('the words that count only on a named receiver or an import: group.abort(), _get_backend, import nccl', () => {
    assert.ok(mayHaveSites('python', 'def f(pg):\n    pg.abort()\n'));
    assert.ok(mayHaveSites('python', 'def f(self):\n    self.tp_group .shutdown()\n'));
    assert.ok(!mayHaveSites('python', 'def f(pool):\n    pool.shutdown()\n'));
    assert.ok(mayHaveSites('python', 'import os, nccl\n'));
    assert.ok(mayHaveSites('python', 'from nccl.core import Communicator\n'));
    assert.ok(!mayHaveSites('python', 'x = "a,b".split(",")\n'));
    assert.ok(mayHaveSites('cpp', 'NCCLCHECK(ncclCommInitRank(&c, n, id, r));'));
    assert.ok(!mayHaveSites('cpp', 'int main() { return 0; }'));
  });

  test('the wake test: a call of an imported wrapper name or after an imported module, a method only with its class', () => {
    const wakes = wrapperWakeTest([{ callName: 'make_group' }, { callName: 'build', cls: 'Backend' }])!;
    const w = (text: string): boolean => wakes(textCalls(text), text);
    assert.ok(w('from pkg import make_group\nmake_group([0])\n'));
    assert.ok(w('from pkg import (\n    other,\n    make_group,\n)\nmake_group([0])\n'));
    assert.ok(w('from pkg.wrap import *\nmake_group([0])\n'));
    assert.ok(w('import pkg.wrap as pw\npw . make_group([0])\n'));
    assert.ok(!w(PLAIN), 'its own make_group');
    assert.ok(!w('x.build()\n'), 'build() on something not a Backend');
    assert.ok(!w('self.make_group([0])\n'), "a method of the file's own class");
    assert.ok(w(METHOD_USER));
    assert.ok(!w('# make_group is mentioned in a comment only\n'));
  });
});
