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
import { WrapperIndex } from '../../sites/wrapperIndex';
import { CALLSITES, loadFinder } from '../support/annotationFixtures';

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
    assert.ok(!keys.includes('shutdownAll'), keys.join(','));
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
