/**
 * Extension entry point. Activation only registers commands, the output channel and the
 * annotation providers (no engine, no SSH, no charts, no tree-sitter): the engine loads on the
 * first `commcost.measure`, tree-sitter on the first Python/C/C++ document.
 */
import * as vscode from 'vscode';
import { CommcostContext } from './extensionContext';
import { registerAnnotations } from './annotations/register';
import { registerCommands, trustedOnly } from './commands';
import { registerPanelSerializers } from './panelSerializer';
import { registerRunsView } from './runsView';
import { createOutputLog } from './outputLog';

let ctx: CommcostContext | undefined;

/** Called by VS Code on activation. Failures are shown to the user, not swallowed. */
export function activate(extension: vscode.ExtensionContext): void {
  try {
    const context = new CommcostContext();
    ctx = context;
    extension.subscriptions.push(context);
    const log = context.subscriptions.add(createOutputLog());
    context.subscriptions.add(
      // Restricted Mode: no program runs (the command is also hidden: package.json `when`).
      vscode.commands.registerCommand(
        'commcost.measure',
        trustedOnly('measure', async (arg?: unknown) => {
          const { measureCommand } = await import('./measureCommand');
          return measureCommand({ ctx: context, extension, log }, arg);
        }),
      ),
    );
    context.subscriptions.add(vscode.commands.registerCommand('commcost.showLog', () => log.show()));
    // "Trace Python File": the active file under `commcost trace`, on this machine (the engine loads on first use).
    context.subscriptions.add(
      vscode.commands.registerCommand(
        'commcost.traceFile',
        trustedOnly('trace', async () => {
          const { traceFileCommand } = await import('./traceCommand');
          return traceFileCommand({ extension, log });
        }),
      ),
    );
    // Hover, CodeLens, labels and diagnostics over NCCL/c10d calls; tree-sitter loads on the first Python/C/C++ document.
    const runs = registerAnnotations({ ctx: context, extension, log });
    // Palette commands over saved runs, the Runs view, and the panels restored after a reload.
    registerCommands({ ctx: context, extension, log, runs });
    registerRunsView(context, { extension, log }, runs);
    // Panels are not closed on deactivate: a window reload restores them (panelSerializer.ts).
    for (const d of registerPanelSerializers(extension, log)) context.subscriptions.add(d);
  } catch (err) {
    void vscode.window.showErrorMessage(`commcost failed to activate: ${err instanceof Error ? err.message : String(err)}`);
    throw err;
  }
}

/** Called by VS Code on shutdown: cancels a run in progress and releases everything. */
export function deactivate(): void {
  ctx?.dispose();
  ctx = undefined;
}
