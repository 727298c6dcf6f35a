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

  test('grow and suspend (simulated 2.30.7): the reference measures the same steps, compare.mjs pairs and pools them', () => {
    const out = tmp();
    const r = spawnSync('bash', ['test/gpu/gpu-proof.sh', out], {
      cwd: repoRoot,
      encoding: 'utf8',
      timeout: 180_000,
      env: { ...process.env, SIMULATE: '1', COMMCOST_SIM_VERSION: '23007', ITERATIONS: '3', ROUNDS: '2', PROOF_EXPERIMENTS: 'grow,suspend' },
    });
    const text = r.stdout + r.stderr;
    assert.ok(r.status === 0 || r.status === 1, text);
    assert.doesNotMatch(text, /reference failed|commcost exited/);
    assert.match(text, /reference sections in this order, in the same processes: grow, suspend\n/);
    const runs = [1, 2].map((i) => JSON.parse(fs.readFileSync(path.join(out, `run-simulated-r${i}.json`), 'utf8')) as RunFile);
    type Ref = { order: string[]; skipped: Record<string, string>; steps: Record<string, { samples: number[] }> };
    const refs = [1, 2].map((i) => JSON.parse(fs.readFileSync(path.join(out, `ref-simulated-r${i}.json`), 'utf8')) as Ref);
    for (const ref of refs) {
      assert.deepEqual(ref.order, ['grow', 'suspend']);
      assert.deepEqual(ref.skipped, {});
      // Totals as commcost defines them: grow = call + first; suspend = resume + first (the suspend call stands alone).
      ref.steps['grow/total']!.samples.forEach((t, i) => assert.ok(Math.abs(t - ref.steps['grow/call']!.samples[i]! - ref.steps['grow/first']!.samples[i]!) < 1e-9));
      ref.steps['suspend/total']!.samples.forEach((t, i) => assert.ok(Math.abs(t - ref.steps['suspend/resume']!.samples[i]! - ref.steps['suspend/first']!.samples[i]!) < 1e-9));
    }
    assert.deepEqual(refs.map((ref) => ref.steps['suspend/suspend']!.samples.length), [2, 1]);
    const compare = fs.readFileSync(path.join(out, 'compare-simulated.txt'), 'utf8');
    for (const [experiment, step, refKey] of [
      ['grow', 'call', 'grow/call'],
      ['grow', 'total', 'grow/total'],
      ['suspend', 'suspend', 'suspend/suspend'],
      ['suspend', 'resume', 'suspend/resume'],
      ['suspend', 'total', 'suspend/total'],
    ] as const) {
      const ours = median(runs.flatMap((run) => samplesOf(run, experiment, 'default', step)));
      const theirs = median(refs.flatMap((ref) => ref.steps[refKey]!.samples));
      const [commcostMedian, , referenceMedian, , ratio] = row(compare, `${experiment} default ${step}`);
      assert.ok(Math.abs(commcostMedian! - ours) < 0.001, `${experiment} ${step}: printed ${commcostMedian}, pooled ${ours}`);
      assert.ok(Math.abs(referenceMedian! - theirs) < 0.001, `${refKey}: printed ${referenceMedian}, pooled ${theirs}`);
      assert.ok(Math.abs(ratio! - ours / theirs) < 0.001);
    }
    // Decided: grow's and suspend's totals and the suspend call (no total holds it).
    assert.match(compare, /\d of 3 totals \(with suspend's suspend call\) within ±10%/);
    // The simulated library releases its connection buffers on suspend: both tools see the drop.
    assert.match(compare, /memory suspend default after the suspend: commcost (\d+) MiB, reference \1 MiB per GPU/);
    assert.match(compare, /memory grow default after first collective: commcost (\d+) MiB, reference \1 MiB per GPU/);
  });

  test('the reference skips grow and suspend with the reason: too few ranks, an older NCCL, a library without the symbols', () => {
    const reference = (lib: string, version: string, ranks: number) => {
      const json = path.join(tmp(), 'ref.json');
      const nccl = path.join(repoRoot, 'dist', 'native', lib);
      const r = spawnSync('python3', ['test/gpu/reference.py', '--nccl', nccl, '--cuda', nccl, '--ranks', String(ranks), '--iterations', '1', '--only', 'init,grow,suspend', '--json', json], {
        cwd: repoRoot,
        encoding: 'utf8',
        timeout: 60_000,
        env: { ...process.env, COMMCOST_SIM_VERSION: version, COMMCOST_SIM_GPUS: String(ranks) },
      });
      assert.equal(r.status, 0, r.stderr);
      return { stderr: r.stderr, ref: JSON.parse(fs.readFileSync(json, 'utf8')) as { order: string[]; skipped: Record<string, string>; steps: Record<string, unknown> } };
    };
    // One rank (the one-GPU machine): suspend runs, grow cannot (it grows n−1 ranks to n).
    const one = reference('libnccl-sim.so', '23007', 1);
    assert.deepEqual(one.ref.order, ['init', 'suspend']);
    assert.match(one.stderr, /reference: grow skipped: needs 2 ranks or more \(one per GPU; --ranks 1 given\)/);
    assert.deepEqual(Object.keys(one.ref.skipped), ['grow']);
    assert.ok(one.ref.steps['suspend/total'] && !one.ref.steps['grow/total']);
    // The symbols exist but the library says 2.28.9: skipped on the version, as commcost does.
    const older = reference('libnccl-sim.so', '22809', 2);
    assert.deepEqual(older.ref.order, ['init']);
    assert.equal(older.ref.skipped.grow, 'needs NCCL >= 2.29.2, library has 2.28.9');
    assert.equal(older.ref.skipped.suspend, 'needs NCCL >= 2.29.7, library has 2.28.9');
    // A library that lacks the symbols (looked up by name), whatever version it reports.
    const bare = reference('libnccl-sim-legacy.so', '23007', 2);
    assert.deepEqual(bare.ref.order, ['init']);
    assert.match(bare.stderr, /reference: grow skipped: ncclCommGrow, ncclCommGetUniqueId not in this library/);
    assert.match(bare.stderr, /reference: suspend skipped: ncclCommSuspend, ncclCommResume not in this library/);
    assert.deepEqual(Object.keys(bare.ref.skipped), ['grow', 'suspend']);
  });

  test('bad ROUNDS, ITERATIONS or PROOF_EXPERIMENTS and an unknown reference section are refused with what to do', () => {
    const proof = (env: Record<string, string>) => spawnSync('bash', ['test/gpu/gpu-proof.sh', tmp()], { cwd: repoRoot, encoding: 'utf8', env: { ...process.env, SIMULATE: '1', ...env } });
    for (const [env, message] of [
      [{ ROUNDS: 'two' }, /ROUNDS must be a whole number ≥ 1, got 'two'/],
      [{ ITERATIONS: '0' }, /ITERATIONS must be a whole number ≥ 1, got '0'/],
      [{ ITERATIONS: '2', ROUNDS: '3' }, /ROUNDS \(3\) must not exceed ITERATIONS \(2\): every turn records at least one iteration/],
      [{ PROOF_EXPERIMENTS: 'drain,pool' }, /none of PROOF_EXPERIMENTS \(drain,pool\) is measured by the reference \(init, split, shrink, grow, destroy, abort, revoke, registration, suspend\)/],
    ] as const) {
      const r = proof(env);
      assert.equal(r.status, 2, JSON.stringify(env));
      assert.match(r.stdout, message);
    }
    const ref = spawnSync('python3', ['test/gpu/reference.py', '--nccl', 'x.so', '--only', 'split,drain'], { cwd: repoRoot, encoding: 'utf8' });
    assert.equal(ref.status, 2);
    assert.match(ref.stderr, /--only: unknown section\(s\) drain; choose from init, split, shrink, grow, destroy, abort, revoke, window, suspend/);
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
    // A real 2-GPU run (NCCL 2.30.7) has grow and suspend: compare.mjs finds them by experiment,
    // variant and step names, and decides on the totals and the suspend call.
    const real = path.join(repoRoot, 'docs', 'results', 'h200x2-2026-12-01', 'h200x2-nccl2.30.7-source.json');
    const realRun = JSON.parse(fs.readFileSync(real, 'utf8')) as RunFile;
    const scaled = (factor: number, suspendFactor = factor) => {
      const steps: Record<string, { median: number; p90: number; samples: number[] }> = {};
      for (const [experiment, key] of [['grow', 'grow'], ['suspend', 'suspend']] as const) {
        for (const step of ['call', 'first', 'total', 'suspend', 'resume']) {
          const s = realRun.experiments.find((e) => e.experiment === experiment)?.variants[0]?.steps.find((x) => x.step === step);
          if (!s) continue;
          const f = step === 'suspend' ? suspendFactor : factor;
          steps[`${key}/${step}`] = { median: s.stats.median * f, p90: s.stats.p90 * f, samples: s.samples.map((v) => v * f) };
        }
      }
      const file = path.join(out, `ref-real-${factor}-${suspendFactor}.json`);
      fs.writeFileSync(file, JSON.stringify({ ranks: 2, ncclVersionCode: 23007, order: ['grow', 'suspend'], skipped: {}, steps }));
      return spawnSync(process.execPath, ['test/gpu/compare.mjs', real, file], { cwd: repoRoot, encoding: 'utf8' });
    };
    const near = scaled(1.05);
    assert.equal(near.status, 0, near.stdout);
    for (const label of ['grow default call', 'grow default first', 'grow default total', 'suspend default suspend', 'suspend default resume', 'suspend default first', 'suspend default total']) {
      assert.ok(Math.abs(row(near.stdout, label)[4]! - 1 / 1.05) < 0.001, `${label} in:\n${near.stdout}`);
    }
    assert.match(near.stdout, /3 of 3 totals \(with suspend's suspend call\) within ±10%/);
    // Only the suspend call off by 20%: no total holds it, yet it fails the comparison.
    const off = scaled(1.0, 1.2);
    assert.equal(off.status, 1, off.stdout);
    assert.match(off.stdout, /suspend default suspend .* NO\n/);
    assert.match(off.stdout, /2 of 3 totals \(with suspend's suspend call\) within ±10%/);
    const missing = compare(path.join(out, 'nothere.json'));
    assert.equal(missing.status, 2);
    assert.match(missing.stderr, /cannot read the reference file .*nothere\.json: ENOENT/);
  });
});
