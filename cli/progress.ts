/**
 * Progress of `commcost measure` on stderr: a bar on a terminal, plain lines elsewhere (a log
 * file, CI), one per experiment as it finishes.
 */
import { SingleBar } from 'cli-progress';
import { isSimulatedRun, type RunExperiment, type RunFile } from '../protocol/runFile';
import type { RunOptions } from '../protocol/events';
import { terminalSafe } from './summary';

/** `iteration 3/11 (1 warmup)`, or with several variants `iteration 5/22 (2 variants × 11, 1 warmup each)`. */
export function iterationLabel(e: Pick<RunExperiment, 'done' | 'total'>, options: Pick<RunOptions, 'iterations' | 'warmup'>): string {
  const per = options.iterations + options.warmup;
  const total = Math.max(e.total, 1);
  const done = Math.min(e.done, total);
  const variants = per > 0 && e.total % per === 0 ? e.total / per : 1;
  if (variants > 1) return `iteration ${done}/${total} (${variants} variants × ${per}, ${options.warmup} warmup each)`;
  return options.warmup > 0 ? `iteration ${done}/${total} (${options.warmup} warmup)` : `iteration ${done}/${total}`;
}

export interface Progress {
  update(run: RunFile): void;
  /** Ends the bar (if any) so that other lines can be written. */
  stop(): void;
}

/** A progress bar on a terminal. */
export function progressBar(stream: NodeJS.WriteStream): Progress {
  const bar = new SingleBar({ format: '{experiment} |{bar}| {detail}', stream, hideCursor: true, clearOnComplete: false });
  let started = false;
  let current = '';
  return {
    update(run) {
      const e = run.experiments.find((x) => x.state === 'running') ?? [...run.experiments].reverse().find((x) => x.state === 'finished');
      if (!e) return;
      const name = `${e.experiment} (${run.experiments.indexOf(e) + 1}/${run.experiments.length})`;
      const detail = iterationLabel(e, run.options);
      if (!started) {
        bar.start(Math.max(e.total, 1), Math.min(e.done, Math.max(e.total, 1)), { experiment: name, detail });
        started = true;
      } else if (name !== current) {
        bar.setTotal(Math.max(e.total, 1));
      }
      current = name;
      bar.update(Math.min(e.done, Math.max(e.total, 1)), { experiment: name, detail });
    },
    stop() {
      if (started) bar.stop();
      started = false;
    },
  };
}

/**
 * Progress as plain lines (stderr is not a terminal: a log file, CI): one line per experiment
 * that finished or stopped.
 */
export function progressLines(write: (line: string) => void): Progress {
  const reported = new Set<string>();
  return {
    update(run) {
      run.experiments.forEach((e, i) => {
        if ((e.state !== 'finished' && e.state !== 'stopped') || reported.has(e.experiment)) return;
        reported.add(e.experiment);
        const recorded = Object.values(e.samples).reduce((a, v) => a + (Object.values(v)[0]?.length ?? 0), 0);
        const what = e.state === 'finished' ? (e.total === 0 ? 'skipped' : 'finished') : 'stopped';
        write(`commcost: ${e.experiment} (${i + 1}/${run.experiments.length}) ${what}: ${iterationLabel(e, run.options)}, ${recorded} recorded${isSimulatedRun(run) ? ' (SIMULATED)' : ''}`);
      });
    },
    stop() {},
  };
}

export function progressFor(stream: NodeJS.WriteStream): Progress {
  return stream.isTTY ? progressBar(stream) : progressLines((l) => stream.write(terminalSafe(l) + '\n'));
}
