/**
 * The kind of a communicator's first use in a trace (issue #32): a group's first collective may be a
 * broadcast (a weight-sync group), an allgather, or a send/recv (pipeline stages, prefill/decode
 * pairs), not only an allreduce. Pure: one vocabulary for the Python hook's call names and the
 * profiler plugin's NCCL function names (`collStart` records' `fn`).
 */

/** NCCL's function names (the profiler's CollApi/P2pApi `func`) in torch.distributed's words. */
const NCCL_NAMES: Readonly<Record<string, string>> = {
  AllReduce: 'all_reduce',
  Broadcast: 'broadcast',
  AllGather: 'all_gather',
  ReduceScatter: 'reduce_scatter',
  Reduce: 'reduce',
  Send: 'send',
  Recv: 'recv',
  AllToAll: 'all_to_all',
  Gather: 'gather',
  Scatter: 'scatter',
};

/**
 * The first use's op in torch.distributed's words: a Python call's name as it is (`broadcast`,
 * `isend`, `all_gather_into_tensor`), an NCCL function name mapped (`Broadcast` → `broadcast`, `Send` →
 * `send`), else null.
 */
export function firstUseName(pythonApi: string | null | undefined, ncclFn: string | null | undefined): string | null {
  if (pythonApi) return pythonApi;
  if (!ncclFn) return null;
  return NCCL_NAMES[ncclFn] ?? ncclFn.toLowerCase();
}

/** The most frequent non-null name of `names` (ties: the first met), or null. */
export function commonName(names: readonly (string | null)[]): string | null {
  const counts = new Map<string, number>();
  for (const n of names) if (n) counts.set(n, (counts.get(n) ?? 0) + 1);
  let best: string | null = null;
  for (const [n, c] of counts) if (best === null || c > counts.get(best)!) best = n;
  return best;
}
