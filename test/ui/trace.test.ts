// A trace of the user's job in a real VS Code (code-server + headless Chromium, harness ./uiEnv.ts):
// a workspace holding the committed 2×H200 trace of examples/trace/torch_tp_reshape.py (traced in
// /work/main on host "vm", before a docstring edit moved its lines by two), the example as it is
// now, and the committed runs. Each traced line's CodeLens, after-line label and hover give the
// observed figures of the trace first, the experiment's beside them; the status bar tooltip names
// the trace. Screenshots under test-output/ui/. Skipped with the reason when Chromium or
// code-server is missing, unless COMMCOST_REQUIRE_UI=1.
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { hasGpu } from '../../client/trace/run';
import { after, before, describe, test } from 'node:test';
import { formatMs } from '../../readings/annotationText';
import type { TraceFile, TraceSite } from '../../protocol/trace';
import { committedRun, committedRunText, staleAfterDaysFor, stepStats } from './committedRuns';
import { OUT_DIR, REPO, UiSession, uiMissingReason, waitUntil } from './uiEnv';

const missing = uiMissingReason();
if (missing && process.env.COMMCOST_REQUIRE_UI === '1') test('the UI tests are required (COMMCOST_REQUIRE_UI=1)', () => assert.fail(missing));
const skip = missing ? `skipped: ${missing}` : false;
if (missing) process.stderr.write(`UI trace test ${skip}\n`);

const TRACE_FILE = 'trace-torch-tp-reshape-nccl2.28.9.json';
const TRACE_TEXT = readFileSync(join(REPO, 'docs', 'results', 'h200x2-2026-12-01', TRACE_FILE), 'utf8');
const TRACE = JSON.parse(TRACE_TEXT) as TraceFile;
const EXAMPLE = readFileSync(join(REPO, 'examples', 'trace', 'torch_tp_reshape.py'), 'utf8');
const C10D = 'h200x2-torch2.11-nccl2.28.9-c10d.json';
const WHEEL = 'h200x2-nccl2.28.9-wheel.json';

/** The trace's site of `api` (the `nth` in the file's order). */
function site(api: string, nth = 0): TraceSite {
  const s = TRACE.sites.filter((x) => x.api === api)[nth];
  assert.ok(s, `${api} #${nth} in the trace`);
  return s;
}
/** 1-based line of the example holding `needle`. */
const exampleLine = (needle: string): number => EXAMPLE.split('\n').findIndex((l) => l.includes(needle)) + 1;

describe('commcost trace in a real VS Code: a traced line says what the job paid', { skip, timeout: 300_000 }, () => {
  let s: UiSession;
  before(
    async () => {
      // The stub torch.distributed (NCCL through ctypes, test/fixtures/trace/fake_torch) for the
      // "Trace Python File" scenario: the extension host inherits this environment.
      process.env.PYTHONPATH = join(REPO, 'test', 'fixtures', 'trace', 'fake_torch');
      process.env.COMMCOST_STUB_DIR = mkdtempSync(join(tmpdir(), 'commcost-stub-'));
      process.env.COMMCOST_STUB_NCCL = join(REPO, 'dist', 'native', 'libnccl-sim.so');
      s = await UiSession.start();
    },
    { timeout: 60_000 },
  );
  after(async () => {
    await s?.stop();
  });

  test('the committed 2×H200 trace answers the example: observed figures first in CodeLens, label and hover, the experiment beside them; the status bar names the trace', async () => {
    try {
      const staleAfterDays = staleAfterDaysFor([committedRun(C10D), committedRun(WHEEL)]);
      const ws = s.workspace('traced-job', {
        '.vscode/settings.json': JSON.stringify(
          { 'workbench.colorTheme': 'Default Light Modern', 'commcost.staleAfterDays': staleAfterDays, 'editor.hover.above': false },
          null,
          2,
        ),
        [`.commcost/traces/${TRACE_FILE}`]: TRACE_TEXT,
        [`.commcost/runs/${C10D}`]: committedRunText(C10D),
        [`.commcost/runs/${WHEEL}`]: committedRunText(WHEEL),
        'examples/trace/torch_tp_reshape.py': EXAMPLE,
      });
      // Tall enough that the hover (at most a quarter of the editor's height) shows whole.
      await s.page.setViewportSize({ width: 1600, height: 2200 });
      await s.openFolder(ws);
      // The explorer compacts examples/trace into one row.
      await s.page.locator('.explorer-folders-view .monaco-list-row', { hasText: 'examples' }).first().click();
      await s.page.locator('.explorer-folders-view .monaco-list-row', { hasText: 'torch_tp_reshape.py' }).first().click();
      await s.page.locator('.monaco-editor .view-lines', { hasText: 'dist.split_group' }).first().waitFor({ state: 'visible', timeout: 15_000 });

      const init = site('init_process_group');
      const tp2 = site('new_group', 0);
      const split = site('split_group');
      const ms = formatMs;
      const shift = exampleLine('dist.init_process_group(') - init.line!;
      assert.ok(shift > 0, 'the example moved since the trace (the case the matching must handle)');

      // --- CodeLens: six traced lines (3 creations + split + 2 teardowns), observed first, the experiment beside.
      const lensTexts = () =>
        s.page.evaluate<string[]>(
          `[...document.querySelectorAll('.editor-group-container.active .codelens-decoration')].map((e) => ({ y: e.getBoundingClientRect().top, t: e.innerText.trim() })).filter((x) => x.t).sort((a, b) => a.y - b.y).map((x) => x.t)`,
        );
      let lenses: string[] = [];
      await waitUntil(
        async () => {
          lenses = await lensTexts();
          return lenses.filter((t) => t.includes('⏱ observed')).length === 6 && lenses.every((t) => !t.includes('observed') || t.includes('experiment'));
        },
        'six observed CodeLenses, each beside the experiment',
        40_000,
      );
      const where = 'torch_tp_reshape.py · 2 ranks · vm · NCCL 2.28.9 · 2026-12-01 10:10 UTC';
      const tp2Lens = lenses.find((t) => t.includes(`⏱ observed ${ms(tp2.creation!.medianMs)} call · ${ms(tp2.firstCollective!.medianMs)} first collective — ${where}`));
      assert.ok(tp2Lens, `the TP 2 new_group lens:\n${lenses.join('\n')}`);
      // The experiment beside it: c10d new_group (eager: the file's init passes device_id) from the c10d run;
      // its first collective is a line of its own (line 39), so the lens gives the call and points there.
      assert.match(tp2Lens, /experiment [\d.]+ m?s call · its first collective \(line 39\) pays [\d.]+ m?s/);
      assert.ok(
        lenses.some((t) => t.includes(`⏱ observed ${ms(init.creation!.medianMs)} call · ${ms(init.firstCollective!.medianMs)} first collective (cold)`)),
        `the cold init_process_group lens:\n${lenses.join('\n')}`,
      );
      assert.ok(lenses.some((t) => t.includes(`⏱ observed ${ms(split.creation!.medianMs)} call · first collective not measured`)), lenses.join('\n'));
      for (const t of lenses) assert.doesNotMatch(t, /SIMULATED|stale/i, t);

      // --- After-line labels: observed first, then the experiment's figure.
      const labels = await s.page.evaluate<string[]>(
        `[...new Map([...document.querySelectorAll('.editor-group-container.active .view-lines span')].map((e) => [e.getBoundingClientRect().top, getComputedStyle(e, '::after').content]).filter(([, c]) => c && c.includes('⏱'))).values()].map((c) => JSON.parse(c))`,
      );
      assert.ok(
        labels.some((l) => l.startsWith(`⏱ observed ${ms(tp2.creation!.medianMs)} call · ${ms(tp2.firstCollective!.medianMs)} first collective · experiment `)),
        labels.join('\n'),
      );

      // --- The hover of the TP 2 new_group line.
      const pointOn = (line: string, word: string) =>
        waitUntil(
          () =>
            s.page.evaluate<{ x: number; y: number } | null>(`(() => {
              for (const row of document.querySelectorAll('.editor-group-container.active .monaco-editor .view-lines .view-line')) {
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
      const hoverShot = async (line: string, word: string, shot: string): Promise<string> => {
        await s.page.mouse.move(5, 500);
        await s.page.locator('.monaco-hover').first().waitFor({ state: 'hidden', timeout: 5_000 }).catch(() => undefined);
        const p = await pointOn(line, word);
        await s.page.mouse.move(p.x - 2, p.y);
        await s.page.mouse.move(p.x, p.y);
        const hover = s.page.locator('.monaco-hover', { hasText: 'observed in your job' }).first();
        await hover.waitFor({ state: 'visible', timeout: 15_000 });
        const box = await hover.boundingBox();
        assert.ok(box, 'the hover has a box');
        await s.page.screenshot({ path: join(OUT_DIR, `${shot}.png`), clip: { x: 0, y: 0, width: 1600, height: Math.ceil(Math.max(box.y + box.height, p.y) + 40) } });
        return hover.innerText();
      };
      const hover = await hoverShot('tp2 = dist.new_group(', 'new_group', 'trace-hover-new_group');
      assert.ok(
        hover.includes(
          `Observed in torch_tp_reshape.py, 2 ranks: created in ${ms(tp2.creation!.medianMs)}, first collective on this group paid ${ms(tp2.firstCollective!.medianMs)} (connect ${ms(tp2.connect!.medianMs)}), teardown ${ms(tp2.teardown!.medianMs)} (n=1)`,
        ),
        hover,
      );
      assert.ok(hover.includes(`Traced at line ${tp2.line}: the file has changed since the trace (lines moved by +${shift})`), hover);
      assert.match(hover, /python3 -m torch\.distributed\.run --nproc-per-node=2 examples\/trace\/torch_tp_reshape\.py · vm · 2 traced processes · NCCL 2\.28\.9 · 2026-12-01 10:10 UTC/);
      assert.ok(hover.includes(`Trace: ${TRACE_FILE}`), hover);
      // The experiment beside it, for comparison: the c10d run's eager new_group figures.
      assert.ok(hover.indexOf('Synthetic experiment, for comparison') > hover.indexOf('Observed in'), hover);
      assert.match(hover, /commcost · new_group → c10d · new_group\/eager/);
      const eager = stepStats(committedRun(C10D), 'c10d', hover.match(/new_group\/eager[\w-]*/)![0], 'total');
      assert.ok(hover.includes(ms(eager.median)), `the experiment's total ${ms(eager.median)} in:\n${hover}`);
      assert.doesNotMatch(hover, /SIMULATED/);

      const initHover = await hoverShot('dist.init_process_group(', 'init_process_group', 'trace-hover-init_process_group');
      assert.ok(initHover.includes(`created in ${ms(init.creation!.medianMs)} (cold)`), initHover);
      assert.match(initHover, /cold: the first communicator of its process, with the one-time CUDA and NCCL start/);

      // --- The status bar tooltip names the trace in use.
      await s.page.mouse.move(5, 500);
      const bar = s.page.locator('.part.statusbar .statusbar-item', { hasText: ' · NCCL ' }).first();
      await bar.waitFor({ state: 'visible', timeout: 10_000 });
      await bar.hover();
      const tip = s.page.locator('.monaco-hover, .workbench-hover', { hasText: 'Traced lines' }).first();
      await tip.waitFor({ state: 'visible', timeout: 10_000 });
      const tipText = await tip.innerText();
      assert.ok(tipText.includes('Traced lines: observed figures from the newest trace that observed each line — torch_tp_reshape.py · vm · NCCL 2.28.9 · 2026-12-01 10:10 UTC'), tipText);
      await tip.screenshot({ path: join(OUT_DIR, 'trace-statusbar-tooltip.png') });
    } catch (e) {
      await s.shot('trace-failure').catch(() => undefined);
      throw e;
    }
  });

  test('"commcost: Trace Python File" on a machine without a GPU: a launch configuration picked, the simulated NCCL offered, "Show Trace", the annotations SIMULATED from the new trace', async () => {
    if (await hasGpu()) return void process.stderr.write('skipped: this machine has a GPU (the scenario is the simulated path)\n');
    try {
      const ws = s.workspace('trace-command', {
        '.vscode/settings.json': JSON.stringify({ 'workbench.colorTheme': 'Default Light Modern', 'editor.hover.above': false }, null, 2),
        // A launch configuration: the command offers it beside the active file.
        '.vscode/launch.json': JSON.stringify(
          { version: '0.2.0', configurations: [{ name: 'reshape, one rank', type: 'debugpy', request: 'launch', program: '${workspaceFolder}/torch_tp_reshape.py', env: { WORLD_SIZE: '1' } }] },
          null,
          2,
        ),
        'torch_tp_reshape.py': EXAMPLE,
      });
      await s.openFolder(ws);
      await s.page.locator('.explorer-folders-view .monaco-list-row', { hasText: 'torch_tp_reshape.py' }).first().click();
      await s.page.locator('.monaco-editor .view-lines', { hasText: 'dist.split_group' }).first().waitFor({ state: 'visible', timeout: 15_000 });
      await s.command('commcost: Trace Python File');
      await s.pick('commcost: trace which job', 'reshape, one rank', 'one rank');
      // No GPU here: the simulated NCCL is offered.
      const offer = s.toast(/no NVIDIA GPU found/);
      await offer.waitFor({ state: 'visible', timeout: 20_000 });
      await offer.locator('a.monaco-button, .monaco-button', { hasText: 'Run on the Simulated NCCL' }).first().click();
      const done = s.toast(/SIMULATED · reshape, one rank: \d+ call sites traced/);
      await done.waitFor({ state: 'visible', timeout: 60_000 });
      const saved = readdirSync(join(ws, '.commcost', 'traces')).filter((n) => n.endsWith('.json'));
      assert.equal(saved.length, 1, saved.join(', '));
      const trace = JSON.parse(readFileSync(join(ws, '.commcost', 'traces', saved[0]!), 'utf8')) as TraceFile;
      assert.equal(trace.simulated, true);
      const init = trace.sites.find((x) => x.api === 'init_process_group');
      assert.ok(init?.creation, JSON.stringify(trace.sites.map((x) => x.api)));
      // The annotations update from the new trace: SIMULATED, with its figures.
      const lens = s.page.locator('.editor-group-container.active .codelens-decoration', { hasText: 'SIMULATED · ⏱ observed' }).first();
      await lens.waitFor({ state: 'visible', timeout: 30_000 });
      const lensTexts = await s.page.evaluate<string[]>(
        `[...document.querySelectorAll('.editor-group-container.active .codelens-decoration')].map((e) => e.innerText.trim()).filter((t) => t.includes('observed'))`,
      );
      assert.ok(
        lensTexts.some((t) => t.startsWith(`SIMULATED · ⏱ observed ${formatMs(init.creation!.medianMs)} call`)),
        `the init_process_group lens from the new trace:\n${lensTexts.join('\n')}`,
      );
      await s.page.screenshot({ path: join(OUT_DIR, 'trace-command-done.png') });
      // "Show Trace" opens the saved file.
      await done.locator('.monaco-button', { hasText: 'Show Trace' }).first().click();
      await s.page.locator('.tabs-container .tab', { hasText: saved[0]! }).first().waitFor({ state: 'visible', timeout: 15_000 });
    } catch (e) {
      await s.shot('trace-command-failure').catch(() => undefined);
      throw e;
    }
  });

  test('"commcost: Trace Python File" on an SSH host of commcost.hosts: the host pick (a group and slurm: not for tracing), the remote folder and path asked, the job run there, the trace saved in the workspace', async () => {
    try {
      const ws = s.workspace('trace-on-host', {
        '.vscode/settings.json': JSON.stringify(
          { 'workbench.colorTheme': 'Default Light Modern', 'commcost.hosts': ['commcost-test', 'gpu-a + gpu-b', 'slurm:login1'] },
          null,
          2,
        ),
        // The loopback host is this machine: the job leaves where it ran in the workspace folder.
        'jobs/hello_host.py': "import os\nopen('ran-here.txt', 'w').write(os.getcwd())\nprint('hello from the host')\n",
      });
      await s.openFolder(ws);
      await s.page.locator('.explorer-folders-view .monaco-list-row', { hasText: 'jobs' }).first().click();
      await s.page.locator('.explorer-folders-view .monaco-list-row', { hasText: 'hello_host.py' }).first().click();
      await s.page.locator('.monaco-editor .view-lines', { hasText: 'hello from the host' }).first().waitFor({ state: 'visible', timeout: 15_000 });
      await s.command('commcost: Trace Python File');
      const where = await s.quickInput('commcost: trace where');
      await where.locator('.monaco-list-row', { hasText: 'commcost-test' }).first().waitFor({ state: 'visible' });
      const rows = await where.locator('.monaco-list-row').allInnerTexts();
      assert.match(rows[0]!, /localhost/, rows.join('\n'));
      assert.ok(rows.some((r) => /gpu-a \+ gpu-b[\s\S]*not for tracing[\s\S]*Not for tracing: a group/.test(r)), rows.join('\n'));
      assert.ok(rows.some((r) => /slurm:login1[\s\S]*Not for tracing: a Slurm login node/.test(r)), rows.join('\n'));
      await s.shot('trace-host-pick');
      await s.pick('commcost: trace where', 'commcost-test');
      await s.quickInput('commcost: working directory on commcost-test');
      await s.page.keyboard.type(ws);
      await s.page.keyboard.press('Enter');
      const fileBox = await s.quickInput('hello_host.py on commcost-test');
      assert.equal(await fileBox.locator('input').first().evaluate((el: { value: string }) => el.value), 'jobs/hello_host.py');
      await s.page.keyboard.press('Enter');
      // The done notification (with Show Trace), not the progress one ("tracing hello_host.py on commcost-test: running the job").
      const done = s.page.locator('.notifications-toasts .notification-toast', { hasText: /hello_host\.py on commcost-test: / }).filter({ hasText: 'Show Trace' }).first();
      await done.waitFor({ state: 'visible', timeout: 120_000 });
      await s.shot('trace-host-done');
      assert.equal(readFileSync(join(ws, 'ran-here.txt'), 'utf8'), ws, 'the job ran in the remote working directory typed');
      const saved = readdirSync(join(ws, '.commcost', 'traces')).filter((n) => n.endsWith('.json'));
      assert.equal(saved.length, 1, saved.join(', '));
      const trace = JSON.parse(readFileSync(join(ws, '.commcost', 'traces', saved[0]!), 'utf8')) as TraceFile;
      assert.equal(trace.host, 'commcost-test');
      assert.deepEqual(trace.command.slice(-1), ['jobs/hello_host.py']);
      assert.notEqual(trace.simulated, true);
      await done.locator('.monaco-button', { hasText: 'Show Trace' }).first().click();
      await s.page.locator('.tabs-container .tab', { hasText: saved[0]! }).first().waitFor({ state: 'visible', timeout: 15_000 });
    } catch (e) {
      await s.shot('trace-host-failure').catch(() => undefined);
      throw e;
    }
  });
});
