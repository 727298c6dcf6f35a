/**
 * The targets table of `npm run bench`: every benchmark adds rows (a measured distribution, the
 * target it is held to and the verdict), printed as one table at the end and written as JSON
 * (test-output/bench.json by default, `COMMCOST_BENCH_JSON` to change) for comparison between
 * commits. Figures are distributions over runs or generations, never asserted.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { quantileSorted } from '../../remote-agent/stats';
import { judge, judgeQuantiles, type Bound, type Estimate, type QuantileTarget, type Verdict } from './verdict';

/** p50/p90/p99/max of a sample set, in its unit; `n` = how many values. */
export interface Distribution {
  p50: number;
  p90: number;
  p99: number;
  max: number;
  n: number;
}

/** One row of the table. */
export interface TargetRow {
  /** Stable id to compare commits, e.g. "barrier.shm.8". */
  id: string;
  /** What was measured, in words. */
  what: string;
  unit: string;
  dist?: Distribution;
  /** The target in words, e.g. "p50 < 10, p99 < 50": fixed per row, never swapped for another under other conditions. */
  target: string;
  /**
   * met / not met / cannot tell (the noise is larger than the effect): from verdict.ts, on the
   * figure's interval; reference: a figure with no target (an anchor); skipped: not measured here.
   */
  verdict: Verdict | 'reference' | 'skipped';
  /** What is timed, from where to where, e.g. "spawn of `node dist/cli.js --version` → its exit". */
  span?: string;
  /** What the figure is read against: the floor or the neighbour measured in the same rounds. */
  anchor?: string;
  /** The judged figures with their intervals (verdict.ts texts), e.g. "p50 7.20 [6.90, 7.50] < 10.00: met". */
  basis?: string;
  /** Why a target is not met (the measured cause), what a reference row anchors, or why a row was skipped. */
  note?: string;
}

/** The distribution of `values` (any order). @throws RangeError on an empty set */
export function distribution(values: number[]): Distribution {
  if (values.length === 0) throw new RangeError('distribution of no values');
  const s = [...values].sort((a, b) => a - b);
  return { p50: quantileSorted(s, 0.5), p90: quantileSorted(s, 0.9), p99: quantileSorted(s, 0.99), max: s[s.length - 1]!, n: s.length };
}

/** "p50 1.2  p90 …  (n=…)" with `digits` decimals. */
export function distText(d: Distribution, digits = 1): string {
  return `p50 ${d.p50.toFixed(digits)}  p90 ${d.p90.toFixed(digits)}  p99 ${d.p99.toFixed(digits)}  max ${d.max.toFixed(digits)}  (n=${d.n})`;
}

/** A row's fields other than its figures and verdict. */
export type RowHead = Omit<TargetRow, 'dist' | 'verdict' | 'basis'>;

/**
 * A row judged on quantiles of its samples (verdict.ts): its distribution, its verdict (met, not
 * met, cannot tell) and the judged figures with their intervals.
 */
export function judgedRow(head: RowHead, values: number[], targets: QuantileTarget[], digits = 1): TargetRow {
  const j = judgeQuantiles(values, targets, digits);
  return { ...head, dist: distribution(values), verdict: j.verdict, basis: j.text };
}

/** A row judged on one estimate (a difference or a ratio of medians, verdict.ts) against its bound; `dist` the samples shown. */
export function estimateRow(head: RowHead, label: string, e: Estimate, bound: Bound, dist?: Distribution, digits = 2): TargetRow {
  const j = judge(label, e, bound, digits);
  return { ...head, ...(dist ? { dist } : {}), verdict: j.verdict, basis: j.text };
}

/** The machine's load average over the last minute per CPU (os.loadavg()[0] / CPUs): ≥ 1 means other work waited for a CPU. */
export function loadPerCpu(): number {
  return os.loadavg()[0]! / Math.max(1, os.cpus().length);
}

/**
 * A wall-time row judged "not met" against an upper limit becomes "cannot tell" when the machine
 * was loaded while it was measured (`loads`: {@link loadPerCpu} at the start and the end of its
 * samples; one ≥ 1): other processes' work only adds time, so such a figure says nothing about the
 * quiet machine the target is for; a "met" stays met (a quiet machine is not slower). The loads go
 * into the note either way. Rows of other verdicts, or not of time, are returned as they are.
 */
export function loadAware(row: TargetRow, loads: readonly number[]): TargetRow {
  if (row.unit !== 'ms' && row.unit !== 's' && row.unit !== 'µs') return row;
  const worst = Math.max(...loads);
  const said = `load per CPU while measured ${loads.map((l) => l.toFixed(2)).join(' → ')}`;
  if (row.verdict !== 'not met' || !(worst >= 1)) return { ...row, note: row.note ? `${row.note}; ${said}` : said };
  return { ...row, verdict: 'cannot tell', note: `${row.note ? `${row.note}; ` : ''}${said}: the machine was shared (≥ 1), its other work only adds time, so "not met" here says nothing about the quiet machine the target is for` };
}

/** Collects rows; `print()` writes the table, `save()` the JSON. */
export class TargetTable {
  readonly rows: TargetRow[] = [];

  add(row: TargetRow): TargetRow {
    this.rows.push(row);
    return row;
  }

  /** The table as text lines (one row per target, then its note indented). */
  lines(): string[] {
    const out: string[] = [];
    const width = Math.max(...this.rows.map((r) => r.what.length), 10);
    for (const r of this.rows) {
      const dist = r.dist ? `${distText(r.dist, r.unit === 'µs' ? 1 : 2)} ${r.unit}` : '—';
      out.push(`${r.what.padEnd(width)}  ${dist.padEnd(62)}  target ${r.target.padEnd(22)}  ${r.verdict}`);
      for (const [k, v] of [['times', r.span], ['anchor', r.anchor], ['judged', r.basis], ['', r.note]] as const)
        if (v) out.push(`${''.padEnd(width)}    ${k ? `${k}: ` : ''}${v}`);
    }
    return out;
  }

  /**
   * Writes the rows with the commit, host and date as JSON to `file`.
   * @returns the file written
   */
  save(file = process.env.COMMCOST_BENCH_JSON ?? path.join(process.cwd(), 'test-output', 'bench.json')): string {
    let commit: string | undefined;
    try {
      commit = execFileSync('git', ['rev-parse', 'HEAD'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    } catch {
      commit = undefined; // a bundled copy on a GPU host has no repository
    }
    mkdirSync(path.dirname(file), { recursive: true });
    const cpus = os.cpus();
    writeFileSync(
      file,
      JSON.stringify({ commit, host: os.hostname(), cpus: cpus.length, cpuModel: cpus[0]?.model, node: process.version, date: new Date().toISOString(), targets: this.rows }, null, 2) + '\n',
    );
    return file;
  }
}
