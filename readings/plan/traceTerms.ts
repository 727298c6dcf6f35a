/**
 * A trace as the planner's input (`commcost plan --trace FILE`): the creation and first-collective
 * figures `commcost trace` observed at the user's own call sites become terms labelled "observed in
 * trace …", preferred over the run's terms of the same API and communicator size (terms.ts
 * `TermKey`). Only what the trace has replaces a run term; a phase the trace did not observe keeps
 * the run's figure, or stays missing. Pure.
 *
 * A trace has no step time (protocol/trace.ts records lifecycle calls, not the job's steps): the
 * step must be given (`--step`).
 */
import { isSimulatedTrace, type TraceFile, type TraceSite } from '../../protocol/trace';
import type { StrategyTerms } from './strategies';
import type { Term, TermKey } from './terms';

/** The traced APIs the planner's terms cover, by the lifecycle figure they are (NCCL and c10d names). */
const TRACE_API: Readonly<Record<string, TermKey['api']>> = {
  ncclCommInitRank: 'init',
  ncclCommInitRankConfig: 'init',
  ncclCommInitRankScalable: 'init',
  ncclCommInitAll: 'init',
  new_group: 'init',
  init_process_group: 'init',
  ncclCommSplit: 'split',
  split_group: 'split',
  ncclCommShrink: 'shrink',
  shrink_group: 'shrink',
  ncclCommGrow: 'grow',
};

/** Strategies a trace does not speak for: it does not say whether a split shared its parent's resources. */
const SHARE_STRATEGIES = new Set(['split-share', 'pool-share']);

/** One traced figure the planner may use. */
export interface Observation {
  key: TermKey;
  ms: number;
  /** "new_group at torch_tp_reshape.py:35". */
  site: string;
  n: number;
}

/** What the trace gave the plan: the figures used, the sites left out and why, and its facts. */
export interface PlanTrace {
  file: string;
  host: string;
  /** "2.30.7" from the trace's NCCL version code (23007), when recorded. */
  ncclVersion?: string;
  simulated: boolean;
  observations: Observation[];
  /** Sites not used, each with why: "init_process_group at x.py:31: cold (…)". */
  unused: string[];
  /** Run terms a trace figure replaced: the term, the site it came from and the strategies it is in. */
  replaced: { what: string; site: string; phase: 'creation' | 'first collective'; strategies: string[] }[];
}

/** NCCL's version code (23007) as text ("2.30.7"); codes below 10000 read as the old 2-digit form (2708 → 2.7.8). */
export function ncclVersionText(code: number): string {
  if (code >= 10000) return `${Math.floor(code / 10000)}.${Math.floor((code % 10000) / 100)}.${code % 100}`;
  return `${Math.floor(code / 1000)}.${Math.floor((code % 1000) / 100)}.${code % 100}`;
}

const base = (file: string) => file.split(/[\\/]/).pop() ?? file;

/** "new_group at torch_tp_reshape.py:35" (or the native frame, or "unattributed"). */
export function siteName(s: TraceSite): string {
  if (s.file && s.line !== null) return `${s.api} at ${base(s.file)}:${s.line}`;
  return s.source === 'unattributed' ? `${s.api} (unattributed)` : `${s.api}${s.func ? ` in ${s.func}` : ''}`;
}

/** The size of the communicators a site made: the largest nranks its occurrences report; undefined when none. */
function siteSize(s: TraceSite): number | undefined {
  const sizes = s.occurrences.flatMap((o) => o.commRanks).filter((x) => Number.isSafeInteger(x) && x >= 1);
  return sizes.length > 0 ? Math.max(...sizes) : undefined;
}

/**
 * The figures of `trace` the planner may use: per site, its creation and first collective medians
 * (each occurrence MAX over its ranks), keyed by API and communicator size. A cold site (the
 * process's first communicator: its one-time start is in it) and a site of an API the planner has
 * no term for are left out, with why. Where several sites observe one key, the one with most
 * occurrences is used (then the first).
 */
export function traceObservations(file: string, trace: TraceFile): PlanTrace {
  const unused: string[] = [];
  const best = new Map<string, Observation>();
  for (const s of trace.sites) {
    const name = siteName(s);
    const api = TRACE_API[s.api];
    if (!api) {
      unused.push(`${name}: the planner has no term for ${s.api}`);
      continue;
    }
    if (s.cold) {
      unused.push(`${name}: cold (its process's first communicator: the process's one-time start is in it; the planner's terms are warm)`);
      continue;
    }
    const size = siteSize(s);
    if (size === undefined) {
      unused.push(`${name}: the trace has no communicator size for it`);
      continue;
    }
    const phases: [TermKey['phase'], TraceSite['creation']][] = [['creation', s.creation], ['first', s.firstCollective]];
    for (const [phase, stats] of phases) {
      if (!stats || !Number.isFinite(stats.medianMs)) {
        unused.push(`${name}: no ${phase === 'first' ? 'first collective' : 'creation'} observed`);
        continue;
      }
      const key: TermKey = { api, size, phase };
      const id = `${api}/${size}/${phase}`;
      const prev = best.get(id);
      if (!prev || stats.n > prev.n) best.set(id, { key, ms: stats.medianMs, site: name, n: stats.n });
    }
  }
  return {
    file,
    host: trace.host,
    ...(trace.ncclVersion !== null ? { ncclVersion: ncclVersionText(trace.ncclVersion) } : {}),
    simulated: isSimulatedTrace(trace),
    observations: [...best.values()],
    unused,
    replaced: [],
  };
}

const sameKey = (a: TermKey, b: TermKey) => a.api === b.api && a.size === b.size && a.phase === b.phase;

/**
 * Replaces each keyed term of `strategies` by the trace's figure of the same key (not in the
 * splitShare strategies), keeping its `what`, `times` and key; records what it replaced in
 * `trace.replaced`. A term the trace did not observe is left as it was (the run's, or missing); a
 * total with `parts` (the init experiment's call + first collective) is replaced by its parts when
 * the trace observed one of them.
 * @returns the strategies with observed terms (new objects; `strategies` is not changed)
 */
export function applyTrace(strategies: readonly StrategyTerms[], trace: PlanTrace): StrategyTerms[] {
  const observe = (s: StrategyTerms) => (t: Term): Term => {
    const o = t.key && !SHARE_STRATEGIES.has(s.id) ? trace.observations.find((x) => sameKey(x.key, t.key!)) : undefined;
    if (!o) return t;
    const phase = o.key.phase === 'first' ? 'first collective' : 'creation';
    const r = trace.replaced.find((x) => x.what === t.what && x.site === o.site && x.phase === phase);
    if (!r) trace.replaced.push({ what: t.what, site: o.site, phase, strategies: [s.name] });
    else if (!r.strategies.includes(s.name)) r.strategies.push(s.name);
    return {
      what: t.what,
      unit: t.unit,
      value: o.ms,
      ...(t.times !== undefined ? { times: t.times } : {}),
      ...(t.target !== undefined ? { target: t.target } : {}),
      key: t.key!,
      observed: { file: trace.file, site: o.site, phase, n: o.n },
    };
  };
  return strategies.map((s) => {
    const one = observe(s);
    // A total whose part the trace observed is replaced by its parts, each observed or the run's.
    const seen = (t: Term): boolean => t.key !== undefined && !SHARE_STRATEGIES.has(s.id) && trace.observations.some((x) => sameKey(x.key, t.key!));
    const f = (terms: readonly Term[]): Term[] =>
      terms.flatMap((t) => (t.parts && t.parts.some(seen) ? t.parts.map((x) => one(t.target !== undefined ? { ...x, target: t.target } : x)) : [one(t)]));
    return { ...s, critical: f(s.critical), prepaid: f(s.prepaid), deferred: f(s.deferred), memory: f(s.memory) };
  });
}
