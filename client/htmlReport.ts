/**
 * `renderReport`: a run as one self-contained HTML file (the CLI's `--html` and `commcost report`);
 * `renderComparisonReport`: several runs compared in one such file (`id="commcost-compare"`).
 *
 * The file inlines the built webview bundle (dist/webview.js, the same charts and tables as the
 * VS Code webview) and the run JSON in `<script type="application/json" id="commcost-run">`, runs
 * under a CSP with a per-file nonce, and carries a plain table fallback inside `<noscript>`. It is
 * light or dark after the reader's `prefers-color-scheme`; a field case's expected hangs are listed
 * under the case's own section, not among the errors.
 * Run files are untrusted: every string from the run is HTML-escaped, and the embedded JSON has
 * `<` written as `\u003c` so that `</script>` inside data cannot end the script element.
 */
import { runName } from '../readings/runName';
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { StepStats, VariantSummary } from '../protocol/events';
import { isSimulatedRun, memoryPointLabel, memStatsNote, type RunFile } from '../protocol/runFile';
import { compareRuns, COMPARE_ELEMENT_ID, formatRatio, rankCountNote, simulatedMixNote, type Comparison, type ComparisonData } from '../protocol/compare';
import { nodesText } from '../protocol/runNodes';
import { jsonPieces } from './jsonPieces';
import { shrinkAbortOutcomes } from '../readings/verdict';
import { fieldCaseLabel } from '../readings/verdict/fieldCases';
import { errorAdvice } from '../readings/failureAdvice';

/** The webview bundle could not be found; `searched` lists every path tried. */
export class ReportBundleError extends Error {
  readonly code = 'WEBVIEW_BUNDLE_MISSING';
  constructor(readonly searched: string[]) {
    super(`the webview bundle (webview.js) was not found; searched ${searched.join(', ')}: run \`node scripts/build.mjs\``);
    this.name = 'ReportBundleError';
  }
}

/** Text for the simulated-run banner of the no-script fallback (the script view says the same). */
const SIMULATED_TEXT = "figures come from commcost's simulated NCCL, not from a measurement";

/**
 * Where the webview bundle is looked for, in order: `explicit` alone when given; else next to
 * the running bundle (dist/cli.js, dist/extension.js → dist/webview.js), `<repo>/dist/webview.js`
 * when running from source (client/ → ../dist), `./dist/webview.js` under the working directory.
 */
export function webviewBundleCandidates(explicit?: string): string[] {
  if (explicit) return [resolve(explicit)];
  return [join(__dirname, 'webview.js'), join(__dirname, '..', 'dist', 'webview.js'), resolve('dist', 'webview.js')];
}

/** HTML-escapes text for element content and quoted attribute values (`&<>"'` → numeric references). */
export function escapeHtml(text: unknown): string {
  return String(text ?? '').replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/**
 * JSON for a `<script type="application/json">` element: `<`, `>`, `&`, U+2028 and U+2029 are
 * written as \\u escapes, so the text can contain neither `</script` nor `<!--`; still valid JSON.
 */
export function jsonForScript(value: unknown): string {
  return scriptSafeJson(JSON.stringify(value));
}

/** JSON text (or a piece of it) with `<`, `>`, `&`, U+2028 and U+2029 as \u escapes: each character alone, so pieces escape as the whole does. */
function scriptSafeJson(json: string): string {
  return json.replace(/[<>&\u2028\u2029]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/** JavaScript source made safe inside a `<script>` element (`</script` → `<\/script`, `<!--` → `<\!--`, source map comment dropped). */
export function scriptSafe(js: string): string {
  return js
    .replace(/\/\/# sourceMappingURL=\S*\s*$/, '')
    .replace(/<\/(script)/gi, '<\\/$1')
    .replace(/<!--/g, '<\\!--');
}

/** ms with 2–3 significant decimals, as the webview's format.ts (kept local: client/ does not import webview/). */
function fmtMs(ms: number | undefined): string {
  if (ms === undefined || !Number.isFinite(ms)) return '–';
  const a = Math.abs(ms);
  if (a >= 100) return ms.toFixed(1);
  if (a >= 1) return ms.toFixed(2);
  return a === 0 ? '0' : Number(ms.toPrecision(3)).toString();
}

/** Bytes as MiB with one decimal ("388.0"); "–" when not a finite number. */
function mib(bytes: unknown): string {
  const x = Number(bytes);
  return Number.isFinite(x) ? (x / 1048576).toFixed(1) : '–';
}

/** NCCL's parts in the order its Init timings line prints them; other parts follow as found. */
const NCCL_PARTS = ['total', 'kernels', 'alloc', 'bootstrap', 'allgathers', 'topo', 'graphs', 'connections', 'rest'];

/**
 * A variant's ratios and NCCL's view of its creations ("NCCL's view (Init timings)": ms, each part
 * the MAX over ranks, median over iterations, 10 ms resolution), or why the view is missing; ''
 * when the variant has neither. Every value escaped.
 */
function ncclViewHtml(v: VariantSummary): string {
  const e = escapeHtml;
  const ratios = (Array.isArray(v.ratios) ? v.ratios : []).filter((r) => Number.isFinite(r?.value));
  const view = v.ncclInit && typeof v.ncclInit === 'object' ? v.ncclInit : undefined;
  if (!view && ratios.length === 0) return '';
  const out: string[] = [`<h3>NCCL&#39;s view (Init timings) · ${e(v.variant)}</h3>`];
  // The same words as the CLI (formatRatio): a ratio below 0.1 never reads "0.00×".
  if (ratios.length > 0) out.push(`<p>Ratios of the medians: ${ratios.map((r) => `${e(r.label)} ${e(formatRatio(r.value))}`).join('; ')}</p>`);
  const medians = view?.medians && typeof view.medians === 'object' ? view.medians : {};
  const creations = Object.keys(medians);
  if (creations.length > 0) {
    const parts = NCCL_PARTS.filter((p) => creations.some((c) => medians[c]?.[p] !== undefined));
    for (const c of creations) for (const p of Object.keys(medians[c] ?? {})) if (!parts.includes(p)) parts.push(p);
    const cell = (x: unknown): string => (typeof x === 'number' && Number.isFinite(x) ? String(Math.round(x)) : '–');
    out.push(`<table><thead><tr><th>part</th>${creations.map((c) => `<th>${e(c)} ms</th>`).join('')}</tr></thead><tbody>`);
    for (const p of parts) out.push(`<tr><td>${e(p)}</td>${creations.map((c) => `<td>${cell(medians[c]?.[p])}</td>`).join('')}</tr>`);
    out.push(`<tr><td>iterations read</td>${creations.map((c) => `<td>${e(view?.iterations?.[c] ?? 0)}</td>`).join('')}</tr></tbody></table>`);
    out.push('<p>NCCL prints seconds with two decimals: a 10 ms resolution; each part the MAX over ranks, median over iterations.</p>');
  }
  if (view && Number(view.malformedLines) > 0) out.push(`<p>${e(view.malformedLines)} unreadable Init timings line(s) skipped.</p>`);
  if (view?.note) out.push(`<p>NCCL&#39;s view ${creations.length > 0 ? 'is partial' : 'is missing'}: ${e(view.note)}</p>`);
  return out.join('');
}

/** Errors as a `<ul>`: code, message, where, the library's text, and the hint ("why" for an expected hang, else "what to do"). */
function errorList(list: RunFile['errors'], simulated: boolean): string {
  const e = escapeHtml;
  const items = list.map((er) => {
    const where = Object.entries(er.where ?? {})
      .map(([k, val]) => `${k} ${String(val)}`)
      .join(', ');
    // The advice follows from what failed and the run's regime (readings/failureAdvice.ts).
    const advice = errorAdvice(er, simulated);
    return `<li>${e(er.code)} ${e(er.message)}${where ? ` — where: ${e(where)}` : ''}${er.detail ? ` — why: ${e(er.detail)}` : ''}${advice ? ` — ${er.expected ? 'why' : 'what to do'}: ${e(advice)}` : ''}</li>`;
  });
  return `<ul>${items.join('')}</ul>`;
}

/**
 * The `<noscript>` body: header facts (every node of a run over several), the SIMULATED banner, every step's figures, memory (the
 * free-memory delta and NCCL's count, or why the run has none), NCCL's view of a cold start,
 * skips, errors.
 */
function fallbackHtml(run: RunFile): string {
  const out: string[] = [];
  const e = escapeHtml;
  if (isSimulatedRun(run)) out.push(`<p class="banner-sim"><strong>SIMULATED</strong> ${e(SIMULATED_TEXT)}</p>`);
  const s = run.stamp;
  // A run over several nodes names each node with its host, GPUs and ranks (as the CLI header and
  // the results page do); the stamp is then of one of them, said so.
  const nodes = nodesText(run);
  out.push(`<p>host ${e(run.host)} · status ${e(run.status)} · ranks ${e(run.ranks)}`);
  if (nodes !== undefined) out.push(` · ${e(run.nodes!.length)} nodes: ${e(nodes)}`);
  if (s) out.push(` · NCCL ${e(s.ncclVersion)} (${e(s.ncclPath)})${nodes !== undefined ? ` (stamp of ${e(s.hostname)})` : ''} · ${e(s.startedAt)}`);
  else out.push(' · no environment stamp (GPUs and NCCL version not recorded)');
  out.push('</p>');
  for (const exp of run.experiments ?? []) {
    out.push(
      `<h2>${e(exp.experiment)}</h2><table><thead><tr><th>variant</th><th>step</th><th>kind</th><th>median ms</th><th>p90 ms</th><th>min ms</th><th>max ms</th><th>n</th></tr></thead><tbody>`,
    );
    for (const v of exp.variants ?? []) {
      for (const st of v.steps ?? []) {
        const x: Partial<StepStats> = st.stats ?? {};
        out.push(
          `<tr><td>${e(v.variant)}</td><td>${e(st.label)}</td><td>${e(st.kind)}</td><td>${fmtMs(x.median)}</td><td>${fmtMs(x.p90)}</td><td>${fmtMs(x.min)}</td><td>${fmtMs(x.max)}</td><td>${e(x.n)}</td></tr>`,
        );
      }
      for (const [point, bytes] of Object.entries(v.memoryBytes ?? {})) {
        out.push(`<tr><td>${e(v.variant)}</td><td>memory ${e(memoryPointLabel(point))}</td><td>memory</td><td colspan="5">${e(mib(bytes))} MiB</td></tr>`);
        const m = v.memStats?.[point];
        if (m) {
          out.push(
            `<tr><td>${e(v.variant)}</td><td>NCCL&#39;s count (MemStats) ${e(memoryPointLabel(point))}</td><td>memory</td><td colspan="5">${e(mib(m.totalBytes))} MiB (suspendable ${e(mib(m.suspendableBytes))} MiB, persistent ${e(mib(m.persistentBytes))} MiB)</td></tr>`,
          );
        }
      }
    }
    out.push('</tbody></table>');
    for (const v of exp.variants ?? []) out.push(ncclViewHtml(v));
    // The case's expected hangs belong to its section: the hang is the case's result.
    const hangs = (run.errors ?? []).filter((er) => er.expected && String(er.where?.experiment) === String(exp.experiment));
    if (hangs.length > 0) out.push(`<h3>${hangs.length === 1 ? 'Expected hang: the hang is this case&#39;s result' : 'Expected hangs: each hang is this case&#39;s result'}</h3>${errorList(hangs, false)}`);
  }
  // Why NCCL's own count of its memory is missing, when the run has memory figures without it.
  const note = memStatsNote(run);
  const variants = (run.experiments ?? []).flatMap((x) => x.variants ?? []);
  if (note && variants.some((v) => Object.keys(v.memoryBytes ?? {}).length > 0) && !variants.some((v) => Object.keys(v.memStats ?? {}).length > 0)) {
    out.push(`<p>NCCL&#39;s count (MemStats): ${e(note)}</p>`);
  }
  const c5 = shrinkAbortOutcomes(run);
  if (c5) {
    out.push(
      `<h2>${e(fieldCaseLabel('C5'))} on ${s?.ncclVersion ? `NCCL ${e(s.ncclVersion)}` : 'NCCL version not recorded'}: releasing the parent after ncclCommShrink</h2><table><thead><tr><th>shrink flag</th><th>survivors release the parent</th><th>excluded rank</th><th>outcome</th></tr></thead><tbody>`,
    );
    for (const o of c5) out.push(`<tr><td>${e(o.flag)}</td><td>${e(o.release)}</td><td>${e(o.excluded)}</td><td>${e(o.text)}</td></tr>`);
    out.push('</tbody></table>');
  }
  if ((run.skipped ?? []).length > 0) {
    out.push('<h2>Skipped</h2><ul>');
    for (const k of run.skipped) out.push(`<li>${e(k.experiment)}${k.variant ? ` / ${e(k.variant)}` : ''}: ${e(k.reason)}</li>`);
    out.push('</ul>');
  }
  const sections = new Set((run.experiments ?? []).map((x) => String(x.experiment)));
  const real = (run.errors ?? []).filter((er) => !er.expected);
  const orphans = (run.errors ?? []).filter((er) => er.expected && !sections.has(String(er.where?.experiment)));
  if (real.length > 0) out.push(`<h2>Errors</h2>${errorList(real, isSimulatedRun(run))}`);
  if (orphans.length > 0) out.push(`<h2>Expected hangs (field cases: the hang is the result)</h2>${errorList(orphans, false)}`);
  return out.join('');
}

/**
 * The page around the data, in pieces: CSP with a per-file nonce, the inlined bundle, the data
 * element (the JSON written in pieces: never one string), the fallback. The bundle is looked up
 * and read now (ReportBundleError before any piece); the pieces are made as they are taken.
 */
function pagePieces(title: string, fallback: string, dataElementId: string, data: unknown, opts: { webviewJsPath?: string }): Iterable<string> {
  const candidates = webviewBundleCandidates(opts.webviewJsPath);
  const bundlePath = candidates.find((p) => existsSync(p));
  if (!bundlePath) throw new ReportBundleError(candidates);
  const js = scriptSafe(readFileSync(bundlePath, 'utf8'));
  const nonce = randomBytes(16).toString('base64');
  const csp = `default-src 'none'; script-src 'nonce-${nonce}'; style-src 'unsafe-inline'; img-src data:; font-src data:`;
  const head = [
    '<!DOCTYPE html>',
    '<html lang="en">',
    '<head>',
    '<meta charset="UTF-8">',
    `<meta http-equiv="Content-Security-Policy" content="${csp}">`,
    '<meta name="viewport" content="width=device-width, initial-scale=1.0">',
    `<title>${escapeHtml(title)}</title>`,
    // Light and dark after the reader's prefers-color-scheme (the script view's colours: webview/styles.ts).
    '<meta name="color-scheme" content="light dark">',
    '<style>body{font-family:system-ui,sans-serif;color:#222;background:#fff}.banner-sim{border:2px solid #b58900;background:#fff4ce;padding:8px 12px;font-weight:600}table{border-collapse:collapse}td,th{padding:2px 8px;border-bottom:1px solid #ddd;text-align:left}' +
      '@media (prefers-color-scheme: dark){body{color:#ccc;background:#1e1e1e}.banner-sim{border-color:#cca700;background:#352a05}td,th{border-bottom-color:#454545}}</style>',
    '</head>',
    '<body>',
    '<div id="app"></div>',
    `<noscript>${fallback}</noscript>`,
    `<script type="application/json" id="${dataElementId}">`,
  ].join('\n');
  const tail = ['</script>', `<script nonce="${nonce}">${js}</script>`, '</body>', '</html>', ''].join('\n');
  return (function* (): Generator<string> {
    yield head;
    for (const piece of jsonPieces(data)) yield scriptSafeJson(piece);
    yield tail;
  })();
}

/**
 * Renders `run` as a self-contained HTML document in pieces (UTF-8 text; joined, the document
 * {@link renderReport} returns): for a large run, write the pieces one after another
 * (client/safeWrite.ts writeFileSafely takes them) and the page is never one string.
 * @param opts.webviewJsPath the webview bundle to inline; default: see {@link webviewBundleCandidates}.
 * @throws ReportBundleError when the bundle is not found (at the call, before any piece).
 */
export function renderReportPieces(run: RunFile, opts: { webviewJsPath?: string } = {}): Iterable<string> {
  // The run's one name (readings/runName.ts): its GPUs, NCCL and start; SIMULATED when so.
  const title = `commcost — ${runName(run)}`;
  return pagePieces(title, fallbackHtml(run), 'commcost-run', run, opts);
}

/**
 * Renders `run` as a self-contained HTML document (a UTF-8 string). Figures are the run's own
 * (ms; memory bytes shown as MiB); nothing is fetched when the file is opened. A large run:
 * {@link renderReportPieces}.
 * @param opts.webviewJsPath the webview bundle to inline; default: see {@link webviewBundleCandidates}.
 * @throws ReportBundleError when the bundle is not found.
 */
export function renderReport(run: RunFile, opts: { webviewJsPath?: string } = {}): string {
  return [...renderReportPieces(run, opts)].join('');
}

/** The `<noscript>` body of a comparison: the legend, the SIMULATED banner, every step's medians, p90s and ratios. */
function comparisonFallbackHtml(c: Comparison): string {
  const e = escapeHtml;
  const out: string[] = [];
  if (c.anySimulated) out.push(`<p class="banner-sim"><strong>SIMULATED</strong> ${e(SIMULATED_TEXT)} (the runs marked SIMULATED)</p>`);
  out.push('<ul>');
  for (const r of c.runs) out.push(`<li><strong>${e(r.key)}</strong> = ${e(r.label)} (run ${e(r.id)}, ${e(r.status)}${r.ncclPath ? `, ${e(r.ncclPath)}` : ''})</li>`);
  out.push('</ul>');
  for (const note of [rankCountNote(c.runs), simulatedMixNote(c.runs)]) if (note) out.push(`<p>Read with care: ${e(note)}.</p>`);
  const base = c.runs[0]?.key ?? 'A';
  for (const exp of c.experiments) {
    out.push(`<h2>${e(exp.experiment)}</h2><table><thead><tr><th>variant</th><th>step</th>`);
    c.runs.forEach((r, i) => {
      out.push(`<th>${e(r.key)} median ms</th><th>${e(r.key)} p90 ms</th>`);
      if (i > 0) out.push(`<th>${e(r.key)}/${e(base)}</th>`);
    });
    out.push('</tr></thead><tbody>');
    for (const v of exp.variants) {
      for (const s of v.steps) {
        out.push(`<tr><td>${e(v.variant)}</td><td>${e(s.label)}</td>`);
        s.cells.forEach((cell, i) => {
          out.push(`<td>${fmtMs(cell?.median)}</td><td>${fmtMs(cell?.p90)}</td>`);
          if (i > 0) out.push(`<td>${e(formatRatio(cell?.ratio))}</td>`);
        });
        out.push('</tr>');
      }
      for (const m of v.memory) {
        out.push(`<tr><td>${e(v.variant)}</td><td>memory ${e(memoryPointLabel(m.point))} (MiB per GPU)</td>`);
        m.bytes.forEach((b, i) => {
          out.push(`<td colspan="2">${b === null ? '–' : e((b / 1048576).toFixed(1))}</td>`);
          if (i > 0) out.push(`<td>${e(formatRatio(m.ratio[i]))}</td>`);
        });
        out.push('</tr>');
      }
    }
    out.push('</tbody></table>');
  }
  return out.join('');
}

/**
 * Renders a comparison of `runs` (run 0 is the baseline of every ratio) as one self-contained
 * HTML document: the webview shows grouped bars per step (one colour per run, p90 whiskers) and
 * a table of each run's median and its ratio to run 0. The runs are embedded as
 * `{"runs": [...]}` in `<script type="application/json" id="commcost-compare">`.
 * @throws ReportBundleError when the bundle is not found.
 */
export function renderComparisonReport(runs: readonly RunFile[], opts: { webviewJsPath?: string } = {}): string {
  return [...renderComparisonReportPieces(runs, opts)].join('');
}

/** {@link renderComparisonReport} in pieces (as {@link renderReportPieces}). @throws ReportBundleError when the bundle is not found (at the call). */
export function renderComparisonReportPieces(runs: readonly RunFile[], opts: { webviewJsPath?: string } = {}): Iterable<string> {
  const c = compareRuns(runs);
  const title = `commcost — comparison: ${c.runs.map((r) => r.label).join(' vs ')}`;
  const data: ComparisonData = { runs: [...runs] };
  return pagePieces(title, comparisonFallbackHtml(c), COMPARE_ELEMENT_ID, data, opts);
}
