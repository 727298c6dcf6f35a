/**
 * The run as a value: a reducer that folds the agent's events into a {@link RunFile}.
 * Every function returns a new top-level object (and new objects along the path it changes), with
 * one exception that keeps the fold linear in samples: a recorded sample is appended in place to
 * its step's array (`samples`, `releaseSkewUs`), which the previous snapshot shares. The arrays
 * only grow, so an older snapshot may hold samples folded after it; whoever needs a frozen copy
 * takes one when it draws or posts (postMessage and JSON copy anyway).
 */
import type { AgentEvent, ErrorEvent, ExperimentId, RunOptions } from '../protocol/events';
import { RUN_FILE_SCHEMA, type RunExperiment, type RunFile } from '../protocol/runFile';
import { deriveVerdict } from '../readings/verdict';

/** An error entry of a run (an ErrorEvent without its type tag). */
export type RunError = Omit<ErrorEvent, 'type'>;

/** `2024-05-01T12:34:56.789Z` → `20240501-123456` (UTC). */
export function compactTimestamp(date: Date): string {
  const p = (n: number) => String(n).padStart(2, '0');
  return `${date.getUTCFullYear()}${p(date.getUTCMonth() + 1)}${p(date.getUTCDate())}-${p(date.getUTCHours())}${p(date.getUTCMinutes())}${p(date.getUTCSeconds())}`;
}

/** A host name made safe for a file name: runs of characters outside `A-Za-z0-9._-` become `_`. */
export function sanitizeHost(host: string): string {
  return host.replace(/[^A-Za-z0-9._-]+/g, '_').replace(/^[.]+/, '_').slice(0, 80) || 'host';
}

/**
 * A fresh run in state `running`, before any event.
 * @param host the target as the user named it
 * @param startedAt start time (default now); gives the id `<YYYYMMDD-HHMMSS UTC>-<host sanitized>`
 */
export function newRun(host: string, options: RunOptions, startedAt: Date = new Date()): RunFile {
  return {
    schema: RUN_FILE_SCHEMA,
    id: `${compactTimestamp(startedAt)}-${sanitizeHost(host)}`,
    host,
    simulated: options.simulate === true,
    status: 'running',
    options: structuredClone(options),
    ranks: 0,
    experiments: [],
    skipped: [],
    errors: [],
  };
}

function iterationsPerVariant(options: RunOptions): number {
  return options.warmup + options.iterations;
}

function emptyExperiment(experiment: ExperimentId, total: number): RunExperiment {
  return { experiment, variants: [], done: 0, total, samples: {}, state: 'pending' };
}

/** The event's fields without its `type` tag. */
function withoutType<T extends { type: string }>(ev: T): Omit<T, 'type'> {
  const copy: Partial<T> = { ...ev };
  delete copy.type;
  return copy as Omit<T, 'type'>;
}

/** Copies run.experiments and gives back the (copied) entry for `id`, creating it when the plan did not list it. */
function withExperiment(run: RunFile, id: ExperimentId, change: (e: RunExperiment) => RunExperiment): RunFile {
  const experiments = [...run.experiments];
  let i = experiments.findIndex((e) => e.experiment === id);
  if (i < 0) {
    experiments.push(emptyExperiment(id, 0));
    i = experiments.length - 1;
  }
  experiments[i] = change(experiments[i]!);
  return { ...run, experiments };
}

/**
 * Folds one agent event into the run.
 * - run/plan: stamp, options, ranks, simulated, one pending experiment per planned experiment
 *   with total = variants × (warmup + iterations).
 * - run/progress: the experiment becomes running.
 * - run/sample: done + 1 (warmups count); recorded samples appended per variant and step (ms),
 *   in place; the release skew of each step's generation (µs) likewise in `releaseSkewUs`.
 * - experiment/summary: variants stored, state finished, done = total.
 * - experiment/skipped: recorded; a whole skipped experiment is finished with total 0; a skipped
 *   variant (never planned) changes no total.
 * - run/error: appended. run/done: status, wallMs, libraryMs, wallSplit, endedAt; unfinished experiments stopped.
 */
export function applyEvent(run: RunFile, ev: AgentEvent): RunFile {
  switch (ev.type) {
    case 'agent/hello':
    case 'agent/heartbeat':
    case 'run/listening':
    case 'node/joined':
      return run;
    case 'run/plan': {
      const per = iterationsPerVariant(ev.options);
      const experiments = ev.experiments.map((e) => emptyExperiment(e.experiment, e.variants.length * per));
      return { ...run, stamp: ev.stamp, options: ev.options, ranks: ev.ranks, ...(ev.nodes ? { nodes: ev.nodes } : {}), simulated: ev.simulated || ev.stamp.simulated, experiments };
    }
    case 'run/startup': {
      return { ...run, startup: { cudaInitMs: ev.cudaInitMs, firstUniqueIdMs: ev.firstUniqueIdMs } };
    }
    case 'run/progress':
      return withExperiment(run, ev.experiment, (e) => ({
        ...e,
        state: e.state === 'pending' ? 'running' : e.state,
        total: e.total > 0 ? e.total : ev.total,
      }));
    case 'run/sample':
      return withExperiment(run, ev.experiment, (e) => {
        const done = e.done + 1;
        const next: RunExperiment = { ...e, done, total: Math.max(e.total, done), state: e.state === 'pending' ? 'running' : e.state };
        if (ev.warmup) return next;
        // Appended in place (no copy of the arrays: linear in samples, see the header).
        const variant = (e.samples[ev.variant] ??= {});
        for (const [step, ms] of Object.entries(ev.steps)) (variant[step] ??= []).push(ms);
        if (ev.stepSkewUs && Object.keys(ev.stepSkewUs).length > 0) {
          const skews = ((e.releaseSkewUs ??= {})[ev.variant] ??= {});
          for (const [step, us] of Object.entries(ev.stepSkewUs)) (skews[step] ??= []).push(us);
          next.releaseSkewUs = e.releaseSkewUs;
        }
        next.samples = e.samples;
        return next;
      });
    case 'experiment/summary': {
      const next = withExperiment(run, ev.experiment, (e) => ({ ...e, variants: ev.variants, state: 'finished', done: Math.max(e.done, e.total), total: Math.max(e.done, e.total) }));
      return { ...next, verdict: deriveVerdict(next) };
    }
    case 'experiment/skipped': {
      const skip = withoutType(ev);
      const withSkip = { ...run, skipped: [...run.skipped, skip] };
      if (!run.experiments.some((e) => e.experiment === ev.experiment)) return withSkip;
      // A skipped variant was never in the plan (the agent plans only what it can run), so the
      // experiment's total already leaves it out.
      if (ev.variant !== undefined) return withSkip;
      return withExperiment(withSkip, ev.experiment, (e) => ({ ...e, state: 'finished', total: e.done }));
    }
    case 'run/error': {
      return { ...run, errors: [...run.errors, withoutType(ev)] };
    }
    case 'run/done': {
      const experiments = run.experiments.map((e) =>
        e.state === 'finished' || ev.status === 'complete' ? e : { ...e, state: 'stopped' as const },
      );
      return { ...run, experiments, status: ev.status, wallMs: ev.wallMs, libraryMs: ev.libraryMs, ...(ev.wallSplit ? { wallSplit: ev.wallSplit } : {}), endedAt: ev.endedAt };
    }
  }
}

/** True when at least one recorded (non-warmup) sample or summary is in the run. */
export function hasMeasurements(run: RunFile): boolean {
  return run.experiments.some(
    (e) => e.variants.length > 0 || Object.values(e.samples).some((v) => Object.values(v).some((s) => s.length > 0)),
  );
}

/**
 * Ends a run that stopped without `run/done` (agent died, connection dropped, cancel): status
 * partial when anything was recorded, else failed; unfinished experiments stopped; `error`
 * appended when given. A run that already ended is returned with only the error appended.
 */
export function markStopped(run: RunFile, error?: RunError, endedAt: Date = new Date()): RunFile {
  const errors = error ? [...run.errors, error] : run.errors;
  if (run.status !== 'running') return { ...run, errors };
  return {
    ...run,
    errors,
    status: hasMeasurements(run) ? 'partial' : 'failed',
    experiments: run.experiments.map((e) => (e.state === 'finished' ? e : { ...e, state: 'stopped' as const })),
    endedAt: endedAt.toISOString(),
  };
}

/**
 * The run recorded as protocol lines (what `node agent.js rank` writes under a launcher, one
 * AgentEvent per line), folded like a live run. The host is the stamp's hostname, the start time
 * the stamp's. A stream that ends without `run/done` (the job was killed) is marked stopped.
 * @param parse one line → event (protocol/events.ts parseAgentEvent); throws on a bad line
 * @throws Error naming the 1-based line that could not be read, or when no `run/plan` is found
 */
export function runFromProtocolLines(text: string, parse: (line: string) => AgentEvent): RunFile {
  const events: AgentEvent[] = [];
  text.split('\n').forEach((line, i) => {
    if (line.trim() === '') return;
    try {
      events.push(parse(line));
    } catch (e) {
      throw new Error(`line ${i + 1}: ${e instanceof Error ? e.message : String(e)}`);
    }
  });
  const plan = events.find((e) => e.type === 'run/plan');
  if (!plan || plan.type !== 'run/plan') throw new Error('no run/plan line: the run never started (see the agent log on stderr)');
  const started = new Date(plan.stamp.startedAt);
  let run = newRun(plan.stamp.hostname, plan.options, Number.isNaN(started.getTime()) ? new Date() : started);
  for (const ev of events) run = applyEvent(run, ev);
  return run.status === 'running' ? markStopped(run, { code: 'AGENT_EXITED' as RunError['code'], message: 'the recorded stream ends without run/done: the job ended before the run did', where: {}, fatal: true }) : run;
}
