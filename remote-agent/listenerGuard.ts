/**
 * Caps on what a listening port accepts before a peer has authenticated (issue #21): how many
 * unauthenticated connections it holds at once, and how long a connection may take to
 * authenticate. With the line cap of the channel (lineChannel.ts PRE_AUTH_LINE_CHARS, or the
 * barrier's fixed hello frame) they bound what a peer without the secret can make the agent
 * hold: connections × bytes, for at most the hello time.
 *
 * A full listener makes room rather than turning the newcomer away: the OLDEST unauthenticated
 * connection is closed and the new one is taken. A real peer speaks at once (its hello follows
 * its connect), so it is the newest connection, not the oldest, while it authenticates; a flood
 * of idle or reconnecting connections churns among itself instead of locking expected peers out
 * (issue #21, item 6). A connection that has sent a well-formed first message but not yet proved
 * the secret (the node server's hello, before its HMAC answer) moves to a second pool of the same
 * size ({@link ListenerGuard.progressed}): connections that have said nothing never evict it. A
 * peer that is closed before it authenticates anyway retries (nodeHost.ts).
 *
 * Used by every listener of the agent: the rank control channel and the barrier
 * (coordinator.ts, barrierServer.ts) and the node server (nodeServer.ts).
 */
import type * as net from 'node:net';

/** Unauthenticated connections a listener holds at once beyond its expected peers (in each pool). */
export const PRE_AUTH_CONNECTIONS = 64;

/**
 * How long a connection may take from accept to authenticated (a hello on the control channel
 * and barrier; hello, challenge and proof on the node server), ms. Override with
 * COMMCOST_HELLO_MS (tests).
 */
export const HELLO_MS = Number(process.env.COMMCOST_HELLO_MS) > 0 ? Number(process.env.COMMCOST_HELLO_MS) : 5_000;

/** Unauthenticated connections in arrival order (a Map iterates in insertion order: the first is the oldest). */
type Pool = Map<net.Socket, NodeJS.Timeout>;

/** One listener's pre-authentication caps. */
export class ListenerGuard {
  /** Connections that have sent nothing well-formed yet. */
  private readonly fresh: Pool = new Map();
  /** Connections past their first well-formed message, not yet authenticated. */
  private readonly started: Pool = new Map();
  private readonly refusedSinceLog = new Map<string, number>();
  private lastLog = 0;

  /**
   * @param what the listener in log lines, e.g. "control channel"
   * @param expectedPeers peers that may legitimately connect at once (ranks, nodes): each pool's
   *   cap is that plus PRE_AUTH_CONNECTIONS
   * @param log where closings are reported (at most one line a second)
   */
  constructor(
    private readonly what: string,
    private readonly expectedPeers: number,
    private readonly log: (line: string) => void,
    private readonly helloMs: number = HELLO_MS,
  ) {}

  /** The cap of each pool: expected peers + PRE_AUTH_CONNECTIONS. */
  get cap(): number {
    return this.expectedPeers + PRE_AUTH_CONNECTIONS;
  }

  /**
   * Admits a new connection and starts its hello timer. When the listener already holds its cap
   * of connections that have sent nothing, the oldest of them is closed to make room.
   */
  admit(socket: net.Socket): void {
    this.makeRoom(this.fresh, 'too many connections without a hello (the oldest closed to make room)');
    const timer = setTimeout(() => {
      this.settle(socket);
      socket.destroy();
      this.refused(`no hello within ${this.helloMs / 1000} s`);
    }, this.helloMs);
    timer.unref();
    this.fresh.set(socket, timer);
    socket.once('close', () => this.settle(socket));
  }

  /**
   * The connection has sent a well-formed first message but has not proved the secret yet:
   * connections that have said nothing can no longer push it out (its hello timer runs on).
   */
  progressed(socket: net.Socket): void {
    const timer = this.fresh.get(socket);
    if (timer === undefined) return;
    this.fresh.delete(socket);
    this.makeRoom(this.started, 'too many connections with a hello but no proof (the oldest closed to make room)');
    this.started.set(socket, timer);
  }

  /** The connection has authenticated: its caps no longer apply. */
  authenticated(socket: net.Socket): void {
    this.settle(socket);
  }

  /** Unauthenticated connections held now (both pools). */
  get pendingCount(): number {
    return this.fresh.size + this.started.size;
  }

  /** Closes the oldest connections of `pool` until one more fits. */
  private makeRoom(pool: Pool, why: string): void {
    while (pool.size >= this.cap) {
      const [oldest, timer] = pool.entries().next().value as [net.Socket, NodeJS.Timeout];
      clearTimeout(timer);
      pool.delete(oldest);
      oldest.destroy();
      this.refused(why);
    }
  }

  private settle(socket: net.Socket): void {
    for (const pool of [this.fresh, this.started]) {
      const timer = pool.get(socket);
      if (timer === undefined) continue;
      clearTimeout(timer);
      pool.delete(socket);
    }
  }

  private refused(why: string): void {
    this.refusedSinceLog.set(why, (this.refusedSinceLog.get(why) ?? 0) + 1);
    const now = Date.now();
    if (now - this.lastLog < 1000) return;
    for (const [reason, n] of this.refusedSinceLog) this.log(`${this.what}: closed ${n} connection(s): ${reason}`);
    this.refusedSinceLog.clear();
    this.lastLog = now;
  }
}
