/**
 * The agent on a Slurm login node: starts the run as one job step,
 * `srun <srunArgs> <node> <agent.js> rank --options <json> --out <file>`, and relays rank 0's
 * protocol lines (which srun merges into its stdout) to the host, so the host sees the same
 * stream as from a plain agent. Assumes what Slurm clusters provide: the home folder (where
 * the agent is deployed) and this Node are visible on the compute nodes.
 *
 * Cancel (run/cancel, stdin EOF, a signal): SIGTERM to srun, which passes it to every task
 * (rank 0 then ends the run partial, keeping what was measured); SIGKILL after a grace period.
 */
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { parseAgentEvent, toLine, type AgentEvent, type RunOptions, type SlurmSpec } from '../protocol/events';
import { normalizeOptions, RunSetupError } from './coordinator';
import { fileStamp } from './launched';
import { onLines } from './lineChannel';
import { agentScript } from './nodes';

/** How long srun gets after SIGTERM before SIGKILL, ms. */
export const SRUN_GRACE_MS = 8_000;

export interface SlurmRelay {
  /** Resolves when srun has exited and `run/done` was emitted (relayed or made up). */
  done: Promise<void>;
  cancel(reason: string): void;
}

/** The longest line relayed from the job step, characters (the agent's own lines are not capped). */
export const RELAY_MAX_LINE_CHARS = 256 * 1024 * 1024;

/**
 * Starts the job step and relays it. Never throws: a bad option, a missing srun or a step that
 * ends without `run/done` become `run/error` + `run/done` events.
 * @param write writes one protocol line (already serialised) to the host.
 */
export function relayThroughSrun(options: Partial<RunOptions>, spec: SlurmSpec, write: (line: string) => void, log: (line: string) => void): SlurmRelay {
  const host = os.hostname();
  const started = Date.now();
  let doneSeen = false;
  let measured = false;
  const emit = (ev: AgentEvent): void => write(toLine(ev));
  const fail = (code: 'BAD_COMMAND' | 'INTERNAL', message: string, hint: string): void => {
    emit({ type: 'run/error', code, message, where: { host }, hint, fatal: true });
    emit({ type: 'run/done', status: measured ? 'partial' : 'failed', wallMs: Date.now() - started, libraryMs: 0, endedAt: new Date().toISOString() });
  };
  let normalized;
  try {
    normalized = normalizeOptions(options);
  } catch (e) {
    fail('BAD_COMMAND', (e as Error).message, e instanceof RunSetupError && e.hint ? e.hint : 'fix the option');
    return { done: Promise.resolve(), cancel: () => undefined };
  }
  // srun decides the ranks (--nodes × --ntasks-per-node).
  delete normalized.ranks;
  const script = agentScript();
  const runsDir = path.join(path.dirname(script), 'runs');
  fs.mkdirSync(runsDir, { recursive: true });
  const out = path.join(runsDir, `${fileStamp(new Date())}-${process.pid}.jsonl`);
  const srun = spec.srunPath || 'srun';
  const args = [...spec.srunArgs, process.execPath, script, 'rank', '--options', JSON.stringify(normalized), '--out', out];
  log(`commcost: starting the job step: ${srun} ${spec.srunArgs.join(' ')} … (the run is also written to ${out} on the compute node of rank 0)`);
  const child = spawn(srun, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  const stderrTail: string[] = [];
  // Rank 0's lines can be long (a summary of 100,000 iterations): the relay takes lines up to
  // RELAY_MAX_LINE_CHARS, and a longer one is dropped (logged) without ending the relay.
  const overlong = (): void => log(`[srun stdout] a line longer than ${RELAY_MAX_LINE_CHARS} characters was dropped (the run file on the compute node has every line)`);
  onLines(child.stdout, (line) => {
    let ev: AgentEvent;
    try {
      ev = parseAgentEvent(line);
    } catch {
      // srun or a task printed something that is not ours: keep (its start) in the log only.
      log(`[srun stdout] ${line.length > 2000 ? `${line.slice(0, 2000)}… (${line.length} characters)` : line}`);
      return;
    }
    // This agent already said hello to the host.
    if (ev.type === 'agent/hello') return;
    if (ev.type === 'run/sample') measured = true;
    if (ev.type === 'run/done') doneSeen = true;
    write(line + '\n');
  }, RELAY_MAX_LINE_CHARS, overlong);
  onLines(child.stderr, (line) => {
    const shown = line.length > 2000 ? `${line.slice(0, 2000)}… (${line.length} characters)` : line;
    stderrTail.push(shown);
    if (stderrTail.length > 10) stderrTail.shift();
    log(shown);
    // A line over the cap is dropped, never the pipe (srun would die of SIGPIPE on its next write).
  }, undefined, () => log('[srun stderr] a line longer than 8 MiB was dropped'));
  let killTimer: NodeJS.Timeout | undefined;
  const done = new Promise<void>((resolve) => {
    child.on('error', (e) => {
      const missing = (e as NodeJS.ErrnoException).code === 'ENOENT';
      fail(
        'BAD_COMMAND',
        missing ? `srun not found on ${host} (looked for ${JSON.stringify(srun)})` : `cannot start srun on ${host}: ${e.message}`,
        missing ? 'run on a Slurm login node, or give srun\'s path (commcost.slurm.srunPath / --srun)' : 'check the srun path and permissions',
      );
      resolve();
    });
    // srun's exit ends the step even if a wrapper's child still holds its pipes: give the last
    // lines a moment, then stop reading.
    child.on('exit', () => {
      setTimeout(() => {
        child.stdout?.destroy();
        child.stderr?.destroy();
      }, 1000).unref();
    });
    child.on('close', (code, signal) => {
      if (killTimer) clearTimeout(killTimer);
      if (!doneSeen && child.pid !== undefined) {
        fail(
          'INTERNAL',
          `the job step ended (srun ${signal ? `killed by ${signal}` : `exit code ${String(code)}`}) before the run did${stderrTail.length ? `: ${stderrTail.slice(-3).join(' | ')}` : ''}`,
          'check the srun options (partition, account, GPUs) and the log; sacct shows the step',
        );
      }
      resolve();
    });
  });
  return {
    done,
    cancel(reason) {
      if (child.exitCode !== null || child.signalCode !== null || child.pid === undefined) return;
      log(`commcost: cancelling the job step: ${reason}`);
      child.kill('SIGTERM');
      killTimer ??= setTimeout(() => child.kill('SIGKILL'), SRUN_GRACE_MS);
    },
  };
}
