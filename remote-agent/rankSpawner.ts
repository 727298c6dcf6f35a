/**
 * Starts rank processes without blocking the event loop, several at once.
 *
 * Node's `child_process.spawn` is synchronous: libuv forks, then waits until the child has
 * exec'd (it reads a close-on-exec pipe to report exec errors). On a busy host that wait is the
 * child's scheduling latency — measured 35–750 ms per spawn at load 13 on 2 cores, growing as the
 * ranks already started take the CPU — so a loop of spawns starts the last rank long after the
 * first and blocks the coordinator's event loop (its control and barrier servers) meanwhile.
 * Here each spawn runs on one of a few worker threads (a small pool, warmed when a run or a node
 * starts and kept for the process's life): the forks and exec waits of different ranks overlap,
 * and the main thread only posts a message. The worker forwards the child's output and exit, and
 * kills it when told. Until a thread runs, spawns happen on the calling thread as before (a
 * thread still booting would delay the rank more than the wait it saves). A host with fewer than
 * 4 CPUs gets no threads (spawnThreadCount): there the threads only take CPU from the ranks.
 *
 * Invariants: what a rank process sees is unchanged (same file, arguments, environment, stdio);
 * a spawn that fails (no such file) is reported as an exit with code 127 after a line saying
 * why, like a spawn on the main thread; a handle's `kill` reaches its process even when it is
 * called before the worker has started it (messages to a worker are handled in order); a pool
 * with live children keeps the process alive, an idle one does not.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import * as os from 'node:os';
import { Worker } from 'node:worker_threads';
import type { RankCallbacks, RankHandle } from './rankHandle';

/** The worker's code (plain CommonJS, evaluated: the bundle needs no file of its own). */
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const { spawn } = require('node:child_process');
const children = new Map();
parentPort.on('message', (m) => {
  if (m.t === 'kill') {
    const c = children.get(m.id);
    if (c && c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
    return;
  }
  let child;
  try {
    child = spawn(m.file, m.args, { env: m.env, stdio: ['ignore', 'pipe', 'pipe'] });
  } catch (e) {
    parentPort.postMessage({ t: 'error', id: m.id, message: String(e && e.message || e), started: false });
    return;
  }
  children.set(m.id, child);
  const forward = (chunk) => parentPort.postMessage({ t: 'data', id: m.id, text: chunk.toString() });
  child.stdout.on('data', forward);
  child.stderr.on('data', forward);
  child.on('exit', (code, signal) => {
    children.delete(m.id);
    parentPort.postMessage({ t: 'exit', id: m.id, code, signal });
  });
  child.on('error', (e) => {
    if (child.pid === undefined) children.delete(m.id);
    parentPort.postMessage({ t: 'error', id: m.id, message: e.message, started: child.pid !== undefined });
  });
});
// Running: the spawning thread sees it at once, even in a loop of spawns (no event needed).
Atomics.store(workerData, 0, 1);
parentPort.postMessage({ t: 'ready' });
`;

type FromWorker =
  | { t: 'data'; id: number; text: string }
  | { t: 'exit'; id: number; code: number | null; signal: string | null }
  | { t: 'error'; id: number; message: string; started: boolean };

interface Pending {
  cb: RankCallbacks;
  finish(code: number | null, signal: string | null): void;
}

/** One worker thread and the rank processes it started that have not exited yet. */
class SpawnWorker {
  private readonly worker: Worker;
  private readonly live = new Map<number, Pending>();
  private broken: string | undefined;
  /** Set to 1 by the thread once it takes spawns (read without waiting for an event). */
  private readonly flag = new Int32Array(new SharedArrayBuffer(4));
  /** Resolves when the thread runs, or has failed to. */
  readonly started: Promise<void>;

  constructor(onBroken: (w: SpawnWorker) => void) {
    this.worker = new Worker(WORKER_SOURCE, { eval: true, workerData: this.flag });
    let started!: () => void;
    this.started = new Promise<void>((r) => (started = r));
    this.worker.on('message', (m: FromWorker | { t: 'ready' }) => {
      if (m.t !== 'ready') return this.onMessage(m);
      // Booted: from now on only live children keep the process alive (a booting thread does,
      // for the few ms it takes, so that awaiting warmSpawnThreads() cannot end the process).
      if (this.live.size === 0) this.worker.unref();
      started();
    });
    const lost = (why: string): void => {
      if (this.broken) return;
      this.broken = why;
      onBroken(this);
      // Its children cannot be watched any more: report each as ended (the rank session then
      // stops the others; a rank whose coordinator is gone exits on its own).
      for (const [, p] of this.live) {
        p.cb.onLine(`the thread that started this rank process ended (${why}): its exit cannot be watched`);
        p.finish(null, 'SPAWNER_LOST');
      }
      this.live.clear();
    };
    this.worker.on('error', (e) => lost(e.message));
    this.worker.on('exit', (code) => lost(`exit code ${code}`));
    this.worker.once('exit', () => started());
  }

  /** Rank processes started here and not yet exited. */
  get load(): number {
    return this.live.size;
  }

  get usable(): boolean {
    return this.broken === undefined;
  }

  /** True once the thread takes spawns (booting takes tens of ms, more on a busy host). */
  get online(): boolean {
    return Atomics.load(this.flag, 0) === 1;
  }

  start(id: number, file: string, args: string[], env: NodeJS.ProcessEnv, pending: Pending): void {
    this.live.set(id, pending);
    // A live child keeps the process alive (as a ChildProcess would).
    this.worker.ref();
    this.worker.postMessage({ t: 'spawn', id, file, args, env });
  }

  kill(id: number): void {
    if (this.live.has(id)) this.worker.postMessage({ t: 'kill', id });
  }

  private onMessage(m: FromWorker): void {
    const p = this.live.get(m.id);
    if (!p) return;
    if (m.t === 'data') {
      for (const line of m.text.split('\n')) if (line.trim()) p.cb.onLine(line);
    } else if (m.t === 'exit') {
      this.done(m.id);
      p.finish(m.code, m.signal);
    } else {
      p.cb.onLine(`cannot start a rank process: ${m.message}`);
      // A spawn failure (no such file) is followed by no 'exit': report it as one.
      if (!m.started) {
        this.done(m.id);
        p.finish(127, null);
      }
    }
  }

  private done(id: number): void {
    this.live.delete(id);
    if (this.live.size === 0) this.worker.unref();
  }
}

/**
 * How many worker threads start rank processes: one per CPU up to 8 on a host with at least 4
 * CPUs, none on a smaller one (measured on 2 cores: the threads' boot took CPU from the booting
 * ranks and process starts grew by 90–170 ms at 2–16 ranks; spawns stay on the calling thread
 * there). COMMCOST_SPAWN_THREADS (0–64) overrides it; read at each spawn.
 */
export function spawnThreadCount(env: NodeJS.ProcessEnv = process.env): number {
  return spawnThreads(env.COMMCOST_SPAWN_THREADS, typeof os.availableParallelism === 'function' ? os.availableParallelism() : os.cpus().length);
}

/** The pool's size for an override (unset or not 0–64: ignored) and a CPU count. */
export function spawnThreads(override: string | undefined, cpus: number): number {
  const n = Number(override);
  if (override !== undefined && override.trim() !== '' && Number.isInteger(n) && n >= 0 && n <= 64) return n;
  return cpus < 4 ? 0 : Math.min(8, cpus);
}

let pool: SpawnWorker[] = [];
let nextId = 0;

/** A new spawn thread, added to the pool (it leaves the pool if it ends). */
function addWorker(): SpawnWorker {
  const worker = new SpawnWorker((w) => (pool = pool.filter((x) => x !== w)));
  pool.push(worker);
  return worker;
}

/**
 * Starts the pool's threads now (a thread takes tens of ms to boot), so that they are running
 * when the first rank session spawns. Idle threads do not keep the process alive.
 * @returns a promise that resolves once every thread runs (or failed to start)
 */
export function warmSpawnThreads(): Promise<void> {
  const size = spawnThreadCount();
  while (pool.filter((w) => w.usable).length < size) addWorker();
  return Promise.all(pool.map((w) => w.started)).then(() => undefined);
}

/** How many spawn threads take spawns now (read at once, also inside a loop of spawns). */
export function spawnThreadsOnline(): number {
  return pool.filter((w) => w.usable && w.online).length;
}

/**
 * Starts `file args` with `env` (the whole environment, as given) without blocking this thread:
 * on the running spawn thread with the fewest live processes. While no spawn thread runs yet
 * (the first spawns of a process on a busy host), it spawns here, as Node does (the thread then
 * waits for the fork and exec): a booting thread would only delay the rank more. Its stdout and
 * stderr lines go to `cb.onLine`, its exit to `cb.onExit` (once; code 127 after a "cannot start a
 * rank process" line when the spawn itself failed).
 * @returns the process's handle at once, before the process exists when a thread starts it
 */
export function spawnRankProcess(file: string, args: string[], env: NodeJS.ProcessEnv, cb: RankCallbacks): RankHandle {
  if (pool.filter((w) => w.usable).length < spawnThreadCount()) void warmSpawnThreads();
  const running = pool.filter((w) => w.usable && w.online);
  if (running.length === 0) return spawnHere(file, args, env, cb);
  const worker = running.reduce((a, b) => (b.load < a.load ? b : a));
  const id = nextId++;
  let exited = false;
  let resolveDone!: () => void;
  const done = new Promise<void>((r) => (resolveDone = r));
  worker.start(id, file, args, env, {
    cb,
    finish: (code, signal) => {
      if (exited) return;
      exited = true;
      cb.onExit(code, signal);
      resolveDone();
    },
  });
  return {
    kill: () => {
      if (!exited) worker.kill(id);
    },
    get exited() {
      return exited;
    },
    done,
  };
}

/**
 * Starts `file args` on this thread (Node's spawn: it returns once the child has exec'd), with
 * the same callbacks and handle as {@link spawnRankProcess}. Exported for the tests.
 */
export function spawnHere(file: string, args: string[], env: NodeJS.ProcessEnv, cb: RankCallbacks): RankHandle {
  const child: ChildProcess = spawn(file, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let exited = false;
  const done = new Promise<void>((resolve) => {
    child.on('exit', (code, signal) => {
      exited = true;
      cb.onExit(code, signal);
      resolve();
    });
    // A spawn failure (no such file) is followed by no 'exit': report it as one.
    child.on('error', (e) => {
      cb.onLine(`cannot start a rank process: ${e.message}`);
      if (!exited && child.pid === undefined) {
        exited = true;
        cb.onExit(127, null);
        resolve();
      }
    });
  });
  const forward = (chunk: Buffer): void => {
    for (const line of chunk.toString().split('\n')) if (line.trim()) cb.onLine(line);
  };
  child.stdout?.on('data', forward);
  child.stderr?.on('data', forward);
  return {
    kill: () => {
      if (!exited && child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    },
    get exited() {
      return exited;
    },
    done,
  };
}
