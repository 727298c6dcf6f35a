// C/C++ wrappers followed as Python ones (sites/cppWrapperFacts.ts through sites/wrapperIndex.ts),
// on a synthetic package written for these tests (test/fixtures/callsites/wrappers/cpp): a free
// function, a namespace function, methods defined in and out of their class, a lambda assigned to
// a name, a cycle, calls through `obj.m()` / `ptr->m()` / `this->m()`, across files; a wrapper
// called in a loop is repeated, one called once per forked process is not. Expectations are the
// fixtures' own comments: `expect:` the finder's sites, `via:` the sites through wrappers.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { findings } from '../../readings/advice';
import { resolveAnnotation } from '../../readings/figures';
import type { StaleRules } from '../../readings/profiles';
import type { RunFile } from '../../protocol/runFile';
import { WrapperIndex } from '../../sites/wrapperIndex';
import { CALLSITES, loadFinder, RESULTS, runFolder, storeOf } from '../support/annotationFixtures';

const PKG = join(CALLSITES, 'wrappers', 'cpp');
const FILES = readdirSync(PKG)
  .filter((n) => n.endsWith('.cc'))
  .sort();

/** `// via: a loop, b` → per line: "line api[ kind]" entries, for the comment key `key`. */
function expectations(text: string, key: 'expect' | 'via'): string[] {
  const out: string[] = [];
  text.split('\n').forEach((line, i) => {
    const m = new RegExp(`// ${key}: (.+?)\\s*$`).exec(line);
    if (m?.[1]) for (const e of m[1].split(',')) out.push(`${i + 1} ${e.trim()}`);
  });
  return out.sort();
}

async function indexed(): Promise<WrapperIndex> {
  const index = await WrapperIndex.create(await loadFinder());
  for (const n of FILES) index.setFile(join(PKG, n), 'cpp', readFileSync(join(PKG, n), 'utf8'));
  return index;
}

for (const name of FILES) {
  test(`C/C++ wrappers: ${name} has exactly the expected sites, direct and through wrappers`, async () => {
    const index = await indexed();
    try {
      const path = join(PKG, name);
      const text = readFileSync(path, 'utf8');
      const line = (s: { range: { start: { line: number } }; api: string; repeated?: { kind: string } }): string =>
        `${s.range.start.line + 1} ${s.api}${s.repeated ? ` ${s.repeated.kind}` : ''}`;
      assert.deepEqual(index.directSites(path).map(line).sort(), expectations(text, 'expect'));
      const via = index.callerSites(path);
      assert.deepEqual(via.map(line).sort(), expectations(text, 'via'));
      for (const s of via) {
        assert.equal(s.language, 'cpp');
        assert.equal(text.slice(s.startIndex, s.startIndex + s.written.length), s.written);
      }
    } finally {
      index.dispose();
    }
  });
}

test('C/C++ wrappers: chains name each link, out-of-class methods as Cls::m; a wrapper of a wrapper across files', async () => {
  const index = await indexed();
  try {
    const trainer = join(PKG, 'trainer.cc');
    const chains = index.callerSites(trainer).map((s) => `${s.written} ${s.chain.join(' > ')}`);
    assert.ok(chains.includes('comms::setupAll setupAll > makeWorld > ncclCommInitRank'), chains.join('\n'));
    assert.ok(chains.includes('pool.rebuild SubPool::rebuild > SubPool::release > closeQuietly > ncclCommDestroy'), chains.join('\n'));
    assert.ok(chains.includes('other->carve SubPool::carve > ncclCommSplit'), chains.join('\n'));
    const keys = index
      .wrappers()
      .map((w) => w.key)
      .sort();
    // The cycle ends with both functions wrappers; the static helper of trainer.cc is not comms.cc's.
    assert.ok(keys.includes('recoverA') && keys.includes('recoverB'), keys.join(','));
    assert.equal(index.wrappers().filter((w) => w.key === 'closeQuietly').length, 1);
    // shutdownAll reaches only the overload's finalize, never comms.cc's static closeQuietly.
    assert.deepEqual(
      index
        .wrappers()
        .filter((w) => w.key === 'shutdownAll')
        .flatMap((w) => w.chains.map((c) => c.chain.join(' > '))),
      ['shutdownAll > drain > ncclCommFinalize'],
    );
  } finally {
    index.dispose();
  }
});

test('C/C++ wrappers: obj.m() resolves only when one class defines m; a standard member name (p.reset()) never does', async () => {
  const index = await WrapperIndex.create(await loadFinder());
  try {
    const a = '/w/a.cc';
    const b = '/w/b.cc';
    index.setFile(a, 'cpp', 'struct A { void reset() { ncclCommDestroy(c); } void make() { ncclCommInitAll(cs, 2, 0); } };\n');
    index.setFile(b, 'cpp', 'void f(A& x, B& y) {\n  x.reset();\n  y.make();\n}\n');
    assert.deepEqual(
      index.callerSites(b).map((s) => `${s.range.start.line + 1} ${s.written} ${s.api}`),
      ['3 y.make ncclCommInitAll'],
    );
    // A second class defining make(): y.make() could be either, so it is no site.
    index.setFile('/w/c.cc', 'cpp', 'struct B { void make() {} };\n');
    assert.deepEqual(index.callerSites(b), []);
  } finally {
    index.dispose();
  }
});

test('C/C++ wrappers: files in any order; an edit that drops the lifecycle call drops the sites through it in other files, and restoring it brings them back', async () => {
  const index = await WrapperIndex.create(await loadFinder());
  try {
    const comms = join(PKG, 'comms.cc');
    const trainer = join(PKG, 'trainer.cc');
    const text = readFileSync(comms, 'utf8');
    // The caller first: it has no lifecycle name of its own, so it waits until a wrapper names it.
    index.setFile(trainer, 'cpp', readFileSync(trainer, 'utf8'));
    index.setFile(comms, 'cpp', text);
    const apis = (): string[] => index.callerSites(trainer).map((s) => `${s.range.start.line + 1} ${s.api}`);
    const before = apis();
    assert.ok(
      before.some((l) => l.endsWith('ncclCommInitRank')),
      before.join(','),
    );
    index.setFile(comms, 'cpp', text.replace('return ncclCommInitRank(&world, n, id, rank);', 'return ncclSuccess;'));
    assert.deepEqual(
      apis().filter((l) => l.endsWith('ncclCommInitRank')),
      [],
    );
    index.setFile(comms, 'cpp', text);
    assert.deepEqual(apis(), before);
  } finally {
    index.dispose();
  }
});

test('C/C++ wrappers: "created in a loop" fires at a wrapper called in a loop, not at one called once per forked process', async () => {
  const run = JSON.parse(readFileSync(join(RESULTS, 'h200x2-2026-12-01/h200x2-nccl2.30.7-source.json'), 'utf8')) as RunFile;
  const { store } = await storeOf(runFolder([run]));
  const rules: StaleRules = { now: Date.parse('2026-12-02T00:00:00Z'), staleAfterDays: 30, expectedNcclVersion: '' };
  const index = await indexed();
  try {
    const path = join(PKG, 'lambdas.cc');
    const text = readFileSync(path, 'utf8');
    const sites = index.sites(path);
    const found = findings(
      { language: 'cpp', sites, facts: { importInsertLine: 0 } },
      (api, site) => resolveAnnotation(api, store.active, store.profiles, rules, { groupSize: site.groupSize }),
      text,
    );
    const loopLine = text.split('\n').findIndex((l) => l.includes('via: ncclCommInitRank loop'));
    assert.deepEqual(
      found.map((f) => f.range.start.line),
      [loopLine],
      found.map((f) => f.message).join('\n'),
    );
    assert.match(found[0]!.message, /inside a for loop/);
  } finally {
    index.dispose();
  }
});
