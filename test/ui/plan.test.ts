// The "plan this reshape" CodeLens in a real VS Code (code-server + headless Chromium, harness
// ./uiEnv.ts): over a function that builds a group of every TP shape in `for tp in (4, 2, 1)`, the
// lens names the shapes the code wrote; clicking it opens the results panel on the committed
// 2×H200 run with its Plan section set to those shapes, said where they came from, planned (a
// row per strategy, the chart drawn) and scrolled into view; `commcost.annotations.planLens: false`
// removes the lens. Screenshots under test-output/ui/. Skipped with the reason when Chromium or
// code-server is missing, unless COMMCOST_REQUIRE_UI=1.
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import type { RunFile } from '../../protocol/runFile';
import { staleAfterDaysFor } from './committedRuns';
import { OUT_DIR, REPO, waitUntil, type UiSession } from './uiEnv';
import { uiSessionHooks, uiSkip } from './scenarioSupport';

const skip = uiSkip('UI plan test');

const RUN = 'h200x2-nccl2.30.7-source.json';
const RUN_TEXT = readFileSync(join(REPO, 'docs', 'results', 'h200x2-2026-12-01', RUN), 'utf8');
const STALE_AFTER_DAYS = staleAfterDaysFor([JSON.parse(RUN_TEXT) as RunFile]);
const RESHAPE = readFileSync(join(REPO, 'test', 'fixtures', 'plan', 'reshape_loop.py'), 'utf8');

describe('the plan lens in a real VS Code: a reshape loop opens the Plan section with its shapes', { skip, timeout: 300_000 }, () => {
  let s: UiSession;
  uiSessionHooks({ timeoutMs: 60_000 }, (session) => (s = session));

  test('the lens over build_pool says tp4 → tp2 → tp1; clicking it plans those shapes on the run; the setting turns it off', async () => {
    try {
      const ws = s.workspace('reshape-job', {
        '.vscode/settings.json': JSON.stringify({ 'workbench.colorTheme': 'Default Light Modern', 'commcost.staleAfterDays': STALE_AFTER_DAYS }, null, 2),
        [`.commcost/runs/${RUN}`]: RUN_TEXT,
        'reshape.py': RESHAPE,
      });
      await s.page.setViewportSize({ width: 1600, height: 1400 });
      await s.openFolder(ws);
      await s.page.locator('.explorer-folders-view .monaco-list-row', { hasText: 'reshape.py' }).first().click();
      await s.page.locator('.monaco-editor .view-lines', { hasText: 'build_pool' }).first().waitFor({ state: 'visible', timeout: 15_000 });

      const lensTexts = () =>
        s.page.evaluate<string[]>(
          `[...document.querySelectorAll('.editor-group-container.active .codelens-decoration')].map((e) => ({ y: e.getBoundingClientRect().top, t: e.innerText.trim() })).filter((x) => x.t).sort((a, b) => a.y - b.y).map((x) => x.t)`,
        );
      let lenses: string[] = [];
      await waitUntil(
        async () => {
          lenses = await lensTexts();
          return lenses.filter((t) => t.includes('commcost: plan this reshape')).length === 3;
        },
        'three plan lenses (build_pool, build_halves, build_unknown)',
        40_000,
      );
      const plans = lenses.filter((t) => t.includes('commcost: plan this reshape'));
      assert.ok(plans.some((t) => t.includes('commcost: plan this reshape (tp4 → tp2 → tp1)')), plans.join('\n'));
      // A comprehension over starts with one literal size: the run's shapes (2 GPUs: tp2 → tp1).
      assert.ok(plans.some((t) => t.includes("commcost: plan this reshape (tp2 → tp1, the run's shapes)")), plans.join('\n'));
      await s.page.screenshot({ path: join(OUT_DIR, 'plan-lens.png'), clip: { x: 0, y: 0, width: 1600, height: 700 } });

      // Click the build_pool lens: the panel opens on the run with the Plan section set to TP4, TP2, TP1.
      await s.page.locator('.editor-group-container.active .codelens-decoration a', { hasText: 'commcost: plan this reshape (tp4 → tp2 → tp1)' }).first().click();
      const frame = await s.resultsFrame(30_000);
      await waitUntil(
        () => frame.evaluate<boolean>(`document.querySelector('#plan input[aria-label="shapes"]')?.value === 'tp4,tp2,tp1'`),
        'the Plan section set to tp4,tp2,tp1',
        20_000,
      );
      const origin = await frame.evaluate<string>(`document.querySelector('#plan .plan-origin')?.textContent || ''`);
      assert.match(origin, /from build_pool in reshape\.py: TP4, TP2, TP1 from `for tp in \(4, 2, 1\)` \(line 7\)/);
      const rows = await frame.evaluate<string[][]>(
        `[...document.querySelectorAll('#plan table.plan-table tbody tr')].map((r) => [...r.querySelectorAll('td')].map((c) => c.textContent))`,
      );
      assert.equal(rows.length, 10, JSON.stringify(rows));
      // TP4 needs 4 GPUs; the run has 2: TP4 is left out and said so, never priced with another shape's figures.
      const note = await frame.evaluate<string>(`document.querySelector('#plan .plan-problem')?.textContent || ''`);
      assert.match(note, /^TP4 left out: the run measured 2 GPUs/);
      assert.ok(rows.find((r) => r[0] === 'prewarmed pool'), JSON.stringify(rows));
      // The on-demand rebuild: one switch is the mean over the shapes switched to, each priced with
      // the run's figure for that shape — TP2 the init's total (its median, as the first page reads it), TP1 the pool's rebuild.
      const run = JSON.parse(RUN_TEXT) as { experiments: { experiment: string; variants: { variant: string; steps: { step: string; stats: { median: number } }[] }[] }[] };
      const median = (experiment: string, variant: string | undefined, step: string): number => {
        const e = run.experiments.find((x) => x.experiment === experiment)!;
        const v = variant === undefined ? e.variants[0]! : e.variants.find((x) => x.variant === variant)!;
        return v.steps.find((x) => x.step === step)!.stats.median;
      };
      const tp2 = median('init', undefined, 'total');
      const tp1 = median('pool', 'tp2+1', 'rebuild/call') + median('pool', 'tp2+1', 'rebuild/first');
      assert.equal(rows.find((r) => r[0] === 'on-demand rebuild (lazy connect)')?.[1], `${Math.round((tp2 + tp1) / 2)} ms`);
      // The section is in view (scrolled to) and its shapes input has the focus.
      const inView = await frame.evaluate<{ top: number; focused: boolean }>(
        `({ top: document.querySelector('#plan').getBoundingClientRect().top, focused: document.activeElement === document.querySelector('#plan input[aria-label="shapes"]') })`,
      );
      assert.ok(inView.top >= -2 && inView.top < 200, `the Plan section at the top of the view: ${JSON.stringify(inView)}`);
      assert.equal(inView.focused, true);
      await s.page.waitForTimeout(600);
      assert.equal(await s.page.locator('.notifications-toasts .notification-toast').count(), 0, 'no error toast');
      await s.page.screenshot({ path: join(OUT_DIR, 'plan-from-lens.png') });

      // The setting turns the lens off.
      writeFileSync(
        join(ws, '.vscode', 'settings.json'),
        JSON.stringify({ 'workbench.colorTheme': 'Default Light Modern', 'commcost.staleAfterDays': STALE_AFTER_DAYS, 'commcost.annotations.planLens': false }, null, 2),
      );
      await s.page.locator('.monaco-editor .view-lines', { hasText: 'build_pool' }).first().click();
      await waitUntil(async () => (await lensTexts()).every((t) => !t.includes('plan this reshape')), 'no plan lens with commcost.annotations.planLens false', 20_000);
    } catch (e) {
      await s.shot('plan-failure').catch(() => undefined);
      throw e;
    }
  });
});
