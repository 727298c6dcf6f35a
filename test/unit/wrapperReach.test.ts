// The reach of the wrapper index through classes (wrapperResolve.ts, wrapperClasses.ts), on a
// synthetic package written for this test (test/fixtures/callsites/reach): a method called on a
// module-level holder of another file (`_PP.destroy()`, `coordinator._TP.destroy()`, through a
// package's re-export), a method a subclass inherits, `super().m(…)`, `C.static_m(…)` /
// `m.C.static_m(…)`, `cls.m(…)`; never a method of another class, an override that makes no group,
// a holder bound to two classes, or a class from outside the workspace. Files with no lifecycle
// name of their own are parsed once one of these calls may reach a wrapper (prefilter.ts).
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { WrapperIndex } from '../../sites/wrapperIndex';
import { CALLSITES, loadFinder } from '../support/annotationFixtures';
import { lineOf } from '../support/wrapperSites';

const PKG = join(CALLSITES, 'reach');
const FILES = [
  'user.py',
  'engine/run_custom.py',
  'engine/shutdown.py',
  'engine/custom.py',
  'engine/comm.py',
  'engine/__init__.py',
  '__init__.py',
  'coordinator.py',
];

/** An index of the package, the files that make no lifecycle call first (they stay unparsed until a wrapper's name wakes them). */
async function indexed(): Promise<WrapperIndex> {
  const index = await WrapperIndex.create(await loadFinder());
  for (const n of FILES) index.setFile(join(PKG, n), 'python', readFileSync(join(PKG, n), 'utf8'));
  return index;
}

const described = (index: WrapperIndex, file: string): string[] =>
  index.callerSites(file).map((s) => `${s.range.start.line + 1} ${s.written} ${s.api} ${s.chain.join(' > ')}`);

test('methods reached through holders, subclasses, super(), static and class methods are sites through wrappers; other classes’ are not', async () => {
  const index = await indexed();
  const user = join(PKG, 'user.py');
  const at = (re: RegExp): number => lineOf(user, re);
  const destroy = 'destroy_process_group GroupCoordinator.destroy > torch.distributed.destroy_process_group';
  const create = 'new_group SubCoordinator.create > GroupCoordinator.create > torch.distributed.new_group';
  assert.deepEqual(described(index, user), [
    `${at(/comm\.initialize\(\)/)} comm.initialize new_group MyComm.initialize > GroupCoordinator.make_static > torch.distributed.new_group`,
    `${at(/s\.create\(\)/)} s.create ${create}`,
    `${at(/inherited\.destroy\(\)/)} inherited.destroy ${destroy}`,
    `${at(/GroupCoordinator\.make_static\(\[0\]\)/)} GroupCoordinator.make_static new_group GroupCoordinator.make_static > torch.distributed.new_group`,
    `${at(/GroupCoordinator\.make_cls/)} GroupCoordinator.make_cls new_group GroupCoordinator.make_cls > GroupCoordinator.make_static > torch.distributed.new_group`,
    `${at(/_PP\.destroy\(\)/)} _PP.destroy ${destroy}`,
    `${at(/coordinator\._TP\.destroy\(\)/)} coordinator._TP.destroy ${destroy}`,
    `${at(/reach\._TP\.destroy\(\)/)} reach._TP.destroy ${destroy}`,
    `${at(/self\._pg\.create\(\)/)} self._pg.create ${create}`,
  ]);
});

test('a file naming neither the class nor a lifecycle call is parsed once it calls a method through a holder, or an override through super()', async () => {
  const index = await indexed();
  const shutdown = join(PKG, 'engine', 'shutdown.py');
  assert.deepEqual(described(index, shutdown), [
    `${lineOf(shutdown, /_PP\.destroy\(\)/)} _PP.destroy destroy_process_group GroupCoordinator.destroy > torch.distributed.destroy_process_group`,
  ]);
  const run = join(PKG, 'engine', 'run_custom.py');
  assert.deepEqual(described(index, run), [
    `${lineOf(run, /c\.create\(\)/)} c.create new_group Custom.create > GroupCoordinator.create > torch.distributed.new_group`,
  ]);
});

test('wrappers imported under another name, re-exported by a package (also by a star import), imported in a function: sites; a plain function so imported, none', async () => {
  const index = await WrapperIndex.create(await loadFinder());
  for (const n of [
    'alias_only.py',
    'imports_user.py',
    'groups/__init__.py',
    'groups/impl.py',
    'groups/more.py',
    '__init__.py',
    'coordinator.py',
  ])
    index.setFile(join(PKG, n), 'python', readFileSync(join(PKG, n), 'utf8'));
  const user = join(PKG, 'imports_user.py');
  const at = (re: RegExp): number => lineOf(user, re);
  const tp = 'new_group make_tp > torch.distributed.new_group';
  const dp = 'new_group make_dp > torch.distributed.new_group';
  assert.deepEqual(described(index, user), [
    `${at(/^ {4}make_tensor_group\(ranks\)/)} make_tensor_group ${tp}`,
    `${at(/^ {4}make_dp\(ranks\)/)} make_dp ${dp}`,
    `${at(/^ {4}tp_group\(ranks\)/)} tp_group ${tp}`,
    `${at(/g\.make_dp\(ranks\)/)} g.make_dp ${dp}`,
    `${at(/return late\(ranks\)/)} late ${tp}`,
  ]);
  // A file that names the wrapper only in its import is parsed once the wrapper is known.
  const only = join(PKG, 'alias_only.py');
  assert.deepEqual(described(index, only), [`${lineOf(only, /return tensor_parallel_group/)} tensor_parallel_group ${tp}`]);
});

test('a method that makes a device mesh and flattens two of its dimensions: its call is a site of each', async () => {
  const index = await WrapperIndex.create(await loadFinder());
  for (const n of ['train.py', 'parallel_dims.py']) index.setFile(join(PKG, n), 'python', readFileSync(join(PKG, n), 'utf8'));
  const train = join(PKG, 'train.py');
  const line = lineOf(train, /dims\.build_mesh\(\)/);
  assert.deepEqual(described(index, train), [
    `${line} dims.build_mesh init_device_mesh ParallelDims.build_mesh > torch.distributed.device_mesh.init_device_mesh`,
    `${line} dims.build_mesh DeviceMesh._flatten ParallelDims.build_mesh > mesh["dp","cp"]._flatten`,
  ]);
});

test('holders assigned by factory functions (annotated, or returning a constructor’s value): their methods are reached; a factory returning no class, none', async () => {
  const index = await WrapperIndex.create(await loadFinder());
  for (const n of ['teardown.py', 'parallel_state.py', 'coordinator.py', '__init__.py'])
    index.setFile(join(PKG, n), 'python', readFileSync(join(PKG, n), 'utf8'));
  const teardown = join(PKG, 'teardown.py');
  const destroy = 'destroy_process_group GroupCoordinator.destroy > torch.distributed.destroy_process_group';
  assert.deepEqual(described(index, teardown), [
    `${lineOf(teardown, /parallel_state\._TENSOR_PARALLEL\.destroy/)} parallel_state._TENSOR_PARALLEL.destroy ${destroy}`,
    `${lineOf(teardown, /_WORLD\.destroy/)} _WORLD.destroy ${destroy}`,
  ]);
});

test('a method called on what a getter returns (its annotation, or the holder it returns): a site; on a getter of a list, none', async () => {
  const index = await WrapperIndex.create(await loadFinder());
  for (const n of ['getters.py', 'parallel_state.py', 'coordinator.py', '__init__.py'])
    index.setFile(join(PKG, n), 'python', readFileSync(join(PKG, n), 'utf8'));
  const getters = join(PKG, 'getters.py');
  const destroy = 'destroy_process_group GroupCoordinator.destroy > torch.distributed.destroy_process_group';
  assert.deepEqual(described(index, getters), [
    `${lineOf(getters, /get_tp_group\(\)\.destroy/)} get_tp_group().destroy ${destroy}`,
    `${lineOf(getters, /ps\.get_world_group\(\)\.destroy/)} ps.get_world_group().destroy ${destroy}`,
  ]);
});

test('a subclass constructor that inherits, or calls through super().__init__, a constructor making a group: a site; one that overrides it, none', async () => {
  const index = await WrapperIndex.create(await loadFinder());
  const file = join(PKG, 'pg_wrappers.py');
  const user = join(PKG, 'pg_user.py');
  for (const f of [user, file]) index.setFile(f, 'python', readFileSync(f, 'utf8'));
  const made = 'new_group GroupOwner > torch.distributed.new_group';
  assert.deepEqual(described(index, file), [
    `${lineOf(file, /super\(\)\.__init__\(ranks\)/)} super().__init__ ${made}`,
    `${lineOf(file, /a = InheritsInit/)} InheritsInit ${made}`,
    `${lineOf(file, /b = CallsSuperInit/)} CallsSuperInit new_group CallsSuperInit > GroupOwner > torch.distributed.new_group`,
  ]);
  // A file calling the subclass only (its constructor inherited) is parsed once the base's is a wrapper.
  assert.deepEqual(described(index, user), [`${lineOf(user, /return InheritsInit/)} InheritsInit ${made}`]);
});
