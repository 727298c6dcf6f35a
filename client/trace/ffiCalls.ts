/**
 * The Python hook's records of NCCL called through a binding (pure; used by merge.ts):
 * ctypes and cffi (native/pyhook/commcost_ffi.py, named by the NCCL function) and a C extension
 * that calls libnccl itself (Cython bindings such as nccl4py's, a CPython C extension; named by the
 * extension's function, native/pyhook/commcost_cext.py). Each record's `via` says which.
 *
 * A ctypes/cffi creation, ncclGroupEnd and ncclCommGetAsyncError carry the same fields as the C
 * interposer's (result `r`, `comm`, `group`, `nranks`, `rank`, `async`), so that a creation paid
 * after its call returned — inside ncclGroupStart/End, non-blocking — is timed by
 * client/trace/grouped.ts exactly as for C, its site the Python line that called NCCL.
 */
import type { TraceBinding } from '../../protocol/trace';
import type { GroupedCall } from './grouped';
import { NATIVE_CREATE } from './nativeCalls';

/** How a Python site reached NCCL: a foreign-function library, or a compiled extension (protocol/trace.ts). */
export type Binding = TraceBinding;

/** Calls recorded only as the payer of a deferred creation, never a site of their own. */
export const PAYER_APIS: ReadonlySet<string> = new Set(['ncclGroupEnd', 'ncclCommGetAsyncError']);

/** The record's `via` as a binding, or null (torch's own calls, files written before it). */
export function bindingOf(v: unknown): Binding | null {
  return v === 'ctypes' || v === 'cffi' || v === 'extension' ? v : null;
}

/** A ctypes/cffi lifecycle call as grouped.ts reads it, with the Python call it came from (`py`). */
export type FfiCall<P> = GroupedCall & { py: P };

/**
 * The grouped.ts view of one hook `call` record, or null when it is not a ctypes/cffi creation,
 * ncclGroupEnd or ncclCommGetAsyncError. `r` (ncclResult_t) is the record's own, else 0 for a call
 * that succeeded and -1 for one that did not (records written before the field).
 * @param py the parsed Python call (its times, thread and site)
 */
export function ffiCallOf<P extends { api: string; t0: number; t1: number; tid: number | null; ok: boolean }>(r: Record<string, unknown>, py: P): FfiCall<P> | null {
  const via = bindingOf(r.via);
  if ((via !== 'ctypes' && via !== 'cffi') || (!NATIVE_CREATE.has(py.api) && !PAYER_APIS.has(py.api))) return null;
  const num = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) ? v : null);
  const call: FfiCall<P> = { api: py.api, t0: py.t0, t1: py.t1, tid: py.tid, r: num(r.r) ?? (py.ok ? 0 : -1), comm: typeof r.comm === 'string' ? r.comm : '', py };
  for (const k of ['group', 'nranks', 'rank', 'async'] as const) {
    const v = num(r[k]);
    if (v !== null) call[k] = v;
  }
  return call;
}
