/**
 * Render batching: many snapshots may arrive between two frames; only the latest is rendered,
 * at most once per animation frame (the tables); the charts of a streaming run at most once per
 * {@link AtMostEvery} interval.
 */

/** Schedules one callback per frame. `requestAnimationFrame` in the browser; injectable for tests. */
export type FrameRequester = (cb: () => void) => void;

/**
 * Keeps the latest value pushed and renders it on the next frame. `push` is O(1) and never
 * renders synchronously, so 1,000 snapshots per second cost one render per frame.
 */
export class LatestPerFrame<T> {
  private pending: { value: T } | undefined;
  private scheduled = false;

  constructor(
    private readonly render: (value: T) => void,
    private readonly requestFrame: FrameRequester,
  ) {}

  /** Replaces the pending value; schedules a frame if none is scheduled. */
  push(value: T): void {
    this.pending = { value };
    if (this.scheduled) return;
    this.scheduled = true;
    this.requestFrame(() => this.flush());
  }

  private flush(): void {
    this.scheduled = false;
    const p = this.pending;
    this.pending = undefined;
    if (p) this.render(p.value);
  }
}

/** A clock (ms) and a one-shot timer; `performance.now` and `setTimeout` in the browser, injectable for tests. */
export interface ThrottleClock {
  now(): number;
  setTimer(cb: () => void, ms: number): void;
}

/**
 * Runs the latest job handed to it at most once every `intervalMs` (ms): the charts while a run
 * streams. {@link run} runs the job now when the last one ran `intervalMs` or more ago, else keeps
 * it (replacing any kept one) and runs it when the interval is over, so the last job is never
 * dropped. {@link runNow} runs a job at once and drops the kept one (the final state of a run).
 * @throws RangeError when `intervalMs` is not a finite number ≥ 0.
 */
export class AtMostEvery {
  private last = -Infinity;
  private kept: (() => void) | undefined;
  private timer = false;

  constructor(
    private readonly intervalMs: number,
    private readonly clock: ThrottleClock = { now: () => performance.now(), setTimer: (cb, ms) => void setTimeout(cb, ms) },
  ) {
    if (!Number.isFinite(intervalMs) || intervalMs < 0) throw new RangeError(`AtMostEvery: interval ${intervalMs} ms is not a finite number ≥ 0`);
  }

  /** Runs `job` now, or keeps it for the end of the interval (replacing the job kept before). */
  run(job: () => void): void {
    const wait = this.last + this.intervalMs - this.clock.now();
    if (wait <= 0 && !this.timer) {
      this.kept = undefined;
      this.fire(job);
      return;
    }
    this.kept = job;
    if (this.timer) return;
    this.timer = true;
    this.clock.setTimer(() => {
      this.timer = false;
      const k = this.kept;
      this.kept = undefined;
      if (k) this.fire(k);
    }, Math.max(0, wait));
  }

  /** Runs `job` at once and forgets the job kept, if any. */
  runNow(job: () => void): void {
    this.kept = undefined;
    this.fire(job);
  }

  private fire(job: () => void): void {
    this.last = this.clock.now();
    job();
  }
}
