/**
 * The many-comms experiment's curve (issue #29): per variant, memory per GPU after N communicators
 * (the free-memory delta, median over iterations of the per-GPU MAX; NCCL's own count where the
 * run has ncclCommMemStats) and the N-th creation to its first collective (median, ms), read from
 * the run's memory points `after N communicators` and steps `total/nN`. Shared by the CLI summary,
 * the results page and the HTML report (tables), and the pool planner (readings/plan/estimate.ts:
 * memory of N communicators at a GPU, measured, or interpolated between two measured counts).
 * Pure: from the run's figures only.
 */
import type { RunFile } from '../protocol/runFile';

/** One count N of one variant. */
export interface CurvePoint {
  n: number;
  /** Free-memory delta per GPU after N communicators, bytes (undefined when not recorded). */
  bytes?: number;
  /** ncclCommMemStats total of the N communicators, bytes, where the run has it. */
  memStatsBytes?: number;
  /** The N-th creation to its first collective, median ms. */
  creationMs?: number;
}

/** One variant's curve, in ascending N. */
export interface CurveVariant {
  variant: string;
  /** Variables it ran with beyond the stamp's (e.g. NCCL_BUFFSIZE). */
  env?: Record<string, string>;
  points: CurvePoint[];
  /**
   * Memory each added communicator took, bytes: (bytes at the largest N − bytes at the smallest) /
   * (the difference in N); undefined with fewer than two counts measured.
   */
  perAddedBytes?: number;
}

/** The curve of one run. */
export interface ManyCommsCurve {
  /** Every count N any variant recorded, ascending. */
  counts: number[];
  variants: CurveVariant[];
  /** The run's rank count: every communicator spans all of them. */
  ranks: number;
}

const POINT = /^after (\d+) communicators?$/;

/** The curve of `run`'s many-comms experiment, or undefined when the run has none with figures. */
export function manyCommsCurve(run: Pick<RunFile, 'experiments' | 'ranks'>): ManyCommsCurve | undefined {
  const e = run.experiments.find((x) => x.experiment === 'many-comms');
  if (!e || e.variants.length === 0) return undefined;
  const all = new Set<number>();
  const variants = e.variants.map((v): CurveVariant => {
    const byN = new Map<number, CurvePoint>();
    const at = (n: number): CurvePoint => {
      let p = byN.get(n);
      if (!p) byN.set(n, (p = { n }));
      all.add(n);
      return p;
    };
    for (const [point, bytes] of Object.entries(v.memoryBytes ?? {})) {
      const m = POINT.exec(point);
      if (m && Number.isFinite(bytes)) at(Number(m[1])).bytes = bytes;
    }
    for (const [point, stats] of Object.entries(v.memStats ?? {})) {
      const m = POINT.exec(point);
      if (m && Number.isFinite(stats.totalBytes)) at(Number(m[1])).memStatsBytes = stats.totalBytes;
    }
    for (const s of v.steps) {
      const m = /^total\/n(\d+)$/.exec(s.step);
      if (m && Number.isFinite(s.stats.median)) at(Number(m[1])).creationMs = s.stats.median;
    }
    const points = [...byN.values()].sort((a, b) => a.n - b.n);
    const withBytes = points.filter((p) => p.bytes !== undefined);
    const first = withBytes[0];
    const last = withBytes[withBytes.length - 1];
    const perAddedBytes = first && last && last.n > first.n ? (last.bytes! - first.bytes!) / (last.n - first.n) : undefined;
    return { variant: v.variant, ...(v.env && Object.keys(v.env).length > 0 ? { env: v.env } : {}), points, ...(perAddedBytes !== undefined ? { perAddedBytes } : {}) };
  });
  if (all.size === 0) return undefined;
  return { counts: [...all].sort((a, b) => a - b), variants, ranks: run.ranks };
}

/** Memory of `n` communicators of one variant, per GPU: measured at n, or interpolated linearly between the two measured counts around it. */
export interface CurveMemory {
  bytes: number;
  how: 'measured' | 'interpolated';
  /** The counts it rests on ([n] when measured). */
  from: number[];
}

/**
 * Memory per GPU after `n` communicators of `variant`, from the curve: the measured point, or a
 * straight line between the measured counts just below and just above n; undefined outside the
 * measured counts (never extrapolated) or when the variant is missing. n = 0 is 0 bytes.
 */
export function curveMemoryAt(curve: ManyCommsCurve, variant: string, n: number): CurveMemory | undefined {
  if (n === 0) return { bytes: 0, how: 'measured', from: [] };
  const points = curve.variants.find((v) => v.variant === variant)?.points.filter((p) => p.bytes !== undefined) ?? [];
  const exact = points.find((p) => p.n === n);
  if (exact) return { bytes: exact.bytes!, how: 'measured', from: [n] };
  const below = [...points].reverse().find((p) => p.n < n);
  const above = points.find((p) => p.n > n);
  if (!below || !above) return undefined;
  const bytes = below.bytes! + ((above.bytes! - below.bytes!) * (n - below.n)) / (above.n - below.n);
  return { bytes, how: 'interpolated', from: [below.n, above.n] };
}

/** bytes → MiB with one decimal ("484.0"), "0" for none, "–" when not recorded. */
export function mibCell(bytes: number | undefined): string {
  if (bytes === undefined || !Number.isFinite(bytes)) return '–';
  const m = bytes / (1 << 20);
  if (m === 0) return '0';
  return Math.abs(m) < 0.05 ? String(Number(m.toPrecision(1))) : m.toFixed(1);
}

/** ms as a table cell ("176.3", "17.41", "0.280"), "–" when not recorded. */
function msCell(ms: number | undefined): string {
  if (ms === undefined || !Number.isFinite(ms)) return '–';
  return ms >= 100 ? ms.toFixed(1) : ms >= 1 ? ms.toFixed(2) : ms.toFixed(3);
}

/** One table of the curve: a title, a header row and one row per variant (first cell the variant). */
export interface CurveTable {
  title: string;
  rows: string[][];
  /** Sentences under the table, each chosen by the run's figures (none when nothing to say). */
  notes?: string[];
}

/** How far NCCL's count and the free-memory delta may differ before a note says so (fraction, and MiB). */
const MEMSTATS_TOLERANCE = 0.1;
const MEMSTATS_FLOOR_BYTES = 16 * (1 << 20);

/**
 * How NCCL's count (ncclCommMemStats, bytes, summed over communicators) stands against the free
 * memory the same communicators took (bytes, the free-memory delta): 'over' or 'under' when they
 * differ by more than 10% of the delta and 16 MiB, else undefined (the two agree). Over: the
 * counts overlap, so their sum is not memory used; under: NCCL's count left part uncounted.
 * Either way the free-memory delta is what the GPU lost. Used by {@link memStatsNotes} and the
 * verdict's pool line (readings/verdict/pool.ts).
 */
export function memStatsGap(counted: number, delta: number): 'over' | 'under' | undefined {
  const gap = Math.abs(counted - delta);
  if (gap <= MEMSTATS_TOLERANCE * Math.abs(delta) || gap <= MEMSTATS_FLOOR_BYTES) return undefined;
  return counted > delta ? 'over' : 'under';
}

/** "17.5×", "1.2×" */
function times(x: number): string {
  return `${x >= 10 ? x.toFixed(0) : x.toFixed(1)}×`;
}

/**
 * Where NCCL's count (ncclCommMemStats summed over the N communicators) and the free memory the
 * same N communicators took differ by more than 10% (and 16 MiB), one sentence per variant, at the
 * largest N where both were recorded: above the delta, the counts overlap and the sum is not the
 * memory used; below it, this run's MemStats left part of the memory uncounted. Either way the
 * free-memory delta is what the GPU lost. The variant's own settings are named (its name and the
 * variables it ran with), never a cause the run did not show.
 */
export function memStatsNotes(curve: ManyCommsCurve): string[] {
  const notes: string[] = [];
  for (const v of curve.variants) {
    const both = v.points.filter((p) => p.bytes !== undefined && p.memStatsBytes !== undefined && p.bytes > 0);
    const p = both[both.length - 1];
    if (!p) continue;
    const delta = p.bytes!;
    const counted = p.memStatsBytes!;
    const gap = memStatsGap(counted, delta);
    if (gap === undefined) continue;
    const env = Object.entries(v.env ?? {}).map(([k, x]) => `${k}=${x}`).join(', ');
    const setting = env ? ` (ran with ${env})` : '';
    const at = `at N=${p.n}: ${mibCell(counted)} MiB counted, ${mibCell(delta)} MiB taken`;
    if (gap === 'over') {
      const shares = /splitShare=1/.test(v.variant) ? '; these communicators share resources (splitShare=1)' : '';
      notes.push(`${v.variant}${setting}: NCCL's count summed over the communicators is ${times(counted / delta)} the free memory they took (${at})${shares}: the counts overlap, so their sum is not memory used; the free-memory delta is.`);
    } else {
      notes.push(`${v.variant}${setting}: NCCL's count is below the free memory the communicators took (${at}): in this run ncclCommMemStats left ${mibCell(delta - counted)} MiB uncounted; the free-memory delta is what the GPU lost.`);
    }
  }
  return notes;
}

/**
 * The knobs of the many-comms experiment that act on a communicator's peer connections, each with
 * the variant it is set beside (the same shape without it): NCCL_BUFFSIZE and maxP2pPeers on the
 * init shape, splitShare 1 on the split shape.
 */
const PEER_KNOBS: readonly { match: RegExp; baseline: string; knob: string }[] = [
  { match: /^init\/buffsize=/, baseline: 'init', knob: 'NCCL_BUFFSIZE' },
  { match: /^init\/maxP2pPeers=/, baseline: 'init', knob: 'maxP2pPeers' },
  { match: /^split\/splitShare=1$/, baseline: 'split/splitShare=0', knob: 'splitShare 1' },
];

/** Two memory figures read as equal: less than 1 MiB apart (the tables show tenths of a MiB of whole-MiB deltas). */
const EQUAL_BYTES = 1 << 20;

/**
 * At 1 rank, for each peer-connection knob ({@link PEER_KNOBS}) whose memory equals its baseline's
 * at every N both recorded: one sentence saying that a communicator of 1 rank has no peer
 * connections for the knob to change, so the equal figures do not show what it does at several
 * ranks. Chosen by the run: none at 2 ranks or more, none where the figures differ (the knob did
 * change something here), none without a common N.
 */
export function oneRankKnobNotes(curve: ManyCommsCurve): string[] {
  if (curve.ranks !== 1) return [];
  const equalTo = (v: CurveVariant, base: CurveVariant): boolean => {
    const common = v.points.filter((p) => p.bytes !== undefined && base.points.some((q) => q.n === p.n && q.bytes !== undefined));
    return common.length > 0 && common.every((p) => Math.abs(p.bytes! - base.points.find((q) => q.n === p.n)!.bytes!) < EQUAL_BYTES);
  };
  const notes: string[] = [];
  for (const k of PEER_KNOBS) {
    const base = curve.variants.find((v) => v.variant === k.baseline);
    if (!base) continue;
    for (const v of curve.variants.filter((x) => k.match.test(x.variant))) {
      if (!equalTo(v, base)) continue;
      notes.push(
        `${v.variant}: the same memory as ${base.variant} at every N here. At 1 rank a communicator has no peer connections for ${k.knob} to change, so this run does not show what ${k.knob} does at several ranks.`,
      );
    }
  }
  return notes;
}

/**
 * The curve as tables, rows = variants, columns = N: memory per GPU (MiB, free-memory delta) with
 * the memory each added communicator took (at 1 rank, with {@link oneRankKnobNotes} under it); NCCL's own count (ncclCommMemStats, MiB) when any
 * variant has it; the N-th creation to its first collective (ms). Variant names are the run's
 * (escape them where shown).
 */
export function curveTables(curve: ManyCommsCurve): CurveTable[] {
  const head = ['variant', ...curve.counts.map((n) => `N=${n}`)];
  const cell = (v: CurveVariant, n: number, f: (p: CurvePoint) => string): string => {
    const p = v.points.find((x) => x.n === n);
    return p ? f(p) : '–';
  };
  const ranks = `${curve.ranks} rank${curve.ranks === 1 ? '' : 's'} each`;
  const knobNotes = oneRankKnobNotes(curve);
  const tables: CurveTable[] = [
    {
      title: `many-comms: memory per GPU after N communicators (MiB, free-memory delta; communicators of ${ranks})`,
      rows: [[...head, 'per added'], ...curve.variants.map((v) => [v.variant, ...curve.counts.map((n) => cell(v, n, (p) => mibCell(p.bytes))), mibCell(v.perAddedBytes)])],
      ...(knobNotes.length > 0 ? { notes: knobNotes } : {}),
    },
  ];
  if (curve.variants.some((v) => v.points.some((p) => p.memStatsBytes !== undefined))) {
    const notes = memStatsNotes(curve);
    tables.push({
      title: "many-comms: NCCL's count of the N communicators (MiB, ncclCommMemStats summed over them)",
      rows: [head, ...curve.variants.map((v) => [v.variant, ...curve.counts.map((n) => cell(v, n, (p) => mibCell(p.memStatsBytes)))])],
      ...(notes.length > 0 ? { notes } : {}),
    });
  }
  tables.push({
    title: 'many-comms: the N-th creation to its first collective (median ms)',
    rows: [head, ...curve.variants.map((v) => [v.variant, ...curve.counts.map((n) => cell(v, n, (p) => msCell(p.creationMs)))])],
  });
  return tables;
}
