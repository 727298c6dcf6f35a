/**
 * Information-level diagnostics from advice.ts (commcost.annotations.diagnostics turns them off):
 * a communicator created in a loop or per step, a lazy `init_process_group`, a group without a
 * warm-up collective. Each cites a figure of the run.
 */
import * as vscode from 'vscode';
import type { Range } from '../../sites/callSites';
import type { AnnotationModel } from './annotationModel';

export function toRange(r: Range): vscode.Range {
  return new vscode.Range(r.start.line, r.start.character, r.end.line, r.end.character);
}

/** Sets the diagnostics of `document` (clears them when disabled or not annotated). */
export function updateDiagnostics(
  collection: vscode.DiagnosticCollection,
  document: vscode.TextDocument,
  model: AnnotationModel | undefined,
  enabled: boolean,
): void {
  const uri = document.uri.toString();
  if (!enabled || !model?.has(uri)) {
    collection.delete(document.uri);
    return;
  }
  collection.set(
    document.uri,
    model.findings(uri).map((f) => {
      const d = new vscode.Diagnostic(toRange(f.range), f.message, vscode.DiagnosticSeverity.Information);
      d.source = 'commcost';
      d.code = f.code;
      return d;
    }),
  );
}
