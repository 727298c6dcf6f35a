/**
 * One measurement run from the extension's point of view, with no `vscode` import: the engine,
 * the results store and every UI surface come in as parameters, so tests drive it with fakes.
 *
 * Flow: an initial "running" snapshot → the engine streams snapshots (each goes to the panel and
 * becomes a progress line) → the final run is saved → an information message saying where it was
 * saved and offering "Open Run", "Open Report (HTML)" and "Reveal File", or an error message
 * offering "Show Log" when the run failed or nothing was measured.
 */
import { runName } from '../readings/runName';
import type { AgentEvent, ErrorWhere, RunOptions } from '../protocol/events';
import { isSimulatedRun, RUN_FILE_SCHEMA, type RunFile } from '../protocol/runFile';
import type { HostFailure, RunState } from '../protocol/webviewMessages';

/** The engine's `runMeasurement` (client/runSession.ts), as the controller calls it. */
export type RunMeasurementFn = (
  req: {
    target: string;
    options: RunOptions;
    nodePath?: string;
    moreTargets?: string[];
    coordinatorAddress?: string;
    slurm?: { srunArgs: string[]; srunPath?: string };
    acceptNewHostKey?: boolean | ((host: string, fingerprint: string) => Promise<boolean>);
  },
  cb: { onRun(run: RunFile): void; onEvent?(ev: AgentEvent): void; onLog(line: string): void },
  signal?: AbortSignal,
) => Promise<RunFile>;

/** What the user asked for (hostEntries.ts `entryRequest` fills the host part from a picker entry). */
export interface RunRequest {
  /** The host, the first host of a group (the coordinator's) or the Slurm login node. */
  target: string;
  options: RunOptions;
  /** Node on the GPU host; empty/undefined = search. */
  nodePath?: string;
  /** The other hosts of a group, one agent each; `options.ranks` is then per host. */
  moreTargets?: string[];
  /** The address the other hosts of a group reach `target` at; undefined = discovered. */
  coordinatorAddress?: string;
  /** `target` is a Slurm login node: the ranks are started with `srun <srunArgs>`. */
  slurm?: { srunArgs: string[]; srunPath?: string };
  /** How the run's hosts are shown in messages (`gpu-a + 2 more`); default `target`. */
  label?: string;
}

/** Every host of the request as one line for the log: `gpu-a + gpu-b`, `login1 (Slurm: srun --nodes=1 …)`. */
export function hostsLine(req: RunRequest): string {
  const hosts = [req.target, ...(req.moreTargets ?? [])].join(' + ');
  const coordinator = req.coordinatorAddress ? `, coordinator address ${req.coordinatorAddress}` : '';
  const slurm = req.slurm ? ` (Slurm login node: ${[req.slurm.srunPath || 'srun', ...req.slurm.srunArgs].join(' ')})` : '';
  return `${hosts}${coordinator}${slurm}`;
}

/** The action labels offered on the final message. */
export const OPEN_RESULTS = 'Open Run';
export const OPEN_REPORT = 'Open Report (HTML)';
export const REVEAL_FILE = 'Reveal File';
export const SHOW_LOG = 'Show Log';

/** Everything the controller needs; the extension passes VS Code-backed implementations. */
export interface RunDeps {
  runMeasurement: RunMeasurementFn;
  /** client/resultsStore.ts `saveRun`: writes `<dir>/<run.id>.json`, resolves with the path. */
  saveRun(dir: string, run: RunFile): Promise<string>;
  /** Folder of saved runs (`<workspace>/.commcost/runs` or the extension's global storage). */
  resultsDir: string;
  /** The notification's progress: `message` replaces the text; `percent` (0–100) is the overall completion. */
  progress: { report(message: string, percent?: number): void };
  /** The results panel: receives every complete state. */
  panel: { update(state: RunState): void };
  /** The output channel. */
  log: { info(line: string): void; error(line: string): void };
  /** Aborted by the notification's Cancel or the webview's Cancel (read-only here). */
  signal: AbortSignal;
  /** Asks the user to trust an unknown host key; resolves true to continue. */
  confirmHostKey(host: string, fingerprint: string): Promise<boolean>;
  /** Shows an information message with actions; resolves with the chosen one. */
  showInfo(message: string, ...actions: string[]): Promise<string | undefined>;
  /** Shows an error message with actions; resolves with the chosen one. */
  showError(message: string, ...actions: string[]): Promise<string | undefined>;
  /** "Open Results": reveals the panel on the saved run. */
  openResults(run: RunFile, path: string): void;
  /** "Show Log": opens the output channel. */
  showLog(): void;
  /** "Open Report (HTML)" on the completion message: writes the saved run's HTML report and opens it. Absent: not offered. */
  openReport?(run: RunFile, path: string): void;
  /** "Reveal File" on the completion message: shows the saved run file (explorer or the OS's file manager). Absent: not offered. */
  revealFile?(path: string): void;
  /**
   * Called once the run is saved, before the final message (the extension records which
   * workspace a run saved to global storage came from). A rejection is logged, never fatal.
   */
  onSaved?(path: string, run: RunFile): Promise<void> | void;
}

/** How a run ended. `path` is set when the run was saved. */
export type RunOutcome =
  | { kind: 'finished'; run: RunFile; path?: string }
  | { kind: 'failed'; failure: HostFailure; run: RunFile };

/** The first snapshot shown before the engine's first one: an empty running run. */
export function initialRun(req: RunRequest, now: Date = new Date()): RunFile {
  return {
    schema: RUN_FILE_SCHEMA,
    id: `pending-${now.getTime()}`,
    host: req.target,
    simulated: req.options.simulate === true,
    status: 'running',
    options: req.options,
    ranks: req.options.ranks ?? 0,
    experiments: req.options.experiments.map((experiment) => ({
      experiment,
      variants: [],
      done: 0,
      total: 0,
      samples: {},
      state: 'pending' as const,
    })),
    skipped: [],
    errors: [],
  };
}

/** "where" of an engine error (string or ErrorWhere) as one line. */
export function describeWhere(where: unknown): string | undefined {
  if (where === undefined || where === null) return undefined;
  if (typeof where === 'string') return where || undefined;
  if (typeof where !== 'object') return String(where);
  const w = where as ErrorWhere;
  const parts: string[] = [];
  for (const k of ['host', 'rank', 'experiment', 'variant', 'step', 'iteration'] as const) {
    if (w[k] !== undefined) parts.push(`${k} ${String(w[k])}`);
  }
  return parts.length > 0 ? parts.join(', ') : undefined;
}

/** A thrown value (CommcostError or anything) as a {@link HostFailure}. */
export function toFailure(err: unknown): HostFailure {
  const e = (typeof err === 'object' && err !== null ? err : {}) as { code?: unknown; message?: unknown; where?: unknown; hint?: unknown };
  const failure: HostFailure = {
    code: typeof e.code === 'string' ? e.code : 'INTERNAL',
    message: typeof e.message === 'string' ? e.message : String(err),
  };
  const where = describeWhere(e.where);
  if (where) failure.where = where;
  if (typeof e.hint === 'string') failure.hint = e.hint;
  return failure;
}

/** The notification's text for a snapshot: "split 3/22 · experiment 2/4", and the overall percent. */
export function progressOf(run: RunFile): { message: string; percent: number } {
  const exps = run.experiments ?? [];
  const done = exps.reduce((a, e) => a + (e.done || 0), 0);
  const total = exps.reduce((a, e) => a + (e.total || 0), 0);
  const percent = total > 0 ? Math.min(100, (100 * done) / total) : 0;
  const i = exps.findIndex((e) => e.state === 'running');
  const current = i >= 0 ? exps[i] : undefined;
  if (!current) {
    const allDone = exps.length > 0 && exps.every((e) => e.state === 'finished' || e.state === 'stopped');
    return { message: !run.stamp ? 'connecting' : allDone ? 'finishing' : 'starting', percent };
  }
  return { message: `${current.experiment} ${current.done}/${current.total} · experiment ${i + 1}/${exps.length}`, percent };
}

/** A one-line summary of the errors of a failed run, for the error message. */
function runFailureMessage(run: RunFile, label: string): HostFailure {
  const first = run.errors?.[0];
  if (!first) return { code: 'INTERNAL', message: `run on ${label} failed without an error report` };
  const f: HostFailure = { code: first.code, message: first.detail ? `${first.message} (${first.detail})` : first.message };
  const where = describeWhere(first.where);
  if (where) f.where = where;
  if (first.hint) f.hint = first.hint;
  return f;
}

function failureText(f: HostFailure): string {
  return [`commcost: ${f.message}`, f.where ? `where: ${f.where}` : '', f.hint ? `what to do: ${f.hint}` : '']
    .filter((s) => s)
    .join(' — ');
}

/**
 * Runs one measurement end to end (see the file comment). Never throws: engine rejections and
 * save failures become a `failed` outcome after the error message was shown.
 */
export async function runController(req: RunRequest, deps: RunDeps): Promise<RunOutcome> {
  let last = initialRun(req);
  deps.panel.update({ run: last, live: true });
  deps.progress.report('connecting', 0);
  const label = req.label ?? req.target;
  deps.log.info(`run on ${hostsLine(req)}: ${req.options.experiments.join(', ')}, ${req.options.iterations} iterations${req.options.simulate ? ', simulated NCCL' : ''}`);

  let run: RunFile;
  try {
    run = await deps.runMeasurement(
      {
        target: req.target,
        options: req.options,
        ...(req.nodePath ? { nodePath: req.nodePath } : {}),
        ...(req.moreTargets && req.moreTargets.length > 0 ? { moreTargets: [...req.moreTargets] } : {}),
        ...(req.moreTargets && req.moreTargets.length > 0 && req.coordinatorAddress ? { coordinatorAddress: req.coordinatorAddress } : {}),
        ...(req.slurm ? { slurm: { srunArgs: [...req.slurm.srunArgs], ...(req.slurm.srunPath ? { srunPath: req.slurm.srunPath } : {}) } } : {}),
        acceptNewHostKey: (host, fingerprint) => deps.confirmHostKey(host, fingerprint),
      },
      {
        onRun: (snapshot) => {
          last = snapshot;
          deps.panel.update({ run: snapshot, live: true });
          const p = progressOf(snapshot);
          deps.progress.report(p.message, p.percent);
        },
        onLog: (line) => deps.log.info(line),
      },
      deps.signal,
    );
  } catch (err) {
    const failure = toFailure(err);
    deps.log.error(`run on ${label} failed: ${failure.code} ${failure.message}${failure.where ? ` (where: ${failure.where})` : ''}${failure.hint ? ` — ${failure.hint}` : ''}`);
    const failed: RunFile = { ...last, status: 'failed' };
    deps.panel.update({ run: failed, live: false, failure });
    void deps.showError(failureText(failure), SHOW_LOG).then((a) => a === SHOW_LOG && deps.showLog());
    return { kind: 'failed', failure, run: failed };
  }

  deps.panel.update({ run, live: false });
  let path: string | undefined;
  try {
    path = await deps.saveRun(deps.resultsDir, run);
    deps.log.info(`saved ${path}`);
  } catch (err) {
    const failure: HostFailure = { ...toFailure(err), hint: `check that ${deps.resultsDir} is writable` };
    deps.log.error(`saving the run failed: ${failure.message}`);
    void deps.showError(failureText({ ...failure, message: `could not save the run: ${failure.message}` }), SHOW_LOG).then(
      (a) => a === SHOW_LOG && deps.showLog(),
    );
    return { kind: 'failed', failure, run };
  }

  const savedPath = path;
  deps.panel.update({ run, live: false, savedPath });
  if (deps.onSaved) {
    try {
      await deps.onSaved(savedPath, run);
    } catch (err) {
      deps.log.error(`after saving ${savedPath}: ${err instanceof Error ? err.message : String(err)}`);
    }
  }
  if (run.status === 'failed') {
    const f = runFailureMessage(run, req.label ?? run.host);
    deps.log.error(`run on ${req.label ?? run.host} failed: ${f.code} ${f.message}`);
    void deps.showError(failureText(f), SHOW_LOG, OPEN_RESULTS).then((a) => {
      if (a === SHOW_LOG) deps.showLog();
      else if (a === OPEN_RESULTS) deps.openResults(run, savedPath);
    });
    return { kind: 'failed', failure: f, run };
  }
  const what = run.status === 'partial' ? 'stopped early; partial results saved' : 'complete';
  const sim = isSimulatedRun(run) ? ' (SIMULATED NCCL: not a measurement)' : '';
  const actions = [OPEN_RESULTS, ...(deps.openReport ? [OPEN_REPORT] : []), ...(deps.revealFile ? [REVEAL_FILE] : [])];
  // The target as the user named it, then the run's name (readings/runName.ts: its GPUs, NCCL, start).
  void deps.showInfo(`commcost: run on ${req.label ?? run.host} ${what}${sim}: ${runName(run)} — saved to ${savedPath}`, ...actions).then((a) => {
    if (a === OPEN_RESULTS) deps.openResults(run, savedPath);
    else if (a === OPEN_REPORT) deps.openReport?.(run, savedPath);
    else if (a === REVEAL_FILE) deps.revealFile?.(savedPath);
  });
  return { kind: 'finished', run, path: savedPath };
}
