// The prefilter (sites/prefilter.ts) and the wrapper index's use of it (issue #27, speed): a file
// with no lifecycle name, alias or known wrapper's name is not parsed; a file that only calls a
// wrapper defined elsewhere still is, whichever order the files come in, and a file a resolution
// looks into (a package's __init__.py re-exporting the wrapper) is parsed when it is needed.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { CallSiteFinder } from '../../sites/callSites';
import { WrapperIndex, type WrapperCallSite } from '../../sites/wrapperIndex';
import { loadFinder } from '../support/annotationFixtures';

/** An index over `files` (path → text, in this order) whose finder records the paths it parsed. */
async function indexOver(files: Record<string, string>): Promise<{ index: WrapperIndex; parsed: Set<string> }> {
  const finder = await loadFinder();
  const parsed = new Set<string>();
  const byText = new Map(Object.entries(files).map(([p, t]) => [t, p]));
  const counting = Object.create(finder) as CallSiteFinder;
  counting.parse = (...args: Parameters<CallSiteFinder['parse']>) => {
    const path = byText.get(args[1]);
    if (path) parsed.add(path);
    return finder.parse(...args);
  };
  const index = await WrapperIndex.create(counting);
  for (const [path, text] of Object.entries(files)) index.setFile(path, path.endsWith('.py') ? 'python' : 'c', text);
  return { index, parsed };
}

const WRAP = `import torch.distributed as dist

def make_group(ranks):
    return dist.new_group(ranks)

class Backend:
    def build(self, ranks):
        return dist.new_group(ranks)
`;
const INIT = 'from .wrap import make_group, Backend\n';
const USER = `from pkg import make_group

def setup():
    g = make_group([0, 1])
    return g
`;
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
const C_PLAIN = 'int add(int a, int b) { return a + b; }\n';

const wrapperCalls = (index: WrapperIndex, path: string): string[] =>
  index.callerSites(path).map((s: WrapperCallSite) => `${s.range.start.line + 1} ${s.written} ${s.api} ${s.chain.join(' > ')}`);

describe('the index parses only the files that can hold a site (prefilter.ts)', () => {
  for (const order of ['wrapper first', 'callers first'] as const) {
    test(`${order}: files without a lifecycle or wrapper name are not parsed; callers of a wrapper elsewhere keep their sites`, async () => {
      const files: Record<string, string> = {
        '/ws/pkg/wrap.py': WRAP,
        '/ws/pkg/__init__.py': INIT,
        '/ws/app/user.py': USER,
        '/ws/app/method_user.py': METHOD_USER,
        '/ws/app/plain.py': PLAIN,
        '/ws/csrc/add.c': C_PLAIN,
      };
      const ordered = order === 'wrapper first' ? files : Object.fromEntries(Object.entries(files).reverse());
      const { index, parsed } = await indexOver(ordered);
      assert.deepEqual(wrapperCalls(index, '/ws/app/user.py'), ['4 make_group new_group make_group > torch.distributed.new_group']);
      assert.deepEqual(wrapperCalls(index, '/ws/app/method_user.py'), ['5 b.build new_group Backend.build > torch.distributed.new_group']);
      assert.deepEqual(index.sites('/ws/app/plain.py'), []);
      assert.deepEqual([...parsed].sort(), ['/ws/app/method_user.py', '/ws/app/user.py', '/ws/pkg/__init__.py', '/ws/pkg/wrap.py']);
      assert.ok(!parsed.has('/ws/app/plain.py') && !parsed.has('/ws/csrc/add.c'));
      assert.equal(index.paths().length, 6, 'every file is indexed, parsed or not');
      index.dispose();
    });
  }

  test('a file that starts calling a known wrapper is parsed at once; one that stops is no longer', async () => {
    const { index, parsed } = await indexOver({ '/ws/pkg/wrap.py': WRAP, '/ws/pkg/__init__.py': INIT, '/ws/app/plain.py': PLAIN });
    assert.deepEqual(wrapperCalls(index, '/ws/app/plain.py'), []);
    index.setFile('/ws/app/plain.py', 'python', USER);
    assert.deepEqual(wrapperCalls(index, '/ws/app/plain.py'), ['4 make_group new_group make_group > torch.distributed.new_group']);
    index.setFile('/ws/app/plain.py', 'python', PLAIN);
    assert.deepEqual(wrapperCalls(index, '/ws/app/plain.py'), []);
    assert.ok(!parsed.has('/ws/app/plain.py'), 'PLAIN is never parsed');
    index.dispose();
  });

  test('given how to read a file again (the CLI), a file not parsed keeps no text: it is read again only when a wrapper\'s call wakes it', async () => {
    const files: Record<string, string> = {
      '/ws/pkg/wrap.py': WRAP,
      '/ws/pkg/__init__.py': INIT,
      '/ws/app/user.py': USER,
      '/ws/app/method_user.py': METHOD_USER,
      '/ws/app/alias_user.py': 'from pkg import make_group as mk\n\ndef setup():\n    return mk([0, 1])\n',
      '/ws/app/plain.py': PLAIN,
    };
    for (const order of [Object.keys(files), Object.keys(files).reverse()]) {
      const index = await WrapperIndex.create(await loadFinder());
      const reads: string[] = [];
      for (const path of order) index.setFile(path, 'python', files[path]!, { reread: () => (reads.push(path), files[path]!) });
      assert.deepEqual(wrapperCalls(index, '/ws/app/user.py'), ['4 make_group new_group make_group > torch.distributed.new_group']);
      assert.deepEqual(wrapperCalls(index, '/ws/app/method_user.py'), ['5 b.build new_group Backend.build > torch.distributed.new_group']);
      assert.deepEqual(wrapperCalls(index, '/ws/app/alias_user.py'), ['4 mk new_group make_group > torch.distributed.new_group']);
      assert.deepEqual(index.sites('/ws/app/plain.py'), []);
      // Woken (a wrapper's call, under its name or an alias; a resolution looking into the package): read again, once each; PLAIN never.
      assert.deepEqual([...reads].sort(), ['/ws/app/alias_user.py', '/ws/app/method_user.py', '/ws/app/user.py', '/ws/pkg/__init__.py']);
      assert.equal(index.notReadAgain.size, 0);
      index.dispose();
    }
  });

  test('a file that cannot be read again when woken is taken as empty and said, not thrown', async () => {
    const index = await WrapperIndex.create(await loadFinder());
    index.setFile('/ws/pkg/wrap.py', 'python', WRAP);
    index.setFile('/ws/pkg/__init__.py', 'python', INIT);
    index.setFile('/ws/app/user.py', 'python', USER, {
      reread: () => {
        throw new Error('no such file');
      },
    });
    assert.deepEqual(wrapperCalls(index, '/ws/app/user.py'), []);
    assert.deepEqual([...index.notReadAgain], [['/ws/app/user.py', 'no such file']]);
    index.dispose();
  });
});
