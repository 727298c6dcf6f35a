/**
 * The targets table of `npm run bench`: every benchmark adds rows (a measured distribution, the
 * target it is held to and the verdict), printed as one table at the end and written as JSON
 * (test-output/bench.json by default, `COMMCOST_BENCH_JSON` to change) for comparison between
 * commits. Figures are distributions over runs or generations, never asserted.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
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

/** CPU time in clock ticks: the machine's busy time (/proc/stat) and this process's own with its reaped children (/proc/self/stat). */
export interface CpuTicks {
  busy: number;
  own: number;
}

/**
 * Busy ticks of /proc/stat's `cpu` line (all but idle and iowait) and own ticks of a /proc/<pid>/stat
 * line (utime + stime + cutime + cstime: this process and the children it has waited for).
 * @returns undefined when either text is not of that form
 */
export function parseCpuTicks(procStat: string, selfStat: string): CpuTicks | undefined {
  const cpu = /^cpu\s+([\d\s]+)$/m.exec(procStat)?.[1]?.trim().split(/\s+/).map(Number);
  // The command (field 2) may hold spaces and parentheses: the fields after its last ')'.
  const after = selfStat.slice(selfStat.lastIndexOf(')') + 2).trim().split(/\s+/).map(Number);
  if (!cpu || cpu.length < 4 || after.length < 15 || [...cpu, ...after.slice(11, 15)].some((n) => !Number.isFinite(n))) return undefined;
  const total = cpu.reduce((a, b) => a + b, 0);
  // Fields 14–17 of stat (utime, stime, cutime, cstime) are 11–14 after the state field (3).
  return { busy: total - cpu[3]! - (cpu[4] ?? 0), own: after[11]! + after[12]! + after[13]! + after[14]! };
}

/** Other processes' load per CPU between two readings `wallS` seconds apart on `cpus` CPUs (ticks of `hz` a second), never below 0. */
export function otherLoadPerCpu(before: CpuTicks, after: CpuTicks, wallS: number, cpus: number, hz = 100): number {
  const others = after.busy - before.busy - (after.own - before.own);
  return Math.max(0, others / hz / Math.max(1e-9, wallS) / Math.max(1, cpus));
}

/**
 * A probe of the load other processes put on the machine from now to {@link perCpu}: the machine's
 * busy CPU time minus this bench's own and its finished children's, per CPU and second. Unlike the
 * load average, it leaves out the bench's own work, and it is not the tail of the minute before
 * (a 1-minute load average still reads the heavy section before a row). Off Linux, the load
 * average per CPU at the end.
 */
export function otherLoadProbe(): { perCpu(): number } {
  const read = (): CpuTicks | undefined => {
    try {
      return parseCpuTicks(readFileSync('/proc/stat', 'utf8'), readFileSync('/proc/self/stat', 'utf8'));
    } catch {
      return undefined;
    }
  };
  const t0 = performance.now();
  const before = read();
  return {
    perCpu: () => {
      const after = read();
      return before && after ? otherLoadPerCpu(before, after, (performance.now() - t0) / 1000, os.cpus().length) : loadPerCpu();
    },
  };
}

/**
 * A wall-time row judged "not met" against an upper limit becomes "cannot tell" when the machine
 * was loaded while it was measured (`loads`: {@link loadPerCpu} at the start and the end of its
 * samples, or {@link otherLoadProbe} over them; one ≥ 1): other processes' work only adds time, so such a figure says nothing about the
 * quiet machine the target is for; a "met" stays met (a quiet machine is not slower). The loads go
 * into the note either way. Rows of other verdicts, or not of time, are returned as they are.
 */
export function loadAware(row: TargetRow, loads: readonly number[]): TargetRow {
  if (row.unit !== 'ms' && row.unit !== 's' && row.unit !== 'µs') return row;
  const worst = Math.max(...loads);
  const said = `other processes' load per CPU while measured ${loads.map((l) => l.toFixed(2)).join(' → ')} (the bench's own work left out)`;
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
