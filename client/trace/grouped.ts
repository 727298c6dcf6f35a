/**
 * The creating call of a communicator the C interposer saw, and where its creation was paid (pure;
 * used by merge.ts). NCCL pays a creation inside the creating call unless:
 *  - the call was inside ncclGroupStart/End (benchmark harnesses, one process driving several
 *    GPUs): it only queued the work, and the group's outermost ncclGroupEnd paid it — the plugin's
 *    `init` falls in that ncclGroupEnd's window, not the call's. The call is the one of that group
 *    (same thread, same group number) whose nranks/rank are the communicator's, else the first one
 *    not yet taken; the creation runs from the call to that ncclGroupEnd's return.
 *  - it was ncclCommInitAll: NCCL's own group inside the call; the call's window holds every `init`.
 *  - it was non-blocking (config.blocking = 0): the call (or its group's ncclGroupEnd) returned
 *    ncclInProgress and NCCL finished in the background; the creation runs from the call to the
 *    first ncclCommGetAsyncError that reported it done (the interposer records that poll). Without
 *    such a poll the creation has no figure.
 * Each case is said in a note naming the call that paid it (file:line), and in the site's `deferred`.
 * The same rules hold for NCCL called from Python through ctypes or cffi: the hook
 * (native/pyhook/commcost_ffi.py) records the same calls with the same fields, and merge.ts hands
 * them here as {@link GroupedCall}s whose site is the Python line.
 */
import type { TraceDeferred } from '../../protocol/trace';
import { NATIVE_CREATE, NCCL_IN_PROGRESS, nativeCallAt, type NativeCall } from './nativeCalls';

/**
 * A recorded lifecycle call, wherever it was seen: the C interposer's (NativeCall) or the Python
 * hook's ctypes/cffi call (its site a Python line); times in CLOCK_MONOTONIC ns.
 */
export type GroupedCall = Omit<NativeCall, 'site' | 'parent'>;

/** The creating call found for a communicator, when its creation was complete, and how it was paid. */
export interface NativeCreation<C extends GroupedCall = NativeCall> {
  call: C;
  /** ns when the creation was done (the call's return, its ncclGroupEnd's, or the completing poll's); null when never seen. */
  t1: number | null;
  /** How it was paid when not inside the call itself (null: inside it, the usual blocking call). */
  deferred: { kind: TraceDeferred['kind']; by: C | null; groupEnd: C | null } | null;
}

/** A communicator as the plugin saw it: when NCCL reached its init, on which thread, its size and rank. */
export interface PluginComm { tInit: number; tidInit: number | null; nranks: number; rank: number }

/** How many communicators one call makes (ncclCommInitAll: one per device). */
function capacity(c: GroupedCall): number {
  return c.api === 'ncclCommInitAll' ? Math.max(1, c.nranks ?? 1) : 1;
}

/** The ncclGroupEnd that ended the group a grouped call was queued in (same thread and group number). */
function endOf<C extends GroupedCall>(calls: C[], c: C): C | null {
  if (c.group === undefined) return null;
  return calls.find((e) => e.api === 'ncclGroupEnd' && e.group === c.group && e.tid === c.tid && e.t0 >= c.t1) ?? null;
}

/** The candidates whose nranks/rank are the communicator's, when any is; else all of them. */
function sameRank<C extends GroupedCall>(cands: C[], comm: PluginComm): C[] {
  const exact = cands.filter((c) => c.nranks === comm.nranks && (c.rank === undefined || c.rank === comm.rank));
  return exact.length ? exact : cands;
}

/**
 * The creating call of `comm` among one process's interposed calls, or null.
 * @param taken how many communicators each call was already joined to (updated)
 */
export function nativeCreation<C extends GroupedCall>(calls: C[], comm: PluginComm, taken: Map<C, number>): NativeCreation<C> | null {
  const t = comm.tInit;
  const free = (c: C) => (taken.get(c) ?? 0) < capacity(c);
  const take = (c: C) => taken.set(c, (taken.get(c) ?? 0) + 1);
  // 1. A creating call whose own window holds NCCL's init (a blocking call; ncclCommInitAll's own group);
  //    a non-blocking one that NCCL reached before it returned is still completed later (3).
  const held = nativeCallAt(calls, t, comm.tidInit, 'create');
  if (held && held.t0 <= t && t <= held.t1 && held.r !== NCCL_IN_PROGRESS) {
    take(held);
    return { call: held, t1: held.t1, deferred: held.api === 'ncclCommInitAll' ? { kind: 'initAll', by: held, groupEnd: null } : null };
  }
  const creates = calls.filter((c) => NATIVE_CREATE.has(c.api) && free(c) && c.t0 <= t);
  // 2. A grouped call whose ncclGroupEnd's window holds the init (NCCL may run it on a thread of its own).
  const end = calls.filter((e) => e.api === 'ncclGroupEnd' && e.t0 <= t && t <= e.t1).sort((a, b) => b.t0 - a.t0)[0];
  if (end) {
    const call = sameRank(creates.filter((c) => c.group === end.group && c.tid === end.tid && c.t1 <= end.t0), comm).sort((a, b) => a.t0 - b.t0)[0];
    if (call) {
      take(call);
      return { call, t1: end.t1, deferred: { kind: 'group', by: end, groupEnd: end } };
    }
  }
  // 3. A non-blocking call (it, or its group's end, returned ncclInProgress) that started before the init: the latest.
  const pending = creates.filter((c) => (c.group === undefined ? c.r === NCCL_IN_PROGRESS : endOf(calls, c)?.r === NCCL_IN_PROGRESS));
  const call = sameRank(pending, comm).sort((a, b) => b.t0 - a.t0)[0];
  if (!call) return null;
  take(call);
  const groupEnd = endOf(calls, call);
  const done = calls.filter((c) => c.api === 'ncclCommGetAsyncError' && c.comm === call.comm && c.t0 >= call.t0).sort((a, b) => a.t1 - b.t1)[0] ?? null;
  return { call, t1: done ? done.t1 : null, deferred: { kind: 'nonblocking', by: done, groupEnd } };
}

/**
 * The site's `deferred` and the note of a creation not paid inside its call, e.g. "created in a
 * group: paid at bench.c:42 of ncclGroupEnd (…)". Null for a creation paid inside its call.
 * @param where a call's caller as file:line (or object+offset), null when unknown
 */
export function deferredNote<C extends GroupedCall>(n: NativeCreation<C>, where: (c: C) => string | null): { deferred: TraceDeferred; note: string } | null {
  const d = n.deferred;
  if (!d) return null;
  const at = (c: C | null) => (c ? where(c) : null);
  const ms = (ns: number) => `${(ns / 1e6).toFixed(1)} ms`;
  if (d.kind === 'initAll') {
    const k = n.call.nranks;
    return { deferred: { kind: 'initAll', api: 'ncclCommInitAll', at: at(n.call) },
      note: `created in a group: ncclCommInitAll creates its ${k ?? 'k'} communicator${k === 1 ? '' : 's'} in one group of its own, paid inside this call (each one's creation is the whole call)` };
  }
  if (d.kind === 'group') {
    return { deferred: { kind: 'group', api: 'ncclGroupEnd', at: at(d.by) },
      note: `created in a group: paid at ${at(d.by) ?? 'an unknown caller'} of ncclGroupEnd (the creation runs from this call, which returned in ${ms(n.call.t1 - n.call.t0)}, to that ncclGroupEnd's return)` };
  }
  const grouped = d.groupEnd ? `, created in a group: ncclGroupEnd at ${at(d.groupEnd) ?? 'an unknown caller'} returned ncclInProgress` : ': the call returned ncclInProgress';
  const deferred: TraceDeferred = { kind: 'nonblocking', api: d.by ? 'ncclCommGetAsyncError' : null, at: at(d.by), ...(d.groupEnd ? { groupEnd: at(d.groupEnd) } : {}) };
  if (!d.by)
    return { deferred, note: `non-blocking${grouped}, and no ncclCommGetAsyncError call was seen reporting it done, so its creation has no figure (the call itself took ${ms(n.call.t1 - n.call.t0)})` };
  return { deferred, note: `non-blocking${grouped}; completed at ${at(d.by) ?? 'an unknown caller'} of ncclCommGetAsyncError (the creation runs from this call to the first poll that reported it done)` };
}
