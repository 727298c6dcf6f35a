/**
 * Quick fixes for the diagnostics of diagnostics.ts: each is a `WorkspaceEdit` built from the
 * finding's text edits (advice.ts), offered only while the document is at the version scanned.
 */
import * as vscode from 'vscode';
import type { AnnotationModel } from './annotationModel';
import { toRange } from './diagnostics';

export class AnnotationQuickFixes implements vscode.CodeActionProvider {
  constructor(
    private readonly model: () => AnnotationModel | undefined,
    private readonly enabled: () => boolean,
  ) {}

  provideCodeActions(
    document: vscode.TextDocument,
    range: vscode.Range | vscode.Selection,
    context: vscode.CodeActionContext,
  ): vscode.CodeAction[] {
    const model = this.model();
    const uri = document.uri.toString();
    const state = model?.state(uri);
    if (!model || !this.enabled() || !state || state.version !== document.version) return [];
    const out: vscode.CodeAction[] = [];
    for (const f of model.findings(uri)) {
      if (!f.fix) continue;
      const r = toRange(f.range);
      if (!r.intersection(range) && !context.diagnostics.some((d) => d.code === f.code && d.range.isEqual(r))) continue;
      const action = new vscode.CodeAction(f.fix.title, vscode.CodeActionKind.QuickFix);
      const edit = new vscode.WorkspaceEdit();
      for (const e of f.fix.edits) edit.insert(document.uri, new vscode.Position(e.range.start.line, e.range.start.character), e.newText);
      action.edit = edit;
      action.diagnostics = context.diagnostics.filter((d) => d.code === f.code && d.range.isEqual(r));
      action.isPreferred = true;
      out.push(action);
    }
    return out;
  }
}
