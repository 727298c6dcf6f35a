/** The timeline's clock of a trace over several hosts: each host's monotonic times put on one reference host's. Pure. */
import type { TraceClock } from '../../protocol/trace';

/** Nanoseconds per millisecond. */
const NS = 1e6;

/** The median of `xs` (not empty). */
function median(xs: number[]): number {
  const v = [...xs].sort((a, b) => a - b);
  return v.length % 2 ? v[(v.length - 1) / 2]! : (v[v.length / 2 - 1]! + v[v.length / 2]!) / 2;
}

/**
 * The timeline's clock (protocol/trace.ts `TraceClock`), and each process's `shift`: on one host
 * none; on several, each host's (wall − monotonic) offset is the median over its processes' pairs,
 * and its monotonic times are shifted by (its offset − the reference host's), the reference being
 * the host of the first process (lowest rank). A host without pairs is left unshifted and named.
 * Phase durations never use it (each is a difference on one host's clock).
 */
export function clockOf(procs: readonly { host: string; wallMinusMono: number[]; shift: number }[]): TraceClock {
  const hosts = [...new Set(procs.map((p) => p.host))];
  if (hosts.length <= 1)
    return { kind: 'monotonic', hosts: hosts.length, note: 'one host: every time is its CLOCK_MONOTONIC, shared by all its processes; no offset' };
  const reference = procs[0]!.host;
  const offset = new Map<string, number | null>();
  let spread = 0;
  for (const h of hosts) {
    const pairs = procs.filter((p) => p.host === h).flatMap((p) => p.wallMinusMono);
    offset.set(h, pairs.length ? median(pairs) : null);
    if (pairs.length) spread = Math.max(spread, (Math.max(...pairs) - Math.min(...pairs)) / NS);
  }
  const ref = offset.get(reference) ?? null;
  const offsetsMs: Record<string, number | null> = {};
  for (const h of hosts) {
    const o = offset.get(h) ?? null;
    offsetsMs[h] = o !== null && ref !== null ? (o - ref) / NS : h === reference ? 0 : null;
  }
  for (const p of procs) p.shift = (offsetsMs[p.host] ?? 0) * NS;
  const unaligned = hosts.filter((h) => offsetsMs[h] === null);
  return {
    kind: 'wall-offsets', hosts: hosts.length, reference, offsetsMs, pairSpreadMs: spread,
    note: `${hosts.length} hosts: each host's monotonic times are put on ${reference}'s through the wall clock stamped with the monotonic clock at each process's start; offsets from wall clocks, uncertainty unknown beyond ±the clocks' sync (NTP or PTP between the hosts). Phase figures are each measured on one host and need no offset; only the timeline uses them.`
      + (unaligned.length ? ` Not aligned (their records carry no wall-clock stamp): ${unaligned.join(', ')}.` : ''),
  };
}
