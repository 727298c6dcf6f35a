/**
 * The TCP star barrier that starts every timed call (independent of NCCL).
 *
 * Wire format (little-endian), matching native/src's barrier client:
 *   rank → coordinator, "arrive": u32 magic 0x52424343 ('CCBR'), u32 rank, u64 generation
 *   coordinator → rank, "release": u64 generation
 * Generations count up from 1 on every rank identically (SPMD). When all `worldSize` ranks
 * have arrived for a generation, the release is written to every rank back to back; each rank
 * reads it on the worker thread that then takes t0 and makes the call.
 */
import * as net from 'node:net';

export const BARRIER_MAGIC = 0x52424343;
const ARRIVE_BYTES = 16;

export interface BarrierServerOptions {
  worldSize: number;
  host?: string;
  /** Called when a frame is malformed or a generation goes backwards. */
  onProtocolError?: (message: string) => void;
}

/** A barrier server for one rank session. Dispose with `close()`. */
export class BarrierServer {
  private readonly server: net.Server;
  private readonly sockets = new Map<number, net.Socket>();
  private readonly arrived = new Map<number, Set<number>>();
  /** Highest generation each rank has arrived at. */
  private readonly lastGen = new Map<number, number>();
  private releasedUpTo = 0;

  constructor(private readonly opts: BarrierServerOptions) {
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
    for (const s of this.sockets.values()) s.destroy();
    this.server.close();
  }

  private accept(socket: net.Socket): void {
    socket.setNoDelay(true);
    let buf = Buffer.alloc(0);
    socket.on('data', (chunk) => {
      buf = buf.length === 0 ? chunk : Buffer.concat([buf, chunk]);
      while (buf.length >= ARRIVE_BYTES) {
        const magic = buf.readUInt32LE(0);
        const rank = buf.readUInt32LE(4);
        const gen = Number(buf.readBigUInt64LE(8));
        buf = buf.subarray(ARRIVE_BYTES);
        if (magic !== BARRIER_MAGIC || rank >= this.opts.worldSize) {
          this.opts.onProtocolError?.(`barrier: bad frame (magic ${magic.toString(16)}, rank ${rank})`);
          socket.destroy();
          return;
        }
        this.sockets.set(rank, socket);
        this.arrive(rank, gen);
      }
    });
    socket.on('error', () => socket.destroy());
  }

  private arrive(rank: number, gen: number): void {
    if (gen <= (this.lastGen.get(rank) ?? 0)) {
      this.opts.onProtocolError?.(`barrier: rank ${rank} arrived at generation ${gen} after ${this.lastGen.get(rank)}`);
      return;
    }
    this.lastGen.set(rank, gen);
    let set = this.arrived.get(gen);
    if (!set) this.arrived.set(gen, (set = new Set()));
    set.add(rank);
    if (set.size < this.opts.worldSize) return;
    this.arrived.delete(gen);
    this.releasedUpTo = Math.max(this.releasedUpTo, gen);
    const release = Buffer.alloc(8);
    release.writeBigUInt64LE(BigInt(gen));
    for (const s of this.sockets.values()) s.write(release);
  }
}
