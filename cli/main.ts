/**
 * The `commcost` CLI, headless on the same engine as the extension:
 *   commcost measure [--host <target>] [--experiments …] [--iterations N] … [--json f] [--html f]
 *   commcost measure --nccl A --nccl B …   (each library in turn, then a comparison)
 *   commcost report <run.json> [<run.json> …] [--html <file>]   (two or more: a comparison)
 * Exit codes: see {@link EXIT_HELP} (0 complete, 1 partial/failed/not delivered, 2 bad input or no
 * GPU, 130 quit by a third Ctrl-C). Progress goes to stderr, the summary to stdout.
 */
import { existsSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Command, CommanderError, Option } from 'commander';
import { DEFAULT_RUN_OPTIONS, EXPERIMENT_IDS, OPTION_LIMITS, PROTOCOL_VERSION, type RunOptions } from '../protocol/events';
import { isSimulatedRun, type RunFile } from '../protocol/runFile';
import { killLocalAgents } from '../client/agentProcess';
import { CommcostError, errorText } from '../client/errors';
import { isLocalTarget } from '../client/hosts';
import { renderComparisonReport, renderReport, webviewBundleCandidates } from '../client/htmlReport';
import { checkOutputFile, ensureWritableDir, loadRun, saveRun } from '../client/resultsStore';
import { writeFileSafely } from '../client/safeWrite';
import { runMeasurement } from '../client/runSession';
import { srunArgsFor } from '../client/slurm';
import { formatComparison, formatSummary, terminalSafe, terminalSafeLines } from './summary';
import { scanCommand, type ScanFlags } from './scan';
import { planCommand, type PlanFlags } from './plan';
import { traceCommand, type TraceFlags } from './trace';
import { bad, checkFlags, collect, deadlineOption, intOption, ncclPaths, parseExperiments, pythonFlag, runOptionsFrom, slurmOptionsFrom, type MeasureFlags } from './measureFlags';
import { iterationLabel, progressFor, progressLines, type Progress } from './progress';

// The flags and progress live in measureFlags.ts and progress.ts; exported here as before.
export { checkFlags, iterationLabel, ncclPaths, parseExperiments, progressLines, pythonFlag, runOptionsFrom, slurmOptionsFrom, type MeasureFlags };

/** Exit codes. */
export const EXIT_OK = 0;
export const EXIT_INCOMPLETE = 1;
export const EXIT_BAD_INPUT = 2;
export const EXIT_INTERRUPTED = 130;

/** The exit codes as `--help` and the README state them. */
export const EXIT_HELP = `Exit codes:
  0    the run is complete and every output was written (report: written)
  1    the run is partial (cancelled with Ctrl-C, stopped by the hang guard or an error; a field
       case's expected hang is its result and leaves the run complete) or failed
       (host unreachable, authentication, the agent died), or an output could not be written
       where asked (the run is then saved in the OS temp folder instead)
  2    bad input, found before anything is measured: a flag, a host name, an output folder that
       cannot be written, a file that is not a commcost run file; or no NVIDIA GPU on the target
       (without --simulate / --simulate-if-no-gpu)
  130  quit by a third Ctrl-C (nothing saved)`;

/** The exit codes of the commands that read files and measure nothing (report, scan, plan). */
export const FILES_EXIT_HELP = `Exit codes:
  0    done: the summary or table printed, and every output written
  1    an unexpected failure, said on stderr with what failed
  2    bad input: a flag, a file that cannot be read or is not a commcost run (or trace) file,
       an output that cannot be written`;

function noGpuError(run: RunFile) {
  return run.errors.find((e) => e.code === 'NO_GPU');
}

/**
 * One sentence for the agent's NO_GPU error, naming the target as the user gave it:
 * `no NVIDIA GPU driver on localhost (vm): /dev/nvidiactl and libcuda.so.1 not found`.
 */
export function noGpuSentence(target: string, e: { message: string; detail?: string }): string {
  const m = /^no NVIDIA GPU driver on (.+?): (.+)$/s.exec(e.message);
  if (m) return `no NVIDIA GPU driver on ${target}${m[1] !== target ? ` (${m[1]})` : ''}: ${m[2]}`;
  return e.detail ? `${e.message}: ${e.detail}` : e.message;
}

/**
 * Ctrl-C: the first cancels (the run stops, what was measured is kept), the second stops at once
 * (the agent is killed, what was received is kept), the third quits without saving. A Ctrl-C
 * before the measurement listens (while the CLI loads: see bin/commcost.js) is remembered.
 */
const interrupts = {
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

function takeEarlyInterrupts(): number {
  const g = globalThis as { __commcostEarlySigint?: EarlyInterrupts };
  const early = g.__commcostEarlySigint;
  if (!early) return 0;
  process.off('SIGINT', early.listener);
  delete g.__commcostEarlySigint;
  return early.count;
}

async function measureOnce(f: MeasureFlags, options: RunOptions, progress: Progress, cancel: AbortSignal, hardStop: AbortSignal): Promise<RunFile> {
  try {
    return await runMeasurement(
      {
        target: f.host,
        options,
        ...(f.moreHosts?.length ? { moreTargets: f.moreHosts } : {}),
        ...(f.coordinatorAddress ? { coordinatorAddress: f.coordinatorAddress } : {}),
        ...(f.slurm ? { slurm: { srunArgs: srunArgsFor(slurmOptionsFrom(f)), ...(f.srun ? { srunPath: f.srun } : {}) } } : {}),
        // --node is for remote hosts only (the local agent runs on this Node): see checkFlags.
        ...(f.node && !isLocalTarget(f.host) ? { nodePath: f.node } : {}),
        acceptNewHostKey: f.acceptNewHostKey === true,
        ...(f.sshConfig ? { sshConfigPath: f.sshConfig } : {}),
        ...(f.knownHosts ? { knownHostsPath: f.knownHosts } : {}),
        ...(f.agentDir ? { agentDir: f.agentDir } : {}),
      },
      {
        onRun: (run) => progress.update(run),
        onLog: (line) => {
          if (f.verbose) {
            progress.stop();
            process.stderr.write(terminalSafe(line) + '\n');
          }
        },
      },
      cancel,
      hardStop,
    );
  } finally {
    progress.stop();
  }
}

/**
 * Saves the run in `dir`; when that fails, says why and saves it in `<os temp>/commcost-runs`
 * instead; when that fails too, writes the run JSON on stderr. Nothing measured is lost.
 * @returns the path saved to and whether it is the folder asked for
 */
export async function saveWithFallback(dir: string, run: RunFile, write: (text: string) => void, fallbackDir = join(tmpdir(), 'commcost-runs')): Promise<{ path?: string; asked: boolean }> {
  try {
    return { path: await saveRun(dir, run), asked: true };
  } catch (e) {
    write(`commcost: ${terminalSafeLines(e instanceof CommcostError ? e.message : `cannot save the run in ${dir}: ${errorText(e)}`)}\n`);
  }
  try {
    const path = await saveRun(fallbackDir, run);
    write(`commcost: saved the run in the OS temp folder instead: ${path}\n`);
    return { path, asked: false };
  } catch (e) {
    write(`commcost: cannot save it in ${fallbackDir} either (${terminalSafe(errorText(e))}); the run file follows:\n${JSON.stringify(run)}\n`);
    return { asked: false };
  }
}

/**
 * Measures with one library (`nccl`; undefined: the agent searches), running again on the
 * simulated NCCL when the host has no GPU and `--simulate-if-no-gpu` says so.
 * @returns the run, or the exit code when there is no GPU and no permission to simulate
 */
async function measureLibrary(
  f: MeasureFlags,
  nccl: string | undefined,
  progress: Progress,
  cancel: AbortController,
  hardStop: AbortController,
): Promise<{ run: RunFile; fellBackToSimulated: boolean } | { exit: number }> {
  const err = (text: string) => process.stderr.write(text);
  let options = runOptionsFrom(f, nccl);
  let run = await measureOnce(f, options, progress, cancel.signal, hardStop.signal);
  const noGpu = noGpuError(run);
  if (noGpu && !options.simulate && !cancel.signal.aborted) {
    const text = terminalSafe(noGpuSentence(f.host, noGpu));
    if (!f.simulateIfNoGpu) {
      err(`commcost: ${text}\n  hint: run on a host with an NVIDIA GPU, or pass --simulate-if-no-gpu (or --simulate) to try the simulated NCCL\n`);
      return { exit: EXIT_BAD_INPUT };
    }
    err(`commcost: ${text}\ncommcost: running again on the SIMULATED NCCL (--simulate-if-no-gpu): its figures are not measurements\n`);
    options = { ...options, simulate: true };
    delete options.ncclPath;
    run = await measureOnce(f, options, progress, cancel.signal, hardStop.signal);
    return { run, fellBackToSimulated: true };
  }
  return { run, fellBackToSimulated: false };
}

async function measure(f: MeasureFlags): Promise<number> {
  const err = (text: string) => process.stderr.write(text);
  // 1. Everything that can be checked before measuring: flags, host name, output folders.
  for (const w of checkFlags(f)) err(`commcost: warning: ${w}\n`);
  await ensureWritableDir(f.saveDir, `--save-dir ${f.saveDir}`);
  if (f.json !== undefined) await checkOutputFile(f.json, `--json ${f.json}`);
  if (f.html !== undefined) {
    await checkOutputFile(f.html, `--html ${f.html}`);
    if (!webviewBundleCandidates().some((p) => existsSync(p))) {
      throw bad(`--html: the report needs the webview bundle (webview.js), which was not found (searched ${webviewBundleCandidates().join(', ')})`, 'build it with node scripts/build.mjs');
    }
  }

  // 2. Measure (each --nccl library in turn); Ctrl-C at any moment ends the run with what was
  // measured, and no further library is measured.
  const cancel = new AbortController();
  const hardStop = new AbortController();
  // One progress display per library (a plain-line display reports each experiment once).
  let progress = progressFor(process.stderr);
  interrupts.listen((n) => {
    progress.stop();
    if (n === 1) {
      err('\ncancelling: keeping what was measured (Ctrl-C again to stop at once)\n');
      cancel.abort();
    } else if (n === 2) {
      err('stopping at once: the agent is killed, what was received is kept (Ctrl-C again to quit without saving)\n');
      hardStop.abort();
    } else {
      err('quitting without saving\n');
      killLocalAgents();
      process.exit(EXIT_INTERRUPTED);
    }
  });
  const libraries = ncclPaths(f);
  const plan: (string | undefined)[] = libraries.length > 0 ? libraries : [undefined];
  const runs: RunFile[] = [];
  const savedPaths: string[] = [];
  let delivered = true;
  for (const [i, nccl] of plan.entries()) {
    if (i > 0 && cancel.signal.aborted) {
      err(`commcost: cancelled: not measuring ${plan.slice(i).map((p) => terminalSafe(p)).join(', ')}\n`);
      delivered = false;
      break;
    }
    if (plan.length > 1) err(`commcost: measuring with NCCL ${terminalSafe(nccl)} (${i + 1}/${plan.length}) on ${terminalSafe(f.host)}\n`);
    if (i > 0) progress = progressFor(process.stderr);
    const measured = await measureLibrary(f, nccl, progress, cancel, hardStop);
    if ('exit' in measured) {
      // No GPU: nothing was measured with this library, so nothing else can be either.
      if (runs.length === 0) return measured.exit;
      delivered = false;
      break;
    }
    const run = measured.run;
    // Runs that start in the same second get the same id (the file name): keep each one.
    if (runs.some((r) => r.id === run.id)) {
      let n = 2;
      while (runs.some((r) => r.id === `${run.id}-${n}`)) n++;
      run.id = `${run.id}-${n}`;
    }
    runs.push(run);

    // 3. Outputs of this run: the summary first, so that nothing is lost if a file cannot be written.
    process.stdout.write(formatSummary(run));
    const saved = await saveWithFallback(f.saveDir, run, err);
    if (saved.path && saved.asked) err(`saved ${terminalSafe(saved.path)}\n`);
    if (saved.path) savedPaths.push(saved.path);
    if (!saved.asked) delivered = false;
    if (f.json) {
      try {
        await writeFileSafely(f.json, JSON.stringify(run, null, 2) + '\n', `--json ${f.json}`);
        err(`wrote ${terminalSafe(f.json)}\n`);
      } catch (e) {
        delivered = false;
        err(`commcost: cannot write --json ${terminalSafe(f.json)}: ${terminalSafe(errorText(e))}${saved.path ? ` (the run is saved in ${terminalSafe(saved.path)})` : ''}\n`);
      }
    }
    if (noGpuError(run) && !isSimulatedRun(run)) delivered = false;
    if (run.status !== 'complete') delivered = false;
    if (measured.fellBackToSimulated && plan.length > 1) {
      err(`commcost: comparing NCCL libraries needs a GPU: the SIMULATED NCCL was measured once instead of ${plan.map((p) => terminalSafe(p)).join(', ')}\n`);
      break;
    }
  }

  // 4. Several runs: the comparison table, and one comparison report.
  if (runs.length > 1) process.stdout.write('\n' + formatComparison(runs));
  if (f.html && runs.length > 0) {
    try {
      await writeFileSafely(f.html, runs.length > 1 ? renderComparisonReport(runs) : renderReport(runs[0]!), `--html ${f.html}`);
      err(`wrote ${terminalSafe(f.html)}\n`);
    } catch (e) {
      delivered = false;
      err(`commcost: cannot write --html ${terminalSafe(f.html)}: ${terminalSafe(errorText(e))}${savedPaths.length > 0 ? ` (make it later with: commcost report ${savedPaths.map((p) => terminalSafe(p)).join(' ')})` : ''}\n`);
    }
  }
  if (runs.length === 1 && noGpuError(runs[0]!) && !isSimulatedRun(runs[0]!)) return EXIT_BAD_INPUT;
  return delivered ? EXIT_OK : EXIT_INCOMPLETE;
}

/** `commcost report a.json b.json …`: the comparison table on stdout and one comparison report. */
async function compareReport(files: string[], html: string | undefined): Promise<number> {
  const runs: RunFile[] = [];
  for (const file of files) runs.push(await loadRun(file));
  const out = html ?? files[0]!.replace(/\.json$/i, '') + '.compare.html';
  await checkOutputFile(out, html !== undefined ? `--html ${out}` : `the report ${out}`);
  process.stdout.write(formatComparison(runs));
  try {
    await writeFileSafely(out, renderComparisonReport(runs), `the report ${out}`);
  } catch (e) {
    if (e instanceof CommcostError) throw e;
    throw new CommcostError('BAD_INPUT', `cannot write the report ${out}: ${errorText(e)}`, { cause: e });
  }
  process.stderr.write(`wrote ${terminalSafe(out)}\n`);
  return EXIT_OK;
}

/**
 * `commcost report`: a run file that passed validation but that the report cannot be made from
 * (a figure the summary cannot divide by) is bad input (exit 2) with the file named, never a
 * stack trace.
 */
async function report(files: string[], html: string | undefined): Promise<number> {
  try {
    return await reportInner(files, html);
  } catch (e) {
    if (e instanceof CommcostError) throw e;
    throw new CommcostError('BAD_RUN_FILE', `cannot report ${files.join(', ')}: the file${files.length > 1 ? 's hold' : ' holds'} figures the report cannot use (${errorText(e)})`, {
      hint: 'the file passed validation but is inconsistent: measure again, or report this file to the commcost maintainers',
      cause: e,
    });
  }
}

async function reportInner(files: string[], html: string | undefined): Promise<number> {
  if (files.length > 1) return compareReport(files, html);
  const file = files[0]!;
  // The verdict is derived data: loadRun recomputed it, so older files and newer rules agree.
  const run = await loadRun(file);
  const out = html ?? file.replace(/\.jsonl?$/i, '') + '.html';
  await checkOutputFile(out, html !== undefined ? `--html ${out}` : `the report ${out}`);
  process.stdout.write(formatSummary(run));
  try {
    await writeFileSafely(out, renderReport(run), `the report ${out}`);
  } catch (e) {
    if (e instanceof CommcostError) throw e;
    throw new CommcostError('BAD_INPUT', `cannot write the report ${out}: ${errorText(e)}`, { cause: e });
  }
  process.stderr.write(`wrote ${terminalSafe(out)}\n`);
  return EXIT_OK;
}

/**
 * `commcost --version`: "commcost 0.1.0 (agent protocol 1)", the version from the package.json one
 * folder above this file (dist/cli.js in the package, cli/main.ts in the repository).
 */
export function versionLine(): string {
  let version = 'unknown';
  try {
    const v = (JSON.parse(readFileSync(join(__dirname, '..', 'package.json'), 'utf8')) as { version?: unknown }).version;
    if (typeof v === 'string') version = v;
  } catch {
    /* a copy without its package.json: the protocol version still says what it speaks */
  }
  return `commcost ${version} (agent protocol ${PROTOCOL_VERSION})`;
}

/** Builds the commander program; `run(argv)` parses and returns the exit code. */
export function buildProgram(setExit: (code: number) => void): Command {
  const program = new Command('commcost')
    .description('measure what NCCL communicators cost on your GPUs')
    .version(versionLine(), '-V, --version', 'print the version of commcost and of its agent protocol')
    .exitOverride()
    .configureOutput({ writeErr: (s) => process.stderr.write(s) });
  const L = OPTION_LIMITS;

  program
    .command('measure')
    .description('run the measurement on a host and print a summary')
    .option('--host <target>', 'localhost, an ~/.ssh/config alias or user@host[:port]; repeat it for a run over several hosts (one agent each, the coordinator on the first)', collect)
    .option('--coordinator-address <addr>', 'with several --host: the address the other hosts reach the first at (default: each of its addresses in turn)')
    .option('--slurm', '--host is a Slurm login node: start the ranks with srun there (one task per GPU)')
    .option('--partition <name>', 'with --slurm: srun --partition')
    .option('--account <name>', 'with --slurm: srun --account')
    .option('--slurm-nodes <n>', 'with --slurm: nodes of the job step (default 1)', intOption('slurm-nodes', { min: 1, max: 1024 }))
    .option('--gpus-per-node <n>', 'with --slurm: GPUs (= ranks) per node (default 1)', intOption('gpus-per-node', { min: 1, max: 1024 }))
    .option('--time <limit>', 'with --slurm: srun --time (e.g. 0:10:00)')
    .option('--srun-arg <arg>', 'with --slurm: one more srun option (repeatable), e.g. --srun-arg=--qos=debug', collect)
    .option('--srun <path>', 'with --slurm: srun on the login node (default: srun on its PATH)')
    .option('--experiments <list>', `comma-separated, of: ${EXPERIMENT_IDS.join(', ')}`, parseExperiments, [...DEFAULT_RUN_OPTIONS.experiments])
    .option('--iterations <n>', `recorded runs per step (${L.iterations.min}–${L.iterations.max})`, intOption('iterations', L.iterations), DEFAULT_RUN_OPTIONS.iterations)
    .option('--warmup <n>', `unrecorded warmup runs per step (${L.warmup.min}–${L.warmup.max})`, intOption('warmup', L.warmup), DEFAULT_RUN_OPTIONS.warmup)
    .option('--deadline <seconds>', `hang guard per step (${L.deadlineSeconds.min}–${L.deadlineSeconds.max} s)`, deadlineOption, DEFAULT_RUN_OPTIONS.deadlineSeconds)
    .option('--ranks <n>', `ranks (one process per GPU, ${L.ranks.min}–${L.ranks.max}); default all visible GPUs; warns when more than this machine's CPUs on localhost`, intOption('ranks', L.ranks))
    .option('--nccl <path>', 'libnccl.so.2 on the host (default: search); repeat it to measure each library in turn and compare them; not with --simulate', collect)
    .option('--python <path>', 'Python with torch on the host, for the c10d experiment and the NCCL wheel search (default: COMMCOST_PYTHON, else python3)', pythonFlag)
    .option('--node <path>', 'Node ≥ 18 on a remote host (default: search); not used for localhost, where the agent runs on this Node')
    .option('--json <file>', 'also write the run file here (its folder must exist)')
    .option('--html <file>', 'also write the HTML report here (its folder must exist)')
    .option('--simulate', 'run on the simulated NCCL (figures are not measurements)')
    .option('--simulate-if-no-gpu', 'when the host has no NVIDIA GPU, run again on the simulated NCCL')
    .option('--accept-new-host-key', 'trust and record an unknown SSH host key (a changed key is always refused)')
    .option('--save-dir <dir>', 'folder of saved runs (created when missing; checked before measuring)', '.commcost/runs')
    .option('--verbose', 'print the agent log and connection steps on stderr')
    .addOption(new Option('--ssh-config <file>', 'ssh config file').hideHelp())
    .addOption(new Option('--known-hosts <file>', 'known_hosts file').hideHelp())
    .addOption(new Option('--agent-dir <dir>', 'folder holding agent.js').hideHelp())
    .addHelpText(
      'after',
      `\nProgress goes to stderr (a bar on a terminal, else one line per finished experiment), the summary to stdout.\nCtrl-C cancels and keeps what was measured (saved, marked partial); again: stop at once; a third time: quit without saving.\n\n${EXIT_HELP}\n`,
    )
    .action(async (flags: Omit<MeasureFlags, 'host'> & { host?: string[] }, cmd: Command) => {
      const [host = 'localhost', ...moreHosts] = flags.host ?? [];
      const byDefault = cmd.getOptionValueSource('experiments') === 'default';
      setExit(await measure({ ...flags, host, ...(moreHosts.length > 0 ? { moreHosts } : {}), ...(byDefault ? { experimentsByDefault: true } : {}) }));
    });

  program
    .command('report')
    .description('render a saved run as a self-contained HTML report and print its summary; with several runs, compare them')
    .argument('<run.json...>', 'a run file; two or more: a comparison (ratios against the first)')
    .option('--html <file>', 'output file (default: the (first) run file with .html, or .compare.html; its folder must exist)')
    .addHelpText('after', `\n${FILES_EXIT_HELP}\n`)
    .action(async (files: string[], flags: { html?: string }) => setExit(await report(files, flags.html)));

  program
    .command('scan')
    .description('list every NCCL / c10d lifecycle call site under files or folders (through wrapper functions too), with the figure of a run')
    .argument('[paths...]', 'files or folders (default: the current folder); .git, node_modules, virtual environments and .gitignored paths are skipped')
    .option('--run <file>', 'the run whose figures answer each call (a saved run .json, or a launched run .jsonl)')
    .option('--json', 'print a JSON document instead of the table (fields: README, "commcost scan")')
    .addHelpText('after', `\n${FILES_EXIT_HELP}\n`)
    .action(async (paths: string[], flags: ScanFlags) =>
      setExit(await scanCommand(paths, flags, { out: (t) => process.stdout.write(t), err: (t) => process.stderr.write(t), cwd: process.cwd() })),
    );
  program
    .command('plan')
    .description("plan a reshape from a run's figures: each switch strategy's critical path, prepaid and deferred costs, memory per GPU, shares of a step and of a budget, and the pool at n GPUs")
    .option('--run <file>', 'a saved run (.json, or a launched run .jsonl); repeat it to combine runs of one host and NCCL (a term comes from the first that has it)', collect)
    .option('--shapes <list>', 'TP shapes switched between, e.g. tp4,tp2,tp1 (default: every TP shape of the run\'s GPU count)')
    .option('--switch-every <duration>', 'time between two switches, e.g. 2s')
    .option('--step <duration>', 'one step, e.g. 30ms')
    .option('--kv-budget <size>', 'memory budget per GPU, e.g. 60GiB, or a fraction of GPU memory, e.g. 0.4')
    .option('--gpus <n>', 'also estimate the pool at n GPUs (4 and 8 always)')
    .option('--trace <file>', 'a trace of your job (commcost trace): its observed creation and first-collective figures replace the run\'s of the same API and size; it has no step time, give --step')
    .option('--json', 'print the plan as JSON (README, "commcost plan")')
    .addHelpText('after', `\n${FILES_EXIT_HELP}\n`)
    .action(async (flags: PlanFlags) => setExit(await planCommand(flags, (t) => process.stdout.write(t))));
  program
    .command('trace')
    .description("run your own job (torchrun, srun, mpirun, python, a C program) with every process traced: each call site's communicator creation, first collective and teardown (README, \"commcost trace\")")
    .argument('<command...>', 'the command to run, after --')
    .option('--out <file>', 'the trace file (default: .commcost/traces/<date>-<command>.json)')
    .option('--html <file>', 'also write an HTML report: a timeline per rank and the per-site table')
    .option('--simulate', "run against commcost's simulated NCCL (no GPU): figures labelled SIMULATED")
    .option('--deadline <seconds>', 'stop the job after this long (the trace is kept, marked partial)')
    .option('--interpose', "preload commcost's C interposer (LD_PRELOAD, yours kept): times each NCCL init/split/destroy call a C/C++ program makes and names its caller's file:line")
    .option('--no-nccl-log', "do not ask NCCL for its Init timings log (NCCL's view); never asked when you set NCCL_DEBUG or NCCL_DEBUG_FILE yourself")
    .option('--host <target>', 'run the job on an SSH host (an ~/.ssh/config alias or user@host[:port]): commcost is deployed there by content hash, the records come back and the trace is saved here')
    .option('--cwd <dir>', 'with --host: the job\'s folder on the host (default: the remote home)')
    .option('--accept-new-host-key', 'with --host: trust and record an unknown SSH host key (a changed key is always refused)')
    .addOption(new Option('--ssh-config <file>', 'ssh config file').hideHelp())
    .addOption(new Option('--known-hosts <file>', 'known_hosts file').hideHelp())
    .addHelpText('after', '\nExit code: the job\'s own; 1 when the trace could not be saved; 2 on bad input.\n')
    .action(async (command: string[], flags: TraceFlags) =>
      setExit(await traceCommand(command, flags, { out: (t) => process.stdout.write(t), err: (t) => process.stderr.write(t), cwd: process.cwd() })),
    );
  return program;
}

/**
 * A reader that went away (`commcost … | head`) makes later writes fail with EPIPE: drop that
 * output instead of crashing, so that a measurement still finishes and saves its run.
 */
function ignoreClosedReader(stream: NodeJS.WriteStream): void {
  stream.on('error', (e: NodeJS.ErrnoException) => {
    if (e.code !== 'EPIPE') throw e;
  });
}

/** Parses argv (node, script, …), runs the command, and resolves with the exit code. */
export async function main(argv: string[]): Promise<number> {
  let code = EXIT_OK;
  ignoreClosedReader(process.stdout);
  ignoreClosedReader(process.stderr);
  const isMeasure = argv.slice(2).find((a) => !a.startsWith('-')) === 'measure';
  // Listen before letting go of bin/commcost.js's listener, so that no Ctrl-C falls in between.
  if (isMeasure) interrupts.install();
  const early = takeEarlyInterrupts();
  if (isMeasure) interrupts.count += early;
  else if (early > 0) return EXIT_INTERRUPTED;
  const program = buildProgram((c) => (code = c));
  try {
    await program.parseAsync(argv);
    return code;
  } catch (e) {
    if (e instanceof CommanderError) {
      if (e.code === 'commander.helpDisplayed' || e.code === 'commander.version' || e.code === 'commander.help') return EXIT_OK;
      const cause = (e as CommanderError & { cause?: unknown }).cause;
      if (cause instanceof CommcostError) process.stderr.write(`commcost: ${terminalSafeLines(cause.describe())}\n`);
      return EXIT_BAD_INPUT;
    }
    if (e instanceof CommcostError) {
      process.stderr.write(`commcost: ${terminalSafeLines(e.describe())}\n`);
      return ['BAD_INPUT', 'BAD_TARGET', 'BAD_RUN_FILE'].includes(e.code) ? EXIT_BAD_INPUT : EXIT_INCOMPLETE;
    }
    process.stderr.write(`commcost: internal error: ${terminalSafe(errorText(e))}\n${e instanceof Error && e.stack ? terminalSafeLines(e.stack) + '\n' : ''}`);
    return EXIT_INCOMPLETE;
  } finally {
    if (isMeasure) interrupts.uninstall();
  }
}

// Run when executed: as this bundle (node dist/cli.js) or through bin/commcost.js; not when imported by tests.
if (require.main === module || /[\\/]bin[\\/]commcost(\.js)?$/.test(require.main?.filename ?? '')) {
  void main(process.argv).then((code) => process.exit(code));
}
