/**
 * The `commcost` CLI, headless on the same engine as the extension:
 *   commcost measure [--host <target>] [--experiments …] [--iterations N] … [--json f] [--html f]
 *   commcost report <run.json> [--html <file>]
 * Exit codes: 0 complete, 1 partial or failed, 2 bad input or no GPU on the target.
 * Progress goes to stderr, the summary to stdout.
 */
import { writeFile } from 'node:fs/promises';
import { Command, CommanderError, Option } from 'commander';
import { SingleBar } from 'cli-progress';
import { DEFAULT_RUN_OPTIONS, EXPERIMENT_IDS, type ExperimentId, type RunOptions } from '../protocol/events';
import type { RunFile } from '../protocol/runFile';
import { CommcostError, errorText } from '../client/errors';
import { renderReport } from '../client/htmlReport';
import { loadRun, saveRun } from '../client/resultsStore';
import { runMeasurement } from '../client/runSession';
import { formatSummary } from './summary';
import { deriveVerdict } from '../client/verdict';

/** Exit codes. */
export const EXIT_OK = 0;
export const EXIT_INCOMPLETE = 1;
export const EXIT_BAD_INPUT = 2;

function bad(message: string, hint?: string): CommcostError {
  return new CommcostError('BAD_INPUT', message, hint ? { hint } : {});
}

function intOption(name: string, min: number, max: number) {
  return (text: string): number => {
    const n = /^-?\d+$/.test(text.trim()) ? Number(text) : NaN;
    if (!Number.isSafeInteger(n) || n < min || n > max) throw bad(`--${name} ${JSON.stringify(text)} must be a whole number from ${min} to ${max}`);
    return n;
  };
}

function deadlineOption(text: string): number {
  const n = Number(text);
  if (!Number.isFinite(n) || n <= 0 || n > 86_400) throw bad(`--deadline ${JSON.stringify(text)} must be seconds, more than 0 and at most 86400 (one day)`);
  return n;
}

/** Parses `a,b,c` into known experiment ids, in the given order, without duplicates. */
export function parseExperiments(text: string): ExperimentId[] {
  const ids = text.split(',').map((s) => s.trim()).filter((s) => s !== '');
  if (ids.length === 0) throw bad('--experiments is empty', `known experiments: ${EXPERIMENT_IDS.join(', ')}`);
  const out: ExperimentId[] = [];
  for (const id of ids) {
    if (!(EXPERIMENT_IDS as readonly string[]).includes(id)) {
      throw bad(`unknown experiment ${JSON.stringify(id)}`, `known experiments: ${EXPERIMENT_IDS.join(', ')}`);
    }
    if (!out.includes(id as ExperimentId)) out.push(id as ExperimentId);
  }
  return out;
}

interface MeasureFlags {
  host: string;
  experiments: ExperimentId[];
  iterations: number;
  warmup: number;
  deadline: number;
  ranks?: number;
  nccl?: string;
  node?: string;
  json?: string;
  html?: string;
  simulate?: boolean;
  simulateIfNoGpu?: boolean;
  acceptNewHostKey?: boolean;
  saveDir: string;
  verbose?: boolean;
  sshConfig?: string;
  knownHosts?: string;
  agentDir?: string;
}

/** Makes the agent's options from the flags. */
export function runOptionsFrom(f: MeasureFlags): RunOptions {
  const o: RunOptions = { ...DEFAULT_RUN_OPTIONS, experiments: f.experiments, iterations: f.iterations, warmup: f.warmup, deadlineSeconds: f.deadline };
  if (f.ranks !== undefined) o.ranks = f.ranks;
  if (f.nccl) o.ncclPath = f.nccl;
  if (f.simulate) o.simulate = true;
  return o;
}

function progressBar(): { update(run: RunFile): void; stop(): void } {
  const bar = new SingleBar(
    { format: '{experiment} |{bar}| {value}/{total} iterations', stream: process.stderr, hideCursor: true, clearOnComplete: false },
  );
  let started = false;
  let current = '';
  return {
    update(run) {
      const e = run.experiments.find((x) => x.state === 'running') ?? [...run.experiments].reverse().find((x) => x.state === 'finished');
      if (!e) return;
      const name = `${e.experiment} (${run.experiments.indexOf(e) + 1}/${run.experiments.length})`;
      if (!started) {
        bar.start(Math.max(e.total, 1), e.done, { experiment: name });
        started = true;
      } else if (name !== current) {
        bar.setTotal(Math.max(e.total, 1));
      }
      current = name;
      bar.update(Math.min(e.done, Math.max(e.total, 1)), { experiment: name });
    },
    stop() {
      if (started) bar.stop();
    },
  };
}

function noGpuError(run: RunFile) {
  return run.errors.find((e) => e.code === 'NO_GPU');
}

async function measureOnce(f: MeasureFlags, options: RunOptions, signal: AbortSignal): Promise<RunFile> {
  const bar = progressBar();
  try {
    return await runMeasurement(
      {
        target: f.host,
        options,
        ...(f.node ? { nodePath: f.node } : {}),
        acceptNewHostKey: f.acceptNewHostKey === true,
        ...(f.sshConfig ? { sshConfigPath: f.sshConfig } : {}),
        ...(f.knownHosts ? { knownHostsPath: f.knownHosts } : {}),
        ...(f.agentDir ? { agentDir: f.agentDir } : {}),
      },
      {
        onRun: (run) => bar.update(run),
        onLog: (line) => {
          if (f.verbose) process.stderr.write(line + '\n');
        },
      },
      signal,
    );
  } finally {
    bar.stop();
  }
}

async function measure(f: MeasureFlags): Promise<number> {
  const controller = new AbortController();
  let interrupts = 0;
  const onSigint = () => {
    interrupts++;
    if (interrupts === 1) {
      process.stderr.write('\ncancelling: keeping what was measured (Ctrl-C again to quit at once)\n');
      controller.abort();
    } else {
      process.exit(130);
    }
  };
  process.on('SIGINT', onSigint);
  try {
    let options = runOptionsFrom(f);
    let run = await measureOnce(f, options, controller.signal);
    const noGpu = noGpuError(run);
    if (noGpu && !options.simulate && !controller.signal.aborted) {
      const text = `no NVIDIA GPU/driver on ${f.host}: ${noGpu.detail ?? noGpu.message}`;
      if (!f.simulateIfNoGpu) {
        process.stderr.write(`${text}\n  hint: run on a host with an NVIDIA GPU, or pass --simulate-if-no-gpu (or --simulate) to try the simulated NCCL\n`);
        return EXIT_BAD_INPUT;
      }
      process.stderr.write(`${text}\nrunning again with the SIMULATED NCCL (--simulate-if-no-gpu): the figures will not be measurements\n`);
      options = { ...options, simulate: true };
      run = await measureOnce(f, options, controller.signal);
    }
    const path = await saveRun(f.saveDir, run);
    process.stdout.write(formatSummary(run));
    process.stderr.write(`saved ${path}\n`);
    if (f.json) {
      await writeFile(f.json, JSON.stringify(run, null, 2) + '\n');
      process.stderr.write(`wrote ${f.json}\n`);
    }
    if (f.html) {
      await writeFile(f.html, renderReport(run));
      process.stderr.write(`wrote ${f.html}\n`);
    }
    if (noGpuError(run) && !run.simulated) return EXIT_BAD_INPUT;
    return run.status === 'complete' ? EXIT_OK : EXIT_INCOMPLETE;
  } finally {
    process.off('SIGINT', onSigint);
  }
}

async function report(file: string, html: string | undefined): Promise<number> {
  const loaded = await loadRun(file);
  // The verdict is derived data: recompute it so older files and newer rules agree.
  const run = { ...loaded, verdict: deriveVerdict(loaded) };
  const out = html ?? file.replace(/\.json$/i, '') + '.html';
  await writeFile(out, renderReport(run));
  process.stdout.write(formatSummary(run));
  process.stderr.write(`wrote ${out}\n`);
  return EXIT_OK;
}

/** Builds the commander program; `run(argv)` parses and returns the exit code. */
export function buildProgram(setExit: (code: number) => void): Command {
  const program = new Command('commcost')
    .description('measure what NCCL communicators cost on your GPUs')
    .exitOverride()
    .configureOutput({ writeErr: (s) => process.stderr.write(s) });

  program
    .command('measure')
    .description('run the measurement on a host and print a summary')
    .option('--host <target>', 'localhost, an ~/.ssh/config alias or user@host[:port]', 'localhost')
    .option('--experiments <list>', `comma-separated, of: ${EXPERIMENT_IDS.join(', ')}`, parseExperiments, [...DEFAULT_RUN_OPTIONS.experiments])
    .option('--iterations <n>', 'recorded runs per step', intOption('iterations', 1, 100_000), DEFAULT_RUN_OPTIONS.iterations)
    .option('--warmup <n>', 'unrecorded warmup runs per step', intOption('warmup', 0, 1_000), DEFAULT_RUN_OPTIONS.warmup)
    .option('--deadline <seconds>', 'hang guard per step', deadlineOption, DEFAULT_RUN_OPTIONS.deadlineSeconds)
    .option('--ranks <n>', 'ranks (one per GPU); default all visible GPUs', intOption('ranks', 1, 4_096))
    .option('--nccl <path>', 'libnccl.so.2 on the host (default: search)')
    .option('--node <path>', 'Node ≥ 18 on the host (default: search)')
    .option('--json <file>', 'also write the run file here')
    .option('--html <file>', 'also write the HTML report here')
    .option('--simulate', 'run on the simulated NCCL (figures are not measurements)')
    .option('--simulate-if-no-gpu', 'when the host has no NVIDIA GPU, run again on the simulated NCCL')
    .option('--accept-new-host-key', 'trust and record an unknown SSH host key (a changed key is always refused)')
    .option('--save-dir <dir>', 'folder of saved runs', '.commcost/runs')
    .option('--verbose', 'print the agent log and connection steps on stderr')
    .addOption(new Option('--ssh-config <file>', 'ssh config file').hideHelp())
    .addOption(new Option('--known-hosts <file>', 'known_hosts file').hideHelp())
    .addOption(new Option('--agent-dir <dir>', 'folder holding agent.js').hideHelp())
    .action(async (flags: MeasureFlags) => setExit(await measure(flags)));

  program
    .command('report')
    .description('render a saved run as a self-contained HTML report and print its summary')
    .argument('<run.json>', 'a run file')
    .option('--html <file>', 'output file (default: the run file with .html)')
    .action(async (file: string, flags: { html?: string }) => setExit(await report(file, flags.html)));
  return program;
}

/** Parses argv (node, script, …), runs the command, and resolves with the exit code. */
export async function main(argv: string[]): Promise<number> {
  let code = EXIT_OK;
  const program = buildProgram((c) => (code = c));
  try {
    await program.parseAsync(argv);
    return code;
  } catch (e) {
    if (e instanceof CommanderError) {
      if (e.code === 'commander.helpDisplayed' || e.code === 'commander.version' || e.code === 'commander.help') return EXIT_OK;
      const cause = (e as CommanderError & { cause?: unknown }).cause;
      if (cause instanceof CommcostError) process.stderr.write(`commcost: ${cause.describe()}\n`);
      return EXIT_BAD_INPUT;
    }
    if (e instanceof CommcostError) {
      process.stderr.write(`commcost: ${e.describe()}\n`);
      return ['BAD_INPUT', 'BAD_TARGET', 'BAD_RUN_FILE'].includes(e.code) ? EXIT_BAD_INPUT : EXIT_INCOMPLETE;
    }
    process.stderr.write(`commcost: internal error: ${errorText(e)}\n${e instanceof Error && e.stack ? e.stack + '\n' : ''}`);
    return EXIT_INCOMPLETE;
  }
}

// Run when executed: as this bundle (node dist/cli.js) or through bin/commcost.js; not when imported by tests.
if (require.main === module || /[\\/]bin[\\/]commcost(\.js)?$/.test(require.main?.filename ?? '')) {
  void main(process.argv).then((code) => process.exit(code));
}
