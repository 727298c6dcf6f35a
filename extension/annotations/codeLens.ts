/**
 * CodeLens above each annotated call: the headline figure and the run it comes from ("⏱ 176 ms
 * to first collective · 484 MiB/GPU — localhost · NCCL 2.28.9 · 2026-11-29") opening the run, or
 * "Measure this on …" running `commcost.measure` with the call's experiment preselected.
 */
import * as vscode from 'vscode';
import type { AnnotationModel } from './annotationModel';
import { codeLensTitle } from './annotationText';

export class AnnotationCodeLensProvider implements vscode.CodeLensProvider {
  /**
   * @param model the model, once loaded
   * @param enabled whether the setting allows CodeLens
   * @param changed fired when annotations change
   */
  constructor(
    private readonly model: () => AnnotationModel | undefined,
    private readonly enabled: () => boolean,
    readonly onDidChangeCodeLenses: vscode.Event<void>,
  ) {}

  provideCodeLenses(document: vscode.TextDocument): vscode.CodeLens[] {
    const model = this.model();
    if (!model || !this.enabled()) return [];
    const state = model.state(document.uri.toString());
    if (!state) return [];
    return state.scan.sites.map((site) => {
      const a = model.annotateSite(document.uri.toString(), site);
      const range = new vscode.Range(site.range.start.line, site.range.start.character, site.range.start.line, site.range.start.character);
      const title = codeLensTitle(a);
      if (a.measured)
        return new vscode.CodeLens(range, {
          title,
          command: 'commcost.openRun',
          arguments: [a.measured.source.key],
          tooltip: 'Open the run these figures come from',
        });
      const experiment = a.missing?.experiment ?? a.entry.answer.experiment;
      return new vscode.CodeLens(range, {
        title,
        command: 'commcost.measure',
        arguments: [{ experiments: [experiment], ...(a.active ? { host: a.active.run.host } : {}) }],
        tooltip: `Measure the ${experiment} experiment`,
      });
    });
  }
}
