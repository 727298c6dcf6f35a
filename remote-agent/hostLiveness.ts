/**
 * The agent's side of the liveness protocol (protocol/liveness.ts): heartbeats to the host, and a
 * watch on the host that ends the agent when the host goes silent with its pipe or SSH channel
 * still open (a SIGSTOPped client, a network partition with no FIN or RST).
 */
import type { HeartbeatEvent, KeepaliveCommand } from '../protocol/events';

/**
 * Watches the host. Nothing happens until the first `host/keepalive` ({@link HostWatch.keepalive}):
 * from then on a heartbeat is sent every `intervalMs`, and `onSilent` is called once when no line
 * came from the host ({@link HostWatch.heard}) for `deadlineMs`.
 */
export class HostWatch {
  private heartbeat: NodeJS.Timeout | undefined;
  private deadline: NodeJS.Timeout | undefined;
  private settings: { intervalMs: number; deadlineMs: number } | undefined;
  private lastHeard = Date.now();
  private fired = false;
  private disposed = false;

  /**
   * @param sendHeartbeat writes one `agent/heartbeat` line to the host
   * @param onSilent called once with the silence's length (ms) and the deadline (ms) when the
   *   host said nothing for the deadline; the caller cancels the run and exits
   */
  constructor(
    private readonly sendHeartbeat: (ev: HeartbeatEvent) => void,
    private readonly onSilent: (silentMs: number, deadlineMs: number) => void,
  ) {}

  /** A line (any command, valid or not) came from the host: it is alive. */
  heard(): void {
    this.lastHeard = Date.now();
  }

  /** A `host/keepalive`: takes its interval and deadline (re)arms the heartbeat and the watch. */
  keepalive(cmd: KeepaliveCommand): void {
    if (this.disposed || this.fired) return;
    this.heard();
    const changed = !this.settings || this.settings.intervalMs !== cmd.intervalMs || this.settings.deadlineMs !== cmd.deadlineMs;
    this.settings = { intervalMs: cmd.intervalMs, deadlineMs: cmd.deadlineMs };
    if (!changed) return;
    clearInterval(this.heartbeat);
    clearInterval(this.deadline);
    this.sendHeartbeat({ type: 'agent/heartbeat' });
    this.heartbeat = setInterval(() => this.sendHeartbeat({ type: 'agent/heartbeat' }), cmd.intervalMs);
    // Checked a few times per interval, so the watch fires within deadline + interval / 4.
    this.deadline = setInterval(() => this.check(), Math.max(25, Math.floor(cmd.intervalMs / 4)));
  }

  private check(): void {
    if (!this.settings || this.fired) return;
    const silent = Date.now() - this.lastHeard;
    if (silent < this.settings.deadlineMs) return;
    this.fired = true;
    this.dispose();
    this.onSilent(silent, this.settings.deadlineMs);
  }

  /** Stops the heartbeat and the watch (the agent is exiting). Idempotent. */
  dispose(): void {
    this.disposed = true;
    clearInterval(this.heartbeat);
    clearInterval(this.deadline);
  }
}
