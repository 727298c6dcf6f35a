// The Runs view's Traces group in a real VS Code (code-server + headless Chromium, ./uiEnv.ts):
// the traces of .commcost/traces (the committed 2×H200 trace of docs/results and a SIMULATED copy)
// listed under "Traces" beside the runs; "Use Trace for Annotations" marks one; a click opens the
// trace; "Compare Trace with Run…" opens the comparison; "Delete Trace File…" asks first and removes only that file. Screenshots under
// test-output/ui/runs-traces-*.png. Skipped with the reason when Chromium or code-server is
// missing, unless COMMCOST_REQUIRE_UI=1.
import assert from 'node:assert/strict';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import type { RunFile } from '../../protocol/runFile';
import { staleAfterDaysFor } from './committedRuns';
import { pickContextMenu, REPO, waitUntil, type Locator, type UiSession } from './uiEnv';
import { uiSessionHooks, uiSkip } from './scenarioSupport';

const skip = uiSkip('UI Runs view traces test');

const RESULTS = join(REPO, 'docs', 'results', 'h200x2-2026-12-01');
const RUN = 'h200x2-nccl2.30.7-source.json';
const RUN_TEXT = readFileSync(join(RESULTS, RUN), 'utf8');
const TRACE_TEXT = readFileSync(join(RESULTS, 'trace-torch-tp-reshape-nccl2.28.9.json'), 'utf8');
const SIM_TEXT = JSON.stringify({ ...(JSON.parse(TRACE_TEXT) as object), simulated: true, host: 'simbox', startedAt: '2026-11-30T08:00:00.000Z' }, null, 1);
type Clickable = Locator & { click(options?: { button?: 'right' | 'left'; timeout?: number }): Promise<void> };

describe('the Runs view lists traces: use for annotations, open, delete', { skip, timeout: 300_000 }, () => {
  let s: UiSession;
  uiSessionHooks({ timeoutMs: 60_000 }, (session) => (s = session));

  test('a Traces group with command, host, NCCL, SIMULATED; use, open and delete from the context menu', async () => {
    const ws = s.workspace('traces-view', {
      '.vscode/settings.json': JSON.stringify({ 'workbench.colorTheme': 'Default Light Modern', 'commcost.staleAfterDays': staleAfterDaysFor([JSON.parse(RUN_TEXT) as RunFile]) }, null, 2),
      [`.commcost/runs/${RUN}`]: RUN_TEXT,
      '.commcost/traces/tp-reshape.json': TRACE_TEXT,
      '.commcost/traces/tp-reshape-sim.json': SIM_TEXT,
    });
    const tracesDir = join(ws, '.commcost', 'traces');
    const sidebar = () => s.page.locator('.part.sidebar');
    const row = (text: string | RegExp) => sidebar().locator('.monaco-list-row', { hasText: text }).first() as Clickable;
    try {
      await s.page.setViewportSize({ width: 1500, height: 900 });
      await s.openFolder(ws);
      await s.command('View: Show commcost');
      await row(/^Traces/).waitFor({ state: 'visible', timeout: 30_000 });
      await waitUntil(async () => (await row(/^Traces/).innerText()).includes('2 traces'), 'the Traces group says 2 traces', 15_000);
      const texts = await sidebar().locator('.monaco-list-row').allInnerTexts();
      const all = texts.join(' | ');
      const measured = texts.find((t) => t.includes('vm · NCCL 2.28.9'));
      const simulated = texts.find((t) => t.includes('simbox'));
      assert.ok(measured && /torch_tp_reshape\.py · 2026-12-01 10:10 UTC/.test(measured), all);
      assert.ok(simulated && /SIMULATED/.test(simulated), all);
      assert.ok(texts.some((t) => t.startsWith('localhost')), `the runs are still listed by host: ${all}`);
      await s.shot('runs-traces-group');

      // Use for annotations (context menu): the row says so.
      await row('vm · NCCL 2.28.9').click({ button: 'right' });
      await pickContextMenu(s.page, 'Use Trace for Annotations');
      await waitUntil(async () => (await row('vm · NCCL 2.28.9').innerText()).includes('used for annotations'), 'the trace marked as used for annotations', 15_000);
      await s.shot('runs-traces-used');

      // A click opens the trace file.
      await row('vm · NCCL 2.28.9').click();
      await s.page.locator('.tabs-container .tab', { hasText: 'tp-reshape.json' }).first().waitFor({ state: 'visible', timeout: 15_000 });

      // Compare with a run: the one run is picked, the comparison opens as a Markdown preview.
      await row('vm · NCCL 2.28.9').click({ button: 'right' });
      await pickContextMenu(s.page, 'Compare Trace with Run');
      await s.quickInput(/compare the trace tp-reshape\.json with a run/);
      await s.page.keyboard.press('Enter');
      await s.page.locator('.tabs-container .tab', { hasText: /Preview/ }).first().waitFor({ state: 'visible', timeout: 20_000 });
      await s.page.waitForTimeout(1500);
      await s.shot('runs-traces-compare');

      // Delete the simulated one: a modal first, then only that file goes.
      await row('simbox').click({ button: 'right' });
      await pickContextMenu(s.page, 'Delete Trace File');
      const dialog = s.page.locator('.monaco-dialog-box', { hasText: 'Delete the trace file tp-reshape-sim.json?' }).first();
      await dialog.waitFor({ state: 'visible', timeout: 10_000 });
      await s.shot('runs-traces-delete-confirm');
      await dialog.locator('.monaco-button', { hasText: /^Delete$/ }).first().click();
      await waitUntil(() => !existsSync(join(tracesDir, 'tp-reshape-sim.json')), 'the simulated trace deleted', 10_000);
      assert.deepEqual(readdirSync(tracesDir), ['tp-reshape.json']);
      await waitUntil(async () => (await sidebar().locator('.monaco-list-row', { hasText: 'simbox' }).count()) === 0, 'gone from the tree', 10_000);
      assert.ok((await row(/^Traces/).innerText()).includes('1 trace'));
      await s.shot('runs-traces-deleted');
    } catch (e) {
      await s.shot('runs-traces-failure').catch(() => undefined);
      throw e;
    }
  });
});
