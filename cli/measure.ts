/**
 * `commcost measure`: check flags and output folders before anything is measured, measure with
 * each `--nccl` library in turn (again on the simulated NCCL when the host has no GPU and
 * `--simulate-if-no-gpu` says so), Ctrl-C wiring, then the summary, the saved run (with a
 * fallback folder), `--json`, and `--html` (one comparison report for several libraries).
 */
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { resolve } from 'node:path';
import type { RunOptions } from '../protocol/events';
import { isSimulatedRun, type RunFile } from '../protocol/runFile';
import { killLocalAgents } from '../client/agentProcess';
import { CommcostError, errorText } from '../client/errors';
import { isLocalTarget } from '../client/hosts';
import { renderComparisonReportPieces, renderReportPieces, webviewBundleCandidates } from '../client/htmlReport';
import { checkOutputFile, ensureWritableDir, saveRun } from '../client/resultsStore';
import { makePrivateDir, removePrivateDir } from '../client/privateDir';
import { writeFileSafely } from '../client/safeWrite';
import { runMeasurement } from '../client/runSession';
import { srunArgsFor } from '../client/slurm';
import { EXIT_BAD_INPUT, EXIT_INCOMPLETE, EXIT_INTERRUPTED, EXIT_OK } from './exitCodes';
import { interrupts } from './interrupts';
import { bad, checkFlags, ncclPaths, runOptionsFrom, slurmOptionsFrom, type MeasureFlags } from './measureFlags';
import { cliInvocation, nextStepLines } from './nextSteps';
import { COMMCOST_VERSION } from '../protocol/version';
import { progressFor, type Progress } from './progress';
import { formatComparison, formatSummary, terminalSafe, terminalSafeLines } from './summary';

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
 * Saves the run in `dir`; when that fails, says why and saves it in a new private folder of the
 * OS temp folder instead (`<parent>/commcost-runs-XXXXXX/<id>.json`: mkdtemp, mode 0700, checked
 * to be a real folder of yours — client/privateDir.ts; never a fixed name another user could have
 * made first or linked elsewhere); the folder is kept (it holds the run), or removed when the save
 * in it fails too, and the run JSON then goes to `write`. Nothing measured is lost.
 * @param write where the messages go (stderr)
 * @param fallbackParent where the private folder is made (default: the OS temp folder, TMPDIR)
 * @returns the path saved to and whether it is the folder asked for
 */
export async function saveWithFallback(dir: string, run: RunFile, write: (text: string) => void, fallbackParent: string = tmpdir()): Promise<{ path?: string; asked: boolean }> {
  try {
    return { path: await saveRun(dir, run), asked: true };
  } catch (e) {
    write(`commcost: ${terminalSafeLines(e instanceof CommcostError ? e.message : `cannot save the run in ${dir}: ${errorText(e)}`)}\n`);
  }
  let fallbackDir: string | undefined;
  try {
    fallbackDir = await makePrivateDir('commcost-runs-', fallbackParent);
    const path = await saveRun(fallbackDir, run);
    write(`commcost: saved the run in the OS temp folder instead: ${path}\n`);
    return { path, asked: false };
  } catch (e) {
    // Only the folder made just now is removed (empty but for a failed temp file).
    if (fallbackDir) await removePrivateDir(fallbackDir);
    write(`commcost: cannot save it in ${fallbackDir ?? fallbackParent} either (${terminalSafe(errorText(e))}); the run file follows:\n${JSON.stringify(run)}\n`);
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

/**
 * Runs `commcost measure` with parsed flags; writes progress and messages on stderr, the summary
 * (and, for several libraries, the comparison table) on stdout.
 * @returns the exit code (exitCodes.ts): 0 complete and delivered, 1 partial, failed or an
 *   output not written where asked, 2 no GPU without permission to simulate
 * @throws CommcostError BAD_INPUT for a flag or an output that fails its check before measuring
 */
export async function measureCommand(f: MeasureFlags): Promise<number> {
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
  interrupts.listen((n, signal) => {
    progress.stop();
    if (signal) {
      if (n === 1) cancel.abort();
      else {
        err(`\n${signal}: stopping at once: the agent is killed, what was received is kept (Ctrl-C to quit without saving)\n`);
        hardStop.abort();
      }
    } else if (n === 1) {
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
    process.stdout.write(formatSummary(run, { verbose: f.verbose === true }));
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
  let htmlWritten = false;
  if (f.html && runs.length > 0) {
    try {
      await writeFileSafely(f.html, runs.length > 1 ? renderComparisonReportPieces(runs) : renderReportPieces(runs[0]!), `--html ${f.html}`);
      err(`wrote ${terminalSafe(f.html)}\n`);
      htmlWritten = true;
    } catch (e) {
      delivered = false;
      err(`commcost: cannot write --html ${terminalSafe(f.html)}: ${terminalSafe(errorText(e))}${savedPaths.length > 0 ? ` (make it later with: commcost report ${savedPaths.map((p) => terminalSafe(p)).join(' ')} --html)` : ''}\n`);
    }
  }
  if (runs.length === 1 && noGpuError(runs[0]!) && !isSimulatedRun(runs[0]!)) return EXIT_BAD_INPUT;
  // 5. What to do next: the report, the extension, a GPU host (the exact commands).
  const next = nextStepLines({
    cli: cliInvocation(process.argv[1], process.cwd()),
    saved: savedPaths,
    ...(htmlWritten ? { html: resolve(f.html!) } : {}),
    simulated: runs.length > 0 && runs.every((r) => isSimulatedRun(r)),
    version: COMMCOST_VERSION,
  });
  if (next.length > 0) err(next.join('\n') + '\n');
  return delivered ? EXIT_OK : EXIT_INCOMPLETE;
}
