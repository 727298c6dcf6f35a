/**
 * A run of the full catalogue at `iterations` iterations per step, generated from a measured run
 * (docs/results, every experiment of the catalogue that ran on 2×H200): every series of samples
 * (each step's, and the experiment's raw samples) is stretched to `iterations` values cycled from
 * its own measured ones, each times a deterministic factor in [0.98, 1.02] (full-precision figures,
 * as a real run writes them), and the counts follow (options.iterations, stats.n, done/total).
 * The stats are those of the stretched samples. Not a committed file: written where asked.
 */
import { spawnSync } from 'node:child_process';
import { closeSync, existsSync, mkdtempSync, openSync, readFileSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { MAX_RUN_FILE_BYTES, MAX_RUN_NUMBERS } from '../../client/resultsStore';
import { estimateRow, type TargetTable } from './targets';
import { exactEstimate } from './verdict';

type Series = number[];
interface Step {
  samples?: Series;
  stats?: { median: number; p90: number; min: number; max: number; mean: number; n: number };
}
interface Experiment {
  variants: { steps: Step[] }[];
  samples?: Record<string, Record<string, Series>>;
  done?: number;
  total?: number;
}

function stretch(values: Series, n: number, seed: number): Series {
  if (values.length === 0) return values;
  const out = new Array<number>(n);
  let x = seed >>> 0 || 1;
  for (let i = 0; i < n; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    out[i] = values[i % values.length]! * (0.98 + ((x >>> 0) / 2 ** 32) * 0.04);
  }
  return out;
}

function statsOf(values: Series): NonNullable<Step['stats']> {
  const s = Float64Array.from(values).sort();
  const q = (p: number): number => {
    const pos = (s.length - 1) * p;
    const lo = Math.floor(pos);
    return s[lo]! + (s[Math.min(lo + 1, s.length - 1)]! - s[lo]!) * (pos - lo);
  };
  let sum = 0;
  for (const v of s) sum += v;
  return { median: q(0.5), p90: q(0.9), min: s[0]!, max: s[s.length - 1]!, mean: sum / s.length, n: s.length };
}

/**
 * Writes the generated run to `out`.
 * @returns the file's bytes and the number of samples it holds
 */
export function writeBigRun(root: string, out: string, iterations: number): { bytes: number; samples: number; experiments: number } {
  const run = JSON.parse(readFileSync(path.join(root, 'docs', 'results', 'h200x2-2026-12-01', 'h200x2-nccl2.28.9-wheel.json'), 'utf8')) as {
    options: { iterations: number; warmup: number };
    experiments: Experiment[];
  };
  const scale = iterations / run.options.iterations;
  run.options.iterations = iterations;
  let samples = 0;
  let seed = 1;
  for (const e of run.experiments) {
    for (const v of e.variants)
      for (const step of v.steps) {
        if (!step.samples) continue;
        step.samples = stretch(step.samples, iterations, seed++);
        samples += step.samples.length;
        if (step.stats) step.stats = statsOf(step.samples);
      }
    for (const byStep of Object.values(e.samples ?? {}))
      for (const k of Object.keys(byStep)) {
        byStep[k] = stretch(byStep[k]!, iterations, seed++);
        samples += byStep[k]!.length;
      }
    if (typeof e.done === 'number') e.done = Math.round(e.done * scale);
    if (typeof e.total === 'number') e.total = Math.round(e.total * scale);
  }
  // Written one experiment at a time: the whole run as one string would pass V8's longest string.
  const experiments = run.experiments;
  const [head, tail] = JSON.stringify({ ...run, experiments: ['\u0000'] }).split('"\\u0000"') as [string, string];
  const fd = openSync(out, 'w');
  let bytes = 0;
  try {
    const put = (t: string): void => void (bytes += writeSync(fd, t));
    put(head);
    experiments.forEach((e, i) => put((i > 0 ? ',' : '') + JSON.stringify(e)));
    put(tail);
  } finally {
    closeSync(fd);
  }
  return { bytes, samples, experiments: experiments.length };
}

/**
 * Peak RSS (MB) and exit of `node dist/cli.js report <file>` (with `html`: `--html <file>.html`,
 * the page written and then removed) in a fresh process (maxRss.cjs preloaded).
 */
function reportPeak(root: string, file: string, html: boolean): { mb: number; status: number | null; stderr: string } {
  const page = file.replace(/\.json$/, '.html');
  const args = [path.join(root, 'dist', 'cli.js'), 'report', file, ...(html ? ['--html', page] : [])];
  const r = spawnSync(process.execPath, ['-r', path.join(root, 'test', 'bench', 'maxRss.cjs'), ...args], { cwd: root, encoding: 'utf8', stdio: ['ignore', 'ignore', 'pipe'], timeout: 600_000 });
  rmSync(page, { force: true });
  const kb = /MAXRSS_KB (\d+)/.exec(r.stderr)?.[1];
  if (!kb) throw new Error(`commcost report ${file}: no peak RSS (exit ${r.status}, ${r.signal ?? 'no signal'}): ${r.stderr.slice(-500)}`);
  const stderr = r.stderr.replace(/\n?MAXRSS_KB \d+\n?/, '').replace(/^wrote .*\n?/m, '').trim();
  return { mb: Number(kb) / 1024, status: r.status, stderr };
}

/**
 * Section 11 of `npm run bench`: peak RSS of `commcost report` (dist/cli.js: read, validate,
 * verdict, terminal summary) and of `commcost report --html` (the same and the HTML report) on a
 * generated full-catalogue run at 100,000 iterations per step (target < 500 MB each), one row
 * each; a run refused by the limits (client/resultsStore.ts MAX_RUN_NUMBERS, MAX_RUN_FILE_BYTES)
 * is not met, said so. Then, as a reference row, the same at the largest run the limits admit
 * (in steps of 1,000 iterations): the limit is set so that it too stays under the target. One
 * fresh process per figure.
 */
export function bigRunBench(root: string, table: TargetTable, log: (l: string) => void, iterations = 100_000): void {
  if (!existsSync(path.join(root, 'dist', 'cli.js'))) {
    for (const html of [false, true]) {
      table.add({ id: `report.bigRun.peakRss${html ? '.html' : ''}`, what: `commcost report${html ? ' --html' : ''} of a full-catalogue run, peak RSS`, unit: 'MB', target: '< 500', verdict: 'skipped', note: 'dist/cli.js not built (node scripts/build.mjs)' });
    }
    return;
  }
  const dir = mkdtempSync(path.join(tmpdir(), 'commcost-bigrun-'));
  try {
    const file = path.join(dir, 'run.json');
    const measure = (n: number, reference: boolean): void => {
      const made = writeBigRun(root, file, n);
      for (const html of [false, true]) {
        const id = `report.bigRun${reference ? '.atLimit' : ''}.peakRss${html ? '.html' : ''}`;
        const what = `commcost report${html ? ' --html' : ''} of a full-catalogue run at ${n.toLocaleString('en-US')} iterations${reference ? ' (the largest the limit admits)' : ''}, peak RSS`;
        const span = `spawn of \`node dist/cli.js report run.json${html ? ' --html run.html' : ''}\` → its exit (read, validated, verdict, terminal summary${html ? ', HTML report written' : ''}); the run generated from docs/results h200x2 (${made.experiments} experiments, ${made.samples.toLocaleString('en-US')} samples, ${(made.bytes / 2 ** 20).toFixed(0)} MiB)`;
        const r = reportPeak(root, file, html);
        log(`   ${n} iterations${html ? ', --html' : ''}: ${(made.bytes / 2 ** 20).toFixed(0)} MiB, ${made.samples} samples: exit ${r.status}, peak RSS ${r.mb.toFixed(0)} MB${r.status === 0 ? '' : ` (${r.stderr.split('\n')[0]})`}`);
        if (r.status === 0) {
          table.add(estimateRow({ id, what, unit: 'MB', target: '< 500', span, anchor: 'none: one process (a peak RSS varies little between runs)' }, 'peak RSS', exactEstimate(r.mb), { op: '<', limit: 500 }, undefined, 0));
        } else {
          table.add({ id, what, unit: 'MB', target: '< 500', verdict: 'not met', span, note: `refused: ${r.stderr.split('\n')[0]}` });
        }
      }
    };
    measure(iterations, false);
    // The largest run under both limits (samples and bytes grow in step with the iterations; the
    // stats and the other figures are the 0.1% left to spare).
    const small = writeBigRun(root, file, 1000);
    const atLimit = Math.floor(Math.min((MAX_RUN_NUMBERS * 0.999) / (small.samples / 1000), (MAX_RUN_FILE_BYTES * 0.999) / (small.bytes / 1000)) / 1000) * 1000;
    if (atLimit > iterations) measure(atLimit, true);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
