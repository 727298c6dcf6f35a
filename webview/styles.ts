/**
 * The webview's stylesheet, injected as one <style> element (allowed by the CSP's
 * `style-src 'unsafe-inline'`). Uses VS Code theme variables with fallbacks for the standalone
 * HTML report.
 */
export const STYLES = `
/* Standalone HTML report: VS Code sets these variables (and a vscode-* body class); give the light
   or dark defaults of VS Code's own themes otherwise, after the reader's prefers-color-scheme. */
body:not(.vscode-light):not(.vscode-dark):not(.vscode-high-contrast):not(.vscode-high-contrast-light) {
  color-scheme: light;
  --vscode-foreground: #222; --vscode-editor-background: #fff; --vscode-sideBar-background: #f6f6f6;
  --vscode-editorWidget-border: #d0d0d0; --vscode-badge-background: #616161; --vscode-badge-foreground: #fff;
  --vscode-errorForeground: #c00; --vscode-editorWarning-foreground: #b58900; --vscode-font-family: system-ui, sans-serif;
  --vscode-inputValidation-warningBackground: #fff4ce; --vscode-inputValidation-warningForeground: #222;
  --vscode-charts-blue: #1a85ff; --vscode-charts-orange: #d18616; --vscode-charts-green: #388a34;
  --vscode-charts-purple: #652d90; --vscode-charts-red: #e51400; --vscode-charts-yellow: #bf8803;
}
@media (prefers-color-scheme: dark) {
  body:not(.vscode-light):not(.vscode-dark):not(.vscode-high-contrast):not(.vscode-high-contrast-light) {
    color-scheme: dark;
    --vscode-foreground: #cccccc; --vscode-editor-background: #1e1e1e; --vscode-sideBar-background: #252526;
    --vscode-editorWidget-border: #454545; --vscode-badge-background: #4d4d4d; --vscode-badge-foreground: #fff;
    --vscode-errorForeground: #f48771; --vscode-editorWarning-foreground: #cca700;
    --vscode-inputValidation-warningBackground: #352a05; --vscode-inputValidation-warningForeground: #cccccc;
    --vscode-charts-blue: #3794ff; --vscode-charts-orange: #d18616; --vscode-charts-green: #89d185;
    --vscode-charts-purple: #b180d7; --vscode-charts-red: #f14c4c; --vscode-charts-yellow: #cca700;
  }
}
body { font-family: var(--vscode-font-family, system-ui, sans-serif); font-size: var(--vscode-font-size, 13px);
  color: var(--vscode-foreground, #222); background: var(--vscode-editor-background, #fff); margin: 0; padding: 12px 20px; }
h1 { font-size: 1.4em; margin: 0 0 6px 0; }
h2 { font-size: 1.1em; margin: 0; }
.banner-sim { border: 2px solid var(--vscode-editorWarning-foreground, #b58900); background: var(--vscode-inputValidation-warningBackground, #fff4ce);
  color: var(--vscode-inputValidation-warningForeground, inherit); padding: 8px 12px; margin: 8px 0; font-weight: 600; }
.banner-sim strong { font-size: 1.2em; letter-spacing: 0.08em; margin-right: 8px; }
.meta { display: grid; grid-template-columns: max-content 1fr; gap: 2px 14px; margin: 8px 0; }
.meta dt { opacity: 0.75; }
.meta dd { margin: 0; word-break: break-all; }
.status { display: flex; align-items: center; gap: 10px; margin: 10px 0; }
.status .label { font-weight: 600; text-transform: uppercase; }
.status-failed .label { color: var(--vscode-errorForeground, #c00); }
.status-partial .label { color: var(--vscode-editorWarning-foreground, #b58900); }
.exp { margin: 14px 0; }
.exp-progress { display: flex; align-items: center; gap: 10px; margin: 4px 0; }
.exp-progress vscode-progress-bar { flex: 1; max-width: 320px; }
.chart { position: relative; width: 100%; max-width: 900px; }
table.steps { border-collapse: collapse; margin: 8px 0; font-variant-numeric: tabular-nums; }
table.steps th, table.steps td { padding: 2px 10px; border-bottom: 1px solid var(--vscode-editorWidget-border, #ddd); text-align: left; }
table.steps .num { text-align: right; }
table.steps tr.derived td { font-weight: 600; }
table.steps tr.memory td { opacity: 0.85; font-style: italic; }
table.nccl-parts { border-collapse: collapse; margin: 8px 0; font-variant-numeric: tabular-nums; }
table.nccl-parts th, table.nccl-parts td { padding: 2px 10px; border-bottom: 1px solid var(--vscode-editorWidget-border, #ddd); text-align: left; }
table.nccl-parts .num { text-align: right; }
.skipped li, .errors li { margin: 4px 0; }
.errors .code { font-family: var(--vscode-editor-font-family, monospace); color: var(--vscode-errorForeground, #c00); }
.errors .hint { opacity: 0.85; }
.muted { opacity: 0.7; }
.decimation-note { max-width: 900px; margin: 4px 0 8px 0; }
.pager { display: flex; align-items: center; gap: 8px; margin: 8px 0 0 0; }
.pager-note { padding: 0 6px; font-variant-numeric: tabular-nums; }
.rank-note { border-left: 3px solid var(--vscode-editorWarning-foreground, #b58900); padding: 2px 8px; max-width: 900px; }
.first-page { max-width: 980px; margin: 8px 0 14px 0; padding: 10px 14px; border: 1px solid var(--vscode-editorWidget-border, #d0d0d0);
  background: var(--vscode-sideBar-background, #f6f6f6); }
.first-page h2 { margin-bottom: 6px; }
.first-page .answer { margin: 8px 0; }
.first-page .answer-head { display: flex; align-items: baseline; gap: 12px; }
.first-page .answer-label { font-weight: 600; min-width: 15em; }
.first-page .answer-figure { font-size: 1.25em; font-weight: 600; font-variant-numeric: tabular-nums; }
.first-page .answer.absent .answer-text { opacity: 0.75; }
.first-page .answer-step { font-size: 0.9em; }
.first-page ul.answer-study { margin: 2px 0 0 0; padding-left: 18px; font-size: 0.92em; }
.first-page .regime { padding: 4px 8px; border-left: 3px solid var(--vscode-editorWarning-foreground, #b58900); }
.first-page .regime-failed { border-left-color: var(--vscode-errorForeground, #c00); }
h3 { font-size: 1em; margin: 10px 0 2px 0; }
.expected-hangs li { margin: 4px 0; }
.expected-hangs .code { font-family: var(--vscode-editor-font-family, monospace); }
.expected-hangs .hint { opacity: 0.85; }
.swatch { display: inline-block; width: 12px; height: 12px; border-radius: 2px; margin-right: 6px; vertical-align: middle; }
table.steps.legend td { vertical-align: top; }
table.steps.legend td:first-child { white-space: nowrap; }
table.steps.legend .muted { font-size: 0.9em; }
table.steps td.ratio-up { color: var(--vscode-errorForeground, #c00); }
table.steps td.ratio-down { color: var(--vscode-charts-green, #388a34); }
`;
