/**
 * Ctrl-C during `commcost measure`: the SIGINT listener that counts presses and hands each to the
 * measurement's handler ({@link interrupts}), and the presses bin/commcost.js recorded while the
 * bundle loaded ({@link takeEarlyInterrupts}).
 */

/**
 * Ctrl-C: the first cancels (the run stops, what was measured is kept), the second stops at once
 * (the agent is killed, what was received is kept), the third quits without saving. A Ctrl-C
 * before the measurement listens (while the CLI loads: see bin/commcost.js) is remembered.
 * SIGTERM and SIGHUP (`timeout`, Slurm at the end of a job's time, a closed terminal) count as the
 * first two presses at once: stop at once and save what was received; a Ctrl-C after them quits.
 * The handler is set by `measureCommand` (measure.ts); `main` (main.ts) installs and uninstalls it.
 */
export const interrupts = {
  count: 0,
  /** Called with the press count (1, 2, 3…) and, for SIGTERM/SIGHUP, the signal's name. */
  handler: undefined as ((n: number, signal?: 'SIGTERM' | 'SIGHUP') => void) | undefined,
  /** The SIGTERM/SIGHUP received, if any (replayed by {@link listen}). */
  signal: null as 'SIGTERM' | 'SIGHUP' | null,
  listener: (): void => {
    interrupts.count++;
    interrupts.handler?.(interrupts.count);
  },
  terminate: (signal: 'SIGTERM' | 'SIGHUP'): void => {
    const before = interrupts.count;
    if (before >= 2) return;
    interrupts.signal = signal; // already stopping at once: the save under way finishes
    interrupts.count = 2;
    for (let n = before + 1; n <= 2; n++) interrupts.handler?.(n, signal);
  },
  onTerm: (): void => interrupts.terminate('SIGTERM'),
  onHup: (): void => interrupts.terminate('SIGHUP'),
  install(): void {
    this.count = 0;
    this.signal = null;
    this.handler = undefined;
    process.on('SIGINT', this.listener);
    process.on('SIGTERM', this.onTerm);
    process.on('SIGHUP', this.onHup);
  },
  uninstall(): void {
    process.off('SIGINT', this.listener);
    process.off('SIGTERM', this.onTerm);
    process.off('SIGHUP', this.onHup);
    this.handler = undefined;
  },
  /** Sets the handler and replays the Ctrl-Cs (and a SIGTERM/SIGHUP) that came before it. */
  listen(h: (n: number, signal?: 'SIGTERM' | 'SIGHUP') => void): void {
    this.handler = h;
    for (let n = 1; n <= this.count; n++) h(n, n <= 2 ? (this.signal ?? undefined) : undefined);
  },
};

/** What bin/commcost.js records before the bundle is loaded. */
interface EarlyInterrupts {
  count: number;
  listener: () => void;
}

/**
 * Takes over the Ctrl-Cs that bin/commcost.js counted before the bundle was loaded: removes its
 * listener and its global, and returns how many there were (0 when it recorded none).
 */
export function takeEarlyInterrupts(): number {
  const g = globalThis as { __commcostEarlySigint?: EarlyInterrupts };
  const early = g.__commcostEarlySigint;
  if (!early) return 0;
  process.off('SIGINT', early.listener);
  delete g.__commcostEarlySigint;
  return early.count;
}
