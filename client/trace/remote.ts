/**
 * `commcost trace --host H`: the user's own job traced on an SSH host. No `vscode` import.
 *
 * 1. Connects (client/sshSession.ts: known_hosts, ssh-agent, ProxyJump), and in one round trip
 *    reads the host's architecture (`uname -m`), its home, the working folder (`--cwd`, default
 *    the remote home) and the few variables the trace environment builds on (PYTHONPATH,
 *    LD_LIBRARY_PATH, LD_PRELOAD, NCCL_PROFILER_PLUGIN, NCCL_DEBUG, NCCL_DEBUG_FILE) as the
 *    job's non-interactive SSH shell has them.
 * 2. Deploys the agent payload (client/deploy.ts: `~/.cache/commcost/<content hash>/`, only
 *    missing or different files are sent, so a second trace uploads nothing); it holds the
 *    profiler plugin and the interposer per architecture, the simulated NCCL and the Python hook.
 * 3. Runs the command there through a fixed `sh -c` wrapper: every word (the variables of the
 *    same {@link traceEnv} / {@link ncclLogEnv} / {@link interposerEnv} as a local trace, the
 *    folder, the command) is a positional argument quoted by shellQuote.ts, never shell text. The
 *    wrapper cds, exports the variables, checks the program is found, writes its pid (= the job's
 *    process group: it runs as a session leader, through `setsid` when sshd did not make it one)
 *    and execs the command. Output is streamed as it comes; the deadline and Ctrl-C signal the
 *    job's whole process group over a second channel: a cancel sends its signal once (SIGKILL
 *    `killAfterMs` later; never for the CLI), the deadline and a forced stop SIGTERM then SIGKILL 5 s later.
 * 4. The records folder is `~/.cache/commcost/trace-<this host>-<pid>-XXXXXX/records` on the host (the home, not
 *    /tmp: a cluster's nodes share it, so ranks started on other nodes by srun or mpirun write
 *    where the records are read); it is removed once read. It holds `owner.json` (this machine's
 *    commcost pid, the command, the planned trace file), so that the next `--host` trace from here
 *    brings back the records a killed trace left there (remoteLeftovers.ts).
 *    Downloads the per-process records and NCCL's log files (SFTP), symbolises native frames with
 *    the host's `addr2line`, merges exactly as a local trace (merge.ts) and saves the trace file
 *    locally; the file's `host` is the SSH host.
 */
import { existsSync, mkdirSync } from 'node:fs';
import { hostname } from 'node:os';
import { dirname, join, posix, resolve } from 'node:path';
import type { ClientChannel } from 'ssh2';
import { CommcostError, errorText } from '../errors';
import { collectPayload, deployAgent } from '../deploy';
import { resolveTarget } from '../hosts';
import { linkedCommcostDirProblem, writeFileSafely } from '../safeWrite';
import { SshSession, type HostKeyPolicy } from '../sshSession';
import { interposerEnv, ncclLogEnv, rayForwardEnv } from './jobEnv';
import { KILL_GRACE_MS } from './localJob';
import { mergeTrace, type NativeFrame, type RecordFile, type SourceLocation, type Symbolizer } from './merge';
import { processStart } from './leftovers';
import { downloadRecords, recoverRemoteLeftovers, writeRemoteOwner } from './remoteLeftovers';
import { checkTraceOut, defaultTraceFile, runTrace, traceEnv, type TraceRunOptions, type TraceRunResult } from './run';

/** The variables of the host's environment the trace environment builds on (prepends to, chains, or leaves alone). */
export const REMOTE_ENV_KEYS = ['PYTHONPATH', 'LD_LIBRARY_PATH', 'LD_PRELOAD', 'NCCL_PROFILER_PLUGIN', 'NCCL_DEBUG', 'NCCL_DEBUG_FILE'] as const;

/** What {@link runRemoteTrace} runs and where. */
export interface RemoteTraceOptions extends Omit<TraceRunOptions, 'cwd' | 'env' | 'processGroup'> {
  /** localhost, an alias of ~/.ssh/config or user@host[:port]. `localhost` runs the local engine. */
  host: string;
  /** The local folder: the trace is saved in `<localCwd>/.commcost/traces/` unless `out`. */
  localCwd: string;
  /** The job's folder on the host (absolute, or relative to the remote home); default the remote home. */
  remoteCwd?: string;
  sshConfigPath?: string;
  knownHostsPath?: string;
  /** Trust and record an unknown host key (a changed key is always refused). */
  hostKeyPolicy?: HostKeyPolicy;
  /** ssh-agent socket ('' = none; tests). */
  agentSocket?: string;
  /** Our own progress lines (connect, deploy, where the job runs). */
  log?: (line: string) => void;
}

/** What {@link runRemoteTrace} did: the local engine's result plus the remote facts. */
export interface RemoteTraceResult extends TraceRunResult {
  /** Payload files uploaded this time (empty when the host already had them all). */
  uploaded: string[];
  /** The folder the job ran in on the host (absolute). */
  remoteCwd: string;
}

/** `uname -m` → the build's architecture name (`x64`, `arm64`), or null for one commcost does not build for. */
export function archOfUname(machine: string): 'x64' | 'arm64' | null {
  const m = machine.trim();
  if (m === 'x86_64' || m === 'amd64') return 'x64';
  if (m === 'aarch64' || m === 'arm64') return 'arm64';
  return null;
}

/** The deployed files a trace uses on the host, absolute remote paths. */
export interface RemoteArtifacts { plugin: string; hookDir: string; sim: string; interposer: string }

/**
 * The remote paths of the plugin, hook, simulated NCCL and interposer for `arch`, checked against
 * the payload's file list (rel paths).
 * @throws CommcostError BAD_INPUT naming the missing file, the host's architecture and what to do
 */
export function remoteArtifacts(rels: readonly string[], remoteDir: string, arch: string, host: string, need: { simulate: boolean; interpose: boolean }): RemoteArtifacts {
  const has = new Set(rels);
  const rel = { plugin: `native/linux-${arch}/libcommcost-profiler.so`, hook: 'native/pyhook/sitecustomize.py', sim: `native/linux-${arch}/libnccl-sim.so`, interposer: `native/linux-${arch}/libcommcost-interposer.so` };
  const check = (r: string, what: string) => {
    if (!has.has(r))
      throw new CommcostError('BAD_INPUT', `commcost trace --host ${host}: no ${what} for the host's architecture (linux-${arch}) in this commcost (${r} is not in its dist/)`, {
        where: { host }, hint: `build it for linux-${arch}: node native/build.mjs (cross-builds x64 and arm64 when the cross compiler is installed), or reinstall a commcost built for ${arch}`,
      });
  };
  check(rel.plugin, 'profiler plugin (libcommcost-profiler.so)');
  check(rel.hook, 'Python hook (sitecustomize.py)');
  if (need.simulate) check(rel.sim, 'simulated NCCL (libnccl-sim.so)');
  if (need.interpose) check(rel.interposer, 'interposer (libcommcost-interposer.so)');
  const at = (r: string) => posix.join(remoteDir, r);
  return { plugin: at(rel.plugin), hookDir: posix.dirname(at(rel.hook)), sim: at(rel.sim), interposer: at(rel.interposer) };
}

/**
 * The variables to set for the job on the host: the same rules as a local trace (traceEnv,
 * ncclLogEnv, interposerEnv) applied to the host's own values, keeping only those that change.
 * @param remote the host's values of {@link REMOTE_ENV_KEYS} (absent = unset)
 * @param tmp the trace's remote temp folder (records in `<tmp>/records`, the simulated NCCL links in `<tmp>/simlib`)
 * @returns `[name, value]` pairs, and why NCCL's log was not asked for (when it was not)
 */
export function remoteJobEnv(remote: Record<string, string>, tmp: string, art: RemoteArtifacts, o: { simulate: boolean; interpose: boolean; ncclLog: boolean }): { vars: [string, string][]; ncclLogSkipped?: string } {
  const dataDir = posix.join(tmp, 'records');
  const env = traceEnv(remote, dataDir, art, o.simulate ? posix.join(tmp, 'simlib') : undefined);
  const log = ncclLogEnv(remote, dataDir, o.ncclLog);
  Object.assign(env, log.add);
  if (o.interpose) Object.assign(env, interposerEnv(remote, art.interposer));
  env.COMMCOST_TRACE_RAY = rayForwardEnv(remote, env);
  const vars = Object.entries(env).filter((e): e is [string, string] => e[1] !== undefined && e[1] !== remote[e[0]]).sort((a, b) => (a[0] < b[0] ? -1 : 1));
  return { vars, ...(log.skipped ? { ncclLogSkipped: log.skipped } : {}) };
}

/**
 * The wrapper that starts the job (fixed text; every value is a positional argument):
 * `$1` status file, `$2` folder, then `NAME=VALUE` words up to `--`, then the command.
 * Writes `cwd` or `notfound` to the status file when it cannot start the job (exit 126 / 127),
 * else `pid <n>`: the job's pid and process group.
 */
export const WRAPPER = [
  'st=$1; cd "$2" 2>/dev/null || { printf cwd > "$st"; exit 126; }; shift 2',
  'while [ "$#" -gt 0 ] && [ "$1" != -- ]; do export "$1"; shift; done; shift',
  'command -v "$1" >/dev/null 2>&1 || { printf notfound > "$st"; exit 127; }',
  'printf "pid %s\\n" "$$" > "$st"',
  'pg=; read -r _ _ _ _ pg _ < /proc/$$/stat 2>/dev/null',
  'if [ "$pg" = "$$" ]; then exec "$@"; else exec setsid "$@"; fi',
].join('\n');

/** The argv of the job on the host: `sh -c WRAPPER sh <status> <cwd> NAME=VALUE… -- command…` (quoted by SshSession.exec). */
export function wrappedCommand(status: string, cwd: string, vars: readonly [string, string][], command: readonly string[]): string[] {
  return ['sh', '-c', WRAPPER, 'sh', status, cwd, ...vars.map(([k, v]) => `${k}=${v}`), '--', ...command];
}

/** The host's facts read in one round trip, and the trace's temp folder made there (empty when it could not be). */
interface Probe { arch: string; home: string; cwd: string | null; tmp: string; env: Record<string, string> }

/**
 * One round trip (each exec pays the host's session start-up): the architecture, the home, the
 * job's folder resolved, the variables of {@link REMOTE_ENV_KEYS}, and a temp folder with
 * `records/` and, for `simHash`, `simlib/` links to the simulated NCCL the deploy puts at
 * `~/.cache/commcost/<hash>/native/linux-<arch>/libnccl-sim.so`.
 */
async function probe(session: SshSession, cwd: string | undefined, simHash: string, owner: string): Promise<Probe> {
  const host = session.target.name;
  const script = [
    'printf "@@commcost-probe\\n"; uname -m; printf "%s\\n" "$HOME"; (cd "$1" 2>/dev/null && pwd -P) || echo',
    'case $(uname -m) in x86_64|amd64) a=x64;; aarch64|arm64) a=arm64;; *) a=;; esac',
    // Under the home, not /tmp: on a cluster the home is shared by the nodes, so ranks that srun or
    // mpirun start on other nodes write their records where they are read.
    // Named after this machine and this process (trace-<host>-<pid>-XXXXXX), so that a folder left by a killed trace can be told apart and cleaned.
    't=$(mkdir -p "$HOME/.cache/commcost" && mktemp -d "$HOME/.cache/commcost/trace-$3-XXXXXX" 2>/dev/null) && mkdir "$t/records" || t=',
    'if [ -n "$2" ] && [ -n "$t" ] && [ -n "$a" ]; then mkdir "$t/simlib"; for n in libnccl.so.2 libnccl.so libcuda.so.1 libcuda.so; do ln -s "$HOME/.cache/commcost/$2/native/linux-$a/libnccl-sim.so" "$t/simlib/$n"; done; fi',
    'printf "%s\\n" "$t"; shift 3; for v in "$@"; do if x=$(printenv "$v"); then printf "%s=%s\\0" "$v" "$x"; fi; done',
  ].join('\n');
  const r = await session.run(['sh', '-c', script, 'sh', cwd ?? '.', simHash, owner, ...REMOTE_ENV_KEYS]);
  // What a login shell's startup files print before the script (a banner) is skipped.
  const from = r.stdout.indexOf('@@commcost-probe\n');
  const [arch = '', home = '', dir = '', tmp = '', ...rest] = (from >= 0 ? r.stdout.slice(from + 17) : '').split('\n');
  if (r.code !== 0 || !home.startsWith('/'))
    throw new CommcostError('SSH_FAILED', `commcost trace --host ${host}: cannot read the host's architecture and home: ${r.stderr.trim() || `exit ${String(r.code)}`}`, { where: { host }, hint: 'check that a POSIX sh and uname run there (ssh HOST uname -m)' });
  const env: Record<string, string> = {};
  for (const kv of rest.join('\n').split('\0')) {
    const i = kv.indexOf('=');
    if (i > 0) env[kv.slice(0, i)] = kv.slice(i + 1);
  }
  return { arch: arch.trim(), home, cwd: dir.startsWith('/') ? dir : null, tmp: tmp.startsWith('/') ? tmp : '', env };
}

/** The agent bundle folder next to `base` (dist/ itself, or ../dist from the sources). */
function distDirOf(base: string): string {
  return existsSync(join(base, 'agent.js')) ? base : join(base, '..', 'dist');
}

/**
 * Runs `o.command` traced on `o.host`, downloads and merges the records, saves the trace locally.
 * Never throws for what the job does (crash, signal, deadline, cancel, a dropped connection after
 * it started: the trace is then 'partial' and says what is missing).
 * @throws CommcostError BAD_INPUT (empty command, `out` folder missing, no plugin for the host's
 *   architecture, the remote folder missing), HOST_UNREACHABLE / HOST_KEY_* / AUTH_FAILED
 *   (connect), DEPLOY_FAILED, NO_AGENT (no built dist/)
 */
export async function runRemoteTrace(o: RemoteTraceOptions): Promise<RemoteTraceResult> {
  const command = o.command;
  if (command.length === 0) throw new CommcostError('BAD_INPUT', 'commcost trace needs a command after --', { hint: 'e.g. commcost trace --host gpu1 -- torchrun --nproc-per-node=8 train.py' });
  const log = o.log ?? (() => undefined);
  const target = await resolveTarget(o.host, o.sshConfigPath !== undefined ? { sshConfigPath: o.sshConfigPath } : {});
  if (target.kind === 'local') {
    // localhost: the local engine, in --cwd (relative to here) or here; the trace saved here.
    const cwd = o.remoteCwd ? resolve(o.localCwd, o.remoteCwd) : o.localCwd;
    if (!o.out) {
      const linked = await linkedCommcostDirProblem(join(o.localCwd, '.commcost', 'traces'), 'the trace folder .commcost/traces');
      if (linked) throw linked;
      mkdirSync(join(o.localCwd, '.commcost', 'traces'), { recursive: true });
    }
    const r = await runTrace({
      command, cwd, stdio: o.stdio, processGroup: true, out: o.out ? resolve(o.localCwd, o.out) : defaultTraceFile(o.localCwd, command),
      ...(o.base !== undefined ? { base: o.base } : {}), ...(o.simulate !== undefined ? { simulate: o.simulate } : {}), ...(o.deadlineMs !== undefined ? { deadlineMs: o.deadlineMs } : {}),
      ...(o.signal !== undefined ? { signal: o.signal } : {}), ...(o.force !== undefined ? { force: o.force } : {}), ...(o.killAfterMs !== undefined ? { killAfterMs: o.killAfterMs } : {}),
      ...(o.ncclLog !== undefined ? { ncclLog: o.ncclLog } : {}), ...(o.interpose !== undefined ? { interpose: o.interpose } : {}),
    });
    return { ...r, uploaded: [], remoteCwd: cwd };
  }
  const outFile = o.out ? resolve(o.localCwd, o.out) : defaultTraceFile(o.localCwd, command);
  await checkTraceOut(outFile, o.out);
  // Made before the job, as a local trace does: a later trace saves a killed one's records there (remoteLeftovers.ts).
  if (!o.out) mkdirSync(dirname(outFile), { recursive: true });
  const payload = await collectPayload(distDirOf(o.base ?? __dirname));
  log(`connecting to ${target.name} (${target.user}@${target.hostname}:${target.port})`);
  const session = await SshSession.connect(target, {
    hostKeyPolicy: o.hostKeyPolicy ?? 'refuse', log,
    ...(o.knownHostsPath !== undefined ? { knownHostsPath: o.knownHostsPath } : {}), ...(o.agentSocket !== undefined ? { agentSocket: o.agentSocket } : {}),
  });
  const host = target.name;
  try {
    const machine = hostname().replace(/[^\w.-]/g, '_').slice(0, 64);
    const facts = await probe(session, o.remoteCwd, o.simulate ? payload.hash : '', `${machine}-${process.pid}`);
    const tmp = facts.tmp;
    const arch = archOfUname(facts.arch);
    if (!arch || !facts.cwd) await session.run(['rm', '-rf', '--', tmp || '/nonexistent/commcost']).catch(() => undefined);
    if (!arch)
      throw new CommcostError('BAD_INPUT', `commcost trace --host ${host}: the host is ${facts.arch || 'of an unknown architecture'}; commcost's profiler plugin is built for x86_64 and aarch64 only`, { where: { host }, hint: 'trace on an x86_64 or aarch64 Linux host' });
    if (!facts.cwd)
      throw new CommcostError('BAD_INPUT', `commcost trace --host ${host} --cwd ${o.remoteCwd ?? '~'}: no such folder on ${host}`, { where: { host }, hint: `give an existing folder on ${host} (absolute, or relative to the remote home ${facts.home})` });
    const art = remoteArtifacts(payload.files.map((f) => f.rel), posix.join(facts.home, '.cache', 'commcost', payload.hash), arch, host, { simulate: !!o.simulate, interpose: !!o.interpose });
    const deployed = await deployAgent(session, payload, log);
    const uploaded = deployed.uploaded;
    if (!tmp)
      throw new CommcostError('DEPLOY_FAILED', `commcost trace --host ${host}: cannot make a folder for the records in ~/.cache/commcost there`, { where: { host }, hint: 'check free space and permissions of ~/.cache on the host' });
    const { vars, ncclLogSkipped } = remoteJobEnv(facts.env, tmp, art, { simulate: !!o.simulate, interpose: !!o.interpose, ncclLog: o.ncclLog !== false });
    const startedAt = new Date().toISOString();
    await writeRemoteOwner(session, tmp, { pid: process.pid, pidStart: processStart(process.pid), host, command, outFile, startedAt, ...(ncclLogSkipped ? { ncclLogSkipped } : {}) });
    // The records that earlier traces from here, killed before downloading them, left on the host (remoteLeftovers.ts).
    const leftovers = await recoverRemoteLeftovers(session, `trace-${machine}-`, tmp, (f) => remoteSymbolizer(session, f));
    log(`running in ${host}:${facts.cwd} (the remote ${o.remoteCwd ? 'folder given by --cwd' : 'home; --cwd DIR picks another'})`);
    const status = posix.join(tmp, 'status');
    // Cancelled while connecting or deploying: the job is not started at all.
    const ran: JobEnd = o.signal?.aborted ? { code: null, signal: null, stopped: 'cancelled before the job started' } : await runJob(session, wrappedCommand(status, facts.cwd, vars, command), status, o);
    let startError: string | undefined;
    const st = ran.lost ? null : await session.sftp().then((sftp) => new Promise<{ stdout: string }>((res) => sftp.readFile(status, (e, b) => res({ stdout: e ? '' : b.toString('utf8') }))), () => null);
    if (st?.stdout.startsWith('notfound')) startError = `${command[0]} was not found on ${host} (in ${facts.cwd}, on the PATH of a non-interactive SSH shell there): give its full path, or set PATH in the shell's startup file`;
    else if (st?.stdout.startsWith('cwd')) startError = `cannot enter ${facts.cwd} on ${host}`;
    const missing: string[] = [];
    let files: RecordFile[] = [];
    if (ran.lost) missing.push(`the SSH connection to ${host} dropped (${ran.lost}): the job's records stay on ${host} in ${tmp}/records`);
    else {
      try {
        files = await downloadRecords(session, posix.join(tmp, 'records'));
      } catch (e) {
        missing.push(`the records could not be read from ${host}:${tmp}/records (${errorText(e)}); they are left there`);
      }
    }
    const symbolize = session.isClosed ? () => null : await remoteSymbolizer(session, files);
    const trace = mergeTrace(files, {
      command, startedAt, endedAt: new Date().toISOString(), exitCode: ran.code, signal: ran.signal, ...(ran.stopped ? { stopped: ran.stopped } : {}), host,
      ...(ncclLogSkipped ? { ncclLogSkipped } : { ncclLogAsked: true }),
    }, symbolize);
    trace.missing.push(...missing);
    if (missing.length > 0) trace.status = 'partial';
    if (!ran.lost && missing.length === 0) await removeTemp(session, tmp, files.map((f) => f.name), !!o.simulate).catch(() => undefined);
    const result: RemoteTraceResult = { trace, outFile, exitCode: ran.code, exitSignal: ran.signal, uploaded, leftovers, remoteCwd: facts.cwd, ...(ran.stopped ? { stopped: ran.stopped } : {}), ...(startError ? { startError } : {}) };
    try {
      mkdirSync(dirname(outFile), { recursive: true });
      await writeFileSafely(outFile, JSON.stringify(trace, null, 1) + '\n', `the trace ${outFile}`);
    } catch (e) {
      result.saveError = errorText(e);
    }
    return result;
  } finally {
    session.dispose();
  }
}

/** How the remote job ended. */
interface JobEnd { code: number | null; signal: string | null; stopped?: string; lost?: string }

/** Starts the wrapped job, streams its output, honours the deadline and the abort signal. */
async function runJob(session: SshSession, argv: string[], status: string, o: RemoteTraceOptions): Promise<JobEnd> {
  const channel: ClientChannel = await session.exec(argv);
  channel.end(); // the job reads no input from us (EOF)
  const out = o.stdio === 'inherit' ? (b: Buffer) => process.stdout.write(b) : ((d = new TextDecoder()) => (b: Buffer) => (o.stdio as { stdout: (t: string) => void }).stdout(d.decode(b, { stream: true })))();
  const err = o.stdio === 'inherit' ? (b: Buffer) => process.stderr.write(b) : ((d = new TextDecoder()) => (b: Buffer) => (o.stdio as { stderr: (t: string) => void }).stderr(d.decode(b, { stream: true })))();
  channel.on('data', out);
  channel.stderr.on('data', err);
  return new Promise<JobEnd>((done) => {
    let code: number | null = null;
    let signal: string | null = null;
    let stopped: string | undefined;
    let finished = false;
    let lost: string | undefined;
    const offClose = session.onClose((e) => (lost = e?.message ?? 'closed'));
    // The job's process group, signalled over a second channel; retried while the wrapper has not written its pid yet.
    const signalGroup = (sig: 'INT' | 'TERM' | 'HUP' | 'KILL', tries = 10): void => {
      if (finished || session.isClosed) return;
      session.run(['sh', '-c', 'read -r w p < "$1" 2>/dev/null && [ "$w" = pid ] && kill -s "$2" -- "-$p" 2>/dev/null', 'sh', status, sig], { timeoutMs: 15_000 }).then(
        (r) => { if (r.code !== 0 && tries > 1) setTimeout(() => signalGroup(sig, tries - 1), 300); },
        () => undefined,
      );
    };
    let killer: NodeJS.Timeout | undefined;
    const killLater = (ms: number) => (killer ??= setTimeout(() => signalGroup('KILL'), ms));
    // The deadline and a forced stop: SIGTERM, SIGKILL 5 s later.
    const stop = (why: string) => {
      stopped ??= why;
      signalGroup('TERM');
      killLater(KILL_GRACE_MS);
    };
    // A cancel (Ctrl-C): its signal once; SIGKILL only after killAfterMs (null: never, the job's handler takes its time).
    const onAbort = () => {
      stopped ??= 'cancelled';
      const r: unknown = o.signal?.reason;
      signalGroup(r === 'SIGINT' ? 'INT' : r === 'SIGHUP' ? 'HUP' : 'TERM');
      const after = o.killAfterMs === undefined ? KILL_GRACE_MS : o.killAfterMs;
      if (after !== null) killLater(after);
    };
    const onForce = () => stop('cancelled');
    if (o.signal?.aborted) onAbort();
    else o.signal?.addEventListener('abort', onAbort, { once: true });
    if (o.force?.aborted) onForce();
    else o.force?.addEventListener('abort', onForce, { once: true });
    const deadline = o.deadlineMs ?? null;
    const timer = deadline === null ? undefined : setTimeout(() => stop(`deadline of ${deadline / 1000} s`), deadline);
    channel.on('exit', (c: number | null, s?: string) => {
      code = c ?? null;
      signal = s ? (s.startsWith('SIG') ? s : `SIG${s}`) : null;
    });
    channel.on('close', () => {
      setImmediate(() => {
        finished = true;
        if (timer) clearTimeout(timer);
        if (killer) clearTimeout(killer);
        o.signal?.removeEventListener('abort', onAbort);
        o.force?.removeEventListener('abort', onForce);
        offClose();
        done({ code, signal, ...(stopped ? { stopped } : {}), ...(lost && code === null && signal === null ? { lost } : {}) });
      });
    });
  });
}

/** Removes the trace's temp folder over SFTP (cheaper than an exec): the records read, the links, the status file. */
async function removeTemp(session: SshSession, tmp: string, records: string[], simulate: boolean): Promise<void> {
  const sftp = await session.sftp();
  const unlink = (p: string) => new Promise<void>((res) => sftp.unlink(p, () => res()));
  const rmdir = (p: string) => new Promise<void>((res) => sftp.rmdir(p, () => res()));
  await Promise.all([...records.map((n) => unlink(posix.join(tmp, 'records', n))), unlink(posix.join(tmp, 'status')), unlink(posix.join(tmp, 'owner.json')),
    ...(simulate ? ['libnccl.so.2', 'libnccl.so', 'libcuda.so.1', 'libcuda.so'].map((n) => unlink(posix.join(tmp, 'simlib', n))) : [])]);
  await Promise.all([rmdir(posix.join(tmp, 'records')), ...(simulate ? [rmdir(posix.join(tmp, 'simlib'))] : [])]);
  await rmdir(tmp);
}

/** Every native frame (`{obj, addr, base}`) one level deep in the records. */
function framesOf(files: RecordFile[]): NativeFrame[] {
  const out = new Map<string, NativeFrame>();
  for (const f of files) {
    if (!f.name.endsWith('.jsonl')) continue;
    for (const line of f.text.split('\n')) {
      if (!line.includes('"obj"')) continue;
      try {
        for (const v of Object.values(JSON.parse(line) as Record<string, unknown>)) {
          const o = v as Record<string, unknown> | null;
          if (o && typeof o === 'object' && typeof o.obj === 'string' && typeof o.addr === 'string' && typeof o.base === 'string')
            out.set(`${o.obj}@${o.addr}@${o.base}`, { obj: o.obj, addr: o.addr, base: o.base, sym: '', symOff: '0x0' });
        }
      } catch {
        /* malformed: merge.ts reports it */
      }
    }
  }
  return [...out.values()];
}

/**
 * Symbolises the records' native frames with the host's own `addr2line` (the objects are the
 * host's), in one round trip: per frame the ELF type (`od` of e_type: an executable's address is
 * absolute, a PIE's or shared object's is made relative to its load base), then `addr2line -f -C`.
 * A frame it cannot resolve (no addr2line, no debug info) stays function+offset.
 */
export async function remoteSymbolizer(session: SshSession, files: RecordFile[]): Promise<Symbolizer> {
  const frames = framesOf(files);
  const found = new Map<string, SourceLocation | null>();
  const key = (f: NativeFrame) => `${f.obj}@${f.addr}@${f.base}`;
  if (frames.length > 0) {
    const script = 'while [ "$#" -ge 3 ]; do o=$1; a=$2; b=$3; shift 3; t=$(od -An -t u2 -j 16 -N 2 "$o" 2>/dev/null | tr -d " "); '
      + 'if [ "$t" = 2 ]; then x=$a; else x=$(printf "0x%x" $((a - b))); fi; printf "@@\\n"; addr2line -f -C -e "$o" "$x" 2>/dev/null || printf "??\\n??:0\\n"; done; exit 0';
    const r = await session.run(['sh', '-c', script, 'sh', ...frames.flatMap((f) => [f.obj, f.addr, f.base])], { timeoutMs: 60_000 }).catch(() => null);
    const blocks = r ? r.stdout.split('@@\n').slice(1) : [];
    frames.forEach((f, i) => {
      const [fn = '??', loc = ''] = (blocks[i] ?? '').split('\n');
      const m = /^(.*):(\d+)/.exec(loc);
      found.set(key(f), m && m[1] !== '??' ? { file: m[1]!, line: Number(m[2]), func: fn !== '??' ? fn : null } : null);
    });
  }
  return (f) => found.get(key(f)) ?? null;
}
