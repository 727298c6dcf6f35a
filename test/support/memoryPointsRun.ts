/**
 * Test fixture builder: a valid run file with thousands of memory points (issue #21: "4,000 memory
 * points freeze the report page"), built in memory instead of committed as a large file.
 *
 * It is the committed 2×H200 field-case run (docs/results/h200x2-nccl2.28.9-wheel.cases.json)
 * with its split-share experiment's memory points ("after 1 group", "after 2 groups", …, the
 * points that field case C2 records) grown to `points` per variant, each with NCCL's count
 * (ncclCommMemStats) beside it. The figures are made up for the test (a steady growth per group
 * with a deterministic ripple and a few steps): they exercise the page, they are no measurement.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { MemStatsBytes } from '../../protocol/events';
import type { RunFile } from '../../protocol/runFile';
import { validateRunFile } from '../../client/runFileSchema';

const REPO = join(__dirname, '..', '..');
/** The committed run the fixture starts from. */
export const MEMORY_POINTS_BASE = join(REPO, 'docs', 'results', 'h200x2-nccl2.28.9-wheel.cases.json');
const MiB = 2 ** 20;

/** The point names field case C2 uses: "after 1 group", "after 2 groups", … */
export const groupPoint = (k: number): string => `after ${k} group${k === 1 ? '' : 's'}`;

/**
 * The free-memory delta after `k` groups of variant `vi`, bytes: 76, 25 or 48 MiB per group (one
 * slope per variant, so that the lines stay apart), a ripple of a few MiB and a step every 500 groups.
 */
export function memoryAt(vi: number, k: number): number {
  const perGroup = [76, 25, 48][vi % 3]!;
  const ripple = ((k * 7919 + vi * 104729) % 13) - 6;
  const steps = Math.floor(k / 500) * 64;
  return Math.round((k * perGroup + ripple + steps) * MiB);
}

/**
 * A validated run whose split-share experiment has `points` memory points in each of its variants
 * (3 in the base run), and NCCL's count at each point when `memStats` (default true).
 * @throws Error when `points` is not a positive integer; CommcostError when the result does not
 * validate (a broken fixture, not a product failure)
 */
export function runWithMemoryPoints(points: number, opts: { memStats?: boolean } = {}): RunFile {
  if (!Number.isInteger(points) || points < 1) throw new Error(`points must be a positive integer, got ${points}`);
  const run = JSON.parse(readFileSync(MEMORY_POINTS_BASE, 'utf8')) as RunFile;
  const exp = run.experiments.find((e) => e.experiment === 'split-share');
  if (!exp) throw new Error(`${MEMORY_POINTS_BASE} has no split-share experiment`);
  exp.variants.forEach((v, vi) => {
    const memory: Record<string, number> = {};
    const stats: Record<string, MemStatsBytes> = {};
    for (let k = 1; k <= points; k++) {
      const bytes = memoryAt(vi, k);
      memory[groupPoint(k)] = bytes;
      const persistent = Math.round(bytes * 0.8);
      const suspendable = Math.round(bytes * 0.15);
      stats[groupPoint(k)] = { suspendableBytes: suspendable, persistentBytes: persistent, totalBytes: suspendable + persistent };
    }
    v.memoryBytes = memory;
    if (opts.memStats !== false) v.memStats = stats;
    else delete v.memStats;
  });
  run.id = `${run.id}-memory-points-${points}`;
  return validateRunFile(JSON.parse(JSON.stringify(run)), `memory-points-${points}.json`);
}
