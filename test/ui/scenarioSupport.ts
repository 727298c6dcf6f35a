// Shared by the real-VS-Code scenarios (measure.test.ts (a, b, e), annotations.test.ts (c, d, i),
// committedRunsHovers.test.ts (h), charts.test.ts (f, g), basics.test.ts): whether the UI tests run
// here (uiSkip), a describe block's session started and stopped (uiSessionHooks), the runs they
// write into workspaces, process and webview probes, the remote agent folders to clean up, and
// the editor helpers bound to a session (sessionHelpers).
// Harness: ./uiEnv.ts. Not a test file (the glob test/ui/*.test.ts does not pick it up).
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { userInfo } from 'node:os';
import { join } from 'node:path';
import type { RunFile } from '../../protocol/runFile';
import { startedAt } from './committedRuns';
import { after, before, test } from 'node:test';
import { OUT_DIR, REPO, UiSession, uiMissingReason, waitUntil, type Frame, type UiOptions } from './uiEnv';

/** The UTC day a run started, as a hover's footer writes it ("2026-11-30"). */
export const dayOf = (run: RunFile): string => new Date(startedAt(run)).toISOString().slice(0, 10);

export const MEASURE = 'commcost: Measure communicator rebuild';
export const HOST_PICK = 'commcost: target host';
export const DAY = 86_400_000;
/**
 * How long a scenario waits for its first CodeLens, ms: it includes the extension host's start
 * after the folder opens, which on the 2-core CI machine under load took 9–19 s (test/bench
 * startup figures), besides our own scan. A wait, not a speed check (the bench measures that).
 */
export const FIRST_LENS_MS = 60_000;
/** The real 2×H200 run (NCCL 2.28.9 from the PyTorch wheel). */
export const WHEEL: RunFile = JSON.parse(readFileSync(join(REPO, 'docs', 'results', 'h200x2-nccl2.28.9-wheel.json'), 'utf8'));

/** The H200 run with its start moved to `daysAgo` days before now (figures untouched). */
export function wheelRun(daysAgo: number): string {
  const run = structuredClone(WHEEL);
  assert.ok(run.stamp);
  run.stamp.startedAt = new Date(Date.now() - daysAgo * DAY).toISOString();
  return JSON.stringify(run, null, 2);
}

/** The stats of `experiment`/`variant`/`step` in `run` (asserts the step is there). */
export function stats(run: RunFile, experiment: string, variant: string, step: string) {
  const s = run.experiments
    .find((e) => e.experiment === experiment)
    ?.variants.find((v) => v.variant === variant)
    ?.steps.find((x) => x.step === step);
  assert.ok(s, `${experiment}/${variant}/${step} in the run`);
  return s.stats;
}

/** The run files saved under `<ws>/.commcost/runs/`. */
export function savedRuns(ws: string): RunFile[] {
  const dir = join(ws, '.commcost', 'runs');
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((f) => f.endsWith('.json'))
    .map((f) => JSON.parse(readFileSync(join(dir, f), 'utf8')) as RunFile);
}

/** Processes under `rootPid` (pid, args). */
export function descendants(rootPid: number): { pid: number; args: string }[] {
  const rows = execFileSync('ps', ['-eo', 'pid=,ppid=,args='], { encoding: 'utf8' })
    .split('\n')
    .map((l) => /^\s*(\d+)\s+(\d+)\s+(.*)$/.exec(l))
    .filter((m): m is RegExpExecArray => m !== null)
    .map((m) => ({ pid: Number(m[1]), ppid: Number(m[2]), args: m[3] ?? '' }));
  const out: { pid: number; args: string }[] = [];
  const todo = [rootPid];
  while (todo.length > 0) {
    const p = todo.pop();
    for (const r of rows)
      if (r.ppid === p) {
        out.push({ pid: r.pid, args: r.args });
        todo.push(r.pid);
      }
  }
  return out;
}

/** Whether process `pid` exists (signal 0). */
export const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/** Text of the webview's step tables (memory rows left out): [variant, label, median, p90, min, max, n] per row. */
export async function tableRows(frame: Frame, experiment: string): Promise<string[][]> {
  return frame.evaluate<string[][]>(`(() => {
    const box = [...document.querySelectorAll('vscode-collapsible.exp')].find((c) => c.heading === ${JSON.stringify(experiment)});
    if (!box) return [];
    let variant = '';
    return [...box.querySelectorAll('table.steps tbody tr:not(.memory)')].map((tr) => {
      const td = [...tr.querySelectorAll('td')].map((c) => c.textContent.trim());
      if (td[0]) variant = td[0];
      return [variant, td[1], td[3], td[4], td[5], td[6], td[7]];
    });
  })()`);
}

/** Per canvas of the webview: its size and how many pixels are not transparent. */
export async function canvasInk(frame: Frame): Promise<{ label: string; width: number; height: number; ink: number }[]> {
  return frame.evaluate(`[...document.querySelectorAll('canvas')].map((c) => {
    const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
    let ink = 0;
    for (let i = 3; i < d.length; i += 4) if (d[i] > 0) ink++;
    return { label: c.getAttribute('aria-label') || '', width: c.width, height: c.height, ink };
  })`);
}

/** A real run of docs/results. */
export const result = (file: string): RunFile => JSON.parse(readFileSync(join(REPO, 'docs', 'results', file), 'utf8'));

/**
 * One run file holding every chart kind, for the chart screenshots: the H200 run (init, split,
 * destroy, abort) with the experiments of the other real H200 runs of the same NCCL added
 * unchanged (pool; split-share, shrink-abort; C4 and C6 with their expected hangs; c10d).
 */
export function chartsRun(): string {
  const run = structuredClone(WHEEL);
  assert.ok(run.stamp);
  run.stamp.startedAt = new Date(Date.now() - DAY).toISOString();
  const take = (file: string, ids: string[]) => result(file).experiments.filter((e) => ids.includes(e.experiment));
  run.experiments.push(
    ...take('h200x2-nccl2.28.9-wheel.catalogue.json', ['pool']),
    ...take('h200x2-nccl2.28.9-wheel.cases.json', ['split-share', 'shrink-abort']),
    ...take('h200x2-nccl2.28.9-wheel.c4c6.cases.json', ['init-abort', 'split-subset']),
    ...take('h200x2-torch2.11-nccl2.28.9-c10d.json', ['c10d']),
  );
  run.errors = result('h200x2-nccl2.28.9-wheel.c4c6.cases.json').errors;
  return JSON.stringify(run, null, 2);
}

/** The chart kinds screenshotted: [experiment, which .chart of its section (0 steps, 1 memory), name]. */
export const CHART_SHOTS: [string, number, string][] = [
  ['init', 0, 'step-chart'],
  ['split', 1, 'memory-chart'],
  ['pool', 0, 'pool'],
  ['split-share', 0, 'split-share'],
  ['split-share', 1, 'split-share-memory'],
  ['shrink-abort', 0, 'shrink-abort'],
  ['c10d', 0, 'c10d'],
];

/**
 * Per canvas of the webview: how many pixels are drawn in the theme's text colour
 * (--vscode-foreground, within a small distance): the ticks, labels, legend and values.
 */
export async function textInk(frame: Frame): Promise<{ label: string; ink: number }[]> {
  return frame.evaluate(`(() => {
    const probe = document.createElement('span');
    probe.style.color = 'var(--vscode-foreground)';
    document.body.appendChild(probe);
    const fg = getComputedStyle(probe).color.replace(/[^0-9.,]/g, '').split(',').map(Number);
    probe.remove();
    return [...document.querySelectorAll('canvas')].map((c) => {
      const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
      let ink = 0;
      for (let i = 0; i < d.length; i += 4) if (d[i + 3] > 200 && Math.abs(d[i] - fg[0]) + Math.abs(d[i + 1] - fg[1]) + Math.abs(d[i + 2] - fg[2]) < 40) ink++;
      return { label: c.getAttribute('aria-label') || '', ink };
    });
  })()`);
}

/** Agent folders in the remote login's ~/.cache/commcost (the loopback host is this machine). */
const remoteCache = join(userInfo().homedir, '.cache', 'commcost');

/** The agent folders now in the remote login's ~/.cache/commcost. */
export const remoteAgentDirs = (): string[] => (existsSync(remoteCache) ? readdirSync(remoteCache) : []);

/** Removes only the agent deploys made since `before` (a remoteAgentDirs() list) by these tests. */
export function removeNewRemoteDeploys(before: string[]): void {
  for (const d of remoteAgentDirs()) if (!before.includes(d)) rmSync(join(remoteCache, d), { recursive: true, force: true });
}

/**
 * Whether this UI test file runs here: `false`, or the reason it is skipped ("skipped: missing …",
 * for `describe`'s `skip`), then also written to stderr after `label`. With
 * COMMCOST_REQUIRE_UI=1 (.ci/run) a missing component is a failing test instead.
 */
export function uiSkip(label: string): string | false {
  const missing = uiMissingReason();
  if (missing && process.env.COMMCOST_REQUIRE_UI === '1') test('the UI tests are required (COMMCOST_REQUIRE_UI=1)', () => assert.fail(missing));
  const skip = missing ? `skipped: ${missing}` : false;
  if (missing) process.stderr.write(`${label} ${skip}\n`);
  return skip;
}

/** How {@link uiSessionHooks} sets up a describe block's session. */
export interface SessionHooksOptions {
  /** UiSession.start's options (workspace trust, keybindings). */
  ui?: UiOptions;
  /** A workspace (relative path → text) made and opened before the tests: `s.workspace(name, files)`. */
  workspace?: { name: string; files: Record<string, string> };
  /** The agent folders the tests deploy to the loopback host's ~/.cache/commcost are removed after (only those). */
  cleanRemoteDeploys?: boolean;
  /** After the session stops, test-output/ui/logs is copied to test-output/ui/<keepLogsAs> (the next session's stop rewrites logs). */
  keepLogsAs?: string;
  /** The before hook's limit, ms (default: none). */
  timeoutMs?: number;
}

/**
 * Registers the `before`/`after` hooks of the enclosing describe block: before, a UiSession is
 * started (and `workspace` made and opened) and handed to `use` with the workspace folder
 * (undefined without one); after, the session is stopped (Chromium, code-server, sshd; logs kept
 * under test-output/ui/logs) and what the options ask is cleaned up or kept.
 */
export function uiSessionHooks(opts: SessionHooksOptions, use: (s: UiSession, ws: string | undefined) => void): void {
  let s: UiSession | undefined;
  let remoteBefore: string[] = [];
  before(
    async () => {
      if (opts.cleanRemoteDeploys) remoteBefore = remoteAgentDirs();
      s = await UiSession.start(opts.ui);
      let ws: string | undefined;
      if (opts.workspace) {
        ws = s.workspace(opts.workspace.name, opts.workspace.files);
        await s.openFolder(ws);
      }
      use(s, ws);
    },
    opts.timeoutMs === undefined ? {} : { timeout: opts.timeoutMs },
  );
  after(async () => {
    await s?.stop();
    if (opts.cleanRemoteDeploys) removeNewRemoteDeploys(remoteBefore);
    if (opts.keepLogsAs && existsSync(join(OUT_DIR, 'logs'))) cpSync(join(OUT_DIR, 'logs'), join(OUT_DIR, opts.keepLogsAs), { recursive: true });
  });
}

/**
 * The editor helpers of the scenarios, bound to the session `session()` returns (started in a
 * `before` hook, so it is read at each call).
 */
export function sessionHelpers(session: () => UiSession) {
  /** Runs a scenario; on failure leaves test-output/ui/<name>-failure.png. */
  async function scenario(name: string, body: () => Promise<void>): Promise<void> {
    const s = session();
    try {
      await body();
    } catch (e) {
      await s.shot(`${name}-failure`).catch(() => undefined);
      throw e;
    }
  }

  async function openFile(name: string, contains: string): Promise<void> {
    const s = session();
    await s.page.locator('.explorer-folders-view .monaco-list-row', { hasText: name }).first().click();
    await s.page.locator('.monaco-editor .view-lines', { hasText: contains }).first().waitFor({ state: 'visible', timeout: 15_000 });
  }

  /**
   * Screen point at the middle of the first occurrence of `word` in the active editor (Monaco
   * merges same-coloured tokens into one span, so the word is located inside its text node).
   */
  async function wordPoint(word: string): Promise<{ x: number; y: number }> {
    const s = session();
    return waitUntil(
      () =>
        s.page.evaluate<{ x: number; y: number } | null>(`(() => {
          const lines = document.querySelector('.editor-group-container.active .monaco-editor .view-lines');
          if (!lines) return null;
          const walker = document.createTreeWalker(lines, NodeFilter.SHOW_TEXT);
          for (let n = walker.nextNode(); n; n = walker.nextNode()) {
            const i = n.textContent.indexOf(${JSON.stringify(word)});
            if (i < 0) continue;
            const r = document.createRange();
            r.setStart(n, i);
            r.setEnd(n, i + ${word.length});
            const b = r.getBoundingClientRect();
            return { x: b.left + b.width / 2, y: b.top + b.height / 2 };
          }
          return null;
        })()`),
      `"${word}" in the editor`,
      10_000,
    );
  }

  async function hoverText(word: string, contains: string | RegExp): Promise<string> {
    const s = session();
    await s.page.mouse.move(5, 500);
    await s.page
      .locator('.monaco-hover')
      .first()
      .waitFor({ state: 'hidden', timeout: 5_000 })
      .catch(() => undefined);
    const p = await wordPoint(word);
    await s.page.mouse.move(p.x - 2, p.y);
    await s.page.mouse.move(p.x, p.y);
    const hover = s.page.locator('.monaco-hover', { hasText: contains }).first();
    await hover.waitFor({ state: 'visible', timeout: 15_000 });
    return hover.innerText();
  }

  const lens = (contains: string | RegExp) =>
    session().page.locator('.editor-group-container.active .codelens-decoration', { hasText: contains }).first();

  /** Palette → Measure → host → experiments (as preselected by the settings) → iterations. */
  async function startMeasure(hostLabel: string, iterations?: string): Promise<void> {
    const s = session();
    await s.command(MEASURE);
    await s.pick(HOST_PICK, hostLabel);
    await s.quickInput('commcost: experiments');
    await s.page.keyboard.press('Enter');
    const box = await s.quickInput('commcost: recorded iterations');
    if (iterations !== undefined) {
      await s.page.keyboard.press('Control+A');
      await s.page.keyboard.type(iterations);
    }
    await box.locator('input').first().waitFor({ state: 'visible' });
    await s.page.keyboard.press('Enter');
  }

  return { scenario, openFile, wordPoint, hoverText, lens, startMeasure };
}
