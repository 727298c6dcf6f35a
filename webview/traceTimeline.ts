/**
 * The timeline of a trace (pure; no DOM): one row per traced process (rank), one bar per phase of
 * each communicator it made — creation, first collective, teardown — on one time axis (ms since
 * the first bar), the cold (first) communicator of each process marked. NCCL's own work that ran
 * outside the call that paid for it is a lighter "background" bar: the plugin's connect span
 * (the lazy connect) where it is not inside the first collective's window, and the plugin's init
 * where it fell outside the creation call (a non-blocking creation). Drawn by traceView.ts.
 *
 * Times come from the trace's per-rank spans (`perRank`, trace file v2: CLOCK_MONOTONIC of one
 * host); a version 1 trace has none and gives an empty timeline with a note.
 */
import type { TraceFile } from '../protocol/trace';

/** What a bar shows. */
export type TimelinePhase = 'creation' | 'firstCollective' | 'teardown' | 'connect' | 'init';

/** One bar, ms since the timeline's origin. */
export interface TimelineBar {
  phase: TimelinePhase;
  start: number;
  end: number;
  /** Index of the site in `trace.sites` (the table's row). */
  site: number;
  /** "init_process_group at job.py:10, occurrence 1" (untrusted text: inserted as text only). */
  label: string;
  cold: boolean;
  /** NCCL's work outside the call that paid for it (drawn lighter). */
  background: boolean;
}

/** One lane of a row: a call site's communicators in that process. */
export interface TimelineLane {
  /** "new_group :37" (untrusted text). */
  label: string;
  site: number;
  bars: TimelineBar[];
}

/** One row: a process, one lane per call site it took part in (in order of its first bar). */
export interface TimelineRow {
  /** "rank 0 (pid 123)" or "pid 123 on host". */
  label: string;
  lanes: TimelineLane[];
}

/** The whole timeline. */
export interface TimelineModel {
  rows: TimelineRow[];
  /** ms from origin to the last bar's end (≥ 1). */
  spanMs: number;
  /** Axis ticks, ms. */
  ticks: number[];
  /** Why the timeline is empty or partial, when it is. */
  note: string | null;
}

/** Phase names as the legend and tooltips say them. */
export const PHASE_WORDS: Record<TimelinePhase, string> = {
  creation: 'creation',
  firstCollective: 'first collective',
  teardown: 'teardown',
  connect: 'NCCL connect (lazy, first group)',
  init: 'NCCL init reached (background)',
};

/** Round tick steps (1, 2, 5 × 10^k ms) giving at most ~8 ticks over `span`. */
export function axisTicks(span: number): number[] {
  if (!(span > 0)) return [0];
  const raw = span / 8;
  const p = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 5, 10].map((m) => m * p).find((s) => s >= raw) ?? 10 * p;
  const ticks: number[] = [];
  for (let t = 0; t <= span + step * 1e-9; t += step) ticks.push(Number(t.toPrecision(12)));
  return ticks;
}

const inside = (a: [number, number], b: [number, number]) => a[0] >= b[0] && a[1] <= b[1];

/**
 * The timeline of `trace`: rows in order of rank (then pid), bars in time order.
 * @returns an empty model with a note when the trace holds no per-rank spans (version 1 files)
 */
export function timelineModel(trace: TraceFile): TimelineModel {
  const rows = new Map<string, { rank: number | null; pid: number; host: string; bars: Array<Omit<TimelineBar, 'start' | 'end'> & { t0: number; t1: number }> }>();
  trace.sites.forEach((site, si) => {
    const where = site.file ? `${site.file.split('/').pop()}${site.line !== null ? `:${site.line}` : ''}` : '(unattributed)';
    for (const occ of site.occurrences) {
      for (const r of occ.perRank ?? []) {
        const key = `${r.host}|${r.pid}`;
        const row = rows.get(key) ?? { rank: r.rank, pid: r.pid, host: r.host, bars: [] };
        rows.set(key, row);
        const label = `${site.api} at ${where}${site.count > 1 ? `, occurrence ${occ.index + 1}` : ''}`;
        const add = (phase: TimelinePhase, span: [number, number] | null, background = false) => {
          if (span) row.bars.push({ phase, t0: span[0], t1: Math.max(span[0], span[1]), site: si, label, cold: r.cold, background });
        };
        const creationIsCall = r.creation !== null && r.creation[1] > r.creation[0];
        add('creation', r.creation);
        // NCCL reached init outside the creating call and outside the first collective (where a lazy group's init runs): a non-blocking creation.
        const within = (t: number, w: [number, number] | null) => w !== null && t >= w[0] && t <= w[1];
        if (creationIsCall && !within(r.init, r.creation) && !within(r.init, r.firstCollective)) add('init', [r.init, r.init], true);
        add('firstCollective', r.firstCollective);
        if (r.connect) add('connect', r.connect, !(r.firstCollective && inside(r.connect, r.firstCollective)));
        add('teardown', r.teardown);
      }
    }
  });
  const all = [...rows.values()].flatMap((r) => r.bars);
  if (all.length === 0)
    return { rows: [], spanMs: 1, ticks: [0], note: trace.sites.length ? 'this trace file has no per-rank spans (written by an older commcost): no timeline' : 'no communicator was traced' };
  const origin = Math.min(...all.map((b) => b.t0));
  const spanMs = Math.max(1, ...all.map((b) => b.t1 - origin));
  const ordered = [...rows.values()].sort((a, b) => (a.rank ?? 1e9) - (b.rank ?? 1e9) || a.pid - b.pid);
  const hosts = new Set(ordered.map((r) => r.host));
  return {
    rows: ordered.map((r) => {
      const bars = r.bars.sort((a, b) => a.t0 - b.t0).map(({ t0, t1, ...b }) => ({ ...b, start: t0 - origin, end: t1 - origin }));
      const lanes: TimelineLane[] = [];
      for (const b of bars) {
        let lane = lanes.find((l) => l.site === b.site);
        if (!lane) {
          const s = trace.sites[b.site]!;
          lane = { label: `${s.api}${s.line !== null ? ` :${s.line}` : ''}`, site: b.site, bars: [] };
          lanes.push(lane);
        }
        lane.bars.push(b);
      }
      return { label: `${r.rank !== null ? `rank ${r.rank} (pid ${r.pid})` : `pid ${r.pid}`}${hosts.size > 1 ? ` on ${r.host}` : ''}`, lanes };
    }),
    spanMs,
    ticks: axisTicks(spanMs),
    note: hosts.size > 1 ? 'processes on several hosts: each host has its own monotonic clock, so rows of different hosts are not aligned' : null,
  };
}
