/**
 * Sample runs bundled with the extension: two real runs measured on 2×H200 (NCCL 2.28.9 and
 * 2.30.7, docs/results/h200x2-2026-12-01), copied into dist/samples/ by scripts/build.mjs with
 * their host renamed to {@link SAMPLE_HOST}, so that every place that names a run (status bar,
 * hovers, after-line labels, the Runs view, panel titles) says SAMPLE.
 *
 * `commcost.openSample` ("Open a Sample Run from 2×H200", offered by the Runs view and the
 * walkthrough when a workspace has no runs) opens one in the results panel and, from then on, lists
 * the samples with the saved runs. A sample is like a global run saved from another workspace:
 * it never answers call sites by itself (profiles.ts `foreign`), only when the user chooses it as
 * the active run. Nothing here reads a path from a command argument.
 */
import { join } from 'node:path';
import * as vscode from 'vscode';
import type { RunFolder } from '../client/profileStore';
import type { RunsApi } from './annotations/runsApi';
import type { CommcostContext } from './extensionContext';

/** The host name of the sample runs (scripts/build.mjs writes the same). */
export const SAMPLE_HOST = 'SAMPLE from 2×H200';
/** Global state: true once the user opened a sample, so that the samples are listed with the runs. */
export const SAMPLES_SHOWN_KEY = 'commcost.samplesShown';
/** The origin recorded for the samples: never a workspace's id, so they are foreign everywhere. */
export const SAMPLE_ORIGIN = 'commcost-sample:h200x2-2026-12-01';

/** The bundled samples: file name in dist/samples/ and what the picker says of it. */
export const SAMPLE_FILES: readonly { file: string; label: string; detail: string }[] = [
  {
    file: 'sample-2xH200-nccl2.28.9.json',
    label: 'SAMPLE from 2×H200 · NCCL 2.28.9 (PyPI wheel)',
    detail: 'init, split, shrink, destroy, abort, revoke, drain, pool, cold start; grow and suspend skipped (they need NCCL ≥ 2.29)',
  },
  {
    file: 'sample-2xH200-nccl2.30.7.json',
    label: 'SAMPLE from 2×H200 · NCCL 2.30.7 (built from source)',
    detail: 'the same experiments plus grow and suspend: compare it with the 2.28.9 sample (Compare Runs…)',
  },
];

/**
 * The samples' folder as the run store reads it, or undefined until the user opened a sample.
 * @param extensionPath the extension's folder (dist/samples/ is under it)
 * @param shown the {@link SAMPLES_SHOWN_KEY} flag
 */
export function samplesFolder(extensionPath: string, shown: unknown): RunFolder | undefined {
  if (shown !== true) return undefined;
  return {
    dir: join(extensionPath, 'dist', 'samples'),
    source: 'global',
    origins: Object.fromEntries(SAMPLE_FILES.map((s) => [s.file, SAMPLE_ORIGIN])),
  };
}

/** True for a run path inside the bundled samples' folder. */
export function isSamplePath(extensionPath: string, path: string): boolean {
  return path.startsWith(join(extensionPath, 'dist', 'samples'));
}

/**
 * Registers `commcost.openSample`: a picker of the samples (or `which`, an index into
 * {@link SAMPLE_FILES}, from the walkthrough's link), then the results panel on it.
 */
export function registerSamples(ctx: CommcostContext, extension: vscode.ExtensionContext, runs: RunsApi): void {
  ctx.subscriptions.add(
    vscode.commands.registerCommand('commcost.openSample', async (which?: unknown) => {
      let sample = typeof which === 'number' && Number.isInteger(which) ? SAMPLE_FILES[which] : undefined;
      if (!sample) {
        const picked = await vscode.window.showQuickPick(
          SAMPLE_FILES.map((s) => ({ label: s.label, detail: s.detail, sample: s })),
          { title: 'commcost: open a sample run (real runs measured on 2×H200, not on your machine)', ignoreFocusOut: true },
        );
        sample = picked?.sample;
      }
      if (!sample) return undefined;
      if (extension.globalState.get(SAMPLES_SHOWN_KEY) !== true) {
        await extension.globalState.update(SAMPLES_SHOWN_KEY, true);
        await runs.reload();
      } else await runs.ensureLoaded();
      const path = join(extension.extensionPath, 'dist', 'samples', sample.file);
      const p = runs.store.byPath(path);
      if (!p) {
        void vscode.window.showErrorMessage(`commcost: the sample ${sample.file} is missing from this installation (${path}); reinstall the extension`);
        return undefined;
      }
      await vscode.commands.executeCommand('commcost.openRun', p.key);
      void vscode.window.showInformationMessage(
        `commcost: ${sample.label} — a real run from a 2×H200 machine, not yours. It annotates your code only if you choose it (Select Active Run…).`,
      );
      return p.key;
    }),
  );
}
