// Lazy groups made through a project's own wrappers in the shapes frameworks write them
// (wrapperGroups.ts, wrapperFacts.ts `passedOn`, groupFlow.ts `firstCollectiveOfCall`), on a
// synthetic package written for these tests (test/fixtures/callsites/lazy_wrappers/shapes):
// wrappers returning a tuple holding the group (`return pg, store`, `return (rank, group)`) and
// callers unpacking it (`self.pg, self.store = …`, `pg, _ = …`); a wrapper passing its **kwargs
// on to new_group (eager only when the call shows a device_id); groups kept in a dict attribute;
// init_process_group started through a wrapper (the default group's first collective); groups
// kept in a class-level cache and returned from it (lazy_wrappers/cached).
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { WrapperIndex } from '../../sites/wrapperIndex';
import { CALLSITES, loadFinder } from '../support/annotationFixtures';
import { firsts, lineOf } from '../support/wrapperSites';

const PKG = join(CALLSITES, 'lazy_wrappers', 'shapes');
const TRAINER = join(PKG, 'trainer.py');

async function indexed(): Promise<WrapperIndex> {
  const index = await WrapperIndex.create(await loadFinder());
  for (const n of readdirSync(PKG).sort()) if (n.endsWith('.py')) index.setFile(join(PKG, n), 'python', readFileSync(join(PKG, n), 'utf8'));
  return index;
}

/** The expected first-collective line: `call` at the line matching `use`, on `variable` made at the line matching `made`. */
const first = (call: string, use: RegExp, variable: string, made: RegExp, api: string): string =>
  `${lineOf(TRAINER, use)} ${call} <- ${variable} (${lineOf(TRAINER, made)}, ${api})`;

describe('lazy groups through wrappers: tuples, **kwargs, dict attributes (synthetic shapes package)', () => {
  test('a wrapper returning a tuple with the group: the unpacked target at the group’s place gets the first collective, never the store', async () => {
    const index = await indexed();
    const got = firsts(index.sites(TRAINER));
    for (const want of [
      first('dist.all_reduce', /group=self\.pg\)/, 'self.pg', /self\.pg, self\.store = /, 'new_group'),
      first('dist.all_reduce', /group=self\.dp\)/, 'self.dp', /self\.rank, self\.dp = /, 'new_group'),
      first('dist.broadcast', /group=self\.refit\)/, 'refit', /refit, _ = make_helper_group/, '_new_process_group_helper'),
      first('dist.barrier', /barrier\(group=self\.pair\)/, 'self.pair', /self\.pair = group_pair/, 'new_group'),
      first('dist.all_reduce', /group=pg\)/, 'pg', /pg, _ = make_group_with_store\(ranks, "local"\)/, 'new_group'),
    ])
      assert.ok(got.includes(want), `missing ${want} in\n${got.join('\n')}`);
    assert.ok(!got.some((l) => l.startsWith(`${lineOf(TRAINER, /group=self\.store\)/)} `)), 'the store is no group');
  });

  test('**kwargs passed on to new_group: device_id by keyword, by a dict literal, by a dict variable → eager; nothing said → unknown, no first collective', async () => {
    const index = await indexed();
    const eagerOf = (re: RegExp): boolean | undefined =>
      index.callerSites(TRAINER).find((s) => s.range.start.line + 1 === lineOf(TRAINER, re))?.eager;
    assert.equal(eagerOf(/self\.eager_kw = /), true);
    assert.equal(eagerOf(/self\.eager_dict = /), true);
    assert.equal(eagerOf(/self\.eager_literal = /), true);
    assert.equal(eagerOf(/self\.unknown = /), undefined);
    const none = [/group=self\.eager_kw\)/, /group=self\.eager_dict\)/, /group=self\.eager_literal\)/, /group=self\.unknown\)/].map((re) => lineOf(TRAINER, re));
    for (const s of index.sites(TRAINER)) assert.ok(!none.includes(s.range.start.line + 1), `not a site: ${s.range.start.line + 1} ${s.api}`);
  });

  test('init_process_group through a wrapper returning nothing: the default group’s first collective is found from the wrapper’s call; through the eager wrapper, none', async () => {
    const index = await indexed();
    const launch = join(PKG, 'launch.py');
    assert.deepEqual(firsts(index.sites(launch)), [
      `${lineOf(launch, /dist\.all_reduce\(t\)/)} dist.all_reduce <- the default group (${lineOf(launch, /start_workers\("nccl"/)}, init_process_group)`,
    ]);
    assert.equal(index.callerSites(launch).find((s) => s.api === 'init_process_group')?.eager, false);
    const eager = join(PKG, 'launch_eager.py');
    assert.deepEqual(firsts(index.sites(eager)), []);
    assert.equal(index.callerSites(eager).find((s) => s.api === 'init_process_group')?.eager, true);
  });

  test('a group kept in a dict attribute: followed to the subscript of the same text only', async () => {
    const index = await indexed();
    const got = firsts(index.sites(TRAINER));
    const want = first('dist.all_gather_into_tensor', /group=self\.groups\[key\]\)/, 'self.groups[key]', /self\.groups\[key\] = /, 'new_group');
    assert.ok(got.includes(want), `missing ${want} in\n${got.join('\n')}`);
    assert.ok(!got.some((l) => l.startsWith(`${lineOf(TRAINER, /group=self\.other\[name\]\)/)} `)), 'another subscript is not followed');
  });
});

test("groups kept in a cache and returned from it (new_group, new_subgroups_by_enumeration's own subgroup): their first collectives; the list of subgroups, none", async () => {
  const dir = join(CALLSITES, 'lazy_wrappers', 'cached');
  const bridge = join(dir, 'bridge.py');
  const index = await WrapperIndex.create(await loadFinder());
  index.setFile(bridge, 'python', readFileSync(bridge, 'utf8'));
  const at = (re: RegExp): number => lineOf(bridge, re);
  assert.deepEqual(firsts(index.sites(bridge)), [
    `${at(/dist\.broadcast\(x, src=0, group=self\.ring\)/)} dist.broadcast <- self.ring (${at(/self\.ring = self\._ring_group/)}, new_subgroups)`,
    `${at(/dist\.all_reduce\(x, group=self\.pair\)/)} dist.all_reduce <- self.pair (${at(/self\.pair = self\._pair_group/)}, new_group)`,
  ]);
});
