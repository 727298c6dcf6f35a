/**
 * How late this process's timers run while a test waits: on a loaded machine a deadline the agent
 * keeps fires late by about as much as the test's own timers do, so a bound on "within deadline +
 * 1 s" allows that lateness on top instead of failing on a busy machine (issue: tests that hold under
 * load). A guard that never fires, or fires seconds late on an idle machine, still fails.
 */
export interface LagMonitor {
  /** The largest lateness of a 50 ms timer since the monitor started, ms. */
  maxMs(): number;
  /** Stops sampling (call once, in a finally). */
  stop(): void;
}

/** Starts sampling the lateness of a 50 ms timer. */
export function lagMonitor(periodMs = 50): LagMonitor {
  let max = 0;
  let expected = Date.now() + periodMs;
  let timer: NodeJS.Timeout | undefined;
  const tick = (): void => {
    const now = Date.now();
    max = Math.max(max, now - expected);
    expected = now + periodMs;
    timer = setTimeout(tick, periodMs);
    timer.unref();
  };
  timer = setTimeout(tick, periodMs);
  timer.unref();
  return { maxMs: () => max, stop: () => clearTimeout(timer) };
}
