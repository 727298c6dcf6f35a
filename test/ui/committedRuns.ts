/**
 * The committed real 2×H200 runs of docs/results/ as a new user's `.commcost/runs/` holds them,
 * plus one simulated run made by the CLI (a committed fixture), for the UI scenario that checks
 * which run answers each call site (test/ui/committedRunsHovers.test.ts, scenario (h)). Figures are read from
 * the run files here, never typed into the test.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { StepStats } from '../../protocol/events';
import { isSimulatedRun, type RunFile } from '../../protocol/runFile';
import { mappedExperiments } from '../../sites/apiMap';
import { runLabel } from '../../readings/annotationText';
import { runTime, type Profile } from '../../readings/profiles';
import { REPO } from './uiEnv';

const DAY = 86_400_000;

/**
 * Every committed run file of the 2×H200 machine (the `*.reference.json` files are the
 * independent reference's output, not run files).
 */
export const H200X2_RUN_FILES = [
  'h200x2-nccl2.28.9-wheel.json',
  'h200x2-nccl2.28.3-system.json',
  'h200x2-nccl2.28.9-wheel.catalogue.json',
  'h200x2-nccl2.28.3-system.catalogue.json',
  'h200x2-nccl2.28.9-wheel.cases.json',
  'h200x2-nccl2.28.3-system.cases.json',
  'h200x2-nccl2.28.9-wheel.c4c6.cases.json',
  'h200x2-torch2.11-nccl2.28.9-c10d.json',
] as const;

/** The text of a committed run file, unchanged. */
export function committedRunText(file: string): string {
  return readFileSync(join(REPO, 'docs', 'results', file), 'utf8');
}

/** A committed run file, parsed. */
export function committedRun(file: string): RunFile {
  return JSON.parse(committedRunText(file)) as RunFile;
}

/** When `run` started, ms since the epoch (its stamp; the committed runs all have one). */
export function startedAt(run: RunFile): number {
  assert.ok(run.stamp, `${run.id} has an environment stamp`);
  const t = Date.parse(run.stamp.startedAt);
  assert.ok(Number.isFinite(t), `${run.id}: stamp.startedAt ${run.stamp.startedAt}`);
  return t;
}

/** A run as the extension's profile store holds it (key: the run's id; time: profiles.ts `runTime`). */
function profileOf(run: RunFile): Profile {
  return { key: run.id, path: run.id, source: 'workspace', run, time: runTime(run, 0) };
}

/**
 * The label the extension gives a run among the loaded runs `peers` (annotationText.ts
 * `runLabel`, called here): "2× H200 · NCCL 2.28.9 · 2026-11-30 00:22 UTC", the time the UTC minute the run
 * started, plus its UTC start time ("… 00:22 UTC") when another of `peers` would read alike.
 * @param peers every run loaded in the window (the simulated one included); [] = none to tell apart
 */
export function runLabelOf(run: RunFile, peers: readonly RunFile[] = []): string {
  const p = profileOf(run);
  return runLabel(
    p,
    peers.map((r) => (r.id === run.id ? p : profileOf(r))),
  );
}

/**
 * The run the extension makes active when none is chosen (profiles.ts `active`, its rule
 * reproduced with apiMap.ts `mappedExperiments`): the newest measured run with figures for an
 * experiment that answers call sites, else the newest measured run. Fails when none is measured.
 */
export function activeRunOf(runs: readonly RunFile[]): RunFile {
  const measured = runs.filter((r) => !isSimulatedRun(r)).sort((a, b) => startedAt(b) - startedAt(a));
  const mapped = new Set(mappedExperiments());
  const active = measured.find((r) => r.experiments.some((e) => mapped.has(e.experiment) && e.variants.length > 0)) ?? measured[0];
  assert.ok(active, 'a measured run among the loaded runs');
  return active;
}

/**
 * commcost.staleAfterDays for a workspace of the committed runs: the default a new user has (30)
 * while the oldest committed run is younger than that, else its age plus a day. The runs carry
 * the date they were measured and the clock moves on; without this they would turn stale by age
 * a month after they were committed, and the scenario tests which run answers, not age (scenario
 * (c) tests staleness by age).
 */
export function staleAfterDaysFor(runs: readonly RunFile[], now = Date.now()): number {
  const oldest = Math.min(...runs.map(startedAt));
  return Math.max(30, Math.ceil((now - oldest) / DAY) + 1);
}

/**
 * A simulated run as a user makes one, committed as test/fixtures/runs/simulated-2ranks-init-split.json
 * (made with `node bin/commcost.js measure --simulate --ranks 2 --experiments init,split
 * --iterations 2 --json <file>` on 2026-12-01, so newer than every committed H200 run: a rule
 * "the newest run answers" would pick it). A fixture rather than a CLI call in the test, so that
 * the scenario does not depend on the CLI bundle. Returns the file's text.
 */
export function simulatedRunText(): string {
  return readFileSync(join(REPO, 'test', 'fixtures', 'runs', 'simulated-2ranks-init-split.json'), 'utf8');
}

/** The statistics of one step of `run` (ms); fails the test when the run has no such step. */
export function stepStats(run: RunFile, experiment: string, variant: string, step: string): StepStats {
  const s = run.experiments
    .find((e) => e.experiment === experiment)
    ?.variants.find((v) => v.variant === variant)
    ?.steps.find((x) => x.step === step);
  assert.ok(s, `${experiment}/${variant}/${step} in ${run.id}`);
  return s.stats;
}

/** The variant names of `experiment` in `run`. */
export function variantsOf(run: RunFile, experiment: string): string[] {
  return run.experiments.find((e) => e.experiment === experiment)?.variants.map((v) => v.variant) ?? [];
}
