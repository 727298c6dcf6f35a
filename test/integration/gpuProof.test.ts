/**
 * The GPU proof's pipeline on the simulated NCCL (SIMULATE=1): test/gpu/gpu-proof.sh runs commcost
 * and the independent reference (test/gpu/reference.py) in turns (ROUNDS), the reference in
 * commcost's session order, and compare.mjs pools every turn's samples. Figures here are the
 * simulated library's: the test checks the pipeline and the pooling arithmetic, not timings.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, describe, test } from 'node:test';
import type { RunFile } from '../../protocol/runFile';
import { agentBuilt, repoRoot } from '../support/agentHarness';

const python = spawnSync('python3', ['-c', 'import ctypes, multiprocessing'], { encoding: 'utf8' });
const skip = !agentBuilt() || !fs.existsSync(path.join(repoRoot, 'dist', 'cli.js'))
  ? 'dist/ is not built: run `npm run build` (npm test builds it)'
  : python.status !== 0 ? 'python3 (with ctypes and multiprocessing) is needed by test/gpu/reference.py' : false;
const cleanup: string[] = [];
after(() => {
  for (const d of cleanup) fs.rmSync(d, { recursive: true, force: true });
});
const tmp = () => {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), 'commcost-proof-'));
  cleanup.push(d);
  return d;
};

/** The linear-interpolated median (commcost's stats and reference.py define it so). */
function median(values: number[]): number {
  const s = [...values].sort((a, b) => a - b);
  const pos = (s.length - 1) / 2;
  return s[Math.floor(pos)]! + (s[Math.ceil(pos)]! - s[Math.floor(pos)]!) * (pos - Math.floor(pos));
}

function samplesOf(run: RunFile, experiment: string, variant: string, step: string): number[] {
  const s = run.experiments.find((e) => e.experiment === experiment)?.variants.find((v) => v.variant === variant)?.steps.find((x) => x.step === step);
  assert.ok(s, `${experiment} ${variant} ${step} in the run`);
  return s.samples;
}

/** The `ratio` column of compare.mjs's row for a step label. */
function row(text: string, label: string): number[] {
  const line = text.split('\n').find((l) => l.startsWith(label));
  assert.ok(line, `a row "${label}" in:\n${text}`);
  return line.slice(label.length).trim().split(/\s+/).slice(0, 5).map(Number);
}

describe('GPU proof pipeline (simulated NCCL)', { skip }, () => {
  test('ROUNDS=2: the tools take turns, the reference follows the session order, the comparison pools both turns', () => {
    const out = tmp();
    const r = spawnSync('bash', ['test/gpu/gpu-proof.sh', out], {
      cwd: repoRoot,
      encoding: 'utf8',
      timeout: 180_000,
      // drain is not the reference's: commcost measures it, the reference leaves it out.
      env: { ...process.env, SIMULATE: '1', ITERATIONS: '3', ROUNDS: '2', PROOF_EXPERIMENTS: 'init,drain,split,shrink' },
    });
    const text = r.stdout + r.stderr;
    // Only the ±10% verdict may fail on a loaded machine (exit 1); the tools themselves must not.
    assert.ok(r.status === 0 || r.status === 1, text);
    assert.doesNotMatch(text, /reference failed|commcost exited/);
    assert.match(text, /--- round 1\n[\s\S]*--- round 2\n[\s\S]*--- all 2 rounds\n/);
    assert.match(text, /SIMULATED/);
    assert.match(text, /reference sections in this order, in the same processes: init, split, shrink\n/);
    assert.match(text, /pooled: 2 commcost run file\(s\), 2 reference file\(s\)/);

    // The 3 iterations are shared out 2 + 1 between the turns; the pooled medians are those of the union.
    const runs = [1, 2].map((i) => JSON.parse(fs.readFileSync(path.join(out, `run-simulated-r${i}.json`), 'utf8')) as RunFile);
    const refs = [1, 2].map((i) => JSON.parse(fs.readFileSync(path.join(out, `ref-simulated-r${i}.json`), 'utf8')) as { order: string[]; steps: Record<string, { samples: number[] }> });
    assert.deepEqual(runs.map((run) => run.options.iterations), [2, 1]);
    assert.deepEqual(refs.map((ref) => ref.steps['init/total']!.samples.length), [2, 1]);
    for (const run of runs) assert.ok(run.experiments.some((e) => e.experiment === 'drain'));
    for (const ref of refs) assert.deepEqual(ref.order, ['init', 'split', 'shrink']);
    const compare = fs.readFileSync(path.join(out, 'compare-simulated.txt'), 'utf8');
    for (const [experiment, variant, step, refKey] of [
      ['init', 'default', 'total', 'init/total'],
      ['split', 'halves/splitShare=0', 'call', 'split/halves/call'],
      ['shrink', 'default', 'total', 'shrink/total'],
    ] as const) {
      const ours = median(runs.flatMap((run) => samplesOf(run, experiment, variant, step)));
      const theirs = median(refs.flatMap((ref) => ref.steps[refKey]!.samples));
      const [commcostMedian, , referenceMedian, , ratio] = row(compare, `${experiment} ${variant} ${step}`);
      assert.ok(Math.abs(commcostMedian! - ours) < 0.001, `${experiment} ${step}: printed ${commcostMedian}, pooled ${ours}`);
      assert.ok(Math.abs(referenceMedian! - theirs) < 0.001, `${refKey}: printed ${referenceMedian}, pooled ${theirs}`);
      assert.ok(Math.abs(ratio! - ours / theirs) < 0.001);
    }
  });

  test('bad ROUNDS, ITERATIONS or PROOF_EXPERIMENTS and an unknown reference section are refused with what to do', () => {
    const proof = (env: Record<string, string>) => spawnSync('bash', ['test/gpu/gpu-proof.sh', tmp()], { cwd: repoRoot, encoding: 'utf8', env: { ...process.env, SIMULATE: '1', ...env } });
    for (const [env, message] of [
      [{ ROUNDS: 'two' }, /ROUNDS must be a whole number ≥ 1, got 'two'/],
      [{ ITERATIONS: '0' }, /ITERATIONS must be a whole number ≥ 1, got '0'/],
      [{ ITERATIONS: '2', ROUNDS: '3' }, /ROUNDS \(3\) must not exceed ITERATIONS \(2\): every turn records at least one iteration/],
      [{ PROOF_EXPERIMENTS: 'drain,pool' }, /none of PROOF_EXPERIMENTS \(drain,pool\) is measured by the reference/],
    ] as const) {
      const r = proof(env);
      assert.equal(r.status, 2, JSON.stringify(env));
      assert.match(r.stdout, message);
    }
    const ref = spawnSync('python3', ['test/gpu/reference.py', '--nccl', 'x.so', '--only', 'split,drain'], { cwd: repoRoot, encoding: 'utf8' });
    assert.equal(ref.status, 2);
    assert.match(ref.stderr, /--only: unknown section\(s\) drain; choose from init, split, shrink, destroy, abort, revoke, window/);
  });

  test('compare.mjs refuses files of different rank counts or NCCL versions, files it cannot pool, and files it cannot read', () => {
    const out = tmp();
    const run = { ranks: 2, experiments: [{ experiment: 'init', variants: [{ variant: 'default', steps: [{ step: 'total', stats: { median: 10, p90: 11 }, samples: [10] }] }] }] };
    const ref = (ranks: number) => ({ ranks, steps: { 'init/total': { median: 10, p90: 11, samples: [10] } } });
    fs.writeFileSync(path.join(out, 'run.json'), JSON.stringify(run));
    fs.writeFileSync(path.join(out, 'ref2.json'), JSON.stringify(ref(2)));
    fs.writeFileSync(path.join(out, 'ref4.json'), JSON.stringify(ref(4)));
    const compare = (refs: string) => spawnSync(process.execPath, ['test/gpu/compare.mjs', path.join(out, 'run.json'), refs], { cwd: repoRoot, encoding: 'utf8' });
    const same = compare(path.join(out, 'ref2.json'));
    assert.equal(same.status, 0, same.stdout);
    assert.match(same.stdout, /1 of 1 totals within ±10%/);
    const mixed = compare(`${path.join(out, 'ref2.json')},${path.join(out, 'ref4.json')}`);
    assert.equal(mixed.status, 1);
    assert.match(mixed.stdout, /not comparable: the files measured different rank counts \(2, 4\)/);
    fs.writeFileSync(path.join(out, 'ref-2.28.3.json'), JSON.stringify({ ...ref(2), ncclVersionCode: 22803 }));
    fs.writeFileSync(path.join(out, 'run-2.28.9.json'), JSON.stringify({ ...run, stamp: { ncclVersion: '2.28.9' } }));
    const versions = spawnSync(process.execPath, ['test/gpu/compare.mjs', path.join(out, 'run-2.28.9.json'), path.join(out, 'ref-2.28.3.json')], { cwd: repoRoot, encoding: 'utf8' });
    assert.equal(versions.status, 1);
    assert.match(versions.stdout, /not comparable: the files measured different NCCL versions \(2\.28\.9, 2\.28\.3\)/);
    // A reference written before per-iteration samples cannot be pooled: refused, not quietly dropped.
    fs.writeFileSync(path.join(out, 'ref-bare.json'), JSON.stringify({ ranks: 2, steps: { 'init/total': { median: 30, p90: 31 } } }));
    const bare = compare(`${path.join(out, 'ref2.json')},${path.join(out, 'ref-bare.json')}`);
    assert.equal(bare.status, 2);
    assert.match(bare.stderr, /reference init\/total: .*ref-bare\.json has no per-iteration samples, so it cannot be pooled/);
    const missing = compare(path.join(out, 'nothere.json'));
    assert.equal(missing.status, 2);
    assert.match(missing.stderr, /cannot read the reference file .*nothere\.json: ENOENT/);
  });
});
