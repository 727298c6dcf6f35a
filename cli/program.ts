/**
 * The commander program of the `commcost` CLI: every command (measure, report, scan, plan,
 * trace) with its flags and help text, each action handing its parsed flags to the command's
 * module; and the `--version` line. Each verb's module is imported inside its action, never at
 * the top: `commcost --version` or `report` loads no SSH (ssh2), no engine and no parser
 * (test/unit/cliStart.test.ts; the bundle keeps them in dist/vendor/, scripts/build.mjs).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Command, Option } from 'commander';
import { DEFAULT_RUN_OPTIONS, EXPERIMENT_IDS, OPTION_LIMITS, PROTOCOL_VERSION } from '../protocol/events';
import { EXIT_HELP, FILES_EXIT_HELP } from './exitCodes';
import { collect, commCountsFlag, deadlineOption, intOption, parseExperiments, parseFirstUse, pythonFlag, type MeasureFlags } from './measureFlags';
import type { PlanFlags } from './plan';
import type { ScanFlags } from './scan';
import type { TraceFlags } from './trace';

/**
 * `commcost --version`: "commcost 0.1.0 (agent protocol 1)", the version from the package.json one
 * folder above this file (dist/cli.js in the package, cli/program.ts in the repository).
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

/**
 * Builds the commander program (its errors and help exits are thrown: `exitOverride`); each
 * action calls `setExit` with its exit code. `main` (main.ts) parses argv with it.
 */
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
    .option('--first-use <list>', 'how init and split first use the new communicator, comma-separated, of: allreduce, broadcast (from rank 0), sendrecv (a send/recv pair with a partner rank; needs 2 GPUs); each kind but allreduce adds a variant …/first=<kind> (default allreduce)', parseFirstUse)
    .option('--iterations <n>', `recorded runs per step (${L.iterations.min}–${L.iterations.max})`, intOption('iterations', L.iterations), DEFAULT_RUN_OPTIONS.iterations)
    .option('--warmup <n>', `unrecorded warmup runs per step (${L.warmup.min}–${L.warmup.max})`, intOption('warmup', L.warmup), DEFAULT_RUN_OPTIONS.warmup)
    .option('--deadline <seconds>', `hang guard per step (${L.deadlineSeconds.min}–${L.deadlineSeconds.max} s)`, deadlineOption, DEFAULT_RUN_OPTIONS.deadlineSeconds)
    .option('--ranks <n>', `ranks (one process per GPU, ${L.ranks.min}–${L.ranks.max}); default all visible GPUs; warns when more than this machine's CPUs on localhost`, intOption('ranks', L.ranks))
    .option('--comm-counts <list>', 'many-comms: the communicator counts N, ascending (default 1,2,4,8,16; the largest is made every iteration)', commCountsFlag)
    .option('--nccl <path>', 'libnccl.so.2 on the host (default: search); repeat it to measure each library in turn and compare them; not with --simulate', collect)
    .option('--python <path>', 'Python with torch on the host, for the c10d experiment and the NCCL wheel search (default: COMMCOST_PYTHON, else python3)', pythonFlag)
    .option('--node <path>', 'Node ≥ 18 on a remote host (default: search); not used for localhost, where the agent runs on this Node')
    .option('--json <file>', 'also write the run file here (its folder must exist)')
    .option('--html <file>', 'also write the HTML report here (its folder must exist)')
    .option('--simulate', 'run on the simulated NCCL (figures are not measurements)')
    .option('--simulate-if-no-gpu', 'when the host has no NVIDIA GPU, run again on the simulated NCCL')
    .option('--accept-new-host-key', 'trust and record an unknown SSH host key (a changed key is always refused)')
    .option('--save-dir <dir>', 'folder of saved runs (created when missing; checked before measuring)', '.commcost/runs')
    .option('--verbose', "also print commcost's own diagnostics in the summary (where the wall time went, its efficiency targets, the barrier's release skew) and the agent log and connection steps on stderr")
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
      const { measureCommand } = await import('./measure');
      setExit(await measureCommand({ ...flags, host, ...(moreHosts.length > 0 ? { moreHosts } : {}), ...(byDefault ? { experimentsByDefault: true } : {}) }));
    });

  program
    .command('report')
    .description('print the summary of a saved run, and with --html write its self-contained HTML report; with several runs, compare them; a saved trace (commcost trace): its table, and with --html its HTML report again')
    .argument('[run.json...]', 'a run file; two or more: a comparison (ratios against the first); or one trace file (.commcost/traces/*.json)')
    .option('--html [file]', 'also write the HTML report, here or, without a file, next to the (first) run file with .html (.compare.html for a comparison); its folder must exist. A word after --html that ends in .json or .jsonl is a run file, not the page: `report --html run.json` and `report run.json --html` both write run.html')
    .option('--verbose', "also print commcost's own diagnostics (where the wall time went, its efficiency targets, the barrier's release skew)")
    .addHelpText('after', `\n${FILES_EXIT_HELP}\n`)
    .action(async (files: string[], flags: { html?: string | true; verbose?: boolean }, cmd: Command) => {
      const { htmlOperands, reportCommand } = await import('./report');
      // commander keeps the command line as typed in rawArgs (set by parse, not in its typings).
      const typed = (cmd.parent as unknown as { rawArgs?: unknown } | null)?.rawArgs;
      const given = htmlOperands(files, flags.html, Array.isArray(typed) ? typed.map(String) : []);
      // The operand is optional to commander only so that `--html run.json` can give it back.
      if (given.files.length === 0) cmd.error("error: missing required argument 'run.json'", { exitCode: 2, code: 'commander.missingArgument' });
      setExit(await reportCommand(given.files, given.html, { verbose: flags.verbose === true }));
    });

  program
    .command('scan')
    .description('list every NCCL / c10d lifecycle call site under files or folders (through wrapper functions too), with the figure of a run')
    .argument('[paths...]', 'files or folders (default: the current folder); .git, node_modules, virtual environments and .gitignored paths are skipped')
    .option('--run <file>', 'the run whose figures answer each call (a saved run .json, or a launched run .jsonl)')
    .option('--json', 'print a JSON document instead of the table (fields: README, "commcost scan")')
    .addHelpText('after', `\n${FILES_EXIT_HELP}\n`)
    .action(async (paths: string[], flags: ScanFlags) =>
      setExit(await (await import('./scan')).scanCommand(paths, flags, { out: (t) => process.stdout.write(t), err: (t) => process.stderr.write(t), cwd: process.cwd() })),
    );
  program
    .command('plan')
    .description("plan a reshape from a run's figures: each switch strategy's critical path, prepaid and deferred costs, memory per GPU, shares of a step and of a budget, and the pool at n GPUs")
    .argument('[runs...]', 'saved runs, the same as --run <file> for each')
    .option('--run <file>', 'a saved run (.json, or a launched run .jsonl); repeat it to combine runs of one host and NCCL (a term comes from the first that has it)', collect)
    .option('--shapes <list>', 'TP shapes switched between, e.g. tp4,tp2,tp1 (default: every TP shape of the run\'s GPU count)')
    .option('--switch-every <duration>', 'time between two switches, e.g. 2s')
    .option('--step <duration>', 'one step, e.g. 30ms')
    .option('--kv-budget <size>', 'memory budget per GPU, e.g. 60GiB, or a fraction of GPU memory, e.g. 0.4')
    .option('--gpus <n>', 'also estimate the pool at n GPUs (4 and 8 always)')
    .option('--trace <file>', 'a trace of your job (commcost trace): its observed creation and first-collective figures replace the run\'s of the same API and size; it has no step time, give --step')
    .option('--recovery', 'the recovery paths after one rank is lost instead of a reshape: abort + re-init, revoke + shrink, shrink with NCCL_SHRINK_ABORT, grow back, c10d re-create, a spare kept warm (with --run and --json only)')
    .option('--json', 'print the plan as JSON (README, "commcost plan")')
    .addHelpText('after', `\n${FILES_EXIT_HELP}\n`)
    .action(async (runs: string[], flags: PlanFlags) =>
      setExit(await (await import('./plan')).planCommand({ ...flags, run: [...(flags.run ?? []), ...runs] }, (t) => process.stdout.write(t))));
  program
    .command('trace')
    .description("run your own job (torchrun, srun, mpirun, python, a C program) with every process traced: each call site's communicator creation, first collective and teardown (README, \"commcost trace\")")
    .argument('<command...>', 'the command to run, after --')
    .option('--out <file>', 'the trace file (default: .commcost/traces/<date>-<command>.json)')
    .option('--html <file>', 'also write an HTML report: a timeline per rank and the per-site table')
    .option('--simulate', "run against commcost's simulated NCCL (no GPU): figures labelled SIMULATED")
    .option('--deadline <seconds>', 'stop the job after this long (the trace is kept, marked partial)')
    .option('--ray-address <address>', "a running Ray cluster for the driver's ray.init() (RAY_ADDRESS: auto, host:6379); with or without it, the workers Ray starts for the job are traced through ray.init's runtime_env (README, \"Ray\")")
    .option('--interpose', "preload commcost's C interposer (LD_PRELOAD, yours kept): times each NCCL init/split/destroy call a C/C++ program makes and names its caller's file:line")
    .option('--no-nccl-log', "do not ask NCCL for its Init timings log (NCCL's view); never asked when you set NCCL_DEBUG or NCCL_DEBUG_FILE yourself")
    .option('--host <target>', 'run the job on an SSH host (an ~/.ssh/config alias or user@host[:port]): commcost is deployed there by content hash, the records come back and the trace is saved here')
    .option('--cwd <dir>', 'with --host: the job\'s folder on the host (default: the remote home)')
    .option('--accept-new-host-key', 'with --host: trust and record an unknown SSH host key (a changed key is always refused)')
    .addOption(new Option('--ssh-config <file>', 'ssh config file').hideHelp())
    .addOption(new Option('--known-hosts <file>', 'known_hosts file').hideHelp())
    .addHelpText('after', '\nExit code: the job\'s own; 1 when the trace could not be saved; 2 on bad input.\n')
    .action(async (command: string[], flags: TraceFlags) =>
      setExit(await (await import('./trace')).traceCommand(command, flags, { out: (t) => process.stdout.write(t), err: (t) => process.stderr.write(t), cwd: process.cwd() })),
    );
  return program;
}
