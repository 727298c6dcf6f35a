/**
 * Screenshots of the HTML report's first page (docs/screenshots/first-page/), light and dark, for
 * a 1-GPU run, a 2-GPU run, a simulated run and a failed run: `renderReport` with the built
 * dist/webview.js, opened in headless Chromium (its own `--screenshot`; the dark page through
 * prefers-color-scheme, which the standalone report follows). Not a test: run it after a change
 * to the first page, then look at each PNG.
 * Run: node --import tsx test/ui/firstPageShots.ts [out dir] (COMMCOST_CHROMIUM: another Chromium.)
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { renderReport } from '../../client/htmlReport';
import { loadRun } from '../../client/resultsStore';

const REPO = join(__dirname, '..', '..');
const CHROMIUM = process.env.COMMCOST_CHROMIUM ?? '/usr/bin/chromium';
const BUNDLE = join(REPO, 'dist', 'webview.js');

/** The runs shown: a name for the PNG and the committed run file. */
export const FIRST_PAGE_RUNS: readonly (readonly [string, string])[] = [
  ['1gpu', 'docs/results/h200x1-2026-12-01/h200x1-nccl2.30.7-source.json'],
  ['2gpu', 'docs/results/h200x2-2026-12-01/h200x2-nccl2.30.7-source.json'],
  ['simulated', 'test/fixtures/runs/simulated-2ranks-init-split.json'],
  ['failed', 'test/fixtures/runs/simulated-2ranks-failed-startup.json'],
];

async function main(): Promise<void> {
  const out = process.argv[2] ?? join(REPO, 'docs', 'screenshots', 'first-page');
  for (const [what, path] of [
    ['Chromium', CHROMIUM],
    ['the webview bundle (node scripts/build.mjs)', BUNDLE],
  ] as const)
    if (!existsSync(path)) throw new Error(`${what} is missing: ${path}`);
  mkdirSync(out, { recursive: true });
  const dir = mkdtempSync(join(tmpdir(), 'commcost-first-page-'));
  try {
    for (const [name, file] of FIRST_PAGE_RUNS) {
      // Read as `commcost report` reads it: validated, its verdict derived again by today's rules.
      const run = await loadRun(join(REPO, file));
      const html = join(dir, `${name}.html`);
      writeFileSync(html, renderReport(run, { webviewJsPath: BUNDLE }));
      for (const scheme of ['light', 'dark'] as const) {
        const png = join(out, `${name}-${scheme}.png`);
        execFileSync(
          CHROMIUM,
          [
            '--headless',
            '--no-sandbox',
            '--disable-gpu',
            '--disable-dev-shm-usage',
            '--hide-scrollbars',
            `--user-data-dir=${join(dir, `profile-${name}-${scheme}`)}`,
            `--blink-settings=preferredColorScheme=${scheme === 'dark' ? 0 : 1}`,
            `--window-size=1100,${process.env.COMMCOST_SHOT_HEIGHT ?? '1100'}`,
            '--virtual-time-budget=5000',
            `--screenshot=${png}`,
            `file://${html}`,
          ],
          { stdio: ['ignore', 'ignore', 'pipe'], timeout: 120_000 },
        );
        console.log(`wrote ${png}`);
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

if (require.main === module)
  main().catch((e: unknown) => {
    console.error(e instanceof Error ? e.message : String(e));
    process.exit(1);
  });
