// the results panel's charts and the comparison report in a real VS Code, light and dark: (f), (g).
// code-server 4.100.3 in headless Chromium (playwright-core), the built extension copied into a fresh
// extensions folder, measurements over SSH against the loopback OpenSSH server
// (test/support/sshServer.ts) on the simulated NCCL. Each scenario asserts what a user sees and
// saves a screenshot under test-output/ui/. Harness: ./uiEnv.ts, shared helpers: ./scenarioSupport.ts;
// install: ./install.sh. Skipped with the reason when Chromium, code-server or sshd is missing,
// unless COMMCOST_REQUIRE_UI=1 (set by .ci/run), which makes that a failure.
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { renderComparisonReport } from '../../client/htmlReport';
import { OUT_DIR, waitUntil, type UiSession } from './uiEnv';
import {
  WHEEL,
  canvasInk,
  result,
  chartsRun,
  CHART_SHOTS,
  FIRST_LENS_MS,
  textInk,
  sessionHelpers,
  uiSessionHooks,
  uiSkip,
} from './scenarioSupport';

const skip = uiSkip('UI tests');

describe('commcost in a real VS Code (code-server + Chromium)', { skip, timeout: 300_000 }, () => {
  let s: UiSession;
  // A session for the file; the agent deploys these tests make on the loopback host are removed after.
  uiSessionHooks({ cleanRemoteDeploys: true, timeoutMs: 60_000 }, (session) => (s = session));

  const { scenario, openFile, lens } = sessionHelpers(() => s);

  test('(f) every chart kind reads in a light theme, then in a dark one after a live theme switch; expected hangs sit under their case', async () => {
    await scenario('f', async () => {
      const ws = s.workspace('charts', {
        '.vscode/settings.json': JSON.stringify({ 'workbench.colorTheme': 'Default Light Modern' }, null, 2),
        '.commcost/runs/h200x2-charts.json': chartsRun(),
        'comm.cc': ['#include <nccl.h>', '', 'void f(ncclComm_t parent, int rank, ncclComm_t* child) {', '  ncclCommSplit(parent, rank % 2, rank, child, NULL);', '}', ''].join('\n'),
      });
      await s.openFolder(ws);
      await openFile('comm.cc', 'ncclCommSplit');
      const open = lens('to first collective');
      await open.waitFor({ state: 'visible', timeout: FIRST_LENS_MS });
      await open.locator('a').first().click();
      const frame = await s.resultsFrame();
      await waitUntil(() => frame.evaluate<boolean>(`document.body.classList.contains('vscode-light')`), 'a light theme in the panel', 10_000);
      await waitUntil(async () => (await canvasInk(frame)).length >= 12, 'every chart drawn', 20_000);

      // Expected hangs (C4, C6) are listed in their case's section, and the run has no Errors list.
      const hangs = await frame.evaluate<Record<string, number>>(`Object.fromEntries([...document.querySelectorAll('vscode-collapsible.exp')].map((c) => [c.heading, c.querySelectorAll('.expected-hangs li').length]))`);
      assert.equal(hangs['init-abort'], 1, JSON.stringify(hangs));
      assert.equal(hangs['split-subset'], 1, JSON.stringify(hangs));
      assert.equal(await frame.evaluate<boolean>(`[...document.querySelectorAll('h2')].some((e) => /^Errors$/.test(e.textContent))`), false);
      assert.equal(await frame.evaluate<string>(`document.querySelector('.status .label').textContent`), 'complete');

      const headings = await frame.evaluate<string[]>(`[...document.querySelectorAll('vscode-collapsible.exp')].map((c) => c.heading)`);
      const section = (experiment: string) => {
        assert.ok(headings.includes(experiment), `a section for ${experiment}: ${headings.join(', ')}`);
        return frame.locator('vscode-collapsible.exp').nth(headings.indexOf(experiment));
      };
      const shots = async (theme: string) => {
        for (const [experiment, k, name] of CHART_SHOTS) {
          const box = section(experiment).locator('.chart').nth(k);
          await box.evaluate((el: { scrollIntoView(): void }) => el.scrollIntoView());
          const height = await box.evaluate<number>((el: { clientHeight: number }) => el.clientHeight);
          assert.ok(height > 120, `${experiment} chart ${k}: ${height} px`);
          await box.screenshot({ path: join(OUT_DIR, `f-${theme}-${name}.png`) });
        }
      };
      await shots('light');
      const light = await textInk(frame);
      for (const c of light) assert.ok(c.ink > 200, `text in the light theme's colour on ${JSON.stringify(c)}`);
      await frame.evaluate(`window.scrollTo(0, 0)`);
      await s.shot('f1-charts-light');

      // Live switch: the workspace setting changes, VS Code re-themes the open panel.
      writeFileSync(join(ws, '.vscode', 'settings.json'), JSON.stringify({ 'workbench.colorTheme': 'Default Dark Modern' }, null, 2));
      await waitUntil(() => frame.evaluate<boolean>(`document.body.classList.contains('vscode-dark')`), 'the dark theme in the panel', 20_000);
      await waitUntil(
        async () => (await textInk(frame)).every((c) => c.ink > 200),
        'every chart redrawn with the dark theme\'s text colour',
        10_000,
      );
      await shots('dark-after-switch');
      await frame.evaluate(`window.scrollTo(0, 0)`);
      await s.shot('f2-charts-dark-after-switch');
    });
  });

  test('(g) the comparison report reads in light and dark (prefers-color-scheme)', async () => {
    await scenario('g', async () => {
      const html = join(OUT_DIR, 'g-comparison.html');
      writeFileSync(html, renderComparisonReport([WHEEL, result('h200x2-nccl2.28.3-system.json')]));
      for (const scheme of ['light', 'dark'] as const) {
        const page = await s.extraPage(scheme);
        try {
          await page.goto(`file://${html}`, { waitUntil: 'load' });
          await page.locator('canvas').first().waitFor({ state: 'visible', timeout: 10_000 });
          const bg = await page.evaluate<string>(`getComputedStyle(document.body).backgroundColor`);
          assert.equal(bg, scheme === 'dark' ? 'rgb(30, 30, 30)' : 'rgb(255, 255, 255)');
          const i = await page.evaluate<number>(`[...document.querySelectorAll('vscode-collapsible.exp')].findIndex((c) => c.heading === 'split')`);
          assert.ok(i >= 0, 'a split section');
          const box = page.locator('vscode-collapsible.exp').nth(i).locator('.chart').first();
          await box.screenshot({ path: join(OUT_DIR, `g-${scheme}-comparison.png`) });
          await page.screenshot({ path: join(OUT_DIR, `g-${scheme}-comparison-page.png`) });
        } finally {
          await page.close();
        }
      }
    });
  });
});
