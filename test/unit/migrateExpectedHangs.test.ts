// Expected hangs in run files from before the agent marked them: the migration
// (remote-agent/experiments/expectedHangs.ts) and its script (scripts/migrate-expected-hangs.mjs),
// on copies of the H200 field-case runs of docs/results put back into their old form, and the
// committed runs themselves (already migrated).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { validateRunFile } from '../../client/runFileSchema';
import type { RunFile } from '../../protocol/runFile';
import { CATALOGUE } from '../../remote-agent/experiments/catalogue';
import { expectedHangHint, migrateExpectedHangs, statusAfterExpectedHangs } from '../../remote-agent/experiments/expectedHangs';

const ROOT = join(__dirname, '..', '..');
const RESULTS = join(ROOT, 'docs', 'results');
const load = (name: string): RunFile => validateRunFile(JSON.parse(readFileSync(join(RESULTS, name), 'utf8')));

const OLD_HINT = 'every rank must make the same NCCL calls; the deadline was 6 s (commcost.deadlineSeconds / --deadline)';

/**
 * The run as the agent wrote it before expected hangs were marked: the same errors without
 * `expected`, with the generic hang hint, and the run partial.
 */
function oldForm(run: RunFile): RunFile {
  const old = structuredClone(run);
  old.status = 'partial';
  old.errors = old.errors.map((e) => {
    const rest = { ...e };
    delete rest.expected;
    return e.code === 'TIMEOUT' ? { ...rest, hint: OLD_HINT } : rest;
  });
  return old;
}

/** The hangIsResult of a variant in the plan the catalogue makes for this run. */
function planReason(run: RunFile, experiment: keyof typeof CATALOGUE, variant: string): string | undefined {
  const plan = CATALOGUE[experiment].plan({ ranks: run.ranks, ncclVersionCode: run.stamp!.ncclVersionCode, symbols: run.stamp!.ncclSymbols, options: run.options });
  return 'skip' in plan ? undefined : plan.find((v) => v.variant === variant)?.hangIsResult;
}

const dirs: string[] = [];
after(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

test('an old field-case run: each hang-guard stop of a hangIsResult variant becomes an expected hang with its plan\'s hint, and the run complete', () => {
  for (const name of ['h200x2-nccl2.28.9-wheel.cases.json', 'h200x2-nccl2.28.3-system.cases.json']) {
    const old = oldForm(load(name));
    assert.equal(old.errors.filter((e) => e.code === 'TIMEOUT').length, 4, name);
    const m = migrateExpectedHangs(old);
    assert.equal(m.changed, true);
    assert.deepEqual(m.status, { before: 'partial', after: 'complete' });
    assert.deepEqual(m.migrated.map((h) => `${h.experiment} ${h.variant}`), [
      'shrink-abort abort/destroy/excluded-exits',
      'shrink-abort default/destroy/excluded-exits',
      'split-subset subset-only',
      'init-abort blocking',
    ]);
    for (const e of m.run.errors) {
      const reason = planReason(old, e.where.experiment!, e.where.variant!);
      assert.ok(reason, `${e.where.experiment} ${e.where.variant} declares hangIsResult`);
      assert.equal(e.hint, expectedHangHint(reason));
      assert.equal(e.expected, true);
      assert.equal(e.fatal, false);
    }
    // Everything else is the run as it was, and it still validates.
    assert.deepEqual({ ...m.run, errors: m.run.errors.map((e) => e.message), status: 'x' }, { ...old, errors: old.errors.map((e) => e.message), status: 'x' });
    validateRunFile(structuredClone(m.run));
    assert.equal(old.status, 'partial', 'the input is not modified');
    assert.equal(old.errors[0]!.expected, undefined);
  }
});

test('the migrated hint is the one the coordinator writes (the C4/C6 run made after the change)', () => {
  const current = load('h200x2-nccl2.28.9-wheel.c4c6.cases.json');
  const migrated = migrateExpectedHangs(oldForm(current));
  assert.deepEqual(migrated.run.errors, current.errors);
  assert.equal(migrated.run.status, current.status);
  // A run the agent wrote after the change comes back unchanged.
  assert.equal(migrateExpectedHangs(current).changed, false);
  assert.equal(migrateExpectedHangs(current).run, current);
});

test('a real error stays an error and keeps the run partial', () => {
  const old = oldForm(load('h200x2-nccl2.28.9-wheel.cases.json'));
  // A TIMEOUT of a variant whose plan expects no hang (split-subset nocolor), and a rank that died.
  old.errors.push({ ...old.errors[2]!, where: { ...old.errors[2]!.where, variant: 'nocolor' } });
  old.errors.push({ code: 'RANK_EXITED', message: 'rank 1 exited (SIGKILL)', where: { experiment: 'split-share', variant: 'splitShare=0' }, fatal: false });
  const m = migrateExpectedHangs(old);
  assert.equal(m.migrated.length, 4);
  assert.equal(m.run.status, 'partial');
  const nocolor = m.run.errors.find((e) => e.where.variant === 'nocolor')!;
  assert.deepEqual([nocolor.expected, nocolor.hint], [undefined, OLD_HINT]);
  assert.equal(m.run.errors.find((e) => e.code === 'RANK_EXITED')!.expected, undefined);
  // A hang of a variant that is not planned on this NCCL (shrink-abort needs 2.27.3) is not an expected one.
  const older = oldForm(load('h200x2-nccl2.28.9-wheel.cases.json'));
  older.stamp = { ...older.stamp!, ncclVersionCode: 22000 };
  assert.deepEqual(migrateExpectedHangs(older).migrated.map((h) => h.experiment), ['split-subset', 'init-abort']);
  assert.equal(migrateExpectedHangs(older).run.status, 'partial');
});

test('status: a run stopped inside an experiment or a variant stays partial; complete and failed runs keep theirs', () => {
  const old = oldForm(load('h200x2-nccl2.28.9-wheel.catalogue.json'));
  const migrated = migrateExpectedHangs(old).run;
  assert.equal(migrated.status, 'complete');
  const stopped = structuredClone(migrated);
  stopped.status = 'partial';
  stopped.experiments[0]!.state = 'stopped';
  assert.equal(statusAfterExpectedHangs(stopped), 'partial');
  const cancelled = structuredClone(migrated);
  cancelled.status = 'partial';
  cancelled.experiments[0]!.samples['half-done'] = { call: [1, 2] };
  assert.equal(statusAfterExpectedHangs(cancelled), 'partial');
  assert.equal(statusAfterExpectedHangs({ ...migrated, status: 'failed' }), 'failed');
  assert.equal(statusAfterExpectedHangs({ ...stopped, status: 'complete' }), 'complete');
});

test('the committed runs of docs/results are migrated: no hang of a hangIsResult variant is left unmarked, and none is partial because of one', () => {
  const names = readdirSync(RESULTS).filter((n) => n.endsWith('.json') && !n.endsWith('.reference.json'));
  let hangs = 0;
  for (const name of names) {
    const run = load(name);
    assert.equal(migrateExpectedHangs(run).changed, false, `${name} needs: node --import tsx scripts/migrate-expected-hangs.mjs docs/results/${name}`);
    hangs += run.errors.filter((e) => e.expected).length;
    if (run.errors.every((e) => e.expected)) assert.notEqual(run.status, 'partial', name);
  }
  assert.equal(hangs, 4 + 4 + 2 + 2 + 2);
});

test('the script: rewrites an old file in place (same layout), --check says what it would do, a bad file is refused', () => {
  const dir = mkdtempSync(join(tmpdir(), 'commcost-migrate-'));
  dirs.push(dir);
  const file = join(dir, 'old.json');
  const old = oldForm(load('h200x2-nccl2.28.9-wheel.catalogue.json'));
  writeFileSync(file, JSON.stringify(old, null, 1) + '\n');
  const script = (...args: string[]) => spawnSync(process.execPath, ['--import', 'tsx', join(ROOT, 'scripts', 'migrate-expected-hangs.mjs'), ...args], { cwd: ROOT, encoding: 'utf8' });
  const checked = script('--check', file);
  assert.equal(checked.status, 1, checked.stderr);
  assert.match(checked.stdout, /2 expected hang\(s\); status partial → complete/);
  assert.deepEqual(JSON.parse(readFileSync(file, 'utf8')), old, '--check writes nothing');
  const done = script(file);
  assert.equal(done.status, 0, done.stderr);
  const text = readFileSync(file, 'utf8');
  assert.equal(text, JSON.stringify(migrateExpectedHangs(old).run, null, 1) + '\n');
  assert.match(script(file).stdout, /nothing to migrate \(status complete\)/);
  const bad = join(dir, 'bad.json');
  writeFileSync(bad, '{"schema": "other"}');
  const refused = script(file, bad);
  assert.equal(refused.status, 2);
  assert.match(refused.stderr, /bad\.json: .*not a/);
  assert.equal(readFileSync(bad, 'utf8'), '{"schema": "other"}');
});
