/**
 * Facts of a run that the view's header and sections show, derived from the run file alone
 * (pure: no DOM): the header's rows, the wall-time line, and the errors split into real errors and the field cases'
 * expected hangs, each hang under the experiment it belongs to.
 */
import type { RunFile } from '../protocol/runFile';
import { nodeGpus, nodesText } from '../protocol/runNodes';
import { formatDate, formatDuration, formatGpus, formatMs } from './format';

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

/**
 * The header's rows (label, text): host, its nodes when the run spans several (each with its host,
 * GPUs and ranks, as the CLI header names them; the GPUs then counted over every node and the
 * stamp said to be of one of them), GPUs, NCCL, driver, date, ranks, iterations, process start,
 * wall time. Every value is text (the view adds it as a text node).
 */
export function metaRows(run: RunFile): [string, string][] {
  const s = run.stamp;
  const nodes = nodesText(run);
  const gpusOfNodes = nodeGpus(run);
  const stampOf = nodes !== undefined && s?.hostname ? ` (stamp of ${s.hostname})` : '';
  const rows: [string, string][] = [
    ['host', `${String(run.host ?? '')}${s?.hostname ? (nodes !== undefined ? ` (coordinator; the stamp below is of ${s.hostname})` : ` (${s.hostname})`) : ''}`],
  ];
  if (nodes !== undefined) rows.push(['nodes', `${run.nodes!.length}: ${nodes}`]);
  if (gpusOfNodes !== undefined) rows.push(['GPUs', formatGpus(gpusOfNodes.map((name) => ({ name })))]);
  else if (s) rows.push(['GPUs', formatGpus(s.gpus)]);
  if (s) {
    rows.push(['NCCL', `${s.ncclVersion} · ${s.ncclPath}${s.ncclSource ? ` (${s.ncclSource})` : ''}${stampOf}`]);
    rows.push(['driver', `${s.driverVersion}${stampOf}`]);
    rows.push(['date', formatDate(s.startedAt)]);
  }
  // A run that failed before its plan (no GPU, no NCCL) started no rank: never "0 ranks".
  rows.push(['ranks', run.ranks ? String(run.ranks) : run.status === 'failed' ? 'none started (the run failed before its ranks were planned)' : 'not recorded']);
  const o = run.options;
  if (o) {
    // What was asked; a run that recorded nothing says so, not "2 recorded".
    const recorded = (run.experiments ?? []).some((e) => Array.isArray(e.variants) && e.variants.some((v) => Array.isArray(v.steps) && v.steps.some((st) => Array.isArray(st.samples) && st.samples.length > 0)));
    rows.push(['n', recorded || run.status !== 'failed' ? `${o.iterations} recorded + ${o.warmup} warmup per step` : `${o.iterations} recorded + ${o.warmup} warmup per step asked; none recorded (the run failed)`]);
  }
  if (run.startup) {
    const cuda = Array.isArray(run.startup.cudaInitMs) ? run.startup.cudaInitMs.map(formatMs).join(', ') : '';
    rows.push(['process start', `CUDA init ${cuda} ms per rank · first ncclGetUniqueId ${formatMs(run.startup.firstUniqueIdMs)} ms (not in any figure below)`]);
  }
  const wall = wallText(run);
  if (wall) rows.push(['wall', wall]);
  return rows;
}
