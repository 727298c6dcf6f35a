/**
 * A load started once, in the background soon after activation, that the first user of it then
 * awaits: tree-sitter's runtime and the Python grammar (their WebAssembly compiled and warmed,
 * `CallSiteFinder.warmUp`) are ready, or partly so, before the first Python document asks for
 * them. No `vscode` import (unit-tested in Node).
 */

/** A `load` run at most once; {@link get} and {@link startSoon} share its one promise. */
export class WarmStart<T> {
  private pending: Promise<T> | undefined;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private stopped = false;

  /** @param load the work, started by the first {@link get} or by the timer of {@link startSoon} */
  constructor(private readonly load: () => Promise<T>) {}

  /**
   * Starts the load after `delayMs` (ms; 0 = the next turn of the event loop, after the caller,
   * e.g. activate(), has returned) unless {@link get} started it first. A failure is passed to
   * `onError` once and kept: the next {@link get} rejects with it (nothing is retried).
   */
  startSoon(delayMs: number, onError: (err: unknown) => void): void {
    if (this.pending || this.stopped || this.timer) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      if (this.stopped || this.pending) return;
      this.get().catch(onError);
    }, delayMs);
  }

  /** Whether the load has started (by {@link get} or the timer). */
  get started(): boolean {
    return this.pending !== undefined;
  }

  /** The load's result, starting it now if it has not started. Rejects with the load's error. */
  get(): Promise<T> {
    return (this.pending ??= this.load());
  }

  /** Cancels a load not yet started by the timer (a started one runs to its end). */
  dispose(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
  }
}

/**
 * Rounds of the deeper warm-up after the background load (each a `CallSiteFinder.warmUp`: the
 * warm-up snippet parsed and scanned, a few ms): V8 runs WebAssembly and JavaScript in a baseline
 * tier first and optimizes a function once it has run enough, so a first 5,000-line document
 * scanned right after one round still runs mostly unoptimized. Measured (bench section 6b, the
 * in-process split, 2 CPUs under load 2.8): one round left the first 5,000-line open at 485–606 ms,
 * 120 rounds at 202–328 ms, for 0.5 s more of background work.
 */
export const DEEP_WARM_ROUNDS = 120;

/**
 * Runs `step` up to `rounds` times, one per turn of the event loop (setImmediate), so that other
 * work (a document opened meanwhile) runs between rounds; stops early once `stop()` is true (checked
 * before each round) or `step` throws (the error is swallowed: a warm-up is never needed).
 * @returns the rounds run
 */
export async function inSlices(step: () => void, rounds: number, stop: () => boolean): Promise<number> {
  let done = 0;
  while (done < rounds && !stop()) {
    await new Promise<void>((resolve) => setImmediate(resolve));
    if (stop()) break;
    try {
      step();
    } catch {
      break;
    }
    done++;
  }
  return done;
}
