/**
 * Caps on what a listening port accepts before a peer has authenticated (issue #21): how many
 * unauthenticated connections it holds at once, and how long a connection may take to
 * authenticate. With the line cap of the channel (lineChannel.ts PRE_AUTH_LINE_CHARS, or the
 * barrier's fixed hello frame) they bound what a peer without the secret can make the agent
 * hold: connections × bytes, for at most the hello time.
 *
 * Used by every listener of the agent: the rank control channel and the barrier
 * (coordinator.ts, barrierServer.ts) and the node server (nodeServer.ts).
 */
import type * as net from 'node:net';

/** Unauthenticated connections a listener holds at once beyond its expected peers. */
export const PRE_AUTH_CONNECTIONS = 64;

/**
 * How long a connection may take from accept to authenticated (a hello on the control channel
 * and barrier; hello, challenge and proof on the node server), ms. Override with
 * COMMCOST_HELLO_MS (tests).
 */
export const HELLO_MS = Number(process.env.COMMCOST_HELLO_MS) > 0 ? Number(process.env.COMMCOST_HELLO_MS) : 5_000;

/** One listener's pre-authentication caps. */
export class ListenerGuard {
  private readonly pending = new Map<net.Socket, NodeJS.Timeout>();
  private refusedSinceLog = 0;
  private lastLog = 0;

  /**
   * @param what the listener in log lines, e.g. "control channel"
   * @param expectedPeers peers that may legitimately connect at once (ranks, nodes): the cap is
   *   that plus PRE_AUTH_CONNECTIONS
   * @param log where refusals are reported (at most one line a second)
   */
  constructor(
    private readonly what: string,
    private readonly expectedPeers: number,
    private readonly log: (line: string) => void,
    private readonly helloMs: number = HELLO_MS,
  ) {}

  /**
   * Admits a new connection: destroys it at once when the listener already holds its cap of
   * unauthenticated connections, else starts its hello timer.
   * @returns false when it was refused (the caller must not use it)
   */
  admit(socket: net.Socket): boolean {
    if (this.pending.size >= this.expectedPeers + PRE_AUTH_CONNECTIONS) {
      socket.destroy();
      this.refused('too many connections without a hello');
      return false;
    }
    const timer = setTimeout(() => {
      this.pending.delete(socket);
      socket.destroy();
      this.refused(`no hello within ${this.helloMs / 1000} s`);
    }, this.helloMs);
    timer.unref();
    this.pending.set(socket, timer);
    socket.once('close', () => this.settle(socket));
    return true;
  }

  /** The connection has authenticated: its caps no longer apply. */
  authenticated(socket: net.Socket): void {
    this.settle(socket);
  }

  /** Unauthenticated connections held now. */
  get pendingCount(): number {
    return this.pending.size;
  }

  private settle(socket: net.Socket): void {
    const timer = this.pending.get(socket);
    if (timer) clearTimeout(timer);
    this.pending.delete(socket);
  }

  private refused(why: string): void {
    this.refusedSinceLog++;
    const now = Date.now();
    if (now - this.lastLog < 1000) return;
    this.log(`${this.what}: closed ${this.refusedSinceLog} connection(s): ${why}`);
    this.refusedSinceLog = 0;
    this.lastLog = now;
  }
}
