// Round two of the source finder's reach (issue #27), on synthetic fixtures written for this test
// (test/fixtures/callsites/reach2): each rule the round adds, shown on a small file of its own.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { WrapperIndex } from '../../sites/wrapperIndex';
import { CALLSITES, loadFinder, scanText } from '../support/annotationFixtures';
import { lineOf } from '../support/wrapperSites';

const DIR = join(CALLSITES, 'reach2');

test('a method called on a receiver written over several lines is sited on the line that names the method', async () => {
  const file = join(DIR, 'multiline_receiver.py');
  const { sites } = await scanText('python', readFileSync(file, 'utf8'));
  const flattens = sites.filter((s) => s.api === 'DeviceMesh._flatten').map((s) => s.range.start.line + 1);
  assert.deepEqual(flattens, [lineOf(file, /site: multi-line receiver/), lineOf(file, /site: one-line receiver/)]);
  // The receiver's first line carries no site: the call is not reported twice or at its receiver.
  assert.ok(!sites.some((s) => s.range.start.line + 1 === lineOf(file, /meshes\["ab"\] = mesh\[$/)));
});

/** The 1-based lines of the wrapper callers the index finds in `file` alone, and those the fixture marks with `marker`. */
async function callersAndMarked(file: string, language: 'python' | 'cpp', marker: RegExp): Promise<{ got: number[]; via: number[] }> {
  const index = await WrapperIndex.create(await loadFinder());
  const text = readFileSync(file, 'utf8');
  index.setFile(file, language, text);
  const got = index
    .callerSites(file)
    .map((s) => s.range.start.line + 1)
    .sort((a, b) => a - b);
  return { got, via: text.split('\n').flatMap((l, i) => (marker.test(l) ? [i + 1] : [])) };
}

test('a C++ method call is taken for a wrapper only when the receiver is not declared with another class', async () => {
  const { got, via } = await callersAndMarked(join(DIR, 'receiver_class.cc'), 'cpp', /\/\/ via:/);
  assert.equal(via.length, 3, 'the fixture marks three calls through the wrapper');
  assert.deepEqual(got, via);
});

/** The 1-based lines of the first-collective sites the finder reports in `file`, and those the fixture marks `# first:`. */
async function firstLines(file: string): Promise<{ got: number[]; marked: number[] }> {
  const text = readFileSync(file, 'utf8');
  const { sites } = await scanText('python', text);
  return {
    got: sites.filter((s) => s.role === 'firstCollective').map((s) => s.range.start.line + 1),
    marked: text.split('\n').flatMap((l, i) => (/# first:/.test(l) ? [i + 1] : [])),
  };
}

test('a lazy init followed by a call through a registry of the file’s functions: each registered function’s first collective is a first collective', async () => {
  const { got, marked } = await firstLines(join(DIR, 'registry_dispatch.py'));
  assert.equal(marked.length, 2);
  assert.deepEqual(got, marked);
});

test('when a registered function runs no collective, the collective after the dispatch stays a first collective', async () => {
  const { got, marked } = await firstLines(join(DIR, 'registry_partial.py'));
  assert.equal(marked.length, 2);
  assert.deepEqual(got, marked);
});

test('a name imported under `if C:` and bound to a stand-in under its `else:` is no lifecycle call inside another `else:` of `if C:`', async () => {
  const file = join(DIR, 'else_stand_in.py');
  const { sites } = await scanText('python', readFileSync(file, 'utf8'));
  assert.deepEqual(
    sites.filter((s) => s.role === 'create').map((s) => s.range.start.line + 1),
    [lineOf(file, /# site: the import/), lineOf(file, /# site: either binding/)],
  );
});

test('a lazy group stored as an element of a list attribute (`self.pgs = [g]`) gets its first collective where `self.pgs[i]` is used', async () => {
  const { got, marked } = await firstLines(join(DIR, 'list_attribute.py'));
  assert.equal(marked.length, 1);
  assert.deepEqual(got, marked);
});

test('a function nested in another is a wrapper where the function around it calls it by name; a callback only handed on is not', async () => {
  const { got, via } = await callersAndMarked(join(CALLSITES, 'reach3', 'nested_wrapper.py'), 'python', /# via:/);
  assert.equal(via.length, 5, 'the fixture marks five calls through nested functions');
  assert.deepEqual(got, via);
});

test("a call of the project's own compiled module (`import pkg._C as _C`, `from . import _native`) runs the C/C++ function of that name; another library's or a Python module's does not", async () => {
  const dir = join(CALLSITES, 'reach3', 'compiled');
  const py = join(dir, 'mypkg', 'comm.py');
  const index = await WrapperIndex.create(await loadFinder());
  index.setFile(join(dir, 'mypkg', '_plain.py'), 'python', readFileSync(join(dir, 'mypkg', '_plain.py'), 'utf8'));
  index.setFile(py, 'python', readFileSync(py, 'utf8'));
  index.setFile(join(dir, 'csrc', 'comm.cc'), 'cpp', readFileSync(join(dir, 'csrc', 'comm.cc'), 'utf8'));
  const got = index
    .callerSites(py)
    .map((s) => `${s.range.start.line + 1} ${s.role}`)
    .sort();
  const via = readFileSync(py, 'utf8')
    .split('\n')
    .flatMap((l, i) => (/# via: create/.test(l) ? [`${i + 1} create`] : /# via: destroy/.test(l) ? [`${i + 1} teardown`] : []))
    .sort();
  assert.equal(via.length, 2, 'the fixture marks two calls into the compiled module');
  assert.deepEqual(got, via);
});

test('a lazy group passed to a function of the same file (by position, keyword, through self, or as a default) gets its first collective inside it', async () => {
  const { got, marked } = await firstLines(join(CALLSITES, 'reach3', 'passed_group.py'));
  assert.equal(marked.length, 4);
  assert.deepEqual(got, marked);
});
