/**
 * The names2 leftovers of the run's one name (issue #28): the comparison's labels name the GPUs and
 * their count as readings/runName.ts does (one copy, protocol/runNameParts.ts); a simulated run never
 * reads as a GPU model ("Simulated GPU") in the verdict or the CLI's header; `report --html run.json`
 * reports run.json; a live run's panel is named by what is known. Expected texts are read from each
 * file's own stamp, not written here.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { htmlOperands } from '../../cli/report';
import { headerLine } from '../../cli/summary';
import { describeRuns } from '../../protocol/compareLabels';
import type { RunFile } from '../../protocol/runFile';
import * as parts from '../../protocol/runNameParts';
import { liveRunTitle, runGpusText, runName } from '../../readings/runName';
import { deriveVerdict, describeHost } from '../../readings/verdict';

const ROOT = join(__dirname, '..', '..');
const load = (rel: string): RunFile => JSON.parse(readFileSync(join(ROOT, rel), 'utf8')) as RunFile;
const TWO9 = load('docs/results/h200x2-nccl2.28.9-wheel.json');
const TWO3 = load('docs/results/h200x2-nccl2.28.3-system.json');
const ONE = load('docs/results/h200x1-2026-12-01/h200x1-nccl2.28.9-wheel.json');
const SIM = load('test/fixtures/runs/simulated-2ranks-init-split.json');
/** "2× H200" from the stamp itself: the rank count and the first GPU's model without the vendor's prefix. */
const gpus = (run: RunFile): string => `${run.ranks}× ${run.stamp!.gpus[0]!.name.replace(/^NVIDIA /, '')}`;

test('one copy: readings/runName.ts names the GPUs with protocol/runNameParts.ts', () => {
  assert.equal(runGpusText, parts.runGpusText);
  for (const run of [TWO9, ONE, SIM]) assert.equal(runName(run).split(' · NCCL')[0], parts.runGpusText(run));
});

test('comparison labels name the GPUs and their count, not the host', () => {
  const labels = describeRuns([TWO9, TWO3, ONE]).map((i) => i.label);
  // Each label starts with the GPUs and NCCL; the variables that differ between the stamps follow.
  [TWO9, TWO3, ONE].forEach((run, i) => assert.ok(labels[i]!.startsWith(`${gpus(run)} · NCCL ${run.stamp!.ncclVersion}`), labels[i]));
  for (const l of labels) assert.ok(!l.includes(TWO9.stamp!.hostname), l);
});

test('comparison labels: the host only tells apart runs whose GPUs and NCCL agree', () => {
  const elsewhere = { ...TWO9, id: 'other', stamp: { ...TWO9.stamp!, hostname: 'gpu7' } };
  const labels = describeRuns([TWO9, elsewhere]).map((i) => i.label);
  assert.deepEqual(labels, [`${gpus(TWO9)} · NCCL ${TWO9.stamp!.ncclVersion} · ${TWO9.stamp!.hostname}`, `${gpus(TWO9)} · NCCL ${TWO9.stamp!.ncclVersion} · gpu7`]);
});

test('a simulated run is labelled SIMULATED with its ranks, never by the simulator\'s device name', () => {
  const [measured, sim] = describeRuns([TWO9, SIM]);
  assert.ok(sim!.label.startsWith(`SIMULATED · ${SIM.ranks} ranks · NCCL ${SIM.stamp!.ncclVersion}`), sim!.label);
  assert.ok(!sim!.label.includes(SIM.stamp!.gpus[0]!.name));
  assert.ok(!measured!.label.includes('SIMULATED'));
});

test('the verdict and the CLI header say "simulated, N ranks" for a simulated run, never its GPU model', () => {
  const device = SIM.stamp!.gpus[0]!.name;
  assert.equal(describeHost(SIM), `simulated, ${SIM.ranks} ranks`);
  const verdict = deriveVerdict(SIM).map((l) => l.text).join('\n');
  assert.ok(verdict.length > 0);
  assert.ok(!verdict.includes(device), verdict);
  assert.match(verdict, new RegExp(`on ${SIM.stamp!.hostname} \\(simulated, ${SIM.ranks} ranks\\) with NCCL`));
  const header = headerLine(SIM);
  assert.ok(!header.includes(device), header);
  assert.ok(header.includes(`· simulated, ${SIM.ranks} ranks · NCCL ${SIM.stamp!.ncclVersion}`), header);
  // A measured run keeps its GPU count and model.
  assert.ok(headerLine(TWO9).includes(`${TWO9.stamp!.gpus.length} GPUs ${TWO9.stamp!.gpus[0]!.name}`));
  assert.equal(describeHost(TWO9).startsWith(gpus(TWO9)), true);
});

test('report: a .json/.jsonl word after --html is a run file, in the order typed; any other word is the page', () => {
  assert.deepEqual(htmlOperands([], 'run.json', ['node', 'commcost', 'report', '--html', 'run.json']), { files: ['run.json'], html: true });
  assert.deepEqual(htmlOperands(['b.json'], 'a.json', ['node', 'commcost', 'report', '--html', 'a.json', 'b.json']), { files: ['a.json', 'b.json'], html: true });
  assert.deepEqual(htmlOperands(['a.json'], 'b.json', ['node', 'commcost', 'report', 'a.json', '--html', 'b.json']), { files: ['a.json', 'b.json'], html: true });
  assert.deepEqual(htmlOperands(['a.json'], 'out.html', ['node', 'commcost', 'report', '--html', 'out.html', 'a.json']), { files: ['a.json'], html: 'out.html' });
  assert.deepEqual(htmlOperands([], 'launched.jsonl', ['node', 'commcost', 'report', '--html', 'launched.jsonl']), { files: ['launched.jsonl'], html: true });
  assert.deepEqual(htmlOperands(['a.json'], true, ['node', 'commcost', 'report', 'a.json', '--html']), { files: ['a.json'], html: true });
  assert.deepEqual(htmlOperands(['a.json'], undefined, []), { files: ['a.json'], html: undefined });
});

test('a live run\'s panel: the target and "starting" until the stamp, then the run\'s name', () => {
  const starting = { ...TWO9, status: 'running' as const, stamp: undefined };
  assert.equal(liveRunTitle('localhost', undefined, false), 'commcost: localhost · starting');
  assert.equal(liveRunTitle('localhost', starting, false), 'commcost: localhost · starting');
  assert.equal(liveRunTitle('localhost', undefined, true), 'commcost: localhost · SIMULATED · starting');
  assert.equal(liveRunTitle('localhost', { ...starting, status: 'failed' }, false), 'commcost: localhost · failed');
  const stamped = { ...TWO9, status: 'running' as const };
  assert.equal(liveRunTitle('localhost', stamped, false), `commcost: ${runName(stamped)}`);
  assert.ok(liveRunTitle('localhost', stamped, false).startsWith(`commcost: ${gpus(TWO9)} · NCCL`));
  assert.equal(liveRunTitle('localhost', TWO9, false), `commcost: ${runName(TWO9)}`);
});
