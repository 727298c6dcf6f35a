/**
 * `commcost.traceFile` — "commcost: Trace Python File": runs the active Python file under
 * `commcost trace` on this machine (the engine of client/trace/run.ts, as the CLI does), with
 * progress and Cancel, the job's output in the commcost output channel, and on completion a
 * notification with "Show Trace" (opens the saved `.commcost/traces/*.json`). The annotations
 * update from the saved trace (tracesWatch.ts watches the folder). Local only: no SSH host yet.
 *
 * When no GPU is found (`nvidia-smi -L` lists none) the user is offered the simulated NCCL
 * (`--simulate`): every figure of that trace is then SIMULATED, and the trace is chosen so that
 * the annotations show it (marked SIMULATED), as the user asked for it.
 */
import { basename, dirname, join } from 'node:path';
import * as vscode from 'vscode';
import { hasGpu, runTrace } from '../client/trace/run';
import { isSimulatedTrace, type TraceFile } from '../protocol/trace';
import { isPythonLaunch, launchCommand } from './traceLaunch';
import type { OutputLog } from './outputLog';

/** What the command needs from the extension. */
export interface TraceCommandEnv {
  extension: vscode.ExtensionContext;
  log: OutputLog;
}

/** The Python that runs the file: the `commcost.python` setting when set, else python3. */
function pythonOf(): string {
  const configured = vscode.workspace.getConfiguration('commcost').get<unknown>('python');
  return typeof configured === 'string' && configured.trim() ? configured.trim() : 'python3';
}

/** Passes a child's output to the log line by line (a partial line waits for its end). */
function lineWriter(write: (line: string) => void): { push(text: string): void; end(): void } {
  let rest = '';
  return {
    push(text) {
      const parts = (rest + text).split(/\r?\n/);
      rest = parts.pop() ?? '';
      for (const p of parts) write(p);
    },
    end() {
      if (rest) write(rest);
      rest = '';
    },
  };
}

/** One line per call site for the output channel (plain text). */
function summaryLines(t: TraceFile): string[] {
  const ms = (s: { medianMs: number } | null) => (s ? `${s.medianMs.toFixed(s.medianMs >= 100 ? 0 : 1)} ms` : 'not measured');
  return t.sites.map(
    (s) =>
      `  ${s.file ? `${basename(s.file)}:${s.line ?? '?'}` : '(unattributed)'} ${s.api}${s.cold ? ' (cold)' : ''}: creation ${ms(s.creation)}, first collective ${ms(s.firstCollective)}, connect ${ms(s.connect)}, teardown ${ms(s.teardown)} (n=${s.count})`,
  );
}

/**
 * Runs the command: the active editor's Python file, traced. Refuses (with a message) in an
 * untrusted workspace, without a saved Python file, or while another trace runs.
 */
export async function traceFileCommand(env: TraceCommandEnv): Promise<void> {
  if (running) {
    void vscode.window.showInformationMessage('commcost: a trace is already running; cancel it from its notification first.');
    return;
  }
  running = true;
  try {
    await traceFile(env);
  } finally {
    running = false;
  }
}

let running = false;

/** The job to trace: its display name (the file's name, or the launch configuration's), command line, folder and added variables. */
interface Job {
  label: string;
  command: string[];
  cwd: string;
  env: Record<string, string>;
}

/**
 * The active Python file (`python file`), or — when the workspace has Python launch
 * configurations — the one the user picks among it and them (traceLaunch.ts). Undefined (after
 * saying why) when there is nothing to run or the user dismissed the pick.
 */
async function chooseJob(): Promise<Job | undefined> {
  const doc = vscode.window.activeTextEditor?.document;
  const active = doc && doc.languageId === 'python' && doc.uri.scheme === 'file' ? doc : undefined;
  const folderUri = active ? vscode.workspace.getWorkspaceFolder(active.uri)?.uri : vscode.workspace.workspaceFolders?.[0]?.uri;
  const raw = vscode.workspace.getConfiguration('launch', folderUri).get<unknown>('configurations');
  const configs = (Array.isArray(raw) ? raw : []).filter(isPythonLaunch);
  if (!active && configs.length === 0) {
    void vscode.window.showErrorMessage('commcost: Trace Python File needs a Python file saved on disk in the active editor (or a Python launch configuration).');
    return undefined;
  }
  type Item = vscode.QuickPickItem & { config?: Record<string, unknown> };
  let picked: Item | undefined = { label: '' };
  if (configs.length > 0) {
    const items: Item[] = [
      ...(active ? [{ label: `$(file) ${basename(active.uri.fsPath)}`, description: `${pythonOf()} ${basename(active.uri.fsPath)} — the active file` }] : []),
      ...configs.map((c) => ({
        label: `$(debug-alt) ${String(c.name)}`,
        description: `launch configuration: ${typeof c.program === 'string' ? c.program : typeof c.module === 'string' ? `-m ${c.module}` : '?'}`,
        config: c,
      })),
    ];
    picked = await vscode.window.showQuickPick(items, { title: 'commcost: trace which job (on this machine)', placeHolder: 'The active file, or a launch configuration' });
    if (!picked) return undefined;
  }
  const folder = folderUri?.fsPath ?? (active ? dirname(active.uri.fsPath) : undefined);
  if (picked.config) {
    if (!folder) {
      void vscode.window.showErrorMessage('commcost: a launch configuration needs a workspace folder.');
      return undefined;
    }
    if (active?.isDirty) await active.save();
    try {
      const l = launchCommand(picked.config, { workspaceFolder: folder, ...(active ? { file: active.uri.fsPath } : {}), python: pythonOf() }, process.env);
      return { label: l.name, command: l.command, cwd: l.cwd, env: l.env };
    } catch (e) {
      void vscode.window.showErrorMessage(`commcost: the launch configuration "${String(picked.config.name)}" ${e instanceof Error ? e.message : String(e)}.`);
      return undefined;
    }
  }
  if (!active) return undefined;
  if (active.isDirty && !(await active.save())) {
    void vscode.window.showErrorMessage(`commcost: ${basename(active.uri.fsPath)} could not be saved; trace not started.`);
    return undefined;
  }
  const file = active.uri.fsPath;
  return { label: basename(file), command: [pythonOf(), file], cwd: folder ?? dirname(file), env: {} };
}

async function traceFile(env: TraceCommandEnv): Promise<void> {
  const { log } = env;
  if (!vscode.workspace.isTrusted) {
    void vscode.window.showWarningMessage('commcost: tracing runs the file: trust this workspace first (Restricted Mode).');
    return;
  }
  const job = await chooseJob();
  if (!job) return;
  let simulate = false;
  if (!(await hasGpu())) {
    const SIM = 'Run on the Simulated NCCL';
    const REAL = 'Run Anyway';
    const pick = await vscode.window.showWarningMessage(
      'commcost: no NVIDIA GPU found on this machine (nvidia-smi lists none). Trace the job against commcost\'s simulated NCCL? Every figure will be marked SIMULATED.',
      SIM,
      REAL,
    );
    if (!pick) return;
    simulate = pick === SIM;
  }
  const { command, cwd: folder, label: name } = job;
  log.info(`trace: ${simulate ? '(simulated NCCL) ' : ''}${command.join(' ')} in ${folder}${Object.keys(job.env).length ? ` with ${Object.keys(job.env).join(', ')} from the launch configuration` : ''}`);
  const out = lineWriter((l) => log.info(`[job] ${l}`));
  const err = lineWriter((l) => log.info(`[job stderr] ${l}`));
  let result: Awaited<ReturnType<typeof runTrace>>;
  try {
    result = await vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title: `commcost: tracing ${name}${simulate ? ' (SIMULATED NCCL)' : ''}`, cancellable: true },
      async (progress, token) => {
        progress.report({ message: 'running the job (output in the commcost log)' });
        const abort = new AbortController();
        const sub = token.onCancellationRequested(() => abort.abort('SIGTERM'));
        try {
          return await runTrace({
            command,
            cwd: folder,
            base: join(env.extension.extensionPath, 'dist'),
            simulate,
            env: { ...process.env, ...job.env },
            stdio: { stdout: (t) => out.push(t), stderr: (t) => err.push(t) },
            signal: abort.signal,
            processGroup: true,
          });
        } finally {
          sub.dispose();
          out.end();
          err.end();
        }
      },
    );
  } catch (e) {
    const message = e instanceof Error ? e.message : String(e);
    log.error(`trace: ${message}`);
    void vscode.window.showErrorMessage(`commcost: could not trace ${name}: ${message}`, 'Show Log').then((a) => a && log.show());
    return;
  }
  const t = result.trace;
  if (result.startError) log.error(`trace: ${result.startError}`);
  for (const line of summaryLines(t)) log.info(`trace:${line}`);
  for (const m of t.missing) log.info(`trace: missing: ${m}`);
  for (const p of t.problems) log.info(`trace: problem: ${p}`);
  if (result.saveError !== undefined) {
    log.error(`trace: could not save ${result.outFile}: ${result.saveError}`);
    void vscode.window.showErrorMessage(`commcost: the trace could not be saved: ${result.saveError}`, 'Show Log').then((a) => a && log.show());
    return;
  }
  log.info(`trace: saved ${result.outFile}`);
  // Reload the traces now (the folder watcher would too) and let a simulated trace answer: the user asked for it.
  await vscode.commands.executeCommand('commcost.traceSaved', result.outFile);
  const sim = isSimulatedTrace(t) ? 'SIMULATED · ' : '';
  const sites = t.sites.filter((s) => s.file !== null).length;
  const how = result.stopped
    ? `stopped (${result.stopped}): partial trace`
    : t.status === 'partial'
      ? `partial trace${result.exitCode ? ` (exit code ${result.exitCode})` : result.exitSignal ? ` (${result.exitSignal})` : ''}`
      : `${sites} call site${sites === 1 ? '' : 's'} traced`;
  const SHOW = 'Show Trace';
  const message = `commcost: ${sim}${name}: ${how}. The annotations now show the observed figures.`;
  const show = t.status === 'partial' ? vscode.window.showWarningMessage(message, SHOW, 'Show Log') : vscode.window.showInformationMessage(message, SHOW);
  void show.then(async (a) => {
    if (a === SHOW) await vscode.window.showTextDocument(vscode.Uri.file(result.outFile), { preview: false });
    else if (a === 'Show Log') log.show();
  });
}
