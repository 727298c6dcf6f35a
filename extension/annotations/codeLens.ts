/**
 * CodeLens above each annotated call: the headline figure and the run it comes from ("⏱ 176 ms
 * to first collective · 484 MiB/GPU — localhost · NCCL 2.28.9 · 2026-11-29") opening the run, or
 * "Measure this on …" running `commcost.measure` with the call's experiment preselected.
 */
import * as vscode from 'vscode';
import type { AnnotationModel } from './annotationModel';
import { codeLensTitle, skipGate } from '../../readings/annotationText';
import type { TraceObservation } from '../../readings/traces';
import { observedLensTitle } from '../../readings/tracesText';

export class AnnotationCodeLensProvider implements vscode.CodeLensProvider {
  /**
   * @param model the model, once loaded
   * @param enabled whether the setting allows CodeLens
   * @param changed fired when annotations change
   * @param traced what the answering trace observed per line (tracesWatch.ts): such a line gets
   *   the observed lens first ("⏱ observed … — job · ranks · host · NCCL · date"), opening the trace
   */
  constructor(
    private readonly model: () => AnnotationModel | undefined,
    private readonly enabled: () => boolean,
    readonly onDidChangeCodeLenses: vscode.Event<void>,
    private readonly traced?: (document: vscode.TextDocument) => Map<number, TraceObservation>,
  ) {}

  provideCodeLenses(document: vscode.TextDocument): vscode.CodeLens[] {
    const model = this.model();
    if (!model || !this.enabled()) return [];
    const state = model.state(document.uri.toString());
    if (!state) return [];
    const observed = this.traced?.(document) ?? new Map<number, TraceObservation>();
    const lensed = new Set<number>();
    return state.scan.sites.flatMap((site) => {
      const a = model.annotateSite(document.uri.toString(), site);
      const range = new vscode.Range(site.range.start.line, site.range.start.character, site.range.start.line, site.range.start.character);
      const o = observed.get(site.range.start.line);
      // Beside an observed figure, the experiment's reads as such ("experiment 176 ms to first collective — run").
      const title = o && a.measured ? codeLensTitle(a, site, state.scan.sites).replace('⏱ ', 'experiment ') : codeLensTitle(a, site, state.scan.sites);
      const lenses: vscode.CodeLens[] = [];
      if (o && !lensed.has(site.range.start.line)) {
        lensed.add(site.range.start.line);
        lenses.push(
          new vscode.CodeLens(range, { title: observedLensTitle(o), command: 'commcost.openTrace', arguments: [o.trace.key], tooltip: 'Open the trace these figures come from' }),
        );
      }
      if (a.measured)
        return lenses.concat(new vscode.CodeLens(range, {
          title,
          command: 'commcost.openRun',
          arguments: [a.measured.source.key],
          tooltip: 'Open the run these figures come from',
        }));
      // Nothing can measure it (annotationText.ts: the lens says what the run shows instead): the run, not a measurement.
      if (a.missing?.unmeasurable)
        return lenses.concat(new vscode.CodeLens(range, a.active
          ? { title, command: 'commcost.openRun', arguments: [a.active.key], tooltip: 'Open the run' }
          : { title, command: '' }));
      const experiment = a.missing?.experiment ?? a.entry.answer.experiment;
      return lenses.concat(new vscode.CodeLens(range, {
        title,
        command: 'commcost.measure',
        // A skip the host cannot lift (annotationText.ts skipGate): the picker, not the same host again.
        arguments: [{ experiments: [experiment], ...(a.active && !skipGate(a) ? { host: a.active.run.host } : {}) }],
        tooltip: `Measure the ${experiment} experiment${a.missing?.timedOut ? ' again (the hang guard stopped it in this run)' : ''}`,
      }));
    });
  }
}
