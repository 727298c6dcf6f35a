/**
 * Screenshots of the results panel's first page in a real VS Code (code-server + headless
 * Chromium, test/ui/uiEnv.ts), light and dark, for the runs of the report's first-page shots
 * (FIRST_PAGE_RUNS: a 1-GPU run, a 2-GPU run and a simulated run): each run saved in a fresh
 * workspace's .commcost/runs/, opened with "commcost: Open Run…". A failed run is never listed
 * as a saved run (client/profileStore.ts), so its panel is the one a user gets from a Measure
 * that fails: the real NCCL measured over SSH on the loopback host of this machine, which has no
 * GPU. Not a test: run it after a change to the first page, then look at each PNG.
 * Run: node --import tsx test/ui/panelShots.ts [out dir]   (default docs/screenshots/first-page/,
 * files panel-<run>-<theme>.png). Needs `npm run build` and test/ui/install.sh.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { FIRST_PAGE_RUNS } from './firstPageShots';
import { HOST_PICK, MEASURE } from './scenarioSupport';
import { REPO, UiSession, uiMissingReason, waitUntil, type Frame } from './uiEnv';

const THEMES = { light: 'Default Light Modern', dark: 'Default Dark Modern' } as const;

async function main(): Promise<void> {
  const missing = uiMissingReason();
  if (missing) throw new Error(`cannot take the panel's screenshots: ${missing}`);
  const out = process.argv[2] ?? join(REPO, 'docs', 'screenshots', 'first-page');
  const s = await UiSession.start();
  try {
    const capture = async (frame: Frame, name: string, theme: string): Promise<void> => {
      await waitUntil(() => frame.evaluate<boolean>(`document.body.classList.contains('vscode-${theme}')`), `the ${theme} theme in the panel`, 20_000);
      // Let the charts of the first page draw before the capture.
      await s.page.waitForTimeout(2_000);
      const png = join(out, `panel-${name}-${theme}.png`);
      await s.page.screenshot({ path: png });
      console.log(`wrote ${png}`);
    };
    for (const [theme, colorTheme] of Object.entries(THEMES)) {
      const ws = s.workspace(`failed-${theme}`, {
        '.vscode/settings.json': JSON.stringify({ 'workbench.colorTheme': colorTheme, 'commcost.iterations': 2, 'commcost.experiments': ['init', 'split'] }, null, 2),
        'README.md': 'a Measure on a host without a GPU\n',
      });
      await s.openFolder(ws);
      await s.command(MEASURE);
      await s.pick(HOST_PICK, 'commcost-test');
      await s.quickInput('commcost: experiments');
      await s.page.keyboard.press('Enter');
      await s.quickInput('commcost: recorded iterations');
      await s.page.keyboard.press('Enter');
      const frame = await s.resultsFrame(60_000);
      await waitUntil(() => frame.evaluate<boolean>(`/failed/i.test(document.querySelector('.status')?.textContent || '')`), 'the run to fail (no GPU here)', 120_000);
      await capture(frame, 'failed', theme);
    }
    for (const [name, file] of FIRST_PAGE_RUNS) {
      if (name === 'failed') continue;
      for (const [theme, colorTheme] of Object.entries(THEMES)) {
        const ws = s.workspace(`${name}-${theme}`, {
          '.vscode/settings.json': JSON.stringify({ 'workbench.colorTheme': colorTheme }, null, 2),
          [`.commcost/runs/${name}.json`]: readFileSync(join(REPO, file), 'utf8'),
        });
        await s.openFolder(ws);
        await s.command('commcost: Open Run…');
        const pick = await s.quickInput('commcost: open a saved run');
        await waitUntil(async () => (await pick.locator('.monaco-list-row').count()) >= 1, `the saved run ${name} in the quick pick`);
        await s.page.keyboard.press('Enter');
        await capture(await s.resultsFrame(30_000), name, theme);
      }
    }
  } finally {
    await s.stop();
  }
}

if (require.main === module)
  main().catch((e: unknown) => {
    console.error(e instanceof Error ? e.message : String(e));
    process.exit(1);
  });
