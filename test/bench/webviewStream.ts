/**
 * The results webview while a run streams (DESIGN.md: ≥ 55 fps and no task > 50 ms at 1,000
 * events/s), in headless Chromium (playwright-core from test/ui's cache, its Chromium): the built
 * dist/webview.js in a page with a stand-in for VS Code's API; this process plays the host,
 * folding 1,000 run/sample events per second into the run (client/runModel.ts) and posting the
 * run to the page the way extension/webviewPanel.ts does (one post in flight at a time, the
 * newest state next): deltas (protocol/runDelta.ts), or, to compare, complete snapshots.
 * Measured in the page: frames per second (requestAnimationFrame) and the long tasks (the
 * PerformanceObserver 'longtask' entries: tasks over 50 ms).
 * Run: node --import tsx test/bench/webviewStream.ts [seconds=5] [preloaded samples=50000]
 */
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import * as path from 'node:path';
import { applyEvent } from '../../client/runModel';
import type { AgentEvent } from '../../protocol/events';
import { runDelta, sentCountsOf, type SentCounts } from '../../protocol/runDelta';
import type { RunFile } from '../../protocol/runFile';
import { createMessage, RunDeltaNotification, RunStateNotification } from '../../protocol/webviewMessages';
import { CHROMIUM, CODE_SERVER_DIR } from '../ui/uiEnv';
import { TargetTable as TargetTableClass, type TargetTable } from './targets';

interface PageLike {
  setContent(html: string): Promise<void>;
  evaluate<R, A>(fn: (arg: A) => R | Promise<R>, arg: A): Promise<R>;
}

/** Why the bench cannot run here, or undefined. */
function missing(root: string, chromium: string): string | undefined {
  if (!existsSync(path.join(CODE_SERVER_DIR, 'node_modules', 'playwright-core', 'package.json'))) return `playwright-core is not in ${CODE_SERVER_DIR} (run test/ui/install.sh)`;
  if (!existsSync(chromium)) return `${chromium} is missing (COMMCOST_CHROMIUM, or apt-get install -y chromium)`;
  if (!existsSync(path.join(root, 'dist', 'webview.js'))) return 'dist/webview.js is not built';
  if (!existsSync(path.join(root, 'test', 'fixtures', 'runs', 'simulated-2ranks-init-split.json'))) return 'the fixture run is not here';
  return undefined;
}

/** The fixture run made live again with `preload` samples of init's call already in. */
function liveRun(root: string, preload: number): RunFile {
  const run = JSON.parse(readFileSync(path.join(root, 'test', 'fixtures', 'runs', 'simulated-2ranks-init-split.json'), 'utf8')) as RunFile;
  run.status = 'running';
  delete run.endedAt;
  const init = run.experiments.find((e) => e.experiment === 'init')!;
  init.state = 'running';
  const steps = init.samples.default ?? {};
  for (const step of Object.keys(steps)) steps[step] = Array.from({ length: preload }, (_, i) => 40 + (i % 13));
  init.samples.default = steps;
  return run;
}

function sample(iteration: number): AgentEvent {
  const call = 40 + (iteration % 11);
  return { type: 'run/sample', experiment: 'init', variant: 'default', iteration, warmup: false, steps: { call, first: 50 + (iteration % 7), steady: 3 }, perRank: { call: [call, call] }, stepSkewUs: { call: 5 } } as AgentEvent;
}

/** One measurement: `seconds` of 1,000 events/s posted as deltas or snapshots. */
async function stream(page: PageLike, root: string, mode: 'delta' | 'snapshot', seconds: number, preload: number): Promise<{ fps: number; longTasks: number[]; posts: number }> {
  let run = liveRun(root, preload);
  await page.setContent(`<!DOCTYPE html><html><head></head><body><div id="app"></div></body></html>`);
  // Page code as text: functions handed to evaluate() would carry this bundle's helpers (__name).
  const setup = `(() => {
    window.acquireVsCodeApi = () => ({ postMessage() {}, getState() {}, setState() {} });
    const m = { frames: 0, longTasks: [] };
    window.__metrics = m;
    new PerformanceObserver((list) => { for (const e of list.getEntries()) m.longTasks.push(e.duration); }).observe({ type: 'longtask', buffered: true });
    const tick = () => { m.frames++; requestAnimationFrame(tick); };
    requestAnimationFrame(tick);
  })()`;
  await page.evaluate((code: string) => (0, eval)(code), setup);
  await page.evaluate((js: string) => (0, eval)(js), readFileSync(path.join(root, 'dist', 'webview.js'), 'utf8'));
  let counter = 0;
  const post = (msg: unknown): Promise<void> => page.evaluate((m: unknown) => (globalThis as unknown as { postMessage(m: unknown, to: string): void }).postMessage(m, '*'), msg);
  await post(createMessage(RunStateNotification, { run, live: true }, 'host', ++counter));
  let sent: SentCounts = sentCountsOf(run);
  await new Promise((r) => setTimeout(r, 500)); // first render
  await page.evaluate(() => {
    const m = (globalThis as unknown as { __metrics: { frames: number; longTasks: number[] } }).__metrics;
    m.frames = 0;
    m.longTasks.length = 0;
  }, undefined);
  const t0 = performance.now();
  let iteration = preload;
  let posts = 0;
  while (performance.now() - t0 < seconds * 1000) {
    // Fold what 1,000 events/s brought since the last post, then post (one in flight at a time).
    const due = Math.floor(performance.now() - t0) - (iteration - preload);
    for (let i = 0; i < due; i++) run = applyEvent(run, sample(iteration++));
    if (mode === 'delta') {
      const delta = runDelta(run, sent);
      if (delta) {
        await post(createMessage(RunDeltaNotification, { live: true, runId: run.id, delta }, 'host', ++counter));
      } else {
        sent = sentCountsOf(run);
        await post(createMessage(RunStateNotification, { run, live: true }, 'host', ++counter));
      }
    } else await post(createMessage(RunStateNotification, { run, live: true }, 'host', ++counter));
    posts++;
    await new Promise((r) => setTimeout(r, 1));
  }
  const elapsed = (performance.now() - t0) / 1000;
  const m = await page.evaluate(() => (globalThis as unknown as { __metrics: { frames: number; longTasks: number[] } }).__metrics, undefined);
  return { fps: m.frames / elapsed, longTasks: m.longTasks, posts };
}

/**
 * The webview section of the bench: deltas and snapshots at 1,000 events/s over a run holding
 * `preload` samples, each printed; the delta row goes to `table` (≥ 55 fps, no task > 50 ms).
 */
export async function webviewStreamBench(root: string, table: TargetTable, log: (line: string) => void, seconds = 5, preload = 50_000): Promise<void> {
  const chromium = CHROMIUM;
  const why = missing(root, chromium);
  if (why) {
    log(`   skipped: ${why}`);
    table.add({ id: 'webview.stream', what: 'webview at 1,000 events/s', unit: 'fps', target: '≥ 55 fps, no task > 50 ms', verdict: 'skipped', note: why });
    return;
  }
  const pw = createRequire(path.join(CODE_SERVER_DIR, 'package.json'))('playwright-core') as { chromium: { launch(o: object): Promise<{ newPage(): Promise<PageLike>; close(): Promise<void> }> } };
  const browser = await pw.chromium.launch({ executablePath: chromium, headless: true, args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'] });
  try {
    const page = await browser.newPage();
    for (const mode of ['delta', 'snapshot'] as const) {
      const r = await stream(page, root, mode, seconds, preload);
      const longest = r.longTasks.length > 0 ? Math.max(...r.longTasks) : 0;
      log(`   ${mode === 'delta' ? 'deltas   ' : 'snapshots'} over ${preload} samples: ${r.fps.toFixed(1)} fps, ${r.longTasks.length} task(s) > 50 ms (longest ${longest.toFixed(0)} ms), ${r.posts} posts in ${seconds} s`);
      if (mode === 'delta') {
        table.add({
          id: 'webview.stream',
          what: 'webview at 1,000 events/s (deltas)',
          unit: 'fps',
          target: '≥ 55 fps, no task > 50 ms',
          verdict: r.fps >= 55 && r.longTasks.length === 0 ? 'met' : 'not met',
          note: `${r.fps.toFixed(1)} fps, ${r.longTasks.length} long task(s), longest ${longest.toFixed(0)} ms, over a run holding ${preload} samples (headless Chromium, software rendering)`,
        });
      }
    }
  } finally {
    await browser.close();
  }
}

if (require.main === module) {
  const t = new TargetTableClass();
  void webviewStreamBench(process.cwd(), t, (l) => console.log(l), Number(process.argv[2] ?? 5), Number(process.argv[3] ?? 50_000)).then(() => {
    for (const l of t.lines()) console.log(l);
  });
}
