/**
 * readings/runName.ts: a run is named by the GPUs it ran on and their count, its NCCL and its
 * start — never by the target's name ("localhost", "vm") where the stamp names the GPUs — on the
 * committed runs of docs/results/ (1 and 2 H200s, an old run, a partial run) and the simulated
 * fixture, and on the regimes no committed file shows (failed, no stamp, several hosts). The
 * expected texts are read from each file's own stamp, not written here.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import type { RunFile } from '../../protocol/runFile';
import { gpuModelName, runGpusText, runName, type NamedRun } from '../../readings/runName';

const ROOT = join(__dirname, '..', '..');
const load = (rel: string): RunFile => JSON.parse(readFileSync(join(ROOT, rel), 'utf8')) as RunFile;
const ONE = 'docs/results/h200x1-2026-12-01/h200x1-nccl2.28.9-wheel.json';
const TWO = 'docs/results/h200x2-2026-12-01/h200x2-nccl2.30.7-source.json';
const OLD = 'docs/results/proof-2026-11-30/run-wheel-r1.json';
const PARTIAL = 'docs/results/h200x1-faults-2026-12-01/silent-agent-partial.json';
const SIMULATED = 'test/fixtures/runs/simulated-2ranks-init-split.json';

/** "2026-12-01 09:24 UTC" from the stamp's own start. */
const minute = (run: RunFile): string => `${run.stamp!.startedAt.slice(0, 16).replace('T', ' ')} UTC`;
/** The stamp's first GPU model, without the vendor's prefix. */
const model = (run: RunFile): string => run.stamp!.gpus[0]!.name.replace(/^NVIDIA /, '');

for (const [rel, ranks] of [[ONE, 1], [TWO, 2], [OLD, 2]] as const) {
  test(`${rel}: named by its ${ranks} GPU${ranks === 1 ? '' : 's'}, NCCL and start, not by its host`, () => {
    const run = load(rel);
    assert.equal(run.ranks, ranks);
    assert.equal(runName(run), `${ranks}× ${model(run)} · NCCL ${run.stamp!.ncclVersion} · ${minute(run)}`);
    assert.doesNotMatch(runName(run), new RegExp(`\\b(${run.host}|${run.stamp!.hostname})\\b`), 'the target and hostname are not the name');
  });
}

test('a run of fewer ranks than the host has GPUs counts the GPUs its ranks drove', () => {
  const two = load(TWO);
  assert.match(runName({ ...two, ranks: 1 }), new RegExp(`^1× ${model(two)} · `));
});

test('a partial run says partial, a failed run says failed, last', () => {
  const partial = load(PARTIAL);
  assert.equal(partial.status, 'partial');
  assert.equal(runName(partial), `1× ${model(partial)} · NCCL ${partial.stamp!.ncclVersion} · ${minute(partial)} · partial`);
  const failed: RunFile = { ...load(ONE), status: 'failed' };
  assert.match(runName(failed), / · failed$/);
});

test('a simulated run says SIMULATED and its ranks, never a GPU model it did not run on', () => {
  const sim = load(SIMULATED);
  assert.equal(runName(sim), `SIMULATED · 2 ranks · NCCL ${sim.stamp!.ncclVersion} · ${minute(sim)}`);
  assert.doesNotMatch(runName(sim), /GPU|×/);
  // Marked only by its stamp (an older file whose run flag disagrees): still SIMULATED, still no model.
  const stampOnly: RunFile = { ...load(ONE), simulated: false, stamp: { ...load(ONE).stamp!, simulated: true } };
  assert.match(runName(stampOnly), /^SIMULATED · 1 rank · /);
  assert.doesNotMatch(runName(stampOnly), /H200/);
});

test('a run with no GPU recorded names its host and says so', () => {
  const one = load(ONE);
  const noStamp: RunFile = { ...one, stamp: undefined };
  assert.equal(runName(noStamp), `${one.host} (GPUs not recorded) · NCCL version not recorded · ${noStamp.id.slice(0, 4)}-${noStamp.id.slice(4, 6)}-${noStamp.id.slice(6, 8)} ${noStamp.id.slice(9, 11)}:${noStamp.id.slice(11, 13)} UTC`);
  const noGpus: RunFile = { ...one, stamp: { ...one.stamp!, gpus: [] } };
  assert.match(runName(noGpus), new RegExp(`^${one.host} \\(GPUs not recorded\\) · NCCL ${one.stamp!.ncclVersion} · `));
  assert.match(runName({ ...noStamp, id: 'no-time' }), / · time not recorded$/);
  assert.match(runName({ ...noStamp, id: 'no-time' }, { time: Date.parse('2026-12-02T05:00:00Z') }), / · 2026-12-02 05:00 UTC$/);
});

test('a run over several hosts counts every node\'s GPUs and the hosts', () => {
  const one = load(ONE);
  const nodes = [0, 1].map((i) => ({ index: i, hostname: `gpu${i}`, address: `10.0.0.${i}`, ranks: [2 * i, 2 * i + 1], gpus: ['NVIDIA H100', 'NVIDIA H100'] }));
  assert.equal(runGpusText({ ...one, ranks: 4, nodes }), '4× H100 over 2 hosts');
});

test('mixed models each keep their count; untrusted names are one short line', () => {
  const one = load(ONE);
  const gpu = one.stamp!.gpus[0]!;
  const mixed: RunFile = { ...one, ranks: 2, stamp: { ...one.stamp!, gpus: [gpu, { ...gpu, ordinal: 1, name: 'NVIDIA A100-SXM4-80GB' }] } };
  assert.equal(runGpusText(mixed), `1× ${model(one)} + 1× A100-SXM4-80GB`);
  assert.equal(gpuModelName('NVIDIA H200\n\u001b[31mred'), 'H200 [31mred');
  assert.ok(gpuModelName('x'.repeat(200)).length <= 40);
});

test('a bundled sample run is named by its SAMPLE host wherever a run is named, never as the user\'s own GPUs', () => {
  const sample = { host: 'SAMPLE from 2×H200', id: '20261201-100758-localhost', ranks: 2, status: 'complete', simulated: false, stamp: { ncclVersion: '2.30.7', startedAt: '2026-12-01T10:07:58Z', gpus: [{ name: 'NVIDIA H200' }, { name: 'NVIDIA H200' }] } } as unknown as NamedRun;
  assert.equal(runName(sample), 'SAMPLE from 2×H200 · NCCL 2.30.7 · 2026-12-01 10:07 UTC');
  assert.equal(runName({ ...sample, host: 'gpu-box' } as NamedRun), '2× H200 · NCCL 2.30.7 · 2026-12-01 10:07 UTC');
});
