// the call-site annotations in a real VS Code on every committed 2×H200 run and a simulated one:
// (h) each call answered by its own fresh measured run, hovers in light and dark (runs: ./committedRuns.ts).
// code-server 4.100.3 in headless Chromium (playwright-core), the built extension copied into a fresh
// extensions folder, measurements over SSH against the loopback OpenSSH server
// (test/support/sshServer.ts) on the simulated NCCL. Each scenario asserts what a user sees and
// saves a screenshot under test-output/ui/. Harness: ./uiEnv.ts, shared helpers: ./scenarioSupport.ts;
// install: ./install.sh. Skipped with the reason when Chromium, code-server or sshd is missing,
// unless COMMCOST_REQUIRE_UI=1 (set by .ci/run), which makes that a failure.
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { formatMs as annotationMs } from '../../readings/annotationText';
import type { RunFile } from '../../protocol/runFile';
import { OUT_DIR, waitUntil, type UiSession } from './uiEnv';
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
import { dayOf, sessionHelpers, uiSessionHooks, uiSkip } from './scenarioSupport';

const skip = uiSkip('UI tests');

describe('commcost in a real VS Code (code-server + Chromium)', { skip, timeout: 300_000 }, () => {
  let s: UiSession;
  // A session for the file; the agent deploys these tests make on the loopback host are removed after.
  uiSessionHooks({ cleanRemoteDeploys: true, timeoutMs: 60_000 }, (session) => (s = session));

  const { scenario, openFile, hoverText } = sessionHelpers(() => s);

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
        // The connect share as measured: the first collective's part of call + first (docs/METHOD.md "Percentages"), with its two parts.
        const share = (100 * whole('first').median) / (whole('call').median + whole('first').median);
        assert.ok(share >= 10, `a share of ${share}% is written to the unit`);
        assert.ok(
          ccSplit.includes(`${Math.round(share)}% of this split is paid in its first collective (of the call + first collective, ${ms(whole('call').median).replace(' ms', '')} + ${ms(whole('first').median)})`),
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
});
