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
