/**
 * Issue #28 (6): a run that failed before its ranks were planned (no GPU, no NCCL: `ranks` 0 in the
 * run file) never reads "ranks 0" in the panel's or the report's header.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import { loadRun } from '../../client/resultsStore';
import type { RunFile } from '../../protocol/runFile';
import { c10dLines } from '../../readings/verdict/fieldCases';
import { metaRows } from '../../webview/runFacts';

const failedBeforePlan = { id: 'r', host: 'gpu-box', status: 'failed', ranks: 0, simulated: false, experiments: [], errors: [] } as unknown as RunFile;

test('a run that failed before its plan: ranks "none started", never 0; a run with ranks keeps its count', () => {
  const rows = new Map(metaRows(failedBeforePlan));
  assert.match(rows.get('ranks') ?? '', /^none started/);
  assert.equal(new Map(metaRows({ ...failedBeforePlan, status: 'partial', ranks: 2 } as RunFile)).get('ranks'), '2');
  assert.equal(new Map(metaRows({ ...failedBeforePlan, status: 'complete', ranks: undefined } as unknown as RunFile)).get('ranks'), 'not recorded');
});

test('a failed run that recorded nothing: "n" says what was asked and that none was recorded', () => {
  const run = { ...failedBeforePlan, options: { iterations: 2, warmup: 1 } } as unknown as RunFile;
  assert.equal(new Map(metaRows(run)).get('n'), '2 recorded + 1 warmup per step asked; none recorded (the run failed)');
  const ok = { ...run, status: 'complete', ranks: 2 } as unknown as RunFile;
  assert.equal(new Map(metaRows(ok)).get('n'), '2 recorded + 1 warmup per step');
});

test('c10d: destroy_process_group names the default group each figure tore down (eager with device_id, lazy), never one variant unnamed', async () => {
  const run = await loadRun(join(__dirname, '..', '..', 'docs', 'results', 'h200x2-torch2.11-nccl2.28.9-c10d.json'));
  const line = c10dLines(run, { host: '2× H200 NVLink', simulated: false }).find((l) => l.id === 'c10d-lifecycle');
  assert.ok(line, 'a c10d lifecycle line');
  assert.match(line.text, /destroy_process_group [\d.]+ ms of an eager default group \(device_id\), [\d.]+ ms of a lazy default group/);
});
