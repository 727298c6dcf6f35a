/**
 * The C interposer's records (native/interposer/, `<host>-<pid>.native.jsonl`; pure, no I/O):
 * one `ncall` line per NCCL lifecycle call the program made directly (ncclCommInitRank, …Config,
 * …All, …Scalable, ncclCommSplit, Shrink, Grow, Finalize, Destroy, Abort, Revoke), with the call's
 * own window (CLOCK_MONOTONIC ns), its thread, its result and the caller's return address; and the
 * ncclGroupEnd that paid grouped creations and the ncclCommGetAsyncError that first saw a
 * non-blocking one done (client/trace/grouped.ts).
 * merge.ts joins them to the plugin's communicators by time window and thread, as the Python
 * hook's calls: the call whose window holds the plugin's `init` created the communicator; the
 * teardown call whose window holds `finalize` tore it down.
 */
import type { NativeFrame } from './nativeFrame';

/** One interposed call. */
export interface NativeCall {
  api: string;
  /** CLOCK_MONOTONIC ns around the forwarded call. */
  t0: number;
  t1: number;
  tid: number | null;
  /** ncclResult_t; -1 when the library had no such function. */
  r: number;
  /** The communicator made or acted on, and the parent of a split/shrink/grow (pointer text). */
  comm: string;
  parent: string;
  site: NativeFrame | null;
  /** Inside ncclGroupStart/End: this thread's n-th outermost group (a creation: the group it is queued in; ncclGroupEnd: the group it ends). */
  group?: number;
  /** The communicator's size and this call's rank in it, when the call names them. */
  nranks?: number;
  rank?: number;
  /** ncclCommGetAsyncError: the state it reported (the first poll that saw a non-blocking creation done). */
  async?: number;
}

/** The calls that create a communicator. */
export const NATIVE_CREATE = new Set(['ncclCommInitRank', 'ncclCommInitRankConfig', 'ncclCommInitAll', 'ncclCommInitRankScalable', 'ncclCommSplit', 'ncclCommShrink', 'ncclCommGrow']);
/** The calls that tear one down (NCCL reaches the profiler's finalize inside destroy or abort). */
export const NATIVE_TEARDOWN = new Set(['ncclCommDestroy', 'ncclCommAbort', 'ncclCommFinalize']);

/**
 * One `ncall` record, or null when a field is missing or of the wrong type.
 * @param frame reads the `site` member (merge.ts's reader of native frames)
 */
export function nativeCallOf(r: Record<string, unknown>, frame: (v: unknown) => NativeFrame | null): NativeCall | null {
  const num = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) ? v : null);
  const t0 = num(r.t0), t1 = num(r.t1), rc = num(r.r);
  if (typeof r.api !== 'string' || t0 === null || t1 === null || rc === null || t1 < t0) return null;
  const call: NativeCall = { api: r.api, t0, t1, tid: num(r.tid), r: rc, comm: typeof r.comm === 'string' ? r.comm : '', parent: typeof r.parent === 'string' ? r.parent : '', site: frame(r.site) };
  for (const k of ['group', 'nranks', 'rank', 'async'] as const) {
    const v = num(r[k]);
    if (v !== null) call[k] = v;
  }
  return call;
}

/** ncclInProgress: a non-blocking creation returned before the communicator was made. */
export const NCCL_IN_PROGRESS = 7;

/**
 * The interposed call of `kind` whose window holds `t` (thread `tid` preferred when given;
 * the innermost when several fit). For a creation none holds, the latest non-blocking creation
 * (returned ncclInProgress) that started before `t` and is not in `taken` (NCCL finishes it on its
 * own thread, after the call returned). Null when none fits.
 * @param taken calls already joined to another communicator (a non-blocking call makes one)
 */
export function nativeCallAt<C extends Pick<NativeCall, 'api' | 't0' | 't1' | 'tid' | 'r'>>(calls: C[], t: number, tid: number | null, kind: 'create' | 'teardown', taken: ReadonlySet<C> = new Set()): C | null {
  const set = kind === 'create' ? NATIVE_CREATE : NATIVE_TEARDOWN;
  let fits = calls.filter((c) => set.has(c.api) && c.t0 <= t && t <= c.t1);
  if (tid !== null && fits.some((c) => c.tid === tid)) fits = fits.filter((c) => c.tid === tid);
  fits.sort((a, b) => a.t1 - a.t0 - (b.t1 - b.t0));
  if (fits[0] || kind !== 'create') return fits[0] ?? null;
  const pending = calls.filter((c) => set.has(c.api) && c.r === NCCL_IN_PROGRESS && c.t0 <= t && !taken.has(c)).sort((a, b) => b.t0 - a.t0);
  return pending[0] ?? null;
}

/** A `ncallStart` line: the interposer was about to forward `api` (written before the call). */
export interface NativeStart { api: string; t: number; tid: number | null; site: NativeFrame | null }

/** One `ncallStart` record, or null when a field is missing. */
export function nativeStartOf(r: Record<string, unknown>, frame: (v: unknown) => NativeFrame | null): NativeStart | null {
  const t = typeof r.t0 === 'number' && Number.isFinite(r.t0) ? r.t0 : null;
  if (typeof r.api !== 'string' || t === null) return null;
  return { api: r.api, t, tid: typeof r.tid === 'number' ? r.tid : null, site: frame(r.site) };
}

/**
 * The calls that started and never returned: per thread and function, the starts beyond the
 * number of finished calls (the latest ones) — where the process hung or was killed.
 */
export function unreturned(starts: NativeStart[], calls: NativeCall[]): NativeStart[] {
  const out: NativeStart[] = [];
  const key = (api: string, tid: number | null) => `${api}|${tid}`;
  const ended = new Map<string, number>();
  for (const c of calls) ended.set(key(c.api, c.tid), (ended.get(key(c.api, c.tid)) ?? 0) + 1);
  const byKey = new Map<string, NativeStart[]>();
  for (const s of starts) byKey.set(key(s.api, s.tid), [...(byKey.get(key(s.api, s.tid)) ?? []), s]);
  for (const [k, list] of byKey) {
    const open = list.length - (ended.get(k) ?? 0);
    if (open > 0) out.push(...list.sort((a, b) => a.t - b.t).slice(-open));
  }
  return out.sort((a, b) => a.t - b.t);
}
