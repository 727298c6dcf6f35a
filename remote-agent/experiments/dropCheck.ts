/**
 * The drop check of in-flight work (revoke, shrink with NCCL_SHRINK_ABORT): `count` allreduces of
 * `bytes` each sum a source buffer of 1.0 into their own slice of a zeroed buffer. They are
 * enqueued by the addon's in-flight window right before the timed call that should drop them;
 * afterwards (stream synchronized) each slice is read back at its first, middle and last float:
 * a slice that holds the number of ranks of the communicator at all three completed, any other
 * was dropped (not started, or stopped part way). Counted per rank as `inFlightCompleted` and
 * `inFlightDropped`.
 */
import type { RankContext } from './experiment';

/** The buffers of one variant's drop check (setup), reused by every iteration. */
export interface DropCheck {
  source: number;
  slices: number;
  count: number;
  bytes: number;
  /** Ranks of the communicator the allreduces run on: the value of a completed slice. */
  ranks: number;
}

/** Allocates the source (filled with 1.0) and the slices buffer. Untimed. */
export async function setupDropCheck(rc: RankContext, count: number, bytes: number): Promise<DropCheck> {
  const { buffer: source } = await rc.untimed('cuMemAlloc (drop check source)', () => rc.native.memAlloc(bytes, 'cuda'));
  const { buffer: slices } = await rc.untimed('cuMemAlloc (drop check slices)', () => rc.native.memAlloc(count * bytes, 'cuda'));
  rc.native.memFill(source, 1);
  return { source, slices, count, bytes, ranks: rc.worldSize };
}

/** Zeroes the slices and arms the window of the next timed op with the allreduces on `comm`. */
export function armDropCheck(rc: RankContext, check: DropCheck, comm: number, untilQuiet = false): void {
  rc.native.memFill(check.slices, 0);
  rc.native.armInFlight(
    Array.from({ length: check.count }, (_, i) => ({ comm, bytes: check.bytes, buffer: check.source, recvBuffer: check.slices, recvOffset: i * check.bytes })),
    { untilQuiet },
  );
}

/** Slices whose three sampled floats all equal `ranks`, from the values read back (3 per slice). */
export function completedSlices(values: readonly number[], ranks: number): number {
  let done = 0;
  for (let i = 0; i + 2 < values.length; i += 3) if (values[i] === ranks && values[i + 1] === ranks && values[i + 2] === ranks) done++;
  return done;
}

/** Reads the slices back (after a stream synchronize) and counts completed and dropped. */
export function readDropCheck(rc: RankContext, check: DropCheck): { completed: number; dropped: number } {
  const offsets: number[] = [];
  for (let i = 0; i < check.count; i++) {
    const base = i * check.bytes;
    offsets.push(base, base + Math.floor(check.bytes / 8) * 4, base + check.bytes - 4);
  }
  const completed = completedSlices(rc.native.readFloats(check.slices, offsets), check.ranks);
  rc.count('inFlightCompleted', completed);
  rc.count('inFlightDropped', check.count - completed);
  return { completed, dropped: check.count - completed };
}

/** Frees the buffers. Untimed. */
export async function releaseDropCheck(rc: RankContext, check: DropCheck): Promise<void> {
  await rc.untimed('cuMemFree (drop check)', () => rc.native.memFree(check.slices));
  await rc.untimed('cuMemFree (drop check)', () => rc.native.memFree(check.source));
}
