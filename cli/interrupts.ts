/**
 * Ctrl-C during `commcost measure`: the SIGINT listener that counts presses and hands each to the
 * measurement's handler ({@link interrupts}), and the presses bin/commcost.js recorded while the
 * bundle loaded ({@link takeEarlyInterrupts}).
 */

/**
 * Ctrl-C: the first cancels (the run stops, what was measured is kept), the second stops at once
 * (the agent is killed, what was received is kept), the third quits without saving. A Ctrl-C
 * before the measurement listens (while the CLI loads: see bin/commcost.js) is remembered.
 * The handler is set by `measureCommand` (measure.ts); `main` (main.ts) installs and uninstalls it.
 */
export const interrupts = {
  count: 0,
  handler: undefined as ((n: number) => void) | undefined,
  listener: (): void => {
    interrupts.count++;
    interrupts.handler?.(interrupts.count);
  },
  install(): void {
    this.count = 0;
    this.handler = undefined;
    process.on('SIGINT', this.listener);
  },
  uninstall(): void {
    process.off('SIGINT', this.listener);
    this.handler = undefined;
  },
  /** Sets the handler and replays the Ctrl-Cs that came before it. */
  listen(h: (n: number) => void): void {
    this.handler = h;
    for (let n = 1; n <= this.count; n++) h(n);
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
