/**
 * The hover over an annotated call: the figures of its experiment on the active profile, read
 * from the model's cache. The Markdown escapes run-file text; `isTrusted` is limited to our own
 * command ids, and links carry only our own ids (profile keys, experiment ids of apiMap.ts).
 */
import * as vscode from 'vscode';
import type { AnnotationModel } from './annotationModel';
import { HOVER_COMMANDS, hoverLinks, hoverMarkdown } from './annotationText';

export class AnnotationHoverProvider implements vscode.HoverProvider {
  constructor(private readonly model: () => AnnotationModel | undefined) {}

  provideHover(document: vscode.TextDocument, position: vscode.Position): vscode.Hover | undefined {
    const found = this.model()?.at(document.uri.toString(), { line: position.line, character: position.character });
    if (!found) return undefined;
    const { site, annotation } = found;
    const md = new vscode.MarkdownString(hoverMarkdown(annotation, site, hoverLinks(annotation)));
    md.isTrusted = { enabledCommands: [...HOVER_COMMANDS] };
    md.supportHtml = false;
    const r = site.nameRange;
    return new vscode.Hover(md, new vscode.Range(r.start.line, r.start.character, r.end.line, r.end.character));
  }
}
