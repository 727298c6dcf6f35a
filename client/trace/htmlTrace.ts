/**
 * `commcost trace --html FILE`: a trace as one self-contained HTML file — the timeline per rank
 * (creation, first collective and teardown of every communicator, one row per rank, the cold
 * communicator marked, NCCL's background work lighter) and the per-site table with NCCL's view.
 *
 * It inlines the trace report bundle (dist/traceReport.js, built from webview/traceMain.ts: SVG and
 * tables built with DOM calls, every string inserted as text) and the trace JSON in
 * `<script type="application/json" id="commcost-trace">` (`<` written as `\u003c`), under a CSP with
 * a per-file nonce; a `<noscript>` table (HTML-escaped) carries the figures without script.
 * Traces are untrusted (a file from a cloned repository): nothing from them is markup.
 */
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { isSimulatedTrace, type TraceFile, type TracePhaseStats } from '../../protocol/trace';
import { CommcostError } from '../errors';
import { escapeHtml, jsonForScript } from '../htmlReport';
import { writeFileSafely } from '../safeWrite';

/** Where the trace report bundle is looked for: next to the running bundle (dist/), the source tree's dist/, ./dist. */
export function traceBundleCandidates(base = __dirname): string[] {
  return [join(base, 'traceReport.js'), join(base, '..', 'dist', 'traceReport.js'), join(base, '..', '..', 'dist', 'traceReport.js'), resolve('dist', 'traceReport.js')];
}

function stats(s: TracePhaseStats | null): string {
  const f = (x: number) => (x >= 100 ? x.toFixed(0) : x >= 10 ? x.toFixed(1) : x.toFixed(2));
  return !s ? '—' : s.n > 1 ? `${f(s.medianMs)} (p90 ${f(s.p90Ms)})` : f(s.medianMs);
}

/** The no-script body: banner, per-site table (escaped). */
function fallback(t: TraceFile): string {
  const e = escapeHtml;
  const rows = t.sites.map((s) => {
    const where = s.file ? `${s.file}${s.line !== null ? `:${s.line}` : ''}` : '(unattributed)';
    const view = s.nccl ? `total ${(s.nccl.parts.total ?? 0).toFixed(0)}` : '—';
    return `<tr><td>${e(where)}</td><td>${e(s.api)}</td><td>${s.count}</td><td>${e(stats(s.creation))}</td><td>${e(stats(s.firstCollective))}</td><td>${e(stats(s.connect))}</td><td>${e(stats(s.teardown))}</td><td>${s.cold ? 'cold' : ''}</td><td>${e(view)}</td></tr>`;
  });
  return [
    isSimulatedTrace(t) ? '<p class="banner-sim"><strong>SIMULATED</strong> every figure comes from commcost\'s simulated NCCL, not from a GPU</p>' : '',
    `<h1>commcost trace: ${e(t.command.join(' '))}</h1><p>The timeline needs JavaScript; the figures, ms:</p>`,
    '<table><tr><th>site</th><th>api</th><th>n</th><th>creation</th><th>first collective</th><th>connect</th><th>teardown</th><th></th><th>NCCL total</th></tr>',
    ...rows, '</table>',
  ].join('');
}

/** JavaScript made safe inside a `<script>` element. */
function scriptSafe(js: string): string {
  return js.replace(/\/\/# sourceMappingURL=\S*\s*$/, '').replace(/<\/(script)/gi, '<\\/$1').replace(/<!--/g, '<\\!--');
}

/**
 * Renders `trace` as a self-contained HTML document (UTF-8 text); nothing is fetched when opened.
 * @param opts.bundlePath the trace report bundle to inline; default: the first of {@link traceBundleCandidates} that exists
 * @throws CommcostError BAD_INPUT when the bundle is not found (names every path tried and how to build it)
 */
export function renderTraceReport(trace: TraceFile, opts: { bundlePath?: string; base?: string } = {}): string {
  const tried = opts.bundlePath ? [resolve(opts.bundlePath)] : traceBundleCandidates(opts.base);
  const bundle = tried.find((p) => existsSync(p));
  if (!bundle) throw new CommcostError('BAD_INPUT', `the trace report bundle traceReport.js was not found; searched ${tried.join(', ')}`, { hint: 'build it: node scripts/build.mjs' });
  const js = scriptSafe(readFileSync(bundle, 'utf8'));
  const nonce = randomBytes(16).toString('base64');
  const csp = `default-src 'none'; script-src 'nonce-${nonce}'; style-src 'unsafe-inline'`;
  const title = `commcost trace — ${trace.command.join(' ')}${isSimulatedTrace(trace) ? ' (SIMULATED)' : ''}`;
  return [
    '<!DOCTYPE html>', '<html lang="en">', '<head>', '<meta charset="UTF-8">',
    `<meta http-equiv="Content-Security-Policy" content="${csp}">`,
    '<meta name="viewport" content="width=device-width, initial-scale=1.0">', '<meta name="color-scheme" content="light dark">',
    `<title>${escapeHtml(title)}</title>`,
    '<style>body{font-family:system-ui,sans-serif}.banner-sim{border:2px solid #b58900;background:#fff4ce;padding:8px 12px;font-weight:600}table{border-collapse:collapse}td,th{padding:2px 8px;border-bottom:1px solid #ddd;text-align:left}@media (prefers-color-scheme: dark){body{color:#ccc;background:#1e1e1e}.banner-sim{background:#352a05}}</style>',
    '</head>', '<body>', '<div id="app"></div>',
    `<noscript>${fallback(trace)}</noscript>`,
    `<script type="application/json" id="commcost-trace">${jsonForScript(trace)}</script>`,
    `<script nonce="${nonce}">${js}</script>`,
    '</body>', '</html>', '',
  ].join('\n');
}

/**
 * The report to open for a trace file (the Runs view's "Open trace report"): always rendered
 * afresh from the trace (already read through validateTraceFile) into `dir`, never a `.html` found
 * beside the trace — a cloned repository could commit any page there, and a marker naming the
 * trace would be as easy to forge as the page. `dir` (the extension's storage) is made 0700; the
 * file is `<dir>/<sha256 of the trace's path, 16 hex>.html`, written through the safe writer.
 * @param trace the validated trace
 * @param tracePath the trace file's path (names the report, shown in nothing)
 * @param opts.bundlePath / opts.base where the report bundle is ({@link renderTraceReport})
 * @returns the report's absolute path
 * @throws CommcostError BAD_INPUT when the bundle is missing or the report cannot be written
 */
export async function freshTraceReport(trace: TraceFile, tracePath: string, dir: string, opts: { bundlePath?: string; base?: string } = {}): Promise<string> {
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const file = join(dir, `${createHash('sha256').update(resolve(tracePath)).digest('hex').slice(0, 16)}.html`);
  await writeFileSafely(file, renderTraceReport(trace, opts), 'the trace report');
  return file;
}
