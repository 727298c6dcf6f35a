// commcost in a real VS Code: code-server 4.100.3 in headless Chromium (playwright-core), the built
// extension copied into a fresh extensions folder, measurements over SSH against the loopback
// OpenSSH server (test/support/sshServer.ts) on the simulated NCCL. Each scenario asserts what a
// user sees and saves a screenshot under test-output/ui/. Harness: ./uiEnv.ts; install:
// ./install.sh. Skipped with the reason when Chromium, code-server or sshd is missing, unless
// COMMCOST_REQUIRE_UI=1 (set by .ci/run), which makes that a failure.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { userInfo } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { formatBytes, formatMs as annotationMs } from '../../extension/annotations/annotationText';
import type { RunFile } from '../../protocol/runFile';
import { formatMs } from '../../webview/format';
import { renderComparisonReport } from '../../client/htmlReport';
import { OUT_DIR, REPO, UiSession, uiMissingReason, waitUntil, type Frame } from './uiEnv';
import {
  committedRun,
  committedRunText,
  activeRunOf,
  H200X2_RUN_FILES,
  runLabelOf,
  simulatedRunText,
  staleAfterDaysFor,
  startedAt,
  stepStats,
  variantsOf,
} from './committedRuns';

const missing = uiMissingReason();

/** The UTC day a run started, as a hover's footer writes it ("2026-11-30"). */
const dayOf = (run: RunFile): string => new Date(startedAt(run)).toISOString().slice(0, 10);
if (missing && process.env.COMMCOST_REQUIRE_UI === '1') {
  test('the UI tests are required (COMMCOST_REQUIRE_UI=1)', () => assert.fail(missing));
}
const skip = missing ? `skipped: ${missing}` : false;
if (missing) process.stderr.write(`UI tests ${skip}\n`);

const MEASURE = 'commcost: Measure communicator rebuild';
const HOST_PICK = 'commcost: target host';
const DAY = 86_400_000;
/** The real 2×H200 run (NCCL 2.28.9 from the PyTorch wheel). */
const WHEEL: RunFile = JSON.parse(readFileSync(join(REPO, 'docs', 'results', 'h200x2-nccl2.28.9-wheel.json'), 'utf8'));

/** The H200 run with its start moved to `daysAgo` days before now (figures untouched). */
function wheelRun(daysAgo: number): string {
  const run = structuredClone(WHEEL);
  assert.ok(run.stamp);
  run.stamp.startedAt = new Date(Date.now() - daysAgo * DAY).toISOString();
  return JSON.stringify(run, null, 2);
}

function stats(run: RunFile, experiment: string, variant: string, step: string) {
  const s = run.experiments
    .find((e) => e.experiment === experiment)
    ?.variants.find((v) => v.variant === variant)
    ?.steps.find((x) => x.step === step);
  assert.ok(s, `${experiment}/${variant}/${step} in the run`);
  return s.stats;
}

function savedRuns(ws: string): RunFile[] {
  const dir = join(ws, '.commcost', 'runs');
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((f) => f.endsWith('.json'))
    .map((f) => JSON.parse(readFileSync(join(dir, f), 'utf8')) as RunFile);
}

/** Processes under `rootPid` (pid, args). */
function descendants(rootPid: number): { pid: number; args: string }[] {
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

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/** Text of the webview's step tables (memory rows left out): [variant, label, median, p90, min, max, n] per row. */
async function tableRows(frame: Frame, experiment: string): Promise<string[][]> {
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
async function canvasInk(frame: Frame): Promise<{ label: string; width: number; height: number; ink: number }[]> {
  return frame.evaluate(`[...document.querySelectorAll('canvas')].map((c) => {
    const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
    let ink = 0;
    for (let i = 3; i < d.length; i += 4) if (d[i] > 0) ink++;
    return { label: c.getAttribute('aria-label') || '', width: c.width, height: c.height, ink };
  })`);
}

/** A real run of docs/results. */
const result = (file: string): RunFile => JSON.parse(readFileSync(join(REPO, 'docs', 'results', file), 'utf8'));

/**
 * One run file holding every chart kind, for the chart screenshots: the H200 run (init, split,
 * destroy, abort) with the experiments of the other real H200 runs of the same NCCL added
 * unchanged (pool; split-share, shrink-abort; C4 and C6 with their expected hangs; c10d).
 */
function chartsRun(): string {
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
const CHART_SHOTS: [string, number, string][] = [
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
async function textInk(frame: Frame): Promise<{ label: string; ink: number }[]> {
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

describe('commcost in a real VS Code (code-server + Chromium)', { skip, timeout: 300_000 }, () => {
  let s: UiSession;
  /** Agent folders in the remote login's ~/.cache/commcost before the tests (the loopback host is this machine). */
  const remoteCache = join(userInfo().homedir, '.cache', 'commcost');
  const listRemote = () => (existsSync(remoteCache) ? readdirSync(remoteCache) : []);
  let remoteBefore: string[] = [];

  before(
    async () => {
      remoteBefore = listRemote();
      s = await UiSession.start();
    },
    { timeout: 60_000 },
  );

  after(async () => {
    await s?.stop();
    // Remove only the agent deploys these tests made.
    for (const d of listRemote()) if (!remoteBefore.includes(d)) rmSync(join(remoteCache, d), { recursive: true, force: true });
  });

  /** Runs a scenario; on failure leaves test-output/ui/<name>-failure.png. */
  async function scenario(name: string, body: () => Promise<void>): Promise<void> {
    try {
      await body();
    } catch (e) {
      await s.shot(`${name}-failure`).catch(() => undefined);
      throw e;
    }
  }

  async function openFile(name: string, contains: string): Promise<void> {
    await s.page.locator('.explorer-folders-view .monaco-list-row', { hasText: name }).first().click();
    await s.page.locator('.monaco-editor .view-lines', { hasText: contains }).first().waitFor({ state: 'visible', timeout: 15_000 });
  }

  /**
   * Screen point at the middle of the first occurrence of `word` in the active editor (Monaco
   * merges same-coloured tokens into one span, so the word is located inside its text node).
   */
  async function wordPoint(word: string): Promise<{ x: number; y: number }> {
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
    s.page.locator('.editor-group-container.active .codelens-decoration', { hasText: contains }).first();

  /** Palette → Measure → host → experiments (as preselected by the settings) → iterations. */
  async function startMeasure(hostLabel: string, iterations?: string): Promise<void> {
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

  test('(c) CodeLens and hover show the H200 run on dist.new_group and ncclCommSplit; a stale run says stale', async () => {
    await scenario('c', async () => {
      const freshRun = wheelRun(1);
      // Every annotation ends with its run's label: host · NCCL version · date.
      const runDate = (JSON.parse(freshRun) as RunFile).stamp?.startedAt.slice(0, 10);
      const ws = s.workspace('annotations', {
        '.vscode/settings.json': JSON.stringify({ 'commcost.staleAfterDays': 7 }, null, 2),
        '.commcost/runs/h200x2-nccl2.28.9-wheel.json': freshRun,
        'train.py': [
          'import torch',
          'import torch.distributed as dist',
          '',
          '',
          'def build(ranks):',
          '    group = dist.new_group(ranks)',
          '    dist.all_reduce(torch.ones(1), group=group)',
          '    return group',
          '',
        ].join('\n'),
        'comm.cc': [
          '#include <nccl.h>',
          '',
          'ncclComm_t splitHalf(ncclComm_t parent, int rank) {',
          '  ncclComm_t child;',
          '  ncclCommSplit(parent, rank % 2, rank, &child, NULL);',
          '  return child;',
          '}',
          '',
        ].join('\n'),
      });
      const version = WHEEL.stamp?.ncclVersion ?? '?';
      // At 2 ranks the halves are one-rank children: the hover headlines the 2-rank child that pays the lazy connect.
      const split = stats(WHEEL, 'split', 'whole/splitShare=0', 'total');
      const splitCall = stats(WHEEL, 'split', 'whole/splitShare=0', 'call');
      await s.openFolder(ws);

      // Python: no c10d figures in this run, so new_group shows the ncclCommInitRankConfig beneath it.
      await openFile('train.py', 'new_group');
      const init = stats(WHEEL, 'init', 'default', 'total');
      const initCall = stats(WHEEL, 'init', 'default', 'call');
      const initFirst = stats(WHEEL, 'init', 'default', 'first');
      const initMem = WHEEL.experiments.find((e) => e.experiment === 'init')?.variants[0]?.memoryBytes?.afterFirst;
      assert.ok(initMem !== undefined);
      const pyLens = lens('to first collective');
      await pyLens.waitFor({ state: 'visible', timeout: 20_000 });
      const pyLensText = await pyLens.innerText();
      assert.equal(
        pyLensText.replace(/^\S+ /, ''),
        `${annotationMs(init.median)} to first collective · ${formatBytes(initMem)}/GPU (init beneath) — localhost · NCCL ${version} · ${runDate}`,
      );
      const pyHover = await hoverText('new_group', 'commcost');
      for (const f of [init.median, init.p90, initCall.median, initCall.p90, initFirst.median, initFirst.p90])
        assert.ok(pyHover.includes(annotationMs(f)), `hover shows ${annotationMs(f)}:\n${pyHover}`);
      assert.ok(pyHover.includes(`${WHEEL.stamp?.gpus.length}× ${WHEEL.stamp?.gpus[0]?.name}`), pyHover);
      assert.ok(pyHover.includes(`NCCL ${version}`), pyHover);
      assert.doesNotMatch(pyHover, /Stale|SIMULATED/);
      await s.shot('c1-python-codelens-hover');

      // C++: ncclCommSplit itself.
      await openFile('comm.cc', 'ncclCommSplit');
      const ccLens = lens('to first collective');
      await ccLens.waitFor({ state: 'visible', timeout: 20_000 });
      const ccLensText = await ccLens.innerText();
      assert.ok(ccLensText.includes(`${annotationMs(split.median)} to first collective`), ccLensText);
      const mem = WHEEL.experiments.find((e) => e.experiment === 'split')?.variants.find((v) => v.variant === 'whole/splitShare=0')
        ?.memoryBytes?.afterFirst;
      if (mem !== undefined) assert.ok(ccLensText.includes(`${formatBytes(mem)}/GPU`), ccLensText);
      const ccHover = await hoverText('ncclCommSplit', 'commcost');
      for (const f of [split.median, split.p90, splitCall.median, splitCall.p90])
        assert.ok(ccHover.includes(annotationMs(f)), `hover shows ${annotationMs(f)}:\n${ccHover}`);
      assert.match(ccHover, /ncclCommSplit/);
      assert.match(ccHover, /whole\/splitShare=0/);
      assert.match(ccHover, /one-rank communicator: nothing to connect/);
      assert.doesNotMatch(ccHover, /100%|is the call itself/);
      await s.shot('c2-cpp-codelens-hover');

      // The same run, measured 60 days ago: older than commcost.staleAfterDays (7). The file watcher reloads it.
      writeFileSync(join(ws, '.commcost', 'runs', 'h200x2-nccl2.28.9-wheel.json'), wheelRun(60));
      const stale = lens(/· stale/);
      await stale.waitFor({ state: 'visible', timeout: 20_000 });
      const staleHover = await hoverText('ncclCommSplit', 'Stale');
      assert.match(staleHover, /Stale: measured 60 days ago \(older than 7 days\)/);
      assert.ok(staleHover.includes(annotationMs(split.median)), staleHover);
      // The after-line label is dimmed and says stale.
      const label = await s.page.evaluate<{ content: string; opacity: string } | null>(
        `[...document.querySelectorAll('.editor-group-container.active .view-lines span')].map((e) => getComputedStyle(e, '::after')).filter((st) => st.content && st.content.includes('(stale)')).map((st) => ({ content: st.content, opacity: st.opacity }))[0] || null`,
      );
      assert.ok(label, 'an after-line label saying (stale)');
      assert.ok(label.content.includes(`${annotationMs(split.median)}`), label.content);
      assert.ok(Number(label.opacity) < 1, `the stale label is dimmed (opacity ${label.opacity})`);
      // Scroll the hover to its end so that the screenshot shows the Stale line.
      const box = await s.page.locator('.monaco-hover', { hasText: 'Stale' }).first().boundingBox();
      assert.ok(box);
      await s.page.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
      await s.page.mouse.wheel(0, 600);
      await s.page.waitForTimeout(300);
      await s.shot('c3-stale-hover');
    });
  });

  test('(d) the quick fix "Pass device_id" on init_process_group edits the file', async () => {
    await scenario('d', async () => {
      const before = [
        'import torch',
        'import torch.distributed as dist',
        '',
        'dist.init_process_group(backend="nccl")',
        'dist.all_reduce(torch.ones(1))',
        '',
      ].join('\n');
      const ws = s.workspace('quickfix', { '.commcost/runs/h200x2-nccl2.28.9-wheel.json': wheelRun(1), 'setup.py': before });
      await s.openFolder(ws);
      await openFile('setup.py', 'init_process_group');
      // The information diagnostic (squiggle) on init_process_group, from the run's figures.
      await s.page.locator('.editor-group-container.active .squiggly-info').first().waitFor({ state: 'attached', timeout: 20_000 });
      const p = await wordPoint('init_process_group');
      await s.page.mouse.click(p.x, p.y);
      // The lightbulb shows on the line; Ctrl+. opens the Quick Fix menu (asked again while the
      // annotations of the just-opened file are still being computed: "No code actions available").
      await s.page.locator('.editor-group-container.active .lightBulbWidget').first().waitFor({ state: 'visible', timeout: 15_000 });
      const fix = s.page.locator('.action-widget .monaco-list-row', { hasText: 'Pass device_id for eager init' }).first();
      await waitUntil(
        async () => {
          await s.page.keyboard.press('Control+.');
          if (
            await fix.waitFor({ state: 'visible', timeout: 2_000 }).then(
              () => true,
              () => false,
            )
          )
            return true;
          await s.page.keyboard.press('Escape');
          return false;
        },
        'the Quick Fix menu with "Pass device_id"',
        20_000,
        500,
      );
      const title = await fix.innerText();
      const call = stats(WHEEL, 'init', 'default', 'call');
      assert.ok(title.includes(`moves ~${annotationMs(call.median)} out of the first collective on localhost`), title);
      await s.shot('d1-quickfix-menu');
      // The fix is the focused row of the menu ("Enter to Apply").
      assert.match((await fix.evaluate<string>((el: { className: string }) => el.className)) ?? '', /\bfocused\b/);
      await s.page.keyboard.press('Enter');
      await s.page
        .locator('.editor-group-container.active .view-lines', { hasText: 'device_id=' })
        .first()
        .waitFor({ state: 'visible', timeout: 10_000 });
      await s.page.keyboard.press('Control+S');
      const expected = before.replace(
        'dist.init_process_group(backend="nccl")',
        'dist.init_process_group(backend="nccl", device_id=torch.device("cuda", torch.cuda.current_device()))',
      );
      await waitUntil(() => readFileSync(join(ws, 'setup.py'), 'utf8') === expected, 'the saved file with device_id', 10_000);
      // The finding is gone once device_id is passed.
      await s.page.locator('.editor-group-container.active .squiggly-info').first().waitFor({ state: 'detached', timeout: 15_000 });
      await s.page.mouse.move(5, 500);
      await s.shot('d2-quickfix-applied');
    });
  });

  test('(e) a wrong host gives an error message with "Show Log"', async () => {
    await scenario('e', async () => {
      const ws = s.workspace('wronghost', {
        '.vscode/settings.json': JSON.stringify({ 'commcost.iterations': 2, 'commcost.experiments': ['init'] }, null, 2),
        'README.md': 'wrong host\n',
      });
      await s.openFolder(ws);
      await s.command(MEASURE);
      await s.pick(HOST_PICK, 'Enter a host…', 'Enter a host');
      await s.quickInput(/localhost, an ssh alias, or user@host/);
      await s.page.keyboard.type('no-such-host.invalid');
      await s.page.keyboard.press('Enter');
      await s.quickInput('commcost: experiments');
      await s.page.keyboard.press('Enter');
      await s.quickInput('commcost: recorded iterations');
      await s.page.keyboard.press('Enter');
      const error = s.page
        .locator('.notifications-toasts .notification-toast', { hasText: 'no-such-host.invalid' })
        .filter({ hasText: 'Show Log' })
        .first();
      await error.waitFor({ state: 'visible', timeout: 30_000 });
      const text = await error.innerText();
      assert.match(text, /commcost: cannot reach no-such-host\.invalid/);
      assert.equal(await error.locator('.codicon-error').count(), 1, 'an error notification');
      await s.shot('e1-wrong-host-error');
      await error.locator('.monaco-button', { hasText: 'Show Log' }).first().click();
      const output = s.page.locator('.part.panel .monaco-editor .view-lines', { hasText: 'no-such-host.invalid' }).first();
      await output.waitFor({ state: 'visible', timeout: 15_000 });
      assert.match(await output.innerText(), /failed/);
      await s.shot('e2-show-log');
    });
  });

  test('(a) Measure over SSH (simulated NCCL): progress, live panel, drawn charts, a table equal to the saved run', async () => {
    await scenario('a', async () => {
      const ws = s.workspace('measure', {
        '.vscode/settings.json': JSON.stringify(
          { 'commcost.simulate': true, 'commcost.iterations': 2, 'commcost.warmup': 1, 'commcost.experiments': ['init', 'split'] },
          null,
          2,
        ),
        'README.md': 'measure\n',
      });
      await s.openFolder(ws);
      await s.command(MEASURE);
      const hostPick = await s.quickInput(HOST_PICK);
      await hostPick.locator('.monaco-list-row', { hasText: 'commcost-test' }).first().waitFor({ state: 'visible' });
      assert.match(await hostPick.innerText(), /commcost-test\s*ssh config/);
      await s.shot('a1-host-pick');
      await s.pick(HOST_PICK, 'commcost-test');
      const exps = await s.quickInput('commcost: experiments');
      // The settings preselect init and split.
      assert.equal(
        await exps.locator('.monaco-list-row .quick-input-list-checkbox input:checked, .monaco-list-row[aria-checked="true"]').count(),
        2,
      );
      await s.page.keyboard.press('Enter');
      const iterations = await s.quickInput('commcost: recorded iterations');
      assert.equal(
        await iterations
          .locator('input')
          .first()
          .evaluate((el: { value: string }) => el.value),
        '2',
      );
      // 6 recorded iterations: long enough to see the live progress.
      await s.page.keyboard.press('Control+A');
      await s.page.keyboard.type('6');
      await s.page.keyboard.press('Enter');

      const progress = s.toast('commcost: commcost-test (simulated)');
      await progress.waitFor({ state: 'visible', timeout: 15_000 });
      assert.equal(await progress.locator('.monaco-button', { hasText: 'Cancel' }).count(), 1, 'the progress notification is cancellable');
      const frame = await s.resultsFrame();
      // Live: an experiment section with its progress ("running · 3/14 iterations").
      await waitUntil(
        () =>
          frame.evaluate<boolean>(
            `[...document.querySelectorAll('.exp-progress')].some((e) => /running · [1-9]\\d*\\/\\d+ iterations/.test(e.textContent))`,
          ),
        'per-experiment progress in the panel',
        60_000,
        50,
      );
      await s.shot('a2-running');
      const done = s.toast(/run on commcost-test complete/);
      await done.waitFor({ state: 'visible', timeout: 60_000 });
      assert.match(await done.innerText(), /SIMULATED NCCL: not a measurement/);
      await waitUntil(
        () => frame.evaluate<boolean>(`document.querySelector('.status')?.className.includes('status-complete')`),
        'the panel to show the complete run',
        10_000,
      );

      const runs = savedRuns(ws);
      assert.equal(runs.length, 1);
      const run = runs[0]!;
      assert.equal(run.status, 'complete');
      assert.equal(run.host, 'commcost-test');
      assert.equal(run.simulated, true);
      assert.equal(run.options.iterations, 6);
      assert.deepEqual(
        run.experiments.map((e) => e.experiment),
        ['init', 'split'],
      );

      // Charts: per experiment one of the steps and one of memory (init and split both have memory points), the
      // Plan section's chart of the reshape strategies (webview/planView.ts) and the study's Figure 2 from the run
      // (webview/studyCharts.ts; no Figure 3: the run has no abort or destroy), drawn (plenty of non-transparent pixels).
      await s.page.waitForTimeout(800); // chart.js animation
      const canvases = await canvasInk(frame);
      assert.deepEqual(
        canvases.map((c) => c.label).sort(),
        [
          'critical path per switch by strategy, log axis, with the step and the migration pause',
          'init: median per step, whisker to p90',
          'init: memory per GPU per variant and point (MiB)',
          'split: median per step, whisker to p90',
          'split: memory per GPU per variant and point (MiB)',
          "the study's Figure 2 from this run: critical path of init, split, shrink, grow and abort then re-init, each with its first collective, log axis",
        ],
        JSON.stringify(canvases),
      );
      for (const c of canvases) assert.ok(c.width > 100 && c.height > 50 && c.ink > 2000, `canvas drawn: ${JSON.stringify(c)}`);

      // Tables: every step row equals the saved run's figures.
      for (const e of run.experiments) {
        const expected = e.variants.flatMap((v) =>
          v.steps.map((st) => [
            v.variant,
            st.label,
            ...[st.stats.median, st.stats.p90, st.stats.min, st.stats.max].map(formatMs),
            String(st.stats.n),
          ]),
        );
        assert.deepEqual(await tableRows(frame, e.experiment), expected, `table of ${e.experiment}`);
      }
      const initTotal = stats(run, 'init', 'default', 'total');
      const shown = await tableRows(frame, 'init');
      assert.equal(shown.find((r) => r[1] === 'init to first collective')?.[2], formatMs(initTotal.median));
      assert.equal(await frame.evaluate<boolean>(`!document.querySelector('.banner-sim').hidden`), true, 'the SIMULATED banner');
      await s.shot('a3-results');
    });
  });

  test('(b) Cancel in the notification stops every agent process and saves a partial run', async () => {
    await scenario('b', async () => {
      const ws = s.workspace('cancel', {
        '.vscode/settings.json': JSON.stringify(
          { 'commcost.simulate': true, 'commcost.iterations': 60, 'commcost.experiments': ['init', 'split'] },
          null,
          2,
        ),
        'README.md': 'cancel\n',
      });
      await s.openFolder(ws);
      await startMeasure('commcost-test');
      const progress = s.toast('commcost: commcost-test (simulated)');
      await progress.waitFor({ state: 'visible', timeout: 15_000 });
      const frame = await s.resultsFrame();
      await waitUntil(
        () =>
          frame.evaluate<boolean>(
            `[...document.querySelectorAll('.exp-progress')].some((e) => /running · ([3-9]|\\d\\d+)\\/\\d+ iterations/.test(e.textContent))`,
          ),
        'the run under way',
        60_000,
        50,
      );
      // The agent (coordinator and one process per rank) runs under the test sshd.
      const sshdPid = Number(readFileSync(join(s.ssh.dir, 'sshd.pid'), 'utf8').trim());
      const agents = descendants(sshdPid).filter((p) => /agent\.js/.test(p.args));
      assert.ok(agents.length >= 2, `agent processes under sshd: ${JSON.stringify(agents)}`);
      await s.shot('b1-running');
      await progress.hover();
      await progress.locator('.monaco-button', { hasText: 'Cancel' }).first().click();
      const stopped = s.toast(/stopped early; partial results saved/);
      await stopped.waitFor({ state: 'visible', timeout: 30_000 });
      await waitUntil(() => agents.every((a) => !alive(a.pid)), `agent processes ${agents.map((a) => a.pid).join(', ')} to exit`, 15_000);
      assert.deepEqual(
        descendants(sshdPid).filter((p) => /agent\.js/.test(p.args)),
        [],
      );
      const runs = savedRuns(ws);
      assert.equal(runs.length, 1);
      assert.equal(runs[0]?.status, 'partial');
      const recorded = runs[0]?.experiments.reduce((n, e) => n + (e.done || 0), 0) ?? 0;
      const planned = runs[0]?.experiments.reduce((n, e) => n + (e.total || 0), 0) ?? 0;
      assert.ok(recorded > 0 && recorded < planned, `partial: ${recorded} of ${planned} iterations`);
      await waitUntil(
        () => frame.evaluate<boolean>(`/partial/i.test(document.querySelector('.status')?.textContent || '')`),
        'the panel to say partial',
        10_000,
      );
      await s.shot('b2-cancelled');
    });
  });
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
      await open.waitFor({ state: 'visible', timeout: 20_000 });
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

  test('(h) every committed 2×H200 run and a simulated one: each call answered by its own fresh measured run, hovers in light and dark', async () => {
    await scenario('h', async () => {
      const runs = H200X2_RUN_FILES.map((f) => committedRun(f));
      const c10dRun = committedRun('h200x2-torch2.11-nccl2.28.9-c10d.json');
      const nccl = committedRun('h200x2-nccl2.28.9-wheel.json');
      // The active run (profiles.ts `active`) names the status bar: the newest measured run with
      // figures for annotated calls — not a newer run of field cases only, nor the simulated run, newer still.
      const newest = runs.reduce((a, b) => (startedAt(b) > startedAt(a) ? b : a));
      const active = activeRunOf(runs);
      const simulatedText = simulatedRunText();
      const simulated = JSON.parse(simulatedText) as RunFile;
      assert.equal(simulated.simulated, true);
      assert.equal(simulated.host, newest.host, 'the simulated run is of the same host as the real ones');
      assert.ok(startedAt(simulated) > startedAt(newest), 'the simulated run is the newest file');
      // A new user's settings: commcost.expectedNcclVersion unset; staleAfterDays the default (30)
      // while the committed runs are younger than that, else just long enough (committedRuns.ts).
      const staleAfterDays = staleAfterDaysFor(runs);
      const settings = (theme: string) => JSON.stringify({ 'workbench.colorTheme': theme, 'commcost.staleAfterDays': staleAfterDays }, null, 2);
      const files: Record<string, string> = {
        '.vscode/settings.json': settings('Default Light Modern'),
        '.commcost/runs/simulated-localhost.json': simulatedText,
        'train.py': [
          'import torch',
          'import torch.distributed as dist',
          '',
          '',
          'def main():',
          '    dist.init_process_group("nccl")',
          '    tp = dist.new_group([0, 1])',
          '    dist.all_reduce(torch.ones(1, device="cuda"), group=tp)',
          '    sub = dist.split_group(split_ranks=[[0, 1]])',
          '    dist.all_reduce(torch.ones(1, device="cuda"), group=sub)',
          '    dist.destroy_process_group()',
          '',
        ].join('\n'),
        'comm.cc': [
          '#include <nccl.h>',
          '',
          'void lifecycle(ncclUniqueId id, int nranks, int rank) {',
          '  ncclComm_t comm, child;',
          '  ncclCommInitRank(&comm, nranks, id, rank);',
          '  ncclCommSplit(comm, 0, rank, &child, NULL);',
          '  ncclCommDestroy(child);',
          '  ncclCommAbort(comm);',
          '}',
          '',
        ].join('\n'),
      };
      for (const f of H200X2_RUN_FILES) files[`.commcost/runs/${f}`] = committedRunText(f);
      const ws = s.workspace('committed-runs', files);
      // A window tall enough that VS Code's hover (at most a quarter of the editor's height, at
      // least 250 px) shows the longest of these hovers whole in its screenshot; put back after.
      await s.page.setViewportSize({ width: 1600, height: 2200 });
      try {
        await s.openFolder(ws);
        await waitUntil(() => s.page.evaluate<boolean>(`!!document.querySelector('.monaco-workbench.vs:not(.vs-dark)')`), 'the light theme', 20_000);

        const ms = annotationMs;
        const noStaleNoSim = (what: string, text: string) => {
          assert.doesNotMatch(text, /stale/i, `${what} says stale:\n${text}`);
          assert.doesNotMatch(text, /simulated/i, `${what} says SIMULATED:\n${text}`);
        };
        /** The CodeLens titles of the active editor, top to bottom. */
        const lensTexts = () =>
          s.page.evaluate<string[]>(
            `[...document.querySelectorAll('.editor-group-container.active .codelens-decoration')].map((e) => ({ y: e.getBoundingClientRect().top, t: e.innerText.trim() })).filter((x) => x.t).sort((a, b) => a.y - b.y).map((x) => x.t)`,
          );
        /** The after-line labels (⏱ …) of the active editor, top to bottom. */
        const afterLabels = () =>
          s.page.evaluate<string[]>(
            `[...new Map([...document.querySelectorAll('.editor-group-container.active .view-lines span')].map((e) => [e.getBoundingClientRect().top, getComputedStyle(e, '::after').content]).filter(([, c]) => c && c.includes('⏱'))).values()].map((c) => JSON.parse(c))`,
          );
        /** Waits for `n` CodeLenses and `n` after-line labels in the active editor; returns both. */
        const annotations = async (file: string, n: number) => {
          // Lenses and labels read in one pass that satisfies the wait: the editor may redraw them in
          // between (e.g. when the wrapper index finishes), so a later second read could catch it mid-way.
          let lenses: string[] = [];
          let labels: string[] = [];
          await waitUntil(
            async () => {
              lenses = await lensTexts();
              labels = await afterLabels();
              return lenses.length === n && lenses.every((t) => /\d ms/.test(t)) && labels.length === n;
            },
            `${n} CodeLenses with figures and ${n} after-line labels in ${file}`,
            30_000,
          );
          for (const t of [...lenses, ...labels]) noStaleNoSim(`an annotation of ${file}`, t);
          // Each line's label leads with the figure its CodeLens headlines.
          lenses.forEach((t, i) => {
            const fig = /⏱ ([\d.]+ m?s)/.exec(t)?.[1];
            assert.ok(fig && labels[i]?.startsWith(`⏱ ${fig}`), `label ${i} of ${file} (${labels[i]}) leads with the CodeLens figure of ${t}`);
          });
          return lenses;
        };
        const hovers: Record<string, string> = {};
        /** Hovers `api`, screenshots the hover as h-<theme>-<api>.png; returns the hover's text. */
        const shotHover = async (theme: string, api: string) => {
          const contains = `commcost · ${api} →`;
          const text = await hoverText(api, contains);
          const hover = s.page.locator('.monaco-hover', { hasText: contains }).first();
          // The picture shows the whole hover: its content is not cut by the hover's scroll box.
          type Box = { scrollHeight: number; clientHeight: number };
          const fit = await hover.evaluate<{ content: number; box: number }>((el: { querySelector(q: string): Box | null }) => ({
            content: el.querySelector('.monaco-hover-content')?.scrollHeight ?? 0,
            box: el.querySelector('.monaco-scrollable-element')?.clientHeight ?? 0,
          }));
          assert.ok(fit.content > 0 && fit.content <= fit.box + 1, `the ${api} hover fits its box: ${JSON.stringify(fit)}`);
          await hover.screenshot({ path: join(OUT_DIR, `h-${theme}-${api}.png`) });
          return text;
        };
        /** The commcost part of a hover's text (VS Code adds a diagnostic's text and actions such as Quick Fix when it has them). */
        const ours = (text: string) => {
          const from = text.indexOf('commcost · ');
          const to = text.indexOf('\nView Problem', from);
          return text.slice(from, to < 0 ? undefined : to).trim();
        };

        // --- Python: the c10d run measured init_process_group, new_group, split_group and destroy_process_group themselves.
        await openFile('train.py', 'split_group');
        // Labels as the extension writes them among every loaded run (the UTC time where two read alike).
        const label = (r: RunFile) => runLabelOf(r, [...runs, simulated]);
        const c10dLabel = label(c10dRun);
        const lazyInit = (step: string) => stepStats(c10dRun, 'c10d', 'init/lazy', step);
        const splitGroup = (step: string) => stepStats(c10dRun, 'c10d', 'split_group', step);
        const newGroup = stepStats(c10dRun, 'c10d', 'new_group/lazy-default', 'total');
        const pyLenses = await annotations('train.py', 4);
        const [initLens, newGroupLens, splitLens, destroyLens] = pyLenses as [string, string, string, string];
        assert.ok(initLens.includes(`${ms(lazyInit('total').median)} to first collective`), initLens);
        assert.ok(newGroupLens.includes(`${ms(newGroup.median)} to first collective`), newGroupLens);
        assert.ok(splitLens.includes(`${ms(splitGroup('total').median)} to first collective`), splitLens);
        assert.ok(destroyLens.includes(`${ms(lazyInit('destroy').median)} `), destroyLens);
        for (const t of pyLenses) {
          assert.ok(t.endsWith(`— ${c10dLabel}`), `the c10d run answers: ${t}`);
          assert.doesNotMatch(t, /beneath/, t);
        }

        const initHover = await shotHover('light', 'init_process_group');
        hovers.init_process_group = initHover;
        assert.match(initHover, /init_process_group → c10d · init\/lazy/);
        assert.match(initHover, /headline assumes a lazy init/);
        for (const f of [lazyInit('call').median, lazyInit('first').median, lazyInit('first').p90, lazyInit('total').median, lazyInit('total').p90])
          assert.ok(initHover.includes(ms(f)), `init_process_group hover shows ${ms(f)}:\n${initHover}`);

        const splitHover = await shotHover('light', 'split_group');
        hovers.split_group = splitHover;
        assert.match(splitHover, /split_group → c10d · split_group/);
        for (const f of [splitGroup('call').median, splitGroup('first').median, splitGroup('total').median, splitGroup('total').p90])
          assert.ok(splitHover.includes(ms(f)), `split_group hover shows ${ms(f)}:\n${splitHover}`);
        // Not the ncclCommSplit beneath it (the NCCL run's split variants).
        for (const v of variantsOf(nccl, 'split'))
          assert.ok(!splitHover.includes(ms(stepStats(nccl, 'split', v, 'total').median)), `split_group hover shows ${v} of the NCCL run:\n${splitHover}`);

        const destroyHover = await shotHover('light', 'destroy_process_group');
        hovers.destroy_process_group = destroyHover;
        assert.match(destroyHover, /destroy_process_group → c10d · init\/lazy/);
        assert.match(destroyHover, /headline assumes a lazy init: no init_process_group in this file passes device_id/, destroyHover);
        for (const f of [lazyInit('destroy').median, lazyInit('destroy').p90])
          assert.ok(destroyHover.includes(ms(f)), `destroy_process_group hover shows ${ms(f)}:\n${destroyHover}`);

        const newGroupHover = await hoverText('new_group', 'commcost · new_group →');
        assert.match(newGroupHover, /new_group → c10d · new_group\/lazy-default/);
        assert.ok(newGroupHover.includes(ms(newGroup.median)), newGroupHover);

        const c10dFooter = `NCCL ${c10dRun.stamp?.ncclVersion} · ${dayOf(c10dRun)}`;
        for (const [api, text] of Object.entries({ ...hovers, new_group: newGroupHover })) {
          noStaleNoSim(`the ${api} hover`, text);
          assert.doesNotMatch(text, /beneath|No c10d figures/, `${api} hover falls back to the NCCL call beneath:\n${text}`);
          assert.ok(text.includes(c10dFooter), `${api} hover cites the c10d run (${c10dFooter}):\n${text}`);
        }

        // --- C++: the fresh NCCL 2.28.9 run answers, not the 2.28.3 one; ncclCommSplit headlines the 2-rank child.
        await openFile('comm.cc', 'ncclCommSplit');
        const ncclLabel = label(nccl);
        const ccLenses = await annotations('comm.cc', 4);
        for (const t of ccLenses) assert.ok(t.endsWith(`— ${ncclLabel}`), `the NCCL ${nccl.stamp?.ncclVersion} run answers: ${t}`);
        const whole = (step: string) => stepStats(nccl, 'split', 'whole/splitShare=0', step);
        const ccSplitLens = ccLenses[1] ?? '';
        assert.ok(ccSplitLens.includes(`${ms(whole('total').median)} to first collective`), ccSplitLens);
        assert.doesNotMatch(ccSplitLens, /one-rank/, ccSplitLens);

        const ccSplit = await shotHover('light', 'ncclCommSplit');
        hovers.ncclCommSplit = ccSplit;
        const headline = ccSplit.split('\n').find((l) => /ncclCommSplit → split/.test(l)) ?? '';
        assert.match(headline, /ncclCommSplit → split · whole\/splitShare=0$/, `the headline is the 2-rank child:\n${ccSplit}`);
        for (const f of [whole('call').median, whole('first').median, whole('total').median, whole('total').p90])
          assert.ok(ccSplit.includes(ms(f)), `ncclCommSplit hover shows ${ms(f)}:\n${ccSplit}`);
        // The connect share as measured: the first collective's part of the total.
        const share = (100 * whole('first').median) / whole('total').median;
        assert.ok(share >= 10, `a share of ${share}% is written to the unit`);
        assert.ok(
          ccSplit.includes(`${Math.round(share)}% of this split is the lazy connect in the first collective (${ms(whole('first').median)} of ${ms(whole('total').median)})`),
          `the connect share (${share.toFixed(1)}%):\n${ccSplit}`,
        );
        assert.doesNotMatch(ccSplit, /is the call itself/);
        for (const v of variantsOf(nccl, 'split').filter((x) => x.startsWith('halves/'))) {
          const line = new RegExp(`${v.replace(/[/=]/g, (c) => `\\${c}`)}: ${ms(stepStats(nccl, 'split', v, 'total').median)} [^·]*\\(one-rank communicator: nothing to connect\\)`);
          assert.match(ccSplit, line, `${v} is labelled one-rank:\n${ccSplit}`);
        }
        for (const api of ['ncclCommInitRank', 'ncclCommDestroy', 'ncclCommAbort']) {
          const text = await hoverText(api, `commcost · ${api} →`);
          hovers[api] = text;
          assert.match(text, new RegExp(`${api} → `), text);
        }
        const ncclFooter = `NCCL ${nccl.stamp?.ncclVersion} · ${dayOf(nccl)}`;
        for (const api of ['ncclCommInitRank', 'ncclCommSplit', 'ncclCommDestroy', 'ncclCommAbort']) {
          const text = hovers[api] ?? '';
          noStaleNoSim(`the ${api} hover`, text);
          assert.ok(text.includes(ncclFooter), `${api} hover cites the fresh NCCL run (${ncclFooter}):\n${text}`);
        }

        // --- The status bar names the active run: the c10d run, newest with figures for call sites (the newer
        // c4c6 run has field cases only), not the simulated one; it says the simulated run is left out.
        const bar = s.page.locator('.part.statusbar .statusbar-item', { hasText: ' · NCCL ' }).first();
        await bar.waitFor({ state: 'visible', timeout: 10_000 });
        assert.equal(active.id, c10dRun.id, 'the c10d run is the newest with figures for call sites');
        assert.notEqual(newest.id, active.id, 'a newer run of field cases only is loaded and not active');
        assert.equal((await bar.innerText()).trim(), label(active));
        await s.page.mouse.move(5, 500);
        await bar.hover();
        const tip = s.page.locator('.monaco-hover, .workbench-hover', { hasText: 'annotations come from' }).first();
        await tip.waitFor({ state: 'visible', timeout: 10_000 });
        const tipText = await tip.innerText();
        assert.ok(
          tipText.includes(`commcost annotations come from ${label(active)} (the newest measured run with figures for annotated calls)`),
          tipText,
        );
        assert.match(tipText, /1 simulated run not used: choose one to see its figures/);
        await tip.screenshot({ path: join(OUT_DIR, 'h1-statusbar-tooltip.png') });

        // --- The same hovers in a dark theme (live switch through the workspace settings, as in (f)).
        writeFileSync(join(ws, '.vscode', 'settings.json'), settings('Default Dark Modern'));
        await waitUntil(() => s.page.evaluate<boolean>(`!!document.querySelector('.monaco-workbench.vs-dark')`), 'the dark theme', 20_000);
        await s.page.waitForTimeout(500);
        assert.equal(ours(await shotHover('dark', 'ncclCommSplit')), ours(hovers.ncclCommSplit ?? ''));
        await openFile('train.py', 'split_group');
        await annotations('train.py', 4);
        for (const api of ['init_process_group', 'split_group', 'destroy_process_group'])
          assert.equal(ours(await shotHover('dark', api)), ours(hovers[api] ?? ''), `the ${api} hover in the dark theme`);

        // --- The Problems panel: commcost's findings, none from the simulated run (the usual window size again for the screenshot).
        await s.page.setViewportSize({ width: 1600, height: 1000 });
        await s.page.mouse.move(5, 500);
        await s.command('Focus on Problems View');
        const problems = s.page.locator('.markers-panel .monaco-list-row');
        await waitUntil(async () => (await problems.allInnerTexts()).some((t) => /commcost/.test(t)), 'a commcost diagnostic in Problems', 15_000);
        const rows = await problems.allInnerTexts();
        for (const r of rows) assert.doesNotMatch(r, /simulated/i, `a Problems row: ${r}`);
        await s.shot('h2-problems');
      } finally {
        await s.page.setViewportSize({ width: 1600, height: 1000 });
      }
    });
  });

  test('(i) real call shapes: a create_group caller across modules, PyNcclCommunicator, the first all_reduce on a lazy group', async () => {
    await scenario('i', async () => {
      const c10dRun = committedRun('h200x2-torch2.11-nccl2.28.9-c10d.json');
      const nccl = committedRun('h200x2-nccl2.28.9-wheel.json');
      const staleAfterDays = staleAfterDaysFor([c10dRun, nccl]);
      // Python written for this test: the shapes of Megatron-LM's create_group, vLLM's PyNcclCommunicator, a lazy group.
      const files: Record<string, string> = {
        // Hovers below their line, so the screenshots show the code, its CodeLens and label above the hover.
        '.vscode/settings.json': JSON.stringify(
          { 'workbench.colorTheme': 'Default Light Modern', 'commcost.staleAfterDays': staleAfterDays, 'editor.hover.above': false },
          null,
          2,
        ),
        '.commcost/runs/h200x2-nccl2.28.9-wheel.json': committedRunText('h200x2-nccl2.28.9-wheel.json'),
        '.commcost/runs/h200x2-torch2.11-nccl2.28.9-c10d.json': committedRunText('h200x2-torch2.11-nccl2.28.9-c10d.json'),
        'mypkg/__init__.py': '',
        'mypkg/groups.py': [
          '"""Process-group helpers of a model-parallel training package."""',
          'import torch.distributed',
          '',
          '',
          'def create_group(ranks=None, timeout=None, group_desc=None):',
          '    """Creates an NCCL process group over `ranks`, named `group_desc` in logs."""',
          '    return torch.distributed.new_group(ranks, timeout=timeout, group_desc=group_desc)',
          '',
        ].join('\n'),
        'mypkg/parallel.py': [
          '"""Builds the tensor-parallel group of a model."""',
          'from mypkg.groups import create_group',
          '',
          '',
          'def initialize_model_parallel(world_size, tensor_parallel_size):',
          '    blocks = [list(range(s, s + tensor_parallel_size)) for s in range(0, world_size, tensor_parallel_size)]',
          '    tp_group = create_group(blocks[0], group_desc="TENSOR_MODEL_PARALLEL_GROUP")',
          '    return tp_group',
          '',
        ].join('\n'),
        'worker.py': [
          '"""An inference worker\'s communicator for tensor parallelism."""',
          'import torch',
          'from vllm.distributed.device_communicators.pynccl import PyNcclCommunicator',
          '',
          '',
          'def init_worker_communicator(cpu_group, local_rank):',
          '    device = torch.device(f"cuda:{local_rank}")',
          '    communicator = PyNcclCommunicator(cpu_group, device=device)',
          '    return communicator',
          '',
        ].join('\n'),
        'lazy_train.py': [
          '"""A training step on a tensor-parallel group created lazily."""',
          'import torch',
          'import torch.distributed as dist',
          '',
          'tp = None',
          '',
          '',
          'def setup():',
          '    global tp',
          '    dist.init_process_group("nccl")',
          '    tp = dist.new_group([0, 1])',
          '',
          '',
          'def train_step(x):',
          '    dist.all_reduce(x, group=tp)',
          '    return x * 2',
          '',
        ].join('\n'),
      };
      const ws = s.workspace('call-shapes', files);
      // Tall enough that the hovers (at most a quarter of the editor's height) show whole, as in (h).
      await s.page.setViewportSize({ width: 1600, height: 2200 });
      try {
        await s.openFolder(ws);
        const ms = annotationMs;
        const c10dLabel = runLabelOf(c10dRun, [c10dRun, nccl]);
        const ncclLabel = runLabelOf(nccl, [c10dRun, nccl]);
        const lensTexts = () =>
          s.page.evaluate<string[]>(
            `[...document.querySelectorAll('.editor-group-container.active .codelens-decoration')].map((e) => ({ y: e.getBoundingClientRect().top, t: e.innerText.trim() })).filter((x) => x.t).sort((a, b) => a.y - b.y).map((x) => x.t)`,
          );
        const lensesWithFigures = async (file: string, n: number) => {
          await waitUntil(
            async () => (await lensTexts()).filter((t) => /\d ms/.test(t)).length === n,
            `${n} CodeLenses with figures in ${file}`,
            30_000,
          );
          const lenses = await lensTexts();
          for (const t of lenses) assert.doesNotMatch(t, /stale|simulated/i, `a CodeLens of ${file}: ${t}`);
          return lenses;
        };
        /** Screen point of `word` on the editor line that contains `line` (the import lines name the same words). */
        const pointOn = (line: string, word: string) =>
          waitUntil(
            () =>
              s.page.evaluate<{ x: number; y: number } | null>(`(() => {
                const rows = document.querySelectorAll('.editor-group-container.active .monaco-editor .view-lines .view-line');
                for (const row of rows) {
                  if (!row.textContent.replace(/\\u00a0/g, ' ').includes(${JSON.stringify(line)})) continue;
                  const walker = document.createTreeWalker(row, NodeFilter.SHOW_TEXT);
                  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
                    const i = n.textContent.indexOf(${JSON.stringify(word)});
                    if (i < 0) continue;
                    const r = document.createRange();
                    r.setStart(n, i);
                    r.setEnd(n, i + ${word.length});
                    const b = r.getBoundingClientRect();
                    return { x: b.left + b.width / 2, y: b.top + b.height / 2 };
                  }
                }
                return null;
              })()`),
            `"${word}" on the line "${line}"`,
            10_000,
          );
        /** Hovers `word` on the line containing `line`; waits for the commcost hover of `api`, checks it fits its box, screenshots the window; returns its text. */
        const hoverShot = async (line: string, word: string, api: string, shot: string) => {
          await s.page.mouse.move(5, 500);
          await s.page
            .locator('.monaco-hover')
            .first()
            .waitFor({ state: 'hidden', timeout: 5_000 })
            .catch(() => undefined);
          const p = await pointOn(line, word);
          await s.page.mouse.move(p.x - 2, p.y);
          await s.page.mouse.move(p.x, p.y);
          const contains = `commcost · ${api} →`;
          const hover = s.page.locator('.monaco-hover', { hasText: contains }).first();
          await hover.waitFor({ state: 'visible', timeout: 15_000 });
          type Box = { scrollHeight: number; clientHeight: number };
          const fit = await hover.evaluate<{ content: number; box: number }>((el: { querySelector(q: string): Box | null }) => ({
            content: el.querySelector('.monaco-hover-content')?.scrollHeight ?? 0,
            box: el.querySelector('.monaco-scrollable-element')?.clientHeight ?? 0,
          }));
          assert.ok(fit.content > 0 && fit.content <= fit.box + 1, `the ${api} hover fits its box: ${JSON.stringify(fit)}`);
          // The window from its top to just below the hover: the code, its CodeLens and label, the hover.
          const box = await hover.boundingBox();
          assert.ok(box, `the ${api} hover has a box`);
          await s.page.screenshot({
            path: join(OUT_DIR, `${shot}.png`),
            clip: { x: 0, y: 0, width: 1600, height: Math.ceil(Math.max(box.y + box.height, p.y) + 40) },
          });
          const text = await hover.innerText();
          assert.doesNotMatch(text, /stale|simulated/i, `the ${api} hover:\n${text}`);
          return text;
        };

        // --- (a) A create_group caller in another module: a new_group call site through the wrapper, c10d new_group figures.
        await s.page.locator('.explorer-folders-view .monaco-list-row', { hasText: 'mypkg' }).first().click();
        await openFile('parallel.py', 'tp_group = create_group');
        const newGroup = (step: string) => stepStats(c10dRun, 'c10d', 'new_group/lazy-default', step);
        const [callerLens] = await lensesWithFigures('mypkg/parallel.py', 1);
        assert.ok(
          callerLens?.includes(`⏱ ${ms(newGroup('total').median)} to first collective`),
          `the create_group caller's CodeLens: ${callerLens}`,
        );
        assert.ok(callerLens?.endsWith(`— ${c10dLabel}`), `the c10d run answers the create_group caller: ${callerLens}`);
        const caller = await hoverShot('tp_group = create_group', 'create_group', 'new_group', 'i-create_group-caller');
        assert.match(caller, /commcost · new_group → c10d · new_group\/lazy-default/, caller);
        // The chain names the wrapper's definition (1-based line of its `def`).
        const defLine = (files['mypkg/groups.py'] ?? '').split('\n').findIndex((l) => l.startsWith('def create_group(')) + 1;
        assert.ok(
          caller.includes(`via create_group → torch.distributed.new_group (groups.py:${defLine})`),
          `the chain through create_group:\n${caller}`,
        );
        for (const f of [newGroup('total').median, newGroup('total').p90])
          assert.ok(caller.includes(ms(f)), `the create_group caller's hover shows ${ms(f)}:\n${caller}`);
        assert.ok(caller.includes(`NCCL ${c10dRun.stamp?.ncclVersion} · ${dayOf(c10dRun)}`), caller);

        // --- (b) PyNcclCommunicator: ctypes init plus a warm-up collective, so init's call and first collective (the NCCL run's init).
        await openFile('worker.py', 'PyNcclCommunicator(cpu_group');
        const init = (step: string) => stepStats(nccl, 'init', 'default', step);
        const [pyncclLens] = await lensesWithFigures('worker.py', 1);
        assert.ok(
          pyncclLens?.includes(`⏱ ${ms(init('total').median)} to first collective`),
          `the PyNcclCommunicator CodeLens: ${pyncclLens}`,
        );
        assert.ok(pyncclLens?.endsWith(`— ${ncclLabel}`), `the NCCL run answers PyNcclCommunicator: ${pyncclLens}`);
        const pynccl = await hoverShot('communicator = PyNcclCommunicator', 'PyNcclCommunicator', 'PyNcclCommunicator', 'i-pynccl');
        assert.match(pynccl, /commcost · PyNcclCommunicator → init · default/, pynccl);
        for (const f of [init('call').median, init('first').median, init('total').median, init('total').p90])
          assert.ok(pynccl.includes(ms(f)), `the PyNcclCommunicator hover shows ${ms(f)} (init call, first collective, total):\n${pynccl}`);
        assert.ok(pynccl.includes(`NCCL ${nccl.stamp?.ncclVersion} · ${dayOf(nccl)}`), pynccl);

        // --- (c) A lazy group: init without device_id, tp = new_group in setup(), its first all_reduce in train_step().
        await openFile('lazy_train.py', 'train_step');
        const lazyFirst = newGroup('first');
        const lazyLenses = await lensesWithFigures('lazy_train.py', 3);
        const firstLens = lazyLenses[2] ?? '';
        assert.ok(firstLens.startsWith(`⏱ ${ms(lazyFirst.median)} `), `the first all_reduce on tp pays the deferred cost: ${firstLens}`);
        assert.ok(firstLens.endsWith(`— ${c10dLabel}`), `the c10d run answers the first collective: ${firstLens}`);
        const first = await hoverShot('dist.all_reduce(x, group=tp)', 'all_reduce', 'first_collective', 'i-lazy-first-collective');
        assert.match(first, /commcost · first_collective → c10d · new_group\/lazy-default/, first);
        // The variant's row: the first collective's median and p90 in one table row.
        assert.ok(
          new RegExp(`call \\([^)]*\\)\\s+${ms(lazyFirst.median).replace('.', '\\.')}\\s+${ms(lazyFirst.p90).replace('.', '\\.')}`).test(first),
          `the new_group/lazy-default first-collective row (${ms(lazyFirst.median)}, ${ms(lazyFirst.p90)}):\n${first}`,
        );
        assert.ok(
          first.includes(`First collective on tp (created at line 11 by new_group): pays the group's init + connect, ${ms(lazyFirst.median)}`),
          `the hover names the group and what it pays:\n${first}`,
        );
        assert.doesNotMatch(first, /paid each time/, first);
        for (const f of [lazyFirst.median, lazyFirst.p90])
          assert.ok(
            first.includes(ms(f)),
            `the first all_reduce hover shows ${ms(f)} (new_group/lazy-default, first collective):\n${first}`,
          );
        assert.ok(first.includes(`NCCL ${c10dRun.stamp?.ncclVersion} · ${dayOf(c10dRun)}`), first);
      } finally {
        await s.page.setViewportSize({ width: 1600, height: 1000 });
      }
    });
  });
});
