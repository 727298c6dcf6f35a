// Which run and which variant answer a call site: the one rule of ARCHITECTURE.md
// ("annotations"), on a table of cases built from the real 2×H200 runs of docs/results (NCCL
// 2.28.9 wheel, 2.28.3 system, the torch 2.11 c10d run) with their dates moved where a case needs
// it, plus simulated copies and global-storage runs of other windows.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { pathToFileURL } from 'node:url';
import type { ApiName } from '../../sites/apiMap';
import { resolveAnnotation, type Annotation } from '../../readings/figures';
import { ProfileStore, type RunFolder } from '../../client/profileStore';
import { type StaleRules } from '../../readings/profiles';
import type { RunFile } from '../../protocol/runFile';
import { RESULTS, rawRun } from '../support/annotationFixtures';

const wheel = rawRun('2.28.9-wheel'); // 2026-11-29 19:48, NCCL 2.28.9: init, split, destroy, abort
const system = rawRun('2.28.3-system'); // 2026-11-29 19:49 (newer), NCCL 2.28.3: the same experiments
const c10d = JSON.parse(readFileSync(join(RESULTS, 'h200x2-torch2.11-nccl2.28.9-c10d.json'), 'utf8')) as RunFile; // 2026-11-30, NCCL 2.28.9

/** `run` started at `iso` (stamp and id moved), with `id` when given. */
function at(run: RunFile, iso: string, id?: string): RunFile {
  const compact = iso.replace(/[-:]/g, '').replace('T', '-').slice(0, 15);
  return { ...run, id: id ?? `${compact}-${run.host}`, stamp: run.stamp && { ...run.stamp, startedAt: iso } };
}
/** A simulated copy of `run` (the library's own marks). */
function simulated(run: RunFile, iso: string): RunFile {
  const r = at(run, iso, `${iso.replace(/[-:]/g, '').replace('T', '-').slice(0, 15)}-sim`);
  return { ...r, simulated: true, stamp: r.stamp && { ...r.stamp, simulated: true, ncclSource: 'simulated' } };
}
/** `run` with ranks world size and the split experiment only. */
function withRanks(run: RunFile, ranks: number, id: string): RunFile {
  return { ...run, id, ranks };
}
const without = (run: RunFile, experiment: string, id: string): RunFile => ({
  ...run,
  id,
  experiments: run.experiments.filter((e) => e.experiment !== experiment),
});

const NOW = Date.parse('2026-12-01T00:00:00Z');
const RULES: StaleRules = { now: NOW, staleAfterDays: 30, expectedNcclVersion: '' };

interface Case {
  name: string;
  workspace: RunFile[];
  /** Global-storage runs and the workspace each was saved from (undefined: not recorded). */
  global?: { run: RunFile; origin?: string | null }[];
  /** This window's workspace (null: a window without folder). */
  window?: string | null;
  /** The id of the run the user chose from the status bar. */
  choose?: string;
  rules?: Partial<StaleRules>;
  api: ApiName;
  eager?: boolean;
  expect: {
    /** The run that answers (id) and its variant, experiment, or what is missing. */
    run?: string;
    experiment?: string;
    variant?: string;
    beneath?: boolean;
    stale?: boolean;
    simulated?: boolean;
    missing?: RegExp;
    /** The status bar's run (id). */
    active?: string;
    /** Why another run than the active one answers. */
    why?: RegExp;
  };
}

// Workspace folder URIs of two windows (made under the temp folder: no path of any one machine).
const OTHER_WINDOW = pathToFileURL(join(tmpdir(), 'commcost-other-project')).href;
const THIS_WINDOW = pathToFileURL(join(tmpdir(), 'commcost-project')).href;
const oldWheel = at(wheel, '2026-10-01T10:00:00.000Z');
const c10dOld = at(c10d, '2026-11-28T10:00:00.000Z');
const sim = simulated(wheel, '2026-11-30T12:00:00.000Z');
const simNoAbort = without(sim, 'abort', '20261130-120000-sim');
const four = withRanks(at(wheel, '2026-11-29T10:00:00.000Z'), 4, '20261129-100000-four');

const cases: Case[] = [
  // Variants: the headline pays what user code pays.
  {
    name: 'ncclCommSplit at 2 ranks: the 2-rank child (whole/splitShare=0), not the halves (one-rank children)',
    workspace: [wheel],
    api: 'ncclCommSplit',
    expect: { run: wheel.id, experiment: 'split', variant: 'whole/splitShare=0', stale: false },
  },
  {
    name: 'ncclCommSplit at 4 ranks: the halves are 2-rank children and headline (splitShare=0)',
    workspace: [four],
    api: 'ncclCommSplit',
    expect: { run: four.id, variant: 'halves/splitShare=0' },
  },
  // Fresh before stale.
  {
    name: 'a newer stale run (NCCL 2.28.3) loses to a fresh 2.28.9 run that covers the call',
    workspace: [system, wheel, c10d],
    api: 'ncclCommSplit',
    expect: { run: wheel.id, variant: 'whole/splitShare=0', stale: false, active: c10d.id, why: /^the active run has no split$/ },
  },
  {
    name: 'the same, for every C++ API the c10d run lacks (destroy)',
    workspace: [system, wheel, c10d],
    api: 'ncclCommDestroy',
    expect: { run: wheel.id, stale: false },
  },
  {
    name: 'commcost.expectedNcclVersion = 2.28.3: the 2.28.3 run is the fresh one',
    workspace: [system, wheel, c10d],
    rules: { expectedNcclVersion: '2.28.3' },
    api: 'ncclCommSplit',
    expect: { run: system.id, stale: false },
  },
  {
    name: 'a stale run answers only when no fresh one covers the call, and says stale',
    workspace: [oldWheel, c10d],
    api: 'ncclCommSplit',
    expect: { run: oldWheel.id, stale: true, active: c10d.id },
  },
  // Measured only, unless a simulated run is chosen.
  {
    name: 'a newer simulated run is not used, nor active, while nobody chose it',
    workspace: [wheel, sim],
    api: 'ncclCommInitRank',
    expect: { run: wheel.id, simulated: false, active: wheel.id },
  },
  {
    name: 'a simulated run only: nothing answers until it is chosen',
    workspace: [sim],
    api: 'ncclCommInitRank',
    expect: { missing: /^no measured run in this window \(choose a simulated run/ },
  },
  {
    name: 'a chosen simulated run answers, marked simulated',
    workspace: [wheel, simNoAbort],
    choose: simNoAbort.id,
    api: 'ncclCommInitRank',
    expect: { run: simNoAbort.id, simulated: true, active: simNoAbort.id },
  },
  {
    name: 'a chosen simulated run: a measured run never fills its gaps (no file mixes both)',
    workspace: [wheel, simNoAbort],
    choose: simNoAbort.id,
    api: 'ncclCommAbort',
    expect: { missing: /^not measured in this run \(a measured run has it: choose it from the status bar to see it\)$/ },
  },
  // A direct measurement beats the call beneath, across runs.
  {
    name: "split_group: an older c10d run's split_group beats the newer NCCL run's ncclCommSplit beneath",
    workspace: [wheel, c10dOld],
    api: 'split_group',
    expect: {
      run: c10dOld.id,
      experiment: 'c10d',
      variant: 'split_group',
      beneath: false,
      active: wheel.id,
      why: /^the active run has only the split beneath it; this run measured split_group itself$/,
    },
  },
  {
    name: 'split_group without any c10d run: the ncclCommSplit beneath, said so',
    workspace: [wheel],
    api: 'split_group',
    expect: { run: wheel.id, experiment: 'split', variant: 'whole/splitShare=0', beneath: true },
  },
  {
    name: 'init_process_group: c10d init/lazy (the call passes no device_id)',
    workspace: [wheel, c10dOld],
    api: 'init_process_group',
    expect: { run: c10dOld.id, experiment: 'c10d', variant: 'init/lazy', beneath: false },
  },
  {
    name: 'init_process_group with device_id: c10d init/eager',
    workspace: [wheel, c10dOld],
    api: 'init_process_group',
    eager: true,
    expect: { run: c10dOld.id, variant: 'init/eager' },
  },
  {
    name: 'destroy_process_group: the destroy step of c10d init/lazy, not "not measured"',
    workspace: [c10d],
    api: 'destroy_process_group',
    expect: { run: c10d.id, experiment: 'c10d', variant: 'init/lazy', beneath: false },
  },
  {
    name: 'new_group: c10d new_group/lazy-default; on an eager default group new_group/eager-default',
    workspace: [c10d],
    api: 'new_group',
    expect: { run: c10d.id, variant: 'new_group/lazy-default' },
  },
  {
    name: 'new_group in a file whose init passes device_id: new_group/eager-default',
    workspace: [c10d],
    api: 'new_group',
    eager: true,
    expect: { run: c10d.id, variant: 'new_group/eager-default' },
  },
  {
    name: 'shrink_group: c10d shrink_group (its child has one rank at 2 ranks, still the only answer)',
    workspace: [c10d, wheel],
    api: 'shrink_group',
    expect: { run: c10d.id, variant: 'shrink_group', beneath: false },
  },
  {
    name: '_abort_process_group: c10d abort',
    workspace: [c10d],
    api: '_abort_process_group',
    expect: { run: c10d.id, variant: 'abort' },
  },
  // Global storage: runs saved from another window stay out.
  {
    name: 'a global run saved from another workspace does not answer here',
    workspace: [wheel],
    global: [{ run: c10d, origin: OTHER_WINDOW }],
    window: THIS_WINDOW,
    api: 'split_group',
    expect: { run: wheel.id, experiment: 'split', beneath: true, active: wheel.id },
  },
  {
    name: 'a global run saved from another workspace does not fill a gap of the workspace runs either',
    workspace: [wheel],
    global: [{ run: c10d, origin: OTHER_WINDOW }],
    window: THIS_WINDOW,
    api: 'shrink_group',
    expect: {
      missing: /^not measured in this run \(a run saved from another window has it: choose it from the status bar to see it\)$/,
      active: wheel.id,
    },
  },
  {
    name: 'a global run saved from a window without folder (or not recorded) does not answer in a workspace',
    workspace: [],
    global: [{ run: c10d }, { run: wheel, origin: null }],
    window: THIS_WINDOW,
    api: 'init_process_group',
    expect: { missing: /^no measured run in this window/ },
  },
  {
    name: 'in a window without folder, the global runs saved from one answer',
    workspace: [],
    global: [{ run: c10d, origin: null }, { run: wheel }],
    window: null,
    api: 'split_group',
    expect: { run: c10d.id, variant: 'split_group', active: c10d.id },
  },
  {
    name: 'a global run of the same workspace answers',
    workspace: [wheel],
    global: [{ run: c10d, origin: THIS_WINDOW }],
    window: THIS_WINDOW,
    api: 'split_group',
    expect: { run: c10d.id, variant: 'split_group' },
  },
  {
    name: 'a global run of another window, chosen explicitly, answers',
    workspace: [wheel],
    global: [{ run: c10d, origin: OTHER_WINDOW }],
    window: THIS_WINDOW,
    choose: c10d.id,
    api: 'split_group',
    expect: { run: c10d.id, variant: 'split_group', active: c10d.id },
  },
  {
    name: 'an experiment no run has: not measured',
    workspace: [wheel],
    api: 'ncclCommShrink',
    expect: { missing: /^not measured in this run$/ },
  },
];

function folderOf(runs: RunFile[]): string {
  const dir = mkdtempSync(join(tmpdir(), 'commcost-sel-'));
  for (const r of runs) writeFileSync(join(dir, `${r.id}.json`), JSON.stringify(r));
  return dir;
}

/** The store and the annotation, the way annotationModel.ts resolves them. */
async function resolveCase(c: Case): Promise<{ store: ProfileStore; a: Annotation }> {
  const reports: string[] = [];
  const store = new ProfileStore((line) => reports.push(line));
  const folders: RunFolder[] = [{ dir: folderOf(c.workspace), source: 'workspace' }];
  if (c.global) {
    const origins: Record<string, string | null> = {};
    for (const g of c.global) if (g.origin !== undefined) origins[`${g.run.id}.json`] = g.origin;
    folders.push({ dir: folderOf(c.global.map((g) => g.run)), source: 'global', origins });
  }
  await store.reload(folders, c.window === undefined ? THIS_WINDOW : c.window);
  assert.deepEqual(reports, []);
  if (c.choose) {
    const p = store.profiles.find((x) => x.run.id === c.choose);
    assert.ok(p && store.setActiveKey(p.key), `run ${c.choose} loaded`);
  }
  const chosen = store.chosen;
  const a = resolveAnnotation(
    c.api,
    store.active,
    store.profiles,
    { ...RULES, ...c.rules },
    {
      ...(c.eager ? { eager: true } : {}),
      ...(chosen ? { chosen } : {}),
    },
  );
  return { store, a };
}

for (const c of cases) {
  test(`selection: ${c.name}`, async () => {
    const { store, a } = await resolveCase(c);
    const e = c.expect;
    const m = a.measured;
    if (e.missing) {
      assert.equal(m, undefined, `answered by ${m?.source.run.id} ${m?.main.variant}`);
      assert.match(a.missing?.reason ?? '', e.missing);
    } else {
      assert.ok(m, `answered (missing: ${a.missing?.reason})`);
      assert.equal(m.source.run.id, e.run);
      if (e.experiment) assert.equal(m.experiment, e.experiment);
      if (e.variant) assert.equal(m.main.variant, e.variant);
      if (e.beneath !== undefined) assert.equal(m.via !== undefined, e.beneath, `via: ${m.via}`);
      if (e.stale !== undefined) assert.equal(a.stale.length > 0, e.stale, a.stale.join(' | '));
      assert.equal(a.simulated, e.simulated ?? false);
    }
    if (e.active) assert.equal(store.active?.run.id, e.active);
    if (e.why) assert.match(a.why ?? '', e.why);
    else if (m && m.source === a.active) assert.equal(a.why, undefined);
  });
}

test("selection: the figures are the run's own (c10d split_group, init/lazy destroy step)", async () => {
  const { a } = await resolveCase(cases.find((c) => c.api === 'split_group' && c.workspace.includes(c10dOld)) as Case);
  const v = c10d.experiments.find((x) => x.experiment === 'c10d')?.variants.find((x) => x.variant === 'split_group');
  assert.deepEqual(a.measured?.headline.stats, v?.steps.find((s) => s.step === 'total')?.stats);
  const { a: d } = await resolveCase(cases.find((c) => c.api === 'destroy_process_group') as Case);
  const lazy = c10d.experiments.find((x) => x.experiment === 'c10d')?.variants.find((x) => x.variant === 'init/lazy');
  assert.equal(d.measured?.headline.step, 'destroy');
  assert.deepEqual(d.measured?.headline.stats, lazy?.steps.find((s) => s.step === 'destroy')?.stats);
  assert.deepEqual(
    d.measured?.others.map((o) => o.variant),
    ['init/eager'],
  );
});

test('selection: no file mixes simulated and measured figures (every API, both ways)', async () => {
  const apis: ApiName[] = ['ncclCommInitRank', 'ncclCommSplit', 'ncclCommDestroy', 'ncclCommAbort', 'split_group', 'new_group'];
  for (const choose of [undefined, sim.id]) {
    const kinds = new Set<boolean>();
    for (const api of apis) {
      const { a } = await resolveCase({ name: '', workspace: [wheel, sim, c10d], api, expect: {}, ...(choose ? { choose } : {}) });
      if (a.measured) kinds.add(a.simulated);
    }
    assert.deepEqual([...kinds], [choose !== undefined], `chosen: ${choose ?? 'none'}`);
  }
});
