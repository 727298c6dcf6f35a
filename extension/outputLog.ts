/**
 * The `commcost` output channel: agent stderr and the extension's own log lines, timestamped by
 * VS Code's log channel. "Show Log" opens it.
 */
import * as vscode from 'vscode';

/** The log surface the rest of the extension uses. */
export interface OutputLog extends vscode.Disposable {
  info(line: string): void;
  error(line: string): void;
  /** Reveals the channel without taking focus. */
  show(): void;
}

/** Creates the `commcost` log output channel. */
export function createOutputLog(): OutputLog {
  const channel = vscode.window.createOutputChannel('commcost', { log: true });
  return {
    info: (line) => channel.info(line),
    error: (line) => channel.error(line),
    show: () => channel.show(true),
    dispose: () => channel.dispose(),
  };
}
