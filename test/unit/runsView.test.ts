// The Runs view's model, the palette commands' pure parts (workspace trust, compare choice, report
// name), the panels' restore state, the completion message's actions and the package.json
// contributions — with the real H200 runs of docs/results and a simulated run, no VS Code.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import type { RunFile } from '../../protocol/runFile';
import type { RunState } from '../../protocol/webviewMessages';
import type { StaleRules } from '../../readings/profiles';
import { compareChoice, MANAGE_TRUST, reportFileName, untrustedRefusal, whenTrusted } from '../../extension/commandsModel';
import { parseRestoreState, restoreAttribute } from '../../extension/panelSerializerState';
import { OPEN_REPORT, OPEN_RESULTS, REVEAL_FILE, runController, type RunDeps } from '../../extension/runController';
import { deletableRunFile, runPickRow, runsTree } from '../../extension/runsViewModel';
import { rawRun, ROOT, runFolder, storeOf } from '../support/annotationFixtures';

const DAY = 86_400_000;
const wheel = rawRun('2.28.9-wheel');
const system = rawRun('2.28.3-system');
const simulated = JSON.parse(readFileSync(join(ROOT, 'test', 'fixtures', 'runs', 'simulated-2ranks-init-split.json'), 'utf8')) as RunFile;
const startedAt = (r: RunFile) => Date.parse(r.stamp?.startedAt ?? '');
const rules = (now: number, expected = ''): StaleRules => ({ now, staleAfterDays: 30, expectedNcclVersion: expected });

/** `run` under another id, host and start (figures untouched). */
function variant(run: RunFile, id: string, host: string, startIso: string, extra: Partial<RunFile> = {}): RunFile {
  const r = structuredClone(run);
  r.id = id;
  r.host = host;
  assert.ok(r.stamp);
  r.stamp.startedAt = startIso;
  return { ...r, ...extra };
}

async function loaded(runs: RunFile[]) {
  const dir = runFolder(runs);
  const { store } = await storeOf(dir);
  return { dir, store };
}

test('runsTree: grouped by host (newest host first), runs newest first, each named by its GPUs, NCCL version and UTC start, the active run marked', async () => {
  const gpu = variant(wheel, 'gpu-new', 'gpu-box', '2026-11-30T10:00:00.000Z');
  const { store } = await loaded([wheel, system, gpu]);
  const now = Date.parse('2026-12-01T00:00:00Z');
  const tree = runsTree(store.profiles, store.active, rules(now));
  assert.deepEqual(tree.map((h) => h.host), ['gpu-box', wheel.host]);
  const local = tree[1]!;
  // Both real runs are on the same target; the newer one first.
  const expectOrder = [wheel, system].sort((a, b) => startedAt(b) - startedAt(a));
  // Named by the GPUs the stamp lists, never by the target (the group says the target).
  assert.deepEqual(local.runs.map((r) => r.label), expectOrder.map((r) => `${r.ranks}× ${r.stamp!.gpus[0]!.name.replace(/^NVIDIA /, '')} · NCCL ${r.stamp!.ncclVersion} · ${new Date(startedAt(r)).toISOString().slice(0, 16).replace('T', ' ')} UTC`));
  assert.equal(local.description, '2 runs' + (local.runs.some((r) => r.active) ? ' · active run' : ''));
  // Exactly one active run in the whole tree: the store's.
  const active = tree.flatMap((h) => h.runs).filter((r) => r.active);
  assert.equal(active.length, 1);
  assert.equal(active[0]!.key, store.active!.key);
  assert.equal(active[0]!.contextValue, 'run.active');
  assert.match(active[0]!.description, /^active/);
  assert.ok(tree.flatMap((h) => h.runs).filter((r) => !r.active).every((r) => r.contextValue === 'run' && !/active/.test(r.description)));
});

test('runsTree: SIMULATED and partial are said in the name, stale (age, NCCL version) in the description, all in the tooltip', async () => {
  const partial = variant(wheel, 'partial-run', 'gpu-box', '2026-11-29T10:00:00.000Z', { status: 'partial' });
  const { store } = await loaded([wheel, simulated, partial]);
  const now = startedAt(wheel) + 45 * DAY; // the wheel run is 45 days old, older than 30
  const tree = runsTree(store.profiles, store.active, rules(now, '2.28.9'));
  const all = tree.flatMap((h) => h.runs);
  const sim = all.find((r) => r.path.endsWith(`${simulated.id}.json`))!;
  assert.equal(sim.simulated, true);
  assert.match(sim.label, /^SIMULATED · \d+ ranks? · NCCL /);
  assert.doesNotMatch(sim.label + sim.description, /H200|SIMULATED.*SIMULATED/, 'said once, never a GPU model');
  assert.match(sim.tooltip, /SIMULATED NCCL \(figures are not measurements\)/);
  const old = all.find((r) => r.path.endsWith(`${wheel.id}.json`))!;
  assert.equal(old.simulated, false);
  assert.doesNotMatch(old.description, /SIMULATED/);
  assert.match(old.description, /stale/);
  assert.ok(old.stale.some((s) => /45 days ago/.test(s)), old.stale.join('; '));
  assert.match(old.tooltip, /stale: measured 45 days ago/);
  const p = all.find((r) => r.path.endsWith('partial-run.json'))!;
  assert.equal(p.status, 'partial');
  assert.match(p.label, / · partial$/);
  assert.doesNotMatch(p.description, /partial/);
  // A complete fresh run says neither.
  const { store: s2 } = await loaded([wheel]);
  const fresh = runsTree(s2.profiles, s2.active, rules(startedAt(wheel) + DAY, wheel.stamp!.ncclVersion)).flatMap((h) => h.runs)[0]!;
  assert.equal(fresh.description, 'active');
});

test('runsTree: text from a hostile run file is made plain (no control characters, bidi overrides or new lines)', async () => {
  const evil = variant(wheel, 'evil', 'gpu\u202e\n[x](command:evil)\u0007', '2026-11-30T10:00:00.000Z');
  evil.stamp!.ncclVersion = '2.28\n<img src=x onerror=alert(1)>';
  const { store } = await loaded([evil]);
  const tree = runsTree(store.profiles, store.active, rules(Date.parse('2026-12-01T00:00:00Z')));
  const node = tree[0]!.runs[0]!;
  // eslint-disable-next-line no-control-regex -- the test looks for control characters
  for (const text of [tree[0]!.label, node.label, node.description]) assert.doesNotMatch(text, /[\u0000-\u001f\u202e]/);
  // The tooltip is plain text, one fact a line: the hostile host stays on its own line.
  // eslint-disable-next-line no-control-regex -- the test looks for control characters
  assert.doesNotMatch(node.tooltip, /[\u0000-\u0009\u000b-\u001f\u202e]/);
  assert.equal(node.tooltip.split('\n').filter((l) => l.includes('[x](command:evil)')).length, 1);
  assert.ok(node.tooltip.split('\n').every((l) => !/^<img/.test(l)));
});

test('runPickRow: the label tells two alike runs apart; description has status words and experiments; detail is the file', async () => {
  const twin = variant(wheel, 'twin', wheel.host, new Date(startedAt(wheel) + 60_000).toISOString());
  const { store } = await loaded([wheel, twin, simulated]);
  const r = rules(startedAt(wheel) + DAY, wheel.stamp!.ncclVersion);
  const rows = store.profiles.map((p) => runPickRow(p, store.active, store.profiles, r));
  assert.equal(new Set(rows.map((x) => x.label)).size, rows.length, rows.map((x) => x.label).join(' | '));
  const simRow = rows.find((x) => x.detail.endsWith(`${simulated.id}.json`))!;
  assert.match(simRow.label, /^SIMULATED · /);
  assert.equal((simRow.label + simRow.description).match(/SIMULATED/g)?.length, 1);
  const activeRow = rows.find((x) => x.key === store.active!.key)!;
  assert.match(activeRow.description, /^active · /);
  assert.match(activeRow.description, new RegExp(wheel.experiments.map((e) => e.experiment).join(', ')));
});

test('deletableRunFile: only a .json directly inside a run folder', () => {
  const folders = [{ dir: '/ws/.commcost/runs', source: 'workspace' as const }, { dir: '/g/runs', source: 'global' as const }];
  assert.deepEqual(deletableRunFile('/ws/.commcost/runs/a.json', folders), { ok: true });
  assert.deepEqual(deletableRunFile('/g/runs/b.json', folders), { ok: true });
  for (const bad of ['/ws/.commcost/runs/../../etc/passwd.json', '/ws/.commcost/runs/sub/a.json', '/ws/.commcost/runs/a.html', 'a.json', '/elsewhere/a.json'])
    assert.equal(deletableRunFile(bad, folders).ok, false, bad);
});

test('whenTrusted: in an untrusted workspace the handler is not called and the refusal says what, why and what to do', async () => {
  let trusted = false;
  const refused: string[] = [];
  let ran = 0;
  const measure = whenTrusted('measure', () => trusted, (m) => refused.push(m), (n: number) => (ran += n));
  assert.equal(measure(1), undefined);
  assert.equal(ran, 0);
  assert.equal(refused.length, 1);
  assert.match(refused[0]!, /not trusted, so measure is off/);
  assert.match(refused[0]!, /runs the agent, NCCL and Python/);
  assert.match(refused[0]!, /Annotations and saved runs still work, read-only/);
  assert.ok(refused[0]!.includes(MANAGE_TRUST));
  trusted = true; // trust granted while the window is open
  assert.equal(measure(2), 2);
  assert.equal(refused.length, 1);
  for (const a of ['deploy', 'trace'] as const) assert.match(untrustedRefusal(a), new RegExp(`so ${a} is off`));
});

test('compareChoice and reportFileName', () => {
  assert.deepEqual(compareChoice(['p1', 'p0', 'p1']), { ok: true, keys: ['p1', 'p0'] });
  assert.equal(compareChoice(['p1']).ok, false);
  assert.equal(compareChoice(['p1', 'p1']).ok, false);
  assert.equal(reportFileName('20261130-101010-gpu1'), '20261130-101010-gpu1.html');
  assert.equal(reportFileName('../../x y'), 'x-y.html');
  assert.equal(reportFileName('///'), 'run.html');
});

test('panel restore state: only run file paths, checked; the attribute is safe in HTML', () => {
  assert.deepEqual(parseRestoreState({ kind: 'run', path: '/ws/.commcost/runs/a.json' }), { kind: 'run', path: '/ws/.commcost/runs/a.json' });
  assert.deepEqual(parseRestoreState({ kind: 'compare', paths: ['/a.json', '/b.json'] }), { kind: 'compare', paths: ['/a.json', '/b.json'] });
  for (const bad of [undefined, null, 'x', { kind: 'run' }, { kind: 'run', path: 'rel.json' }, { kind: 'run', path: '/etc/passwd' }, { kind: 'run', path: '/a\0.json' }, { kind: 'compare', paths: ['/a.json'] }, { kind: 'compare', paths: ['/a.json', 3] }, { kind: 'x', path: '/a.json' }])
    assert.equal(parseRestoreState(bad), undefined, JSON.stringify(bad));
  const attr = restoreAttribute({ kind: 'run', path: '/ws/"><script>alert(1)</script>.json' });
  assert.doesNotMatch(attr, /[<>"]/);
  const decoded = attr.replace(/&#(\d+);/g, (_, n: string) => String.fromCharCode(Number(n)));
  assert.deepEqual(JSON.parse(decoded), { kind: 'run', path: '/ws/"><script>alert(1)</script>.json' });
});

test('the completion message says where the run was saved and offers Open Run, Open Report (HTML), Reveal File', async () => {
  const run: RunFile = { ...structuredClone(wheel), status: 'complete' };
  for (const choice of [OPEN_RESULTS, OPEN_REPORT, REVEAL_FILE]) {
    const info: { message: string; actions: string[] }[] = [];
    const panel: RunState[] = [];
    const did: string[] = [];
    const deps: RunDeps = {
      runMeasurement: async () => run,
      saveRun: async (dir, r) => `${dir}/${r.id}.json`,
      resultsDir: '/ws/.commcost/runs',
      progress: { report: () => undefined },
      panel: { update: (s) => panel.push(s) },
      log: { info: () => undefined, error: () => undefined },
      signal: new AbortController().signal,
      confirmHostKey: async () => true,
      showInfo: async (message, ...actions) => (info.push({ message, actions }), choice),
      showError: async () => undefined,
      openResults: (_r, p) => did.push(`open ${p}`),
      showLog: () => undefined,
      openReport: (_r, p) => did.push(`report ${p}`),
      revealFile: (p) => did.push(`reveal ${p}`),
    };
    await runController({ target: 'gpu1', options: wheel.options }, deps);
    await new Promise((r) => setImmediate(r));
    const path = `/ws/.commcost/runs/${run.id}.json`;
    assert.equal(info.length, 1);
    assert.ok(info[0]!.message.endsWith(`saved to ${path}`), info[0]!.message);
    assert.deepEqual(info[0]!.actions, [OPEN_RESULTS, OPEN_REPORT, REVEAL_FILE]);
    assert.equal(OPEN_RESULTS, 'Open Run');
    assert.deepEqual(did, [`${choice === OPEN_RESULTS ? 'open' : choice === OPEN_REPORT ? 'report' : 'reveal'} ${path}`]);
    // The panel learns the saved file (kept by the webview for its restore after a reload).
    assert.equal(panel.at(-1)!.savedPath, path);
    assert.equal(panel.at(-1)!.live, false);
  }
});

test('package.json: palette commands under the commcost category with when clauses; the Runs view; trust and remote declared', () => {
  const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'));
  const c = pkg.contributes;
  const byId = new Map<string, { category?: string; title: string }>(c.commands.map((x: { command: string }) => [x.command, x]));
  for (const id of ['commcost.measure', 'commcost.openRun', 'commcost.selectProfile', 'commcost.compareRuns', 'commcost.exportReport', 'commcost.showLog', 'commcost.openWalkthrough', 'commcost.measureSimulated'])
    assert.equal(byId.get(id)?.category, 'commcost', id);
  const when = new Map<string, string>(c.menus.commandPalette.map((m: { command: string; when: string }) => [m.command, m.when]));
  assert.equal(when.get('commcost.measure'), 'isWorkspaceTrusted');
  assert.equal(when.get('commcost.measureSimulated'), 'isWorkspaceTrusted');
  assert.match(when.get('commcost.compareRuns') ?? '', /commcost\.runs\.count != 1/);
  for (const id of [...byId.keys()].filter((k) => k.startsWith('commcost.runs.'))) assert.equal(when.get(id), 'false', `${id} is for the Runs view only`);
  assert.equal(c.viewsContainers.activitybar[0].id, 'commcost');
  assert.ok(readFileSync(join(ROOT, c.viewsContainers.activitybar[0].icon), 'utf8').includes('<svg'));
  assert.equal(c.views.commcost[0].id, 'commcost.runs');
  assert.ok(c.viewsWelcome.some((w: { contents: string; when: string }) => w.when === 'isWorkspaceTrusted' && /command:commcost\.measureSimulated/.test(w.contents)));
  assert.ok(c.viewsWelcome.some((w: { contents: string; when: string }) => w.when === '!isWorkspaceTrusted' && !/command:commcost\.measure/.test(w.contents)));
  assert.deepEqual(pkg.extensionKind, ['workspace']);
  assert.equal(pkg.capabilities.untrustedWorkspaces.supported, 'limited');
  const restricted: string[] = pkg.capabilities.untrustedWorkspaces.restrictedConfigurations;
  for (const s of ['commcost.hosts', 'commcost.ncclPath', 'commcost.python', 'commcost.remoteNodePath', 'commcost.slurm', 'commcost.coordinatorAddress']) assert.ok(restricted.includes(s), s);
  const props = (Array.isArray(c.configuration) ? c.configuration.flatMap((x: { properties: object }) => Object.keys(x.properties)) : Object.keys(c.configuration.properties)) as string[];
  for (const s of restricted) assert.ok(props.includes(s), `${s} is a setting`);
  assert.equal(pkg.capabilities.virtualWorkspaces.supported, 'limited');
  for (const ev of ['onWebviewPanel:commcost.results', 'onWebviewPanel:commcost.compare']) assert.ok(pkg.activationEvents.includes(ev), ev);
});

