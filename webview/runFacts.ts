/**
 * Facts of a run that the view's header and sections show, derived from the run file alone
 * (pure: no DOM): the wall-time line, and the errors split into real errors and the field cases'
 * expected hangs, each hang under the experiment it belongs to.
 */
import type { RunFile } from '../protocol/runFile';
import { formatDuration } from './format';

type RunError = RunFile['errors'][number];

/**
 * The header's wall-time line: the run's wall time (ms in the file; said in ms below 1 s, else in
 * seconds), with the time spent inside the NCCL and
 * CUDA calls commcost's addon made (`libraryMs`, or `measuredMs` in older files; the MAX over ranks per rank session) when there
 * is any. The c10d experiment's calls are made by torch in its Python driver, not by the addon: a
 * run with c10d says they are not counted, and a run whose figure is 0 (c10d alone) shows the wall
 * time only. "" when the run has no wall time yet.
 */
export function wallText(run: Pick<RunFile, 'wallMs' | 'libraryMs' | 'measuredMs' | 'experiments'>): string {
  if (run.wallMs === undefined || !Number.isFinite(run.wallMs)) return '';
  const measured = run.libraryMs ?? run.measuredMs;
  if (measured === undefined || !Number.isFinite(measured) || measured <= 0) return formatDuration(run.wallMs);
  const c10d = (Array.isArray(run.experiments) ? run.experiments : []).some((e) => e.experiment === 'c10d');
  return `${formatDuration(run.wallMs)} (${formatDuration(measured)} of it inside the NCCL and CUDA calls commcost made${c10d ? "; the c10d experiment's calls, made by torch, are not counted" : ''})`;
}

/** A run's errors as the view lists them. */
export interface RunErrors {
  /** Failures: listed under "Errors" with what to do. */
  real: RunError[];
  /** Expected hangs (`expected: true`: a field case whose hang is its result) by experiment id, shown in that experiment's section. */
  hangsByExperiment: Map<string, RunError[]>;
  /** Expected hangs of an experiment that has no section in the run: listed apart from the errors. */
  orphanHangs: RunError[];
}

/** Splits `run.errors` (tolerating a missing list) into {@link RunErrors}. */
export function runErrors(run: Pick<RunFile, 'errors' | 'experiments'>): RunErrors {
  const errors = Array.isArray(run.errors) ? run.errors : [];
  const sections = new Set((Array.isArray(run.experiments) ? run.experiments : []).map((e) => String(e.experiment)));
  const out: RunErrors = { real: [], hangsByExperiment: new Map(), orphanHangs: [] };
  for (const e of errors) {
    if (e.expected !== true) {
      out.real.push(e);
      continue;
    }
    const id = e.where?.experiment === undefined ? undefined : String(e.where.experiment);
    if (id === undefined || !sections.has(id)) {
      out.orphanHangs.push(e);
      continue;
    }
    const list = out.hangsByExperiment.get(id) ?? [];
    list.push(e);
    out.hangsByExperiment.set(id, list);
  }
  return out;
}
