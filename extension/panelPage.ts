/**
 * The page of a results or comparison panel (extension/webviewPanel.ts), with no `vscode` import
 * (unit-tested): the webview bundle (dist/webview.js) is inlined into the page under a per-load
 * script nonce, not loaded by URL.
 *
 * Why inlined: a webview's resources (`asWebviewUri` URLs) are fetched through VS Code's webview
 * service worker. When a window reload restores two webview panels at once, each registers the
 * worker again with its own id and one page can end up not controlled by it: its
 * `<script src>` request escapes the worker (in VS Code for the Web / code-server it goes to
 * `https://…vscode-resource.vscode-cdn.net/…` and fails with ERR_NAME_NOT_RESOLVED) and the page
 * stays blank for good, since nothing on it runs. A page whose script is inline needs no resource
 * request, so it draws whichever panel wins that race. The HTML report inlines the same bundle
 * (client/htmlReport.ts).
 */
import { randomBytes } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { scriptSafe } from '../client/htmlReport';
import { restoreAttribute, type PanelRestoreState } from './panelSerializerState';

/** The webview bundle could not be read; says where it was looked for and what to do. */
export class WebviewBundleError extends Error {
  readonly code = 'WEBVIEW_BUNDLE_UNREADABLE';
  constructor(
    readonly path: string,
    cause: unknown,
  ) {
    super(
      `the webview bundle ${path} could not be read (${cause instanceof Error ? cause.message : String(cause)}): reinstall the commcost extension, or run \`node scripts/build.mjs\` in a development checkout`,
    );
    this.name = 'WebviewBundleError';
  }
}

let cached: { path: string; mtimeMs: number; size: number; js: string } | undefined;

/**
 * The webview bundle `<extensionPath>/dist/webview.js`, made safe to inline in a `<script>`
 * element (client/htmlReport.ts `scriptSafe`: no `</script`, no `<!--`, no source map comment).
 * Read once and kept while the file's mtime and size stay the same (a rebuild is picked up).
 * @throws WebviewBundleError when the file cannot be read.
 */
export function webviewScript(extensionPath: string): string {
  const path = join(extensionPath, 'dist', 'webview.js');
  try {
    const st = statSync(path);
    if (cached && cached.path === path && cached.mtimeMs === st.mtimeMs && cached.size === st.size) return cached.js;
    const js = scriptSafe(readFileSync(path, 'utf8'));
    cached = { path, mtimeMs: st.mtimeMs, size: st.size, js };
    return js;
  } catch (err) {
    throw new WebviewBundleError(path, err);
  }
}

/** What a panel page is made of. */
export interface PanelPageParts {
  /** The webview's `cspSource` (styles, images and fonts the page may load). */
  cspSource: string;
  /** The inline-safe webview bundle ({@link webviewScript}). */
  script: string;
  /** Run file paths the panel shows, kept for its restore (`data-commcost-state`). */
  state?: PanelRestoreState;
  /** Data for the page, already safe for `<script type="application/json">` (htmlReport.ts `jsonForScript`). */
  embedded?: { id: string; json: string };
}

/**
 * The page of a panel: CSP `default-src 'none'` with a fresh script nonce (only the inline
 * bundle runs; no script is loaded by URL), `state` in `data-commcost-state` on `<body>`,
 * `embedded` in a JSON script element before the bundle.
 */
export function panelPageHtml(parts: PanelPageParts): string {
  const nonce = randomBytes(16).toString('base64');
  const csp = [
    "default-src 'none'",
    `script-src 'nonce-${nonce}'`,
    `style-src ${parts.cspSource} 'unsafe-inline'`,
    `img-src ${parts.cspSource} data:`,
    `font-src ${parts.cspSource}`,
  ].join('; ');
  const data = parts.embedded ? `<script type="application/json" id="${parts.embedded.id}">${parts.embedded.json}</script>\n` : '';
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="${csp}">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<title>commcost</title>
</head>
<body${parts.state ? ` data-commcost-state="${restoreAttribute(parts.state)}"` : ''}>
<div id="app"></div>
${data}<script nonce="${nonce}">${parts.script}</script>
</body>
</html>`;
}
