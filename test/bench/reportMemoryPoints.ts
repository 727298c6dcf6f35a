/**
 * The HTML report (and the results panel: the same webview bundle) of a run with thousands of
 * memory points (issue #21: "4,000 memory points freeze the report page"), in headless Chromium
 * (playwright-core from test/ui's cache, its Chromium): `renderReport` of the fixture built by
 * test/support/memoryPointsRun.ts, opened as a file. Measured in the page: the longest task (the
 * PerformanceObserver 'longtask' entries: tasks over 50 ms, observed from before the page's first
 * script), the first contentful paint and the time until every chart of the page is drawn, each
 * load printed, then the distribution per size. Target: no task > 200 ms.
 * Run: node --import tsx test/bench/reportMemoryPoints.ts [loads=3] [sizes=4000,40000] [screenshot dir]
 * (COMMCOST_WEBVIEW_JS: another webview bundle than dist/webview.js.)
 */
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { renderReport } from '../../client/htmlReport';
import { CHROMIUM, CODE_SERVER_DIR } from '../ui/uiEnv';
import { runWithMemoryPoints } from '../support/memoryPointsRun';
import { distribution, distText, TargetTable as TargetTableClass, type TargetTable } from './targets';

/** The playwright-core page surface used here. */
export interface ReportPage {
  addInitScript(script: string): Promise<void>;
  goto(url: string, opts?: { waitUntil?: 'load'; timeout?: number }): Promise<unknown>;
  evaluate<R>(fn: string): Promise<R>;
  screenshot(opts: { path: string; fullPage?: boolean }): Promise<unknown>;
  setViewportSize(size: { width: number; height: number }): Promise<void>;
  close(): Promise<void>;
}
export interface ReportBrowser {
  newPage(): Promise<ReportPage>;
  close(): Promise<void>;
}

/** Why a headless report page cannot be opened here, or undefined. */
export function reportPageMissing(bundle: string): string | undefined {
  if (!existsSync(path.join(CODE_SERVER_DIR, 'node_modules', 'playwright-core', 'package.json')))
    return `playwright-core is not in ${CODE_SERVER_DIR} (run test/ui/install.sh)`;
  if (!existsSync(CHROMIUM)) return `${CHROMIUM} is missing (COMMCOST_CHROMIUM, or apt-get install -y chromium)`;
  if (!existsSync(bundle)) return `${bundle} is not built (npm run build)`;
  return undefined;
}

/** Headless Chromium through test/ui's playwright-core. */
export async function launchChromium(): Promise<ReportBrowser> {
  const pw = createRequire(path.join(CODE_SERVER_DIR, 'package.json'))('playwright-core') as {
    chromium: { launch(o: object): Promise<ReportBrowser> };
  };
  return pw.chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
  });
}

/** What one load of a report page measured (ms, page clock). */
export interface ReportLoad {
  /** Every task over 50 ms (the 'longtask' entries), ms. */
  longTasks: number[];
  /** First contentful paint, ms from navigation start (NaN when none was reported). */
  firstPaintMs: number;
  /** From navigation start until every canvas of the page had a drawn chart, ms. */
  chartsMs: number;
  /** Canvases on the page when measured. */
  canvases: number;
  /** The notes under the memory chart and table ("… of … points", "rows … of …"). */
  notes: string[];
}

// Page code as text: functions handed to evaluate() would carry this bundle's helpers (__name).
const OBSERVE = `(() => {
  const m = { longTasks: [] };
  window.__reportMetrics = m;
  new PerformanceObserver((list) => { for (const e of list.getEntries()) m.longTasks.push(e.duration); }).observe({ type: 'longtask', buffered: true });
})()`;
/** True when the page has charts and none of them is still blank (chart.js has drawn each). */
const CHARTS_DRAWN = `(() => {
  const cs = [...document.querySelectorAll('canvas')];
  if (cs.length === 0 || !document.querySelector('.exp')) return false;
  return cs.every((c) => c.width > 0 && c.height > 0);
})()`;

/**
 * Opens `file` (a rendered report) in a new page of `browser` and measures it (see {@link ReportLoad}).
 * @param screenshot a PNG path for a screenshot of split-share's memory chart after the charts are drawn
 * @param probe called with the page after the measurements (a test's own checks and clicks)
 * @throws when the charts are not drawn within `timeoutMs` (a frozen page)
 */
export async function loadReport(
  browser: ReportBrowser,
  file: string,
  timeoutMs = 120_000,
  screenshot?: string,
  probe?: (page: ReportPage) => Promise<void>,
): Promise<ReportLoad> {
  const page = await browser.newPage();
  try {
    await page.setViewportSize({ width: 1200, height: 900 });
    await page.addInitScript(OBSERVE);
    await page.goto(`file://${file}`, { waitUntil: 'load', timeout: timeoutMs });
    // Polled from here with evaluate(): a string predicate handed to waitForFunction() is eval'd
    // inside the page on its second poll, which the report's CSP (no 'unsafe-eval') refuses when
    // the charts are not drawn at the first look (a loaded machine).
    const until = performance.now() + timeoutMs;
    while (!(await page.evaluate<boolean>(CHARTS_DRAWN))) {
      if (performance.now() > until) throw new Error(`the report's charts were not drawn within ${timeoutMs} ms: ${file}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    const chartsMs = await page.evaluate<number>('performance.now()');
    // Let what the first render scheduled run (throttled charts, a second frame) before reading.
    await new Promise((r) => setTimeout(r, 1000));
    const m = await page.evaluate<{ longTasks: number[]; firstPaintMs: number; canvases: number; notes: string[] }>(`(() => ({
      longTasks: window.__reportMetrics.longTasks,
      firstPaintMs: performance.getEntriesByName('first-contentful-paint')[0]?.startTime ?? NaN,
      canvases: document.querySelectorAll('canvas').length,
      notes: [...document.querySelectorAll('.decimation-note, .pager-note')].map((e) => e.textContent).filter((t) => t),
    }))()`);
    if (screenshot) {
      // The first experiment's (split-share's) memory chart at the top of the view: a full page of
      // thousands of bars is taller than a screenshot can be.
      await page.evaluate(`document.querySelector('canvas[aria-label^="split-share: memory"]')?.scrollIntoView()`);
      await page.screenshot({ path: screenshot });
    }
    await probe?.(page);
    return { ...m, chartsMs };
  } finally {
    await page.close();
  }
}

/**
 * The bench: for each size, `loads` loads of the report of a run with that many memory points per
 * variant, each printed; one row per size in `table` (longest task; target no task > 200 ms).
 */
export async function reportMemoryPointsBench(
  root: string,
  table: TargetTable,
  log: (line: string) => void,
  loads = 3,
  sizes = [4000, 40_000],
  shotsDir?: string,
): Promise<void> {
  const bundle = process.env.COMMCOST_WEBVIEW_JS ?? path.join(root, 'dist', 'webview.js');
  const why = reportPageMissing(bundle);
  if (why) {
    log(`   skipped: ${why}`);
    table.add({
      id: 'report.memoryPoints',
      what: 'report page with thousands of memory points',
      unit: 'ms',
      target: 'no task > 200 ms',
      verdict: 'skipped',
      note: why,
    });
    return;
  }
  const dir = mkdtempSync(path.join(tmpdir(), 'commcost-report-bench-'));
  const browser = await launchChromium();
  try {
    for (const points of sizes) {
      const file = path.join(dir, `memory-${points}.html`);
      writeFileSync(file, renderReport(runWithMemoryPoints(points), { webviewJsPath: bundle }));
      const longest: number[] = [];
      for (let i = 0; i < loads; i++) {
        let shot: string | undefined;
        if (shotsDir && i === 0) {
          mkdirSync(shotsDir, { recursive: true });
          shot = path.join(shotsDir, `report-memory-${points}.png`);
        }
        const r = await loadReport(browser, file, 120_000, shot);
        const top = r.longTasks.length > 0 ? Math.max(...r.longTasks) : 0;
        longest.push(top);
        log(
          `   ${points} points per variant, load ${i + 1}: longest task ${top.toFixed(0)} ms (${r.longTasks.length} over 50 ms), first contentful paint ${r.firstPaintMs.toFixed(0)} ms, charts drawn at ${r.chartsMs.toFixed(0)} ms, ${r.canvases} canvases${shot ? `, screenshot ${shot}` : ''}`,
        );
        for (const n of r.notes) log(`      note: ${n}`);
      }
      const d = distribution(longest);
      log(`   ${points} points: longest task per load ${distText(d, 0)}`);
      table.add({
        id: `report.memoryPoints.${points}`,
        what: `report page, ${points} memory points per variant (3 variants, with NCCL's count)`,
        unit: 'ms',
        dist: d,
        target: 'no task > 200 ms',
        verdict: d.max <= 200 ? 'met' : 'not met',
        note: 'longest task per load (headless Chromium, software rendering)',
      });
    }
  } finally {
    await browser.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

if (require.main === module) {
  const t = new TargetTableClass();
  const sizes = (process.argv[3] ?? '4000,40000').split(',').map(Number);
  void reportMemoryPointsBench(process.cwd(), t, (l) => console.log(l), Number(process.argv[2] ?? 3), sizes, process.argv[4]).then(() => {
    for (const l of t.lines()) console.log(l);
  });
}
