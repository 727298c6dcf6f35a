// The first collective of a lazy group made through a project's own wrapper (wrapperGroups.ts,
// wrapperIndex.ts `groupFirstSites`, groupFlow.ts `firstCollectiveOfCall`), on a synthetic package
// written for these tests (test/fixtures/callsites/lazy_wrappers/refit): RL weight-refit helpers
// that make a group through `_new_process_group_helper` / `new_group` and return it, a worker that
// stores each in `self.x` in `__init__` and uses it in a later method. Lazy groups get a
// first-collective site at that later collective; a wrapper or a call passing `device_id` (eager),
// a gloo group and a group the wrapper does not return get none.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { WrapperIndex } from '../../sites/wrapperIndex';
import { CALLSITES, loadFinder } from '../support/annotationFixtures';
import { firsts, lineOf } from '../support/wrapperSites';

const PKG = join(CALLSITES, 'lazy_wrappers', 'refit');
const WORKER = join(PKG, 'rollout', 'worker.py');
const ENGINE = join(PKG, 'rollout', 'engine.py');

function pythonFiles(dir: string): string[] {
  return readdirSync(dir)
    .sort()
    .flatMap((n) => {
      const p = join(dir, n);
      return statSync(p).isDirectory() ? pythonFiles(p) : n.endsWith('.py') ? [p] : [];
    });
}

async function indexed(): Promise<WrapperIndex> {
  const index = await WrapperIndex.create(await loadFinder());
  for (const f of pythonFiles(PKG)) index.setFile(f, 'python', readFileSync(f, 'utf8'));
  return index;
}

describe('first collective of a lazy group made through a wrapper (synthetic refit package)', () => {
  test('self.refit_group = open_refit_group(...) in __init__: the broadcast in a later method is the first collective; eager, gloo and unreturned groups have none', async () => {
    const index = await indexed();
    const created = lineOf(WORKER, /self\.refit_group = open_refit_group\(/);
    const tp = lineOf(WORKER, /self\.tp_group = lazy_ranks_group\(/);
    assert.deepEqual(firsts(index.sites(WORKER)), [
      `${lineOf(WORKER, /group=self\.refit_group\)/)} dist.broadcast <- self.refit_group (${created}, _new_process_group_helper)`,
      `${lineOf(WORKER, /barrier\(group=self\.tp_group\)/)} dist.barrier <- self.tp_group (${tp}, new_group)`,
    ]);
    // The same from groupFirstSites alone, the surface the editor appends (wrapperWatch.ts).
    assert.deepEqual(firsts(index.groupFirstSites(WORKER)), firsts(index.sites(WORKER)));
    // The creation through the wrapper says lazy; the call passing device_id says eager.
    const eagerOf = (re: RegExp): boolean | undefined =>
      index.callerSites(WORKER).find((s) => s.range.start.line + 1 === lineOf(WORKER, re))?.eager;
    assert.equal(eagerOf(/self\.refit_group = open_refit_group\(/), false);
    assert.equal(eagerOf(/self\.eager_refit = open_refit_group\(/), true);
    assert.equal(eagerOf(/self\.tp_group = lazy_ranks_group\(/), false);
    // None on the eager groups (device_id by the call, by the wrapper), on gloo ones (by the call, by the wrapper).
    const none = [
      /group=self\.eager_refit\)/,
      /group=self\.host_refit\)/,
      /group=self\.host_positional\)/,
      /group=self\.ep_group\)/,
      /group=self\.cpu_group\)/,
    ].map((re) => lineOf(WORKER, re));
    for (const s of index.sites(WORKER))
      assert.ok(!none.includes(s.range.start.line + 1), `not a site: ${s.range.start.line + 1} ${s.api}`);
  });

  test('through two hops (a helper forwarding its own device_id) and a helper of the same file', async () => {
    const index = await indexed();
    assert.deepEqual(firsts(index.sites(ENGINE)), [
      `${lineOf(ENGINE, /group=self\.sync_group\)/)} dist.all_reduce <- self.sync_group (${lineOf(ENGINE, /self\.sync_group = /)}, _new_process_group_helper)`,
      `${lineOf(ENGINE, /group=self\.local\)/)} dist.all_gather_into_tensor <- self.local (${lineOf(ENGINE, /self\.local = /)}, new_group)`,
    ]);
    const fast = lineOf(ENGINE, /self\.fast_group = /);
    assert.equal(
      index.callerSites(ENGINE).find((s) => s.range.start.line + 1 === fast)?.eager,
      true,
      'a positional device passed on is eager',
    );
  });

  test('a ProcessGroupNCCL registered in the front end the helper returns: the first send on it; the call passing "gloo" to the backend the helper branches on is no site at all', async () => {
    const index = await indexed();
    const file = join(PKG, 'rollout', 'transfer.py');
    assert.deepEqual(firsts(index.sites(file)), [
      `${lineOf(file, /group=self\.device_group\)/)} dist.send <- self.device_group (${lineOf(file, /self\.device_group = /)}, ProcessGroupNCCL)`,
    ]);
    assert.deepEqual(
      index.callerSites(file).map((s) => `${s.range.start.line + 1} ${s.api} ${s.eager}`),
      [`${lineOf(file, /self\.device_group = /)} ProcessGroupNCCL false`],
    );
  });

  test('the finder alone does not guess: without the wrapper facts a wrapper call has no first collective; given as groupMakers, it has', async () => {
    const finder = await loadFinder();
    const text = readFileSync(WORKER, 'utf8');
    const tree = finder.parse('python', text);
    try {
      assert.deepEqual(firsts(finder.scan('python', tree, text).sites), []);
      const at = text.indexOf('open_refit_group("nccl"');
      const end = text.indexOf('\n', at);
      const sites = finder.scan('python', tree, text, {
        groupMakers: [
          {
            startIndex: at,
            endIndex: end,
            written: 'open_refit_group',
            line: lineOf(WORKER, /self\.refit_group = /) - 1,
            api: '_new_process_group_helper',
          },
        ],
      }).sites;
      assert.deepEqual(firsts(sites), [
        `${lineOf(WORKER, /group=self\.refit_group\)/)} dist.broadcast <- self.refit_group (${lineOf(WORKER, /self\.refit_group = /)}, _new_process_group_helper)`,
      ]);
    } finally {
      tree.delete();
    }
  });

  test('an edit of the wrapper that makes it eager takes the first collective away; undoing it brings it back', async () => {
    const index = await indexed();
    const helper = join(PKG, 'comm', 'groups.py');
    const text = readFileSync(helper, 'utf8');
    const before = firsts(index.sites(WORKER));
    index.setFile(
      helper,
      'python',
      text.replace('return dist.new_group(ranks=ranks)\n', 'return dist.new_group(ranks=ranks, device_id=torch.device("cuda"))\n'),
    );
    assert.deepEqual(
      firsts(index.sites(WORKER)),
      before.filter((l) => !l.includes('tp_group')),
    );
    index.setFile(helper, 'python', text);
    assert.deepEqual(firsts(index.sites(WORKER)), before);
  });
});
