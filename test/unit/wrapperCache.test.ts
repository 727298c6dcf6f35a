/**
 * Cached getters (issue #27, rule 2): a function that creates on its first call and returns a
 * cached group (`if _G is None: _G = new_group(…)`, `@functools.lru_cache`, `if key not in cache:
 * cache[key] = …`, an early `return _G`) is one creation site, its body; its callers — and the
 * callers of a function returning its value — read "may create (first call only)", never a full
 * creation each. Failed on the code before the rule (every caller was a plain creation).
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { codeLensTitle, decorationLabel, hoverLinks, hoverMarkdown } from '../../readings/annotationText';
import { resolveAnnotation } from '../../readings/figures';
import { WrapperIndex } from '../../sites/wrapperIndex';
import { CALLSITES, RESULTS, loadFinder, runFolder, storeOf } from '../support/annotationFixtures';
import type { RunFile } from '../../protocol/runFile';

const DIR = join(CALLSITES, 'cached');

test('cached getters: callers of a getter that creates on its first call only read "may create (first call only)"; an uncached one creates each call', async () => {
  const index = await WrapperIndex.create(await loadFinder());
  for (const f of readdirSync(DIR)) index.setFile(join(DIR, f), 'python', readFileSync(join(DIR, f), 'utf8'));
  const sites = index.sites(join(DIR, 'train.py'));
  const once = Object.fromEntries(sites.map((s) => [s.written, s.firstCallOnly === true]));
  assert.deepEqual(once, { get_tp_group: true, get_mesh: true, group_for: true, early: true, uncached: false, outer: true });
  // The getter's body stays the one creation site, a plain one.
  const body = index.sites(join(DIR, 'mesh.py')).filter((s) => s.written === 'dist.new_group');
  assert.equal(body.length, 5);
  assert.ok(body.every((s) => s.firstCallOnly === undefined));

  const run = JSON.parse(readFileSync(join(RESULTS, 'h200x2-torch2.11-nccl2.28.9-c10d.json'), 'utf8')) as RunFile;
  const { store } = await storeOf(runFolder([run]));
  const a = resolveAnnotation('new_group', store.active, store.profiles, { now: Date.parse('2026-12-02T00:00:00Z'), staleAfterDays: 3650, expectedNcclVersion: '' });
  const getter = sites.find((s) => s.written === 'get_tp_group')!;
  assert.match(codeLensTitle(a, getter, sites), /^⏱ may create \(first call only\): /);
  assert.match(decorationLabel(a, getter, sites) ?? '', /^may create \(first call only\): /);
  assert.match(hoverMarkdown(a, getter, hoverLinks(a)), /May create \(first call only\)/);
  const plain = sites.find((s) => s.written === 'uncached')!;
  assert.doesNotMatch(codeLensTitle(a, plain, sites), /first call only/);
  index.dispose();
});
