/**
 * The hover over an annotated call: the figures of its experiment on the active profile, read
 * from the model's cache. The Markdown escapes run-file text; `isTrusted` is limited to our own
 * command ids, and links carry only our own ids (profile keys, experiment ids of apiMap.ts).
 */
import * as vscode from 'vscode';
import type { AnnotationModel } from './annotationModel';
import { HOVER_COMMANDS, hoverLinks, hoverMarkdown } from '../../readings/annotationText';
import type { TraceObservation } from '../../readings/traces';
import { observedMarkdown, openTraceUri, TRACE_COMMANDS } from '../../readings/tracesText';

export class AnnotationHoverProvider implements vscode.HoverProvider {
  /**
   * @param model the model, once loaded
   * @param traced what the answering trace observed per line (tracesWatch.ts): such a line's
   *   hover gives the observed figures first, then the experiment's for comparison
   */
  constructor(
    private readonly model: () => AnnotationModel | undefined,
    private readonly traced?: (document: vscode.TextDocument) => Map<number, TraceObservation>,
  ) {}

  provideHover(document: vscode.TextDocument, position: vscode.Position): vscode.Hover | undefined {
    const found = this.model()?.at(document.uri.toString(), { line: position.line, character: position.character });
    if (!found) return undefined;
    const { site, annotation } = found;
    const synthetic = hoverMarkdown(annotation, site, hoverLinks(annotation));
    const observed = this.traced?.(document).get(site.range.start.line);
    const text = observed
      ? `${observedMarkdown(observed, openTraceUri(observed.trace.key))}\n\n---\n\n**Synthetic experiment, for comparison**\n\n${synthetic}`
      : synthetic;
    const md = new vscode.MarkdownString(text);
    md.isTrusted = { enabledCommands: [...HOVER_COMMANDS, ...TRACE_COMMANDS] };
    md.supportHtml = false;
    const r = site.nameRange;
    return new vscode.Hover(md, new vscode.Range(r.start.line, r.start.character, r.end.line, r.end.character));
  }
}
