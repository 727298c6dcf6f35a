// Measure in a real VS Code: (a) a measurement over SSH on the simulated NCCL, (b) Cancel, (e) a wrong host.
// code-server 4.100.3 in headless Chromium (playwright-core), the built extension copied into a fresh
// extensions folder, measurements over SSH against the loopback OpenSSH server
// (test/support/sshServer.ts) on the simulated NCCL. Each scenario asserts what a user sees and
// saves a screenshot under test-output/ui/. Harness: ./uiEnv.ts, shared helpers: ./scenarioSupport.ts;
// install: ./install.sh. Skipped with the reason when Chromium, code-server or sshd is missing,
// unless COMMCOST_REQUIRE_UI=1 (set by .ci/run), which makes that a failure.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { formatMs } from '../../webview/format';
import { waitUntil, type UiSession } from './uiEnv';
import {
  MEASURE,
  HOST_PICK,
  stats,
  savedRuns,
  descendants,
  alive,
  tableRows,
  canvasInk,
  sessionHelpers,
  uiSessionHooks,
  uiSkip,
} from './scenarioSupport';

const skip = uiSkip('UI tests');

describe('commcost in a real VS Code (code-server + Chromium)', { skip, timeout: 300_000 }, () => {
  let s: UiSession;
  // A session for the file; the agent deploys these tests make on the loopback host are removed after.
  uiSessionHooks({ cleanRemoteDeploys: true, timeoutMs: 60_000 }, (session) => (s = session));

  const { scenario, startMeasure } = sessionHelpers(() => s);

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
      // 40 recorded iterations: long enough (~10 s) to see the live progress once the panel's page
      // has loaded; an agent already deployed starts in one command, so 6 could end first.
      await s.page.keyboard.press('Control+A');
      await s.page.keyboard.type('40');
      await s.page.keyboard.press('Enter');

      const progress = s.toast('commcost: commcost-test · SIMULATED');
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
      assert.equal(run.options.iterations, 40);
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
          "the study's Figure 2 from this run: critical path of init, split, shrink, grow and abort then re-init, each stacked with its first collective, linear axis",
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
      const progress = s.toast('commcost: commcost-test · SIMULATED');
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
});
