/**
 * The after-line cost label (Import Cost style): "176 ms · 484 MiB/GPU" after each annotated
 * call's line (with the run's label when it is not the active run), coloured by the user's
 * thresholds (commcost.annotations.mediumMs / largeMs), dimmed when stale.
 */
import * as vscode from 'vscode';
import type { AnnotationModel } from './annotationModel';
import { costClass, decorationLabel, firstCollectiveElsewhere, type CostClass } from '../../readings/annotationText';
import type { TraceObservation } from '../../readings/traces';
import { observedLabel, observedMs } from '../../readings/tracesText';

type Kind = CostClass | 'stale';

const COLOURS: Record<Kind, string> = { small: 'charts.green', medium: 'charts.yellow', large: 'charts.red', stale: 'disabledForeground' };
const RANK: Record<Kind, number> = { stale: 0, small: 1, medium: 2, large: 3 };

export class CostDecorations implements vscode.Disposable {
  private readonly types: Record<Kind, vscode.TextEditorDecorationType>;

  constructor() {
    const make = (kind: Kind): vscode.TextEditorDecorationType =>
      vscode.window.createTextEditorDecorationType({
        after: {
          color: new vscode.ThemeColor(COLOURS[kind]),
          margin: '0 0 0 1.5em',
          fontStyle: 'italic',
          ...(kind === 'stale' ? { textDecoration: 'none; opacity: 0.6' } : {}),
        },
        rangeBehavior: vscode.DecorationRangeBehavior.ClosedClosed,
      });
    this.types = { small: make('small'), medium: make('medium'), large: make('large'), stale: make('stale') };
  }

  /**
   * Redraws the labels of `editor` from the model (clears them when disabled or unknown).
   * @param observed what the answering trace observed per line (tracesWatch.ts): such a line's
   *   label gives the observed figure first, then the experiment's ("observed 35.5 ms call · 144 ms
   *   first collective · experiment 176 ms"), coloured by the observed figure
   */
  update(
    editor: vscode.TextEditor,
    model: AnnotationModel | undefined,
    enabled: boolean,
    thresholds: { mediumMs: number; largeMs: number },
    observed: Map<number, TraceObservation> = new Map(),
  ): void {
    const byKind: Record<Kind, vscode.DecorationOptions[]> = { small: [], medium: [], large: [], stale: [] };
    const state = enabled && model ? model.state(editor.document.uri.toString()) : undefined;
    if (state && model) {
      // One label per line: several calls on a line are joined, coloured by the costliest.
      const lines = new Map<number, { labels: string[]; kind: Kind }>();
      const traced = new Set<number>();
      for (const site of state.scan.sites) {
        const a = model.annotateSite(editor.document.uri.toString(), site);
        const line = site.range.start.line;
        const o = observed.get(line);
        if (o && !traced.has(line)) {
          traced.add(line);
          const entry = lines.get(line) ?? { labels: [], kind: 'small' as Kind };
          entry.kind = costClass(observedMs(o), thresholds.mediumMs, thresholds.largeMs);
          entry.labels.unshift(observedLabel(o));
          lines.set(line, entry);
        }
        const label = decorationLabel(a, site, state.scan.sites);
        if (!label || !a.measured) continue;
        if (o) {
          lines.get(line)!.labels.push(`experiment ${label}`);
          continue;
        }
        // Coloured by what this line pays: the call alone when its first collective is a line of its own.
        const paid = (firstCollectiveElsewhere(a, site, state.scan.sites)?.call ?? a.measured.headline).stats.median;
        const kind: Kind = a.stale.length ? 'stale' : costClass(paid, thresholds.mediumMs, thresholds.largeMs);
        const entry = lines.get(line) ?? { labels: [], kind };
        entry.labels.push(label);
        if (RANK[kind] > RANK[entry.kind]) entry.kind = kind;
        lines.set(line, entry);
      }
      for (const [line, { labels, kind }] of lines) {
        if (line >= editor.document.lineCount) continue;
        const end = editor.document.lineAt(line).range.end;
        byKind[kind].push({ range: new vscode.Range(end, end), renderOptions: { after: { contentText: `⏱ ${labels.join(' · ')}` } } });
      }
    }
    for (const kind of Object.keys(this.types) as Kind[]) editor.setDecorations(this.types[kind], byKind[kind]);
  }

  dispose(): void {
    for (const t of Object.values(this.types)) t.dispose();
  }
}
