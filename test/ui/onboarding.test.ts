// Onboarding in a real VS Code (code-server + headless Chromium, harness ./uiEnv.ts): the
// walkthrough's first step and its "Run Simulated" button (a real command: the experiment picker
// opens with what each experiment needs), "Open a Sample Run" from the Runs view (the run is
// labelled SAMPLE from 2×H200, and does not become the active run), and "Run Simulated" on the
// error of a Measure on localhost when this machine has no GPU driver.
// Screenshots: test-output/ui/onboarding-*.png. Skipped with the reason when Chromium or
// code-server is missing, unless COMMCOST_REQUIRE_UI=1.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { describe, test } from 'node:test';
import { waitUntil, type UiSession } from './uiEnv';
import { uiSessionHooks, uiSkip } from './scenarioSupport';

const skip = uiSkip('UI onboarding');
/** This machine has an NVIDIA driver: a Measure on localhost would run, not report a missing GPU. */
const hasGpu = existsSync('/dev/nvidiactl');

describe('onboarding in a real VS Code', { skip }, () => {
  let s: UiSession;
  uiSessionHooks(
    {
      workspace: {
        name: 'onboarding',
        files: {
          'train.py': 'import torch.distributed as dist\n\ndist.init_process_group("nccl")\ng = dist.new_group([0, 1])\n',
          '.vscode/settings.json': JSON.stringify({ 'commcost.experiments': ['init', 'grow'], 'commcost.iterations': 2, 'commcost.warmup': 0 }),
        },
      },
    },
    (session) => (s = session),
  );

  /** The open quick pick's rows: label and all their text (label, description, detail), as VS Code renders them. */
  async function pickRows(title: RegExp): Promise<{ label: string; text: string }[]> {
    const widget = await s.quickInput(title);
    await widget.locator('.monaco-list-row').first().waitFor({ state: 'visible', timeout: 15_000 });
    return s.page.evaluate<{ label: string; text: string }[]>(
      `[...document.querySelectorAll('.quick-input-widget .monaco-list-row')].map((r) => ({ label: r.querySelector('.label-name')?.textContent ?? '', text: r.innerText }))`,
    );
  }

  test("the walkthrough's first step: its Run Simulated button runs the Measure command (the experiment picker opens, each experiment described with its needs)", async () => {
    await s.command('commcost: Open Walkthrough');
    const step = s.page.locator('.getting-started-step', { hasText: 'Measure on a GPU host, or try it simulated' }).first();
    await step.waitFor({ state: 'visible', timeout: 30_000 });
    // The step's Markdown media is shown beside it.
    await waitUntil(
      async () => {
        for (const f of s.page.frames()) if (await f.evaluate<boolean>(`document.body?.innerText.includes('Just looking?') ?? false`).catch(() => false)) return true;
        return undefined;
      },
      "the first step's Markdown (media/walkthrough/measure.md)",
      20_000,
    );
    await s.shot('onboarding-walkthrough');
    await step.locator('.button-link, a', { hasText: 'Run Simulated' }).first().click();
    const rows = await pickRows(/commcost: experiments/);
    await s.shot('onboarding-walkthrough-run-simulated');
    const grow = rows.find((r) => r.label === 'grow');
    assert.ok(grow, `grow is offered: ${JSON.stringify(rows.map((r) => r.label))}`);
    assert.match(grow.text, /ncclCommGrow/);
    assert.match(grow.text, /needs NCCL ≥ 2\.29\.2 · ≥ 2 GPUs/);
    assert.match(grow.text, /duration unknown until measured/);
    // No host was asked: "Run Simulated" measures on this computer's simulated NCCL.
    assert.equal(await s.page.locator('.quick-input-widget', { hasText: 'commcost: target host' }).count(), 0);
    await s.page.keyboard.press('Escape');
  });

  test('Open a Sample Run: the run opens labelled SAMPLE from 2×H200, and the annotations keep no run (a sample answers only when chosen)', async () => {
    await s.command('commcost: Open a Sample Run from 2×H200');
    await s.pick(/open a sample run/, 'NCCL 2.30.7', '2.30.7');
    const toast = s.toast(/SAMPLE from 2×H200 · NCCL 2\.30\.7/);
    await toast.waitFor({ state: 'visible', timeout: 20_000 });
    // The results panel's title names the run by its host: SAMPLE from 2×H200.
    await s.page.locator('.tab', { hasText: 'SAMPLE from 2×H200' }).first().waitFor({ state: 'visible', timeout: 20_000 });
    // The panel shows the sample's own figures, its heading naming it SAMPLE.
    // A sample is a whole 2×H200 catalogue (tens of charts): on a busy 2-core CI machine its first render can take longer than a small run's.
    const frame = await s.resultsFrame(90_000);
    const heading = await waitUntil(
      () => frame.evaluate<string>(`(document.querySelector('h1')?.textContent ?? '') + ' ' + document.querySelectorAll('canvas, table').length`).then((t) => (/SAMPLE from 2×H200/.test(t) && !/ 0$/.test(t) ? t : undefined)),
      'the sample run in the results panel',
      30_000,
    );
    assert.match(heading, /SAMPLE from 2×H200/);
    await s.shot('onboarding-sample');
    // The file's annotations: no run answers (the sample is foreign until chosen), so the CodeLens offers to measure.
    await s.page.locator('.explorer-folders-view .monaco-list-row', { hasText: 'train.py' }).first().click();
    const lens = s.page.locator('.editor-group-container.active .codelens-decoration', { hasText: '⏱' }).first();
    await lens.waitFor({ state: 'visible', timeout: 30_000 });
    const lensText = await lens.innerText();
    assert.doesNotMatch(lensText, /SAMPLE/, `a sample is not used unless chosen: ${lensText}`);
  });

  test('Measure on localhost without a GPU driver: the error offers Run Simulated, which measures on the simulated NCCL', { skip: hasGpu ? 'this machine has an NVIDIA driver' : false }, async () => {
    await s.command('commcost: Measure communicator rebuild');
    await s.pick(/commcost: target host/, 'localhost', 'localhost');
    await s.quickInput(/commcost: experiments/);
    await s.page.keyboard.press('Enter');
    await s.quickInput(/commcost: recorded iterations/);
    await s.page.keyboard.press('Enter');
    const error = s.toast(/no NVIDIA GPU driver/);
    await error.waitFor({ state: 'visible', timeout: 60_000 });
    const text = await error.innerText();
    assert.match(text, /use "Run Simulated"/, text);
    assert.doesNotMatch(text, /--simulate/, 'no CLI flag in the editor');
    await s.shot('onboarding-no-gpu');
    await error.locator('.monaco-button, a.monaco-button', { hasText: 'Run Simulated' }).first().click();
    // A real command again: the experiment picker of a simulated run, without the host question.
    const rows = await pickRows(/commcost: experiments/);
    assert.ok(rows.some((r) => r.label === 'init'));
    await s.shot('onboarding-no-gpu-run-simulated');
    await s.page.keyboard.press('Escape');
  });
});

// The packaged extension's page: README.vsix.md, packed as the .vsix's README with its images in
// the package. Needs the .vsix installed (COMMCOST_UI_VSIX=commcost-0.1.0.vsix, after
// `npm run package`): the copy of dist/ the other scenarios install carries the repository's README.
const vsix = process.env.COMMCOST_UI_VSIX;
describe('the extension details page of the packaged .vsix', { skip: skip || (vsix ? false : 'set COMMCOST_UI_VSIX to a packaged .vsix (npm run package)') }, () => {
  let s: UiSession;
  uiSessionHooks({ workspace: { name: 'details', files: { 'README.txt': 'details page\n' } } }, (session) => (s = session));

  test("shows the users' README with every image loaded, the icon, and the categories", async () => {
    await s.command('Extensions: Show Enabled Extensions');
    const row = s.page.locator('.extensions-list .monaco-list-row', { hasText: 'commcost' }).first();
    await row.waitFor({ state: 'visible', timeout: 30_000 });
    await row.click();
    const frame = await waitUntil(
      async () => {
        for (const f of s.page.frames())
          if (await f.evaluate<boolean>(`document.body?.innerText.includes('what NCCL communicators cost, next to your code') ?? false`).catch(() => false)) return f;
        return undefined;
      },
      "the details page's README",
      30_000,
    );
    // Every image of the README decoded (a broken relative path has naturalWidth 0).
    const images = await waitUntil(
      () =>
        frame
          .evaluate<{ src: string; ok: boolean }[]>(`[...document.images].map((i) => ({ src: i.getAttribute('src') ?? '', ok: i.complete && i.naturalWidth > 0 }))`)
          .then((list) => (list.length >= 2 && list.every((i) => i.ok) ? list : undefined)),
      'every README image loaded',
      30_000,
    ).catch(async (e) => {
      await s.shot('onboarding-details-failure');
      throw e;
    });
    assert.ok(images.length >= 2, JSON.stringify(images));
    const header = await s.page.locator('.extension-editor .header').first().innerText();
    assert.match(header, /commcost — NCCL communicator cost/);
    const icon = await s.page.locator('.extension-editor .header .icon').first().evaluate((i: { complete: boolean; naturalWidth: number }) => i.complete && i.naturalWidth > 0);
    assert.ok(icon, 'the icon is shown');
    await s.shot('onboarding-details-page');
  });
});
