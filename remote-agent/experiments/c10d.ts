/**
 * c10d: PyTorch's process-group lifecycle with the host's Python and torch, timed by commcost's
 * method. Each rank process starts the driver (remote-agent/c10d/driverSource.ts, shipped inside
 * the agent bundle) as its own child: the driver takes the same TCP barrier with the rank's
 * generations, and reports each iteration's durations, which the rank records as its own.
 *
 * Variants (each feature-detected on the host's torch; skipped with the reason otherwise):
 * `init/lazy` and `init/eager` (init_process_group without / with device_id, + first and second
 * all_reduce, + destroy_process_group), `new_group/lazy-default` and `new_group/eager-default`
 * (new_group over all ranks on a lazy / eager default group, + first and second all_reduce),
 * `split_group`, `shrink_group` (drops the last rank, which destroys its group meanwhile: torch's
 * shrink_group also releases the parent, and that waits for every member), `abort` (the default group
 * aborted after its first collective).
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import type { StepPlan, VariantPlan } from '../../protocol/events';
import { onLines } from '../lineChannel';
import { needsRanks, versionCode, type ExperimentModule, type PlanContext, type RankContext } from './experiment';
import { DRIVER_SOURCE } from '../c10d/driverSource';
import { applicationEnv, hostPython } from '../environment';
import { checkPrivateDir, makePrivateDir, PrivateDirError, SESSION_DIR_ENV, SESSION_DIR_ERROR_ENV } from '../privateDir';

/** What the host's torch supports, from the driver's probe. */
export interface TorchProbe {
  torch?: string;
  ncclVersion?: string | null;
  features?: Record<string, boolean>;
  error?: string;
  /** Set by the agent when the Python itself was not found (ENOENT): no such file, or not on PATH. */
  notFound?: boolean;
  /** Set by the agent when the driver could not be written (no private temp folder): `error` says why. */
  driverNotWritten?: boolean;
}

/** The driver written out for one use: its file, in a private folder of its own. */
export interface DriverFile {
  /** The driver's absolute path: `<private folder>/driver.py`, mode 0600. */
  readonly file: string;
  /** The private folder it is in (mode 0700, owned by this user, made by this process). */
  readonly dir: string;
  /** Removes the folder and the driver. Idempotent; never throws. */
  remove(): void;
}

/**
 * Writes the driver (DRIVER_SOURCE) into a new private folder of this process
 * (`<temp>/commcost-c10d-XXXXXX/driver.py`; remote-agent/privateDir.ts): a folder made just now
 * with mode 0700 and checked, a file created new (O_EXCL, O_NOFOLLOW, mode 0600). Nothing
 * already in the shared temp folder is ever run. The caller removes it when done.
 * @param parent where the private folder is made (default: the system temp folder)
 * @throws PrivateDirError when no private folder can be made or written
 */
export function writeDriver(parent?: string): DriverFile {
  const dir = makePrivateDir('commcost-c10d-', parent);
  try {
    const file = dir.writeFile('driver.py', DRIVER_SOURCE);
    return { file, dir: dir.path, remove: () => dir.remove() };
  } catch (e) {
    dir.remove();
    throw e;
  }
}

/**
 * Runs the probe with `python` (imports torch: seconds; 60 s deadline). Never throws.
 * @param python the Python to probe (default: {@link hostPython} without an option).
 * @returns what torch supports, or `error`: the first line of why the probe failed.
 */
export function probeTorch(python: string = hostPython()): TorchProbe {
  let driver: DriverFile;
  try {
    driver = writeDriver();
  } catch (e) {
    return { error: (e as Error).message, driverNotWritten: true };
  }
  try {
    const out = execFileSync(python, [driver.file, 'probe'], { timeout: 60000, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
    return JSON.parse(out.trim().split('\n').pop() ?? '{}') as TorchProbe;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return { error: `${python} was not found (no such file, or not on PATH)`, notFound: true };
    return { error: e instanceof Error ? e.message.split('\n')[0] : String(e) };
  } finally {
    driver.remove();
  }
}

/**
 * Why c10d is skipped when the probe of `python` failed (`probe.error` set): names that Python,
 * the host, and how to choose another.
 */
export function probeFailureReason(python: string, probe: TorchProbe, host: string = os.hostname()): string {
  if (probe.driverNotWritten) return `the c10d driver could not be written on ${host}: ${probe.error}`;
  const what = probe.notFound ? `was not found on ${host} (no such file, or not on PATH)` : `cannot import torch on ${host}: ${probe.error}`;
  return `the Python ${python} ${what}; give the Python that has torch with --python / commcost.python (or COMMCOST_PYTHON)`;
}

const creation = (label: string): StepPlan[] => [
  { step: 'call', label, kind: 'call' },
  { step: 'first', label: 'first all_reduce', kind: 'first' },
  { step: 'total', label: `${label} to first collective`, kind: 'toFirst', sumOf: ['call', 'first'] },
  { step: 'second', label: 'second all_reduce', kind: 'steady' },
];

/** The variants this torch can run, and the ones it cannot, with why. */
export function c10dVariants(ctx: PlanContext, probe: TorchProbe): { variants: VariantPlan[]; skipped: { variant: string; reason: string }[] } {
  const f = probe.features ?? {};
  const torchCode = versionCode(probe.torch?.split('+')[0] ?? '0');
  const ncclCode = versionCode(probe.ncclVersion ?? '0');
  const variants: VariantPlan[] = [];
  const skipped: { variant: string; reason: string }[] = [];
  const add = (variant: string, steps: StepPlan[], reason?: string): void => {
    if (reason) skipped.push({ variant, reason });
    else variants.push({ variant, steps });
  };
  const noDeviceId = f.device_id ? undefined : `torch ${probe.torch} has no init_process_group(device_id=…) (needs torch ≥ 2.3)`;
  add('init/lazy', [...creation('init_process_group (lazy)'), { step: 'destroy', label: 'destroy_process_group', kind: 'teardown' }]);
  add('init/eager', [...creation('init_process_group (device_id)'), { step: 'destroy', label: 'destroy_process_group', kind: 'teardown' }], noDeviceId);
  add('new_group/lazy-default', creation('new_group'));
  add('new_group/eager-default', creation('new_group'), noDeviceId);
  add('split_group', creation('split_group'), f.split_group ? noDeviceId : `torch ${probe.torch} has no split_group (needs torch ≥ 2.5)`);
  const shrinkReason = !f.shrink_group
    ? `torch ${probe.torch} has no shrink_group (needs torch ≥ 2.10)`
    : torchCode < versionCode('2.10.0')
      ? `shrink_group needs torch ≥ 2.10, host has ${probe.torch}`
      : ncclCode < versionCode('2.27.0')
        ? `shrink_group needs NCCL ≥ 2.27, torch uses ${probe.ncclVersion}`
        : (needsRanks(ctx, 2) ?? noDeviceId);
  add('shrink_group', creation('shrink_group (includes releasing the parent group)').slice(0, 3), shrinkReason);
  add('abort', [{ step: 'abort', label: 'abort the default process group', kind: 'teardown' }], f.abort ? noDeviceId : `torch ${probe.torch} has neither _abort_process_group nor ProcessGroup.abort`);
  return { variants, skipped };
}

interface DriverState {
  child: ChildProcess;
  next(): Promise<Record<string, unknown>>;
  /** The driver file this rank wrote, removed at teardown (and at the process's exit). */
  driver: DriverFile;
}

/**
 * The folder of the session's torch FileStores, shared by the session's ranks on this host: the
 * private folder the coordinator made for the session (COMMCOST_SESSION_DIR; coordinator.ts
 * `runSession`, {@link ExperimentModule.sessionDir}), checked here (a real folder, ours, mode 0700).
 * @param env the rank's environment
 * @returns the folder's absolute path
 * @throws PrivateDirError when there is none, or it is not private (nothing is then written in it)
 */
export function c10dStoreDir(env: NodeJS.ProcessEnv): string {
  const dir = env[SESSION_DIR_ENV];
  if (!dir) {
    const why = env[SESSION_DIR_ERROR_ENV];
    throw new PrivateDirError(`c10d needs a private folder for its store, and the agent made none${why ? `: ${why}` : ''}`);
  }
  if (!fs.existsSync(dir)) {
    throw new PrivateDirError(`c10d's store folder ${dir} (made by the coordinating agent) is not on ${os.hostname()}: c10d over several hosts needs the temp folder on a file system every host shares (TMPDIR)`);
  }
  checkPrivateDir(dir, `c10d's store folder ${dir}`);
  return dir;
}

/** Starts the driver for `variant` as this rank; resolves once its default group is ready. */
async function startDriver(rc: RankContext, variant: string): Promise<DriverState> {
  const storeDir = c10dStoreDir(process.env);
  // This rank's own copy of the driver, in a folder it has just made: never a file already there.
  // (Removed at teardown; makePrivateDir removes it at this process's exit otherwise.)
  const driver = writeDriver();
  const child = spawn(hostPython(rc.options.python), [driver.file, variant], {
    env: {
      // The driver is a torch application: it runs with the agent's environment, not the rank's method variables.
      ...applicationEnv(process.env),
      RANK: String(rc.rank),
      WORLD_SIZE: String(rc.worldSize),
      LOCAL_RANK: String(rc.rank),
      COMMCOST_BARRIER: rc.barrierAddress,
      // The barrier's hello proves the rank session's secret, as the rank's own connection does.
      COMMCOST_BARRIER_TOKEN: process.env.COMMCOST_SESSION_TOKEN ?? '',
      COMMCOST_C10D_STORE_DIR: storeDir,
      COMMCOST_FIRST_BYTES: String(rc.options.firstCollectiveBytes),
      PYTHONUNBUFFERED: '1',
    },
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  // The driver never outlives its rank process (it also exits when its stdin closes).
  process.once('exit', () => child.kill('SIGKILL'));
  const queue: Record<string, unknown>[] = [];
  const waiters: ((m: Record<string, unknown>) => void)[] = [];
  let exited: string | undefined;
  const deliver = (m: Record<string, unknown>): void => {
    const w = waiters.shift();
    if (w) w(m);
    else queue.push(m);
  };
  onLines(child.stdout!, (line) => {
    let m: Record<string, unknown>;
    try {
      m = JSON.parse(line) as Record<string, unknown>;
    } catch {
      process.stderr.write(`c10d driver: ${line}\n`);
      return;
    }
    if (m.t === 'begin') rc.beginExternal(String(m.op));
    else if (m.t === 'end') rc.endExternal(String(m.op));
    else deliver(m);
  });
  // 'close', not 'exit': only then has every line the driver wrote (its error, its "bye") been read.
  child.on('close', (code, signal) => {
    if (exited) return;
    exited = `the c10d driver exited (${signal ?? `code ${code}`})`;
    deliver({ t: 'error', message: exited });
  });
  // A Python that does not start (e.g. missing on this node) ends the variant instead of hanging it.
  child.on('error', (e) => {
    if (exited) return;
    exited = `the c10d driver did not start with ${hostPython(rc.options.python)}: ${e.message}`;
    deliver({ t: 'error', message: exited });
  });
  const next = (): Promise<Record<string, unknown>> =>
    new Promise((resolve, reject) => {
      const m = queue.shift();
      const settle = (msg: Record<string, unknown>): void => (msg.t === 'error' ? reject(new Error(`c10d ${variant}: ${String(msg.message)}`)) : resolve(msg));
      if (m) settle(m);
      else if (exited) reject(new Error(exited));
      else waiters.push(settle);
    });
  try {
    await next(); // ready
  } catch (e) {
    driver.remove();
    throw e;
  }
  return { child, next, driver };
}

/** True when `python` does not start on this host (no such file, or not on PATH); ≤ 5 s. */
export function pythonMissing(python: string): boolean {
  try {
    execFileSync(python, ['-c', 'pass'], { timeout: 5000, stdio: 'ignore' });
    return false;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'ENOENT';
  }
}

/** The last probe, with the Python it asked (a run with another Python probes again). */
let probed: { python: string; probe: TorchProbe } | undefined;
let skippedVariants: { variant: string; reason: string }[] = [];

export const c10dExperiment: ExperimentModule<DriverState> = {
  id: 'c10d',
  plan(ctx) {
    if (ctx.options.simulate) {
      // The Python asked for is still checked (without importing torch), so a wrong --python is found before the GPU run.
      const asked = ctx.options.python;
      const missing = asked && pythonMissing(asked) ? `; also, ${probeFailureReason(asked, { error: 'not found', notFound: true })}` : '';
      return { skip: `c10d runs torch with its own NCCL on real GPUs: not with the simulated NCCL${missing}` };
    }
    const python = hostPython(ctx.options.python);
    if (probed?.python !== python) probed = { python, probe: probeTorch(python) };
    const probe = probed.probe;
    if (probe.error) return { skip: probeFailureReason(python, probe) };
    if (!probe.features?.nccl || !probe.features.cuda) return { skip: `torch ${probe.torch} (${python}) has no NCCL backend or no CUDA` };
    const { variants, skipped } = c10dVariants(ctx, probe);
    if (variants.length === 0) return { skip: skipped.map((s) => `${s.variant}: ${s.reason}`).join('; ') };
    skippedVariants = skipped;
    return variants;
  },
  sessionDir: true,
  variantEnv() {
    // Every variant in rank processes of its own (torch's default group is per process); no
    // variables beyond the run's.
    return {};
  },
  skippedVariants() {
    return skippedVariants;
  },
  async setup(rc, variant) {
    return rc.untimed(`c10d driver start (${variant})`, () => startDriver(rc, variant));
  },
  async iteration(rc, _variant, state) {
    state.child.stdin!.write(JSON.stringify({ cmd: 'iteration', gen: rc.nextGeneration }) + '\n');
    const report = await state.next();
    const steps = report.steps as Record<string, number>;
    for (const [step, ms] of Object.entries(steps)) rc.record(step, ms);
    for (const [point, bytes] of Object.entries((report.memory ?? {}) as Record<string, number>)) rc.recordMemory(point, bytes);
    rc.advanceGenerations(Number(report.gen));
  },
  async teardown(_rc, _variant, state) {
    state.child.stdin!.write(JSON.stringify({ cmd: 'exit' }) + '\n');
    await state.next().catch(() => undefined);
    state.child.stdin!.end();
    state.driver.remove();
  },
};
