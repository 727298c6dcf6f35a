/**
 * `node agent.js rank [flags]` under an external launcher (srun, mpirun, torchrun or plain
 * COMMCOST_RANK/COMMCOST_WORLD_SIZE): every process is one rank's node; rank 0 also hosts the
 * coordinator (plan, barrier, unique ids, hang guard) on a fixed port, writes the protocol
 * lines on its stdout and the same lines to a file. The other ranks write nothing on stdout
 * (launchers merge every task's stdout), only logs on stderr.
 *
 * Flags (util.parseArgs): --experiments a,b  --iterations N  --warmup N  --deadline S
 * --ranks-per-node is not a flag: the launcher decides. --nccl PATH  --simulate  --out FILE
 * --options JSON (a whole RunOptions; flags given next to it win). Also COMMCOST_OPTIONS (JSON).
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { parseArgs } from 'node:util';
import { PROTOCOL_VERSION, toLine, type AgentEvent, type ExperimentId, type RunOptions } from '../protocol/events';
import { COMMCOST_VERSION } from '../protocol/version';
import { Coordinator, loadLibrary, normalizeOptions, RunSetupError } from './coordinator';
import { launchIdentityFromEnv, type LaunchIdentity } from './launcher';
import { NodeHostError, runNodeHost } from './nodeHost';

type Log = (line: string) => void;

/**
 * Reads the run options of a launched run from flags, `--options` / COMMCOST_OPTIONS JSON and
 * defaults.
 * @throws RunSetupError BAD_COMMAND naming the flag and value.
 */
export function launchedOptions(argv: string[], env: NodeJS.ProcessEnv): { options: ReturnType<typeof normalizeOptions>; out?: string } {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      options: {
        experiments: { type: 'string' },
        iterations: { type: 'string' },
        warmup: { type: 'string' },
        deadline: { type: 'string' },
        nccl: { type: 'string' },
        simulate: { type: 'boolean' },
        out: { type: 'string' },
        options: { type: 'string' },
      },
      strict: true,
      allowPositionals: false,
    });
  } catch (e) {
    throw new RunSetupError('BAD_COMMAND', `agent.js rank: ${(e as Error).message}`, 'flags: --experiments a,b --iterations N --warmup N --deadline S --nccl PATH --simulate --out FILE --options JSON');
  }
  const v = parsed.values;
  if (v.nccl !== undefined && v.simulate) {
    throw new RunSetupError('BAD_COMMAND', '--nccl and --simulate conflict: --simulate runs on the simulated NCCL, so no NCCL path is used', 'give one of them');
  }
  let base: Partial<RunOptions> = {};
  const json = v.options ?? env.COMMCOST_OPTIONS;
  if (json) {
    try {
      base = JSON.parse(json) as Partial<RunOptions>;
    } catch (e) {
      throw new RunSetupError('BAD_COMMAND', `${v.options ? '--options' : 'COMMCOST_OPTIONS'} is not JSON: ${(e as Error).message}`, 'give a RunOptions object, e.g. {"experiments":["init"],"iterations":10}');
    }
    if (typeof base !== 'object' || base === null || Array.isArray(base)) throw new RunSetupError('BAD_COMMAND', 'the run options must be a JSON object', 'e.g. {"experiments":["init"]}');
  }
  const num = (name: string, raw: string | undefined): number | undefined => {
    if (raw === undefined) return undefined;
    const n = Number(raw);
    if (raw.trim() === '' || !Number.isFinite(n)) throw new RunSetupError('BAD_COMMAND', `--${name} ${JSON.stringify(raw)} is not a number`, `give --${name} a number`);
    return n;
  };
  const options = normalizeOptions({
    ...base,
    ...(v.experiments !== undefined ? { experiments: v.experiments.split(',').map((e) => e.trim()) as ExperimentId[] } : {}),
    ...(v.iterations !== undefined ? { iterations: num('iterations', v.iterations) } : {}),
    ...(v.warmup !== undefined ? { warmup: num('warmup', v.warmup) } : {}),
    ...(v.deadline !== undefined ? { deadlineSeconds: num('deadline', v.deadline) } : {}),
    ...(v.nccl !== undefined ? { ncclPath: v.nccl } : {}),
    ...(v.simulate ? { simulate: true } : {}),
  });
  // The launcher decides how many ranks there are.
  delete options.ranks;
  return { options, ...(v.out ? { out: v.out } : {}) };
}

/** `2026-11-29T21:53:18.123Z` → `20261129T215318Z`: a time for file names (UTC). */
export function fileStamp(now: Date): string {
  return now.toISOString().replace(/[-:]/g, '').replace(/\.\d+Z$/, 'Z');
}

/** Where rank 0 writes the run's protocol lines by default: `./commcost-<time>-<host>-<pid>.jsonl`. */
export function defaultOutFile(now = new Date(), host = os.hostname(), pid = process.pid): string {
  return path.resolve(`commcost-${fileStamp(now)}-${host.replace(/[^A-Za-z0-9._-]/g, '_')}-${pid}.jsonl`);
}

/**
 * One launched process. @returns the exit code: 0 when the run completed (rank 0) or this
 * node served it to the end; 1 when it ended partial or failed, or this node could not join.
 * @throws LaunchEnvError / RunSetupError on bad variables or flags (before anything runs).
 */
export async function launchedMain(argv: string[], env: NodeJS.ProcessEnv, log: Log): Promise<number> {
  const id = launchIdentityFromEnv(env);
  const { options, out } = launchedOptions(argv, env);
  if (options.simulate && env.COMMCOST_SIM_GPUS === undefined) {
    // The simulated host shows one "GPU" per process of this node.
    process.env.COMMCOST_SIM_GPUS = String(id.localWorldSize ?? id.worldSize);
  }
  log(`commcost: rank ${id.rank} of ${id.worldSize} (${id.launcher}), coordinator ${id.coordinatorAddress}:${id.coordinatorPort} (${id.portSource})`);
  if (id.rank === 0 && id.token === '') {
    log('commcost: warning: no token (COMMCOST_TOKEN, or the job id of Slurm, torchrun or Open MPI): any process that reaches the port may join this run; set COMMCOST_TOKEN to the same random value for every rank (SECURITY.md)');
  }
  return id.rank === 0 ? coordinate(id, options, out ?? defaultOutFile(), log) : serve(id, options, log);
}

/** The device this process drives: the only one it sees, else its local rank's. */
function deviceFor(id: LaunchIdentity, count: number): number {
  if (count === 1) return 0;
  if (id.localRank >= count) {
    throw new RunSetupError('NO_GPU', `local rank ${id.localRank} on ${os.hostname()} but only ${count} GPUs visible`, 'start at most one process per GPU on each node (e.g. srun --ntasks-per-node=<GPUs>)');
  }
  return id.localRank;
}

async function coordinate(id: LaunchIdentity, options: ReturnType<typeof normalizeOptions>, outFile: string, log: Log): Promise<number> {
  // Every line goes to the file first (synchronously: a crash loses nothing already measured).
  let fd: number;
  try {
    // One run per file: never append to (or mix into) an earlier run.
    fd = fs.openSync(outFile, 'wx');
  } catch (e) {
    const exists = (e as NodeJS.ErrnoException).code === 'EEXIST';
    throw new RunSetupError(
      'BAD_COMMAND',
      exists ? `${outFile} (--out) already exists: one file holds one run` : `cannot write the run to ${outFile} (--out): ${(e as Error).message}`,
      exists ? 'give --out a new file name, or move the old one away' : 'give --out a file in a folder that exists and is writable',
    );
  }
  log(`commcost: writing the run to ${outFile}`);
  let status = 'failed';
  // A closed stdout (a pipe into `head`, a launcher gone) must not cost the run: the file goes on.
  let stdoutOpen = true;
  process.stdout.on('error', () => (stdoutOpen = false));
  const emit = (ev: AgentEvent): void => {
    const line = toLine(ev.type === 'run/listening' ? { ...ev, token: '' } : ev);
    fs.writeSync(fd, line);
    if (stdoutOpen) process.stdout.write(line);
    if (ev.type === 'run/done') status = ev.status;
  };
  emit({ type: 'agent/hello', protocolVersion: PROTOCOL_VERSION, agentVersion: COMMCOST_VERSION, pid: process.pid });
  let device = 0;
  try {
    const { native } = loadLibrary(options);
    device = deviceFor(id, native.deviceCount());
  } catch (e) {
    // The coordinator reports load failures itself, as a run/error and run/done.
    if (!(e instanceof RunSetupError)) throw e;
  }
  const coordinator = new Coordinator(emit, log, { kind: 'launched', worldSize: id.worldSize, port: id.coordinatorPort, token: id.token, device });
  const stop = (sig: string): void => coordinator.cancel(`received ${sig}`);
  for (const sig of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const) process.on(sig, () => stop(sig));
  await coordinator.run(options);
  fs.closeSync(fd);
  if (stdoutOpen) await new Promise<void>((r) => process.stdout.write('', () => r()));
  return status === 'complete' ? 0 : 1;
}

async function serve(id: LaunchIdentity, options: ReturnType<typeof normalizeOptions>, log: Log): Promise<number> {
  let device: number;
  let hello;
  try {
    const { native, info } = loadLibrary(options);
    device = deviceFor(id, native.deviceCount());
    hello = { fixedRank: id.rank, worldSize: id.worldSize, slots: 1, devices: [device], gpus: [native.deviceInfo(device).name], ncclVersion: info.ncclVersion, simulated: info.simulated };
  } catch (e) {
    log(`commcost: rank ${id.rank} cannot take part: ${(e as Error).message}${e instanceof RunSetupError && e.hint ? ` (${e.hint})` : ''}`);
    return 1;
  }
  // A launcher's SIGTERM ends this node; its rank process dies with the connection.
  for (const sig of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const) process.on(sig, () => process.exit(1));
  try {
    const ended = await runNodeHost({
      addresses: [id.coordinatorAddress],
      port: id.coordinatorPort,
      token: id.token,
      connectDeadlineMs: options.deadlineSeconds * 1000,
      coordinatorName: 'rank 0 (the coordinator)',
      log,
      hello,
      onJoined: (a) => log(`commcost: rank ${id.rank} joined the coordinator at ${a}:${id.coordinatorPort}`),
    });
    if (ended !== 'complete') log(`commcost: rank ${id.rank}: the run ended ${ended === 'lost' ? 'without word from the coordinator (it died, or the link was cut)' : ended}`);
    // The launcher's exit status tells the truth: 0 only when the run completed.
    return ended === 'complete' ? 0 : 1;
  } catch (e) {
    if (!(e instanceof NodeHostError)) throw e;
    log(`commcost: rank ${id.rank}: ${e.message}`);
    return 1;
  }
}
