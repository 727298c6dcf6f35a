/**
 * The TCP star barrier that starts every timed call (independent of NCCL).
 *
 * Wire format (little-endian), matching native/src's barrier client and the c10d driver's:
 *   rank → coordinator, once, first: "hello": u32 magic 0x48424343 ('CCBH'), u32 rank, 32 bytes:
 *     the rank session's secret (COMMCOST_SESSION_TOKEN, 32 hex characters)
 *   rank → coordinator, "arrive": u32 magic 0x52424343 ('CCBR'), u32 rank (the hello's), u64 generation
 *   coordinator → rank, "release": u64 generation
 * A connection whose first frame is not a hello with the session's secret, or that arrives for
 * another rank than its hello named, is closed (and logged) without touching the barrier: a peer
 * on the network that lacks the secret can neither arrive for a rank nor take its releases.
 *   rank → coordinator, "arrival notice": u32 magic 0x41424343 ('CCBA'), u32 rank, u64 generation:
 *     sent instead of "arrive" by a rank that waits for the one-host release in shared memory
 *     (ShmRelease below); recorded like an arrival, never answered
 * Generations count up from 1 on every rank identically (SPMD). When all `worldSize` ranks
 * have arrived for a generation, the release is written to every rank that asked for it on TCP,
 * all writes issued in one synchronous pass (no await between them) starting from a rank that
 * rotates with the generation, so that no rank is always first; each rank reads it on the worker
 * thread that then takes t0 and makes the call. Ranks that sent notices release each other
 * through shared memory (native/src/shmBarrier.h): the server is not on their release path.
 */
import { randomBytes, timingSafeEqual } from 'node:crypto';
import * as fs from 'node:fs';
import * as net from 'node:net';
import { ListenerGuard } from './listenerGuard';
import * as path from 'node:path';

export const BARRIER_MAGIC = 0x52424343;
export const BARRIER_HELLO_MAGIC = 0x48424343;
export const BARRIER_NOTICE_MAGIC = 0x41424343;
export const SHM_BARRIER_MAGIC = 0x53424343;
/** Size of the one-host release file (native/src/shmBarrier.h's layout). */
export const SHM_BARRIER_BYTES = 4096;
/** Length of the secret a hello carries (the session secret: 16 random bytes as hex). */
export const BARRIER_TOKEN_BYTES = 32;
const ARRIVE_BYTES = 16;
const HELLO_BYTES = 8 + BARRIER_TOKEN_BYTES;

/** A hello frame for `rank` with `token` (the rank clients' first frame; used by tests). */
export function barrierHello(rank: number, token: string): Buffer {
  const b = Buffer.alloc(HELLO_BYTES);
  b.writeUInt32LE(BARRIER_HELLO_MAGIC, 0);
  b.writeUInt32LE(rank, 4);
  b.write(token, 8, BARRIER_TOKEN_BYTES, 'latin1');
  return b;
}

export interface BarrierServerOptions {
  worldSize: number;
  /** The rank session's secret (32 characters) every connection's hello must carry. */
  token: string;
  host?: string;
  /** Called when a frame is malformed, a hello is refused or a generation goes backwards. */
  onProtocolError?: (message: string) => void;
}

/** A barrier server for one rank session. Dispose with `close()`. */
export class BarrierServer {
  private readonly server: net.Server;
  /** Per generation being gathered: the sockets that wait for a TCP release. */
  private readonly tcpWaiters = new Map<number, net.Socket[]>();
  /** Per generation being gathered: how many arrivals were notices (one-host release). */
  private readonly notices = new Map<number, number>();
  /** Every open connection, with or without a hello: all are closed with the server. */
  private readonly connections = new Set<net.Socket>();
  private readonly arrived = new Map<number, Set<number>>();
  /** Highest generation each rank has arrived at. */
  private readonly lastGen = new Map<number, number>();
  private releasedUpTo = 0;

  private readonly token: Buffer;
  private readonly guard: ListenerGuard;

  /** @throws RangeError when the token is not BARRIER_TOKEN_BYTES characters */
  constructor(private readonly opts: BarrierServerOptions) {
    this.token = Buffer.from(opts.token, 'latin1');
    if (opts.token.length !== BARRIER_TOKEN_BYTES || this.token.length !== BARRIER_TOKEN_BYTES) {
      throw new RangeError(`barrier token must be ${BARRIER_TOKEN_BYTES} characters, got ${opts.token.length}`);
    }
    this.guard = new ListenerGuard('barrier', opts.worldSize, (m) => opts.onProtocolError?.(m));
    this.server = net.createServer((socket) => this.accept(socket));
  }

  /** Starts listening on an ephemeral port. @returns the port. */
  async listen(): Promise<number> {
    await new Promise<void>((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(0, this.opts.host ?? '127.0.0.1', () => resolve());
    });
    return (this.server.address() as net.AddressInfo).port;
  }

  /** The generation each rank last arrived at (undefined = never). */
  lastArrival(rank: number): number | undefined {
    return this.lastGen.get(rank);
  }

  /** Ranks that have not yet arrived at generation `gen`. */
  missing(gen: number): number[] {
    const got = this.arrived.get(gen) ?? new Set<number>();
    const out: number[] = [];
    for (let r = 0; r < this.opts.worldSize; r++) if (!got.has(r) && (this.lastGen.get(r) ?? 0) < gen) out.push(r);
    return out;
  }

  /** The highest generation released so far. */
  get released(): number {
    return this.releasedUpTo;
  }

  close(): void {
    for (const s of this.connections) s.destroy();
    this.server.close();
  }

  private accept(socket: net.Socket): void {
    // Unauthenticated connections are capped in number and in time (listenerGuard.ts); before
    // its hello a connection holds at most one hello frame.
    this.guard.admit(socket);
    socket.setNoDelay(true);
    this.connections.add(socket);
    socket.on('close', () => this.connections.delete(socket));
    let buf = Buffer.alloc(0);
    /** The rank this connection proved it speaks for (its hello); undefined until then. */
    let helloRank: number | undefined;
    const refuse = (why: string): void => {
      this.opts.onProtocolError?.(`barrier: connection from ${socket.remoteAddress ?? '?'}:${socket.remotePort ?? '?'} closed: ${why}`);
      buf = Buffer.alloc(0);
      socket.destroy();
    };
    socket.on('data', (chunk) => {
      buf = buf.length === 0 ? chunk : Buffer.concat([buf, chunk]);
      if (helloRank === undefined) {
        if (buf.length >= 4 && buf.readUInt32LE(0) !== BARRIER_HELLO_MAGIC) return refuse(`its first frame is not a hello (magic ${buf.readUInt32LE(0).toString(16)})`);
        if (buf.length < HELLO_BYTES) return;
        const rank = buf.readUInt32LE(4);
        if (!timingSafeEqual(buf.subarray(8, HELLO_BYTES), this.token)) return refuse(`hello for rank ${rank} without this session's secret`);
        if (rank >= this.opts.worldSize) return refuse(`hello for rank ${rank}, world size ${this.opts.worldSize}`);
        helloRank = rank;
        this.guard.authenticated(socket);
        buf = buf.subarray(HELLO_BYTES);
      }
      while (buf.length >= ARRIVE_BYTES) {
        const magic = buf.readUInt32LE(0);
        const rank = buf.readUInt32LE(4);
        const gen = Number(buf.readBigUInt64LE(8));
        buf = buf.subarray(ARRIVE_BYTES);
        if ((magic !== BARRIER_MAGIC && magic !== BARRIER_NOTICE_MAGIC) || rank !== helloRank) return refuse(`bad frame (magic ${magic.toString(16)}, rank ${rank}, hello for rank ${helloRank})`);
        this.arrive(rank, gen, magic === BARRIER_MAGIC ? socket : undefined);
      }
    });
    socket.on('error', () => socket.destroy());
  }

  /** Records rank `rank` at generation `gen`; `socket` = where to write its release (TCP), none for a notice. */
  private arrive(rank: number, gen: number, socket: net.Socket | undefined): void {
    if (gen <= (this.lastGen.get(rank) ?? 0)) {
      this.opts.onProtocolError?.(`barrier: rank ${rank} arrived at generation ${gen} after ${this.lastGen.get(rank)}`);
      return;
    }
    this.lastGen.set(rank, gen);
    let set = this.arrived.get(gen);
    if (!set) this.arrived.set(gen, (set = new Set()));
    set.add(rank);
    if (socket) {
      let waiters = this.tcpWaiters.get(gen);
      if (!waiters) this.tcpWaiters.set(gen, (waiters = []));
      waiters.push(socket);
    } else this.notices.set(gen, (this.notices.get(gen) ?? 0) + 1);
    if (set.size < this.opts.worldSize) return;
    const waiters = this.tcpWaiters.get(gen) ?? [];
    const notices = this.notices.get(gen) ?? 0;
    this.arrived.delete(gen);
    this.tcpWaiters.delete(gen);
    this.notices.delete(gen);
    this.releasedUpTo = Math.max(this.releasedUpTo, gen);
    if (notices > 0 && waiters.length > 0) {
      // The shared-memory ranks count only among themselves: they would wait forever.
      this.opts.onProtocolError?.(`barrier: generation ${gen} mixes ${notices} one-host (shared memory) arrivals with ${waiters.length} TCP ones`);
    }
    if (waiters.length === 0) return;
    const release = Buffer.alloc(8);
    release.writeBigUInt64LE(BigInt(gen));
    // One synchronous pass of writes (each goes out at once: NODELAY, empty queue), from a rank
    // that rotates with the generation.
    const first = gen % waiters.length;
    for (let i = 0; i < waiters.length; i++) waiters[(first + i) % waiters.length]!.write(release);
  }
}

/**
 * The one-host release file of a rank session (layout: native/src/shmBarrier.h): created in
 * /dev/shm with mode 0600 under a random name, handed to the session's ranks in
 * COMMCOST_BARRIER_SHM, and unlinked as soon as every rank has mapped it (`unlink()`), so that
 * nothing can open it afterwards. Only for sessions whose ranks all run on this host.
 */
export class ShmRelease {
  private linked = true;

  private constructor(readonly path: string) {}

  /**
   * Creates the file for `worldSize` ranks in `dir` (default /dev/shm).
   * @returns undefined when `dir` is missing or not writable (the ranks then use TCP releases)
   */
  static create(worldSize: number, dir = '/dev/shm'): ShmRelease | undefined {
    const file = path.join(dir, `commcost-barrier-${randomBytes(16).toString('hex')}`);
    let fd: number;
    try {
      fd = fs.openSync(file, fs.constants.O_RDWR | fs.constants.O_CREAT | fs.constants.O_EXCL | (fs.constants.O_NOFOLLOW ?? 0), 0o600);
    } catch {
      return undefined;
    }
    try {
      const header = Buffer.alloc(SHM_BARRIER_BYTES);
      header.writeUInt32LE(SHM_BARRIER_MAGIC, 0);
      header.writeUInt32LE(worldSize, 4);
      fs.writeSync(fd, header, 0, header.length, 0);
    } catch {
      fs.closeSync(fd);
      fs.rmSync(file, { force: true });
      return undefined;
    }
    fs.closeSync(fd);
    return new ShmRelease(file);
  }

  /** Removes the file's name (ranks keep their mappings). Idempotent. */
  unlink(): void {
    if (!this.linked) return;
    this.linked = false;
    fs.rmSync(this.path, { force: true });
  }
}
