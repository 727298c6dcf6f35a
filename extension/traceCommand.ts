/**
 * `commcost.traceFile` — "commcost: Trace Python File": runs the active Python file under
 * `commcost trace` on this machine (the engine of client/trace/run.ts, as the CLI does), with
 * progress and Cancel, the job's output in the commcost output channel, and on completion a
 * notification with "Show Trace" (opens the saved `.commcost/traces/*.json`). The annotations
 * update from the saved trace (tracesWatch.ts watches the folder). Locally or on a host: when
 * `commcost.hosts` lists SSH hosts, a pick offers localhost first, then those hosts (traceHost.ts;
 * groups and `slurm:` entries are listed as not for tracing); on an SSH host the active file runs
 * through the engine of `commcost trace --host H` (client/trace/remote.ts) in the remote working
 * directory asked for (empty = the remote home), the trace saved in the workspace's
 * `.commcost/traces/`. In a Remote-SSH window the extension already runs on that host: localhost is it.
 *
 * When no GPU is found (`nvidia-smi -L` lists none) the user is offered the simulated NCCL
 * (`--simulate`): every figure of that trace is then SIMULATED, and the trace is chosen so that
 * the annotations show it (marked SIMULATED), as the user asked for it.
 */
import { basename, dirname, join } from 'node:path';
import * as vscode from 'vscode';
import { CommcostError } from '../client/errors';
import { hasGpu, runTrace } from '../client/trace/run';
import { isSimulatedTrace, type TraceFile } from '../protocol/trace';
import { confirmUnknownHostKey } from './hostKeyPrompt';
import { isPythonLaunch, launchCommand } from './traceLaunch';
import { defaultRemoteFile, remoteTraceOptions, traceHostItems, type TraceHostItem } from './traceHost';
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
  const host = await chooseHost();
  if (!host) return;
  if (host.kind === 'ssh') return traceOnHost(env, host.entry);
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
  await runAndReport(env, `${name}${simulate ? ' (SIMULATED NCCL)' : ''}`, name, (stdio, signal) =>
    runTrace({
      command,
      cwd: folder,
      base: join(env.extension.extensionPath, 'dist'),
      simulate,
      env: { ...process.env, ...job.env },
      stdio,
      signal,
      processGroup: true,
    }),
  );
}

/**
 * The host to trace on: localhost without asking when `commcost.hosts` names no other entry,
 * else the pick (localhost first, then the setting's entries; an entry not for tracing says why
 * in its detail and, when picked, in a message). Undefined when dismissed or refused.
 */
async function chooseHost(): Promise<TraceHostItem | undefined> {
  const raw = vscode.workspace.getConfiguration('commcost').get<unknown>('hosts');
  const items = traceHostItems(Array.isArray(raw) ? raw.filter((h): h is string => typeof h === 'string') : []);
  if (items.length === 1) return items[0];
  const remoteWindow = vscode.env.remoteName === 'ssh-remote';
  type Item = vscode.QuickPickItem & { host: TraceHostItem };
  const picks: Item[] = items.map((h) => ({
    label: h.kind === 'local' ? '$(vm) localhost' : h.offered ? `$(remote) ${h.entry}` : `$(circle-slash) ${h.entry}`,
    description: h.kind === 'local' ? (remoteWindow ? "this window's host (Remote-SSH)" : 'this machine') : h.offered ? 'SSH host · commcost.hosts' : 'not for tracing',
    ...(h.detail ? { detail: h.detail } : {}),
    host: h,
  }));
  const picked = await vscode.window.showQuickPick(picks, { title: 'commcost: trace where', placeHolder: 'Run the job on this machine or on an SSH host', ignoreFocusOut: true });
  if (!picked) return undefined;
  if (!picked.host.offered) {
    void vscode.window.showWarningMessage(`commcost: ${picked.host.entry}: ${picked.host.detail ?? 'not for tracing'}`);
    return undefined;
  }
  return picked.host;
}

/**
 * Traces the active Python file on an SSH host: asks the remote working directory (empty = the
 * remote home) and the file's path there (default: its workspace-relative path), then runs
 * `runRemoteTrace` (the engine of `commcost trace --host`). The trace is saved in the workspace's
 * `.commcost/traces/`.
 */
async function traceOnHost(env: TraceCommandEnv, host: string): Promise<void> {
  const doc = vscode.window.activeTextEditor?.document;
  const active = doc && doc.languageId === 'python' && doc.uri.scheme === 'file' ? doc : undefined;
  if (!active) {
    void vscode.window.showErrorMessage(`commcost: tracing on ${host} needs a Python file saved on disk in the active editor (its path on the host is asked next).`);
    return;
  }
  if (active.isDirty && !(await active.save())) {
    void vscode.window.showErrorMessage(`commcost: ${basename(active.uri.fsPath)} could not be saved; trace not started.`);
    return;
  }
  const folder = vscode.workspace.getWorkspaceFolder(active.uri)?.uri.fsPath;
  const remoteCwd = await vscode.window.showInputBox({
    title: `commcost: working directory on ${host}`,
    prompt: `The job's folder on ${host}: absolute, or relative to the remote home. Empty = the remote home.`,
    placeHolder: '(the remote home)',
    value: '',
    ignoreFocusOut: true,
  });
  if (remoteCwd === undefined) return;
  const remoteFile = await vscode.window.showInputBox({
    title: `commcost: ${basename(active.uri.fsPath)} on ${host}`,
    prompt: `The file's path on ${host}, relative to ${remoteCwd.trim() || 'the remote home'} (or absolute). commcost does not copy your file: it must be there.`,
    value: defaultRemoteFile(active.uri.fsPath, folder),
    ignoreFocusOut: true,
    validateInput: (t) => (t.trim() ? undefined : 'type the file\'s path on the host'),
  });
  if (remoteFile === undefined) return;
  let parts: ReturnType<typeof remoteTraceOptions>;
  try {
    parts = remoteTraceOptions({
      host,
      remoteCwd,
      remoteFile,
      python: String(vscode.workspace.getConfiguration('commcost').get<unknown>('python') ?? ''),
      localCwd: folder ?? dirname(active.uri.fsPath),
      base: join(env.extension.extensionPath, 'dist'),
    });
  } catch (e) {
    void vscode.window.showErrorMessage(`commcost: ${e instanceof Error ? e.message : String(e)}`);
    return;
  }
  const name = `${basename(remoteFile.trim())} on ${host}`;
  env.log.info(`trace: ${parts.command.join(' ')} on ${host} in ${parts.remoteCwd ?? 'the remote home'}`);
  const { runRemoteTrace } = await import('../client/trace/remote');
  const log = (l: string) => env.log.info(`trace: ${l}`);
  // As Measure does: an unknown host key is shown with its fingerprint and trusted only when the user says so.
  const hostKeyPolicy = confirmUnknownHostKey;
  await runAndReport(env, name, name, (stdio, signal) => runRemoteTrace({ ...parts, hostKeyPolicy, stdio, signal, log }));
}

/**
 * Runs `start` under a cancellable progress notification (Cancel = SIGTERM to the job), the job's
 * output in the log, then reports: the per-site summary in the log, the trace reloaded for the
 * annotations, and a notification with "Show Trace".
 */
async function runAndReport(
  env: TraceCommandEnv,
  title: string,
  name: string,
  start: (stdio: { stdout: (t: string) => void; stderr: (t: string) => void }, signal: AbortSignal) => ReturnType<typeof runTrace>,
): Promise<void> {
  const { log } = env;
  const out = lineWriter((l) => log.info(`[job] ${l}`));
  const err = lineWriter((l) => log.info(`[job stderr] ${l}`));
  let result: Awaited<ReturnType<typeof runTrace>>;
  try {
    result = await vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title: `commcost: tracing ${title}`, cancellable: true },
      async (progress, token) => {
        progress.report({ message: 'running the job (output in the commcost log)' });
        const abort = new AbortController();
        const sub = token.onCancellationRequested(() => abort.abort('SIGTERM'));
        try {
          return await start({ stdout: (t) => out.push(t), stderr: (t) => err.push(t) }, abort.signal);
        } finally {
          sub.dispose();
          out.end();
          err.end();
        }
      },
    );
  } catch (e) {
    // A CommcostError of the SSH engine (unreachable, unknown host key, missing folder) carries what to do.
    const message = `${e instanceof Error ? e.message : String(e)}${e instanceof CommcostError && e.hint ? ` — ${e.hint}` : ''}`;
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
  // Only a trace that observed a call site changes the annotations; one that saw no communicator says why.
  const after =
    sites > 0
      ? 'The annotations now show the observed figures.'
      : `No call site was observed${t.missing[0] ? `: ${t.missing[0]}` : ''}.`;
  const message = `commcost: ${sim}${name}: ${how}. ${after}`;
  const show = t.status === 'partial' ? vscode.window.showWarningMessage(message, SHOW, 'Show Log') : vscode.window.showInformationMessage(message, SHOW);
  void show.then(async (a) => {
    if (a === SHOW) await vscode.window.showTextDocument(vscode.Uri.file(result.outFile), { preview: false });
    else if (a === 'Show Log') log.show();
  });
}
