/**
 * Issue #28 (6): a run that failed before its ranks were planned (no GPU, no NCCL: `ranks` 0 in the
 * run file) never reads "ranks 0" in the panel's or the report's header.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { RunFile } from '../../protocol/runFile';
import { metaRows } from '../../webview/runFacts';

const failedBeforePlan = { id: 'r', host: 'gpu-box', status: 'failed', ranks: 0, simulated: false, experiments: [], errors: [] } as unknown as RunFile;

test('a run that failed before its plan: ranks "none started", never 0; a run with ranks keeps its count', () => {
  const rows = new Map(metaRows(failedBeforePlan));
  assert.match(rows.get('ranks') ?? '', /^none started/);
  assert.equal(new Map(metaRows({ ...failedBeforePlan, status: 'partial', ranks: 2 } as RunFile)).get('ranks'), '2');
  assert.equal(new Map(metaRows({ ...failedBeforePlan, status: 'complete', ranks: undefined } as unknown as RunFile)).get('ranks'), 'not recorded');
});
