/**
 * A loaded run carries the verdict of today's rules (client/resultsStore.ts `loadRun`), not the
 * one stored in its file: the results panel, the exported HTML and the bundled samples render
 * `run.verdict` as loaded, so a file saved under older rules must not bring its old sentences.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { loadRun, withCurrentVerdict } from '../../client/resultsStore';
import { deriveVerdict } from '../../readings/verdict';
import type { RunFile } from '../../protocol/runFile';

const dir = mkdtempSync(join(tmpdir(), 'commcost-loadverdict-'));
after(() => rmSync(dir, { recursive: true, force: true }));

const REAL = join(__dirname, '../../docs/results/h200x2-2026-12-01/h200x2-nccl2.28.9-wheel.json');

test('a stored verdict from older rules is replaced by the one derived from the run\'s figures', async () => {
  const stored = JSON.parse(readFileSync(REAL, 'utf8')) as RunFile;
  const stale = { ...stored, verdict: [{ id: 'init', text: 'an old rule said this' }] } as RunFile;
  const path = join(dir, 'stale.json');
  writeFileSync(path, JSON.stringify(stale));
  const run = await loadRun(path);
  assert.ok((run.verdict ?? []).length > 0, 'the real 2-rank run has a verdict');
  assert.ok(!(run.verdict ?? []).some((l) => l.text === 'an old rule said this'), 'the stale sentence is gone');
  assert.deepEqual(run.verdict, deriveVerdict(stale));
  // Everything else is as stored.
  assert.deepEqual({ ...run, verdict: [] }, { ...stale, verdict: [] });
});

test('a run the verdict\'s rules cannot read still loads: its verdict is one line saying so, never the stored one', () => {
  const stored = JSON.parse(readFileSync(REAL, 'utf8')) as RunFile;
  const bad = { ...stored, verdict: [{ id: 'init', text: 'an old rule said this' }] } as RunFile;
  const run = withCurrentVerdict(bad, () => {
    throw new Error('a rule broke');
  });
  assert.deepEqual(run.verdict, [{ id: 'no-verdict', text: "No verdict: this run's figures could not be read by the verdict's rules (a rule broke); the figures below are as measured." }]);
  assert.deepEqual(run.experiments, stored.experiments);
});
