// the call-site annotations in a real VS Code: (c) CodeLens and hovers, (d) the device_id quick fix,
// (i) real call shapes.
// code-server 4.100.3 in headless Chromium (playwright-core), the built extension copied into a fresh
// extensions folder, measurements over SSH against the loopback OpenSSH server
// (test/support/sshServer.ts) on the simulated NCCL. Each scenario asserts what a user sees and
// saves a screenshot under test-output/ui/. Harness: ./uiEnv.ts, shared helpers: ./scenarioSupport.ts;
// install: ./install.sh. Skipped with the reason when Chromium, code-server or sshd is missing,
// unless COMMCOST_REQUIRE_UI=1 (set by .ci/run), which makes that a failure.
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { formatBytes, formatMs as annotationMs } from '../../readings/annotationText';
import type { RunFile } from '../../protocol/runFile';
import { OUT_DIR, waitUntil, type UiSession } from './uiEnv';
import { runName } from '../../readings/runName';
import { committedRun, committedRunText, runLabelOf, staleAfterDaysFor, stepStats } from './committedRuns';
import { dayOf, FIRST_LENS_MS, WHEEL, wheelRun, stats, sessionHelpers, uiSessionHooks, uiSkip } from './scenarioSupport';

const skip = uiSkip('UI tests');

describe('commcost in a real VS Code (code-server + Chromium)', { skip, timeout: 300_000 }, () => {
  let s: UiSession;
  // A session for the file; the agent deploys these tests make on the loopback host are removed after.
  uiSessionHooks({ cleanRemoteDeploys: true, timeoutMs: 60_000 }, (session) => (s = session));

  const { scenario, openFile, wordPoint, hoverText, lens } = sessionHelpers(() => s);

  test('(c) CodeLens and hover show the H200 run on dist.new_group and ncclCommSplit; a stale run says stale', async () => {
    await scenario('c', async () => {
      const freshRun = wheelRun(1);
      // Every annotation ends with its run's label, its name: GPUs · NCCL version · start (readings/runName.ts).
      const freshName = runName(JSON.parse(freshRun) as RunFile);
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
      await pyLens.waitFor({ state: 'visible', timeout: FIRST_LENS_MS });
      const pyLensText = await pyLens.innerText();
      assert.equal(
        pyLensText.replace(/^\S+ /, ''),
        `${annotationMs(init.median)} to first collective · ${formatBytes(initMem)}/GPU (init beneath) — ${freshName}`,
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
      // The C/C++ grammar loads on the first C/C++ document: a first lens again.
      await ccLens.waitFor({ state: 'visible', timeout: FIRST_LENS_MS });
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
      const total = stats(WHEEL, 'init', 'default', 'total');
      assert.ok(title.includes(`the NCCL init beneath takes ${annotationMs(call.median)} of the ${annotationMs(total.median)} on localhost`), title);
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
