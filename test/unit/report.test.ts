// client/htmlReport.ts: self-contained, escaped, CSP with nonce, simulated banner; and what the report and the CLI
// summary show beside the figures (NCCL's count of its memory, NCCL's view of a cold start).
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { memoryPointLabel, type RunFile } from '../../protocol/runFile';
import { escapeHtml, jsonForScript, renderReport, ReportBundleError } from '../../client/htmlReport';
import { formatSummary } from '../../cli/summary';

const HOSTILE = '</script><img src=x onerror=alert(1)>';

function fixture(over: Partial<RunFile> = {}): RunFile {
  return {
    schema: 'commcost.run/1',
    id: '20250101T000000-gpu1',
    host: 'gpu1',
    simulated: false,
    status: 'complete',
    options: { experiments: ['init'], iterations: 10, warmup: 1, deadlineSeconds: 60 },
    ranks: 4,
    stamp: {
      hostname: 'gpu1', gpus: [0, 1, 2, 3].map((ordinal) => ({ ordinal, name: 'NVIDIA A40', totalBytes: 48e9, pciBusId: `0000:0${ordinal}:00.0` })),
      driverVersion: '570.1', ncclVersion: '2.28.9', ncclVersionCode: 22809, ncclPath: '/usr/lib/libnccl.so.2', ncclSource: 'loader',
      ncclSymbols: {}, topology: '', ncclEnv: {}, commcostVersion: '0.1.0', nodeVersion: 'v20', platform: 'linux-x64',
      startedAt: '2025-01-01T00:00:00Z', simulated: false,
    },
    experiments: [
      {
        experiment: 'init', done: 11, total: 11, state: 'finished', samples: {},
        variants: [{
          variant: 'default',
          steps: [
            { step: 'call', label: 'ncclCommInitRank', kind: 'call', stats: { median: 43.123, p90: 47.5, min: 41.02, max: 52.9, mean: 44, n: 10 }, samples: [] },
            { step: 'first', label: 'first 1 MiB allreduce', kind: 'first', stats: { median: 48.77, p90: 51.2, min: 46.1, max: 60.3, mean: 49, n: 10 }, samples: [] },
            { step: 'toFirst', label: 'to first collective', kind: 'toFirst', sumOf: ['call', 'first'], stats: { median: 91.9, p90: 98.25, min: 88.4, max: 110.7, mean: 93, n: 10 }, samples: [] },
          ],
          memoryBytes: { afterCall: 76 * 1048576 },
        }],
      },
    ],
    skipped: [{ experiment: 'split', reason: 'needs 4 GPUs, host has 2' }],
    errors: [],
    ...over,
  };
}

function stubBundle(js = 'window.__commcost = "loaded";'): string {
  const dir = mkdtempSync(join(tmpdir(), 'commcost-report-'));
  const path = join(dir, 'webview.js');
  writeFileSync(path, js);
  return path;
}

/** The text of the `<script type="application/json" id="commcost-run">` element. */
function embeddedJson(html: string): string {
  const m = /<script type="application\/json" id="commcost-run">([\s\S]*?)<\/script>/.exec(html);
  assert.ok(m, 'run script element missing');
  return m[1]!;
}

test('the report carries the run: JSON round-trips and the fallback table has the numbers', () => {
  const run = fixture();
  const html = renderReport(run, { webviewJsPath: stubBundle() });
  assert.deepEqual(JSON.parse(embeddedJson(html)), run);
  const noscript = /<noscript>([\s\S]*)<\/noscript>/.exec(html)?.[1] ?? '';
  for (const figure of ['43.12', '47.50', '48.77', '91.90', '98.25', '110.7', '76.0 MiB', '2.28.9', 'needs 4 GPUs, host has 2']) {
    assert.ok(noscript.includes(figure), `fallback lacks ${figure}`);
  }
  assert.ok(html.includes('window.__commcost = "loaded";'), 'bundle not inlined');
  assert.ok(!html.includes('SIMULATED'), 'a measured run must not say SIMULATED');
});

test('memory points read as words in the fallback table (afterCall → after the call)', () => {
  const html = renderReport(fixture(), { webviewJsPath: stubBundle() });
  const noscript = /<noscript>([\s\S]*)<\/noscript>/.exec(html)?.[1] ?? '';
  assert.match(noscript, /<td>memory after the call<\/td><td>memory<\/td><td colspan="5">76\.0 MiB<\/td>/);
  assert.doesNotMatch(noscript, /memory after(Call|First)/);
});

test('memoryPointLabel: known points become words, others pass through', () => {
  assert.equal(memoryPointLabel('afterCall'), 'after the call');
  assert.equal(memoryPointLabel('afterFirstUse'), 'after the first collective on the buffer');
  assert.equal(memoryPointLabel('pool after TP2'), 'pool after TP2');
  assert.equal(memoryPointLabel('constructor'), 'constructor');
});

test('CSP meta with a nonce that the inline script carries; nothing loaded from outside', () => {
  const html = renderReport(fixture(), { webviewJsPath: stubBundle() });
  const csp = /<meta http-equiv="Content-Security-Policy" content="([^"]+)">/.exec(html)?.[1];
  assert.ok(csp);
  assert.match(csp, /default-src 'none'/);
  const nonce = /script-src 'nonce-([A-Za-z0-9+/=]+)'/.exec(csp)?.[1];
  assert.ok(nonce);
  assert.ok(html.includes(`<script nonce="${nonce}">`));
  assert.ok(!/\ssrc=["']?https?:/i.test(html) && !/<link\b/i.test(html));
  // a second report gets another nonce
  const again = renderReport(fixture(), { webviewJsPath: stubBundle() });
  assert.notEqual(/nonce-([^']+)'/.exec(again)?.[1], nonce);
});

test('a hostile host name and error message cannot break out of the script or the markup', () => {
  const run = fixture({
    host: HOSTILE,
    errors: [{ code: 'NCCL_ERROR', message: `ncclCommSplit failed ${HOSTILE}`, where: { host: HOSTILE, rank: 1 }, detail: '<b>x</b>', hint: '"quoted" & <tag>', fatal: true }],
    skipped: [{ experiment: 'split', reason: HOSTILE }],
  });
  const html = renderReport(run, { webviewJsPath: stubBundle() });
  assert.ok(!html.includes('<img'), 'an <img> element made it into the page');
  assert.ok(!html.includes('<b>x</b>'));
  // exactly the two script elements end with </script>
  assert.equal(html.match(/<\/script/gi)?.length, 2);
  const json = embeddedJson(html);
  assert.ok(!json.includes('<'));
  assert.ok(json.includes('\\u003c/script\\u003e\\u003cimg'));
  assert.deepEqual(JSON.parse(json), run);
  assert.ok(html.includes('&#60;/script&#62;&#60;img src=x onerror=alert(1)&#62;'), 'escaped text missing from the fallback');
  // The title names the run by its GPUs (readings/runName.ts), not by the host.
  assert.ok(html.includes('<title>commcost — 4× A40 · NCCL 2.28.9 · 2025-01-01 00:00 UTC</title>'), /<title>.*<\/title>/.exec(html)?.[0]);
  // A run with no GPU recorded falls back to its host, escaped.
  const bare = renderReport({ ...run, stamp: undefined }, { webviewJsPath: stubBundle() });
  assert.ok(bare.includes('<title>commcost — &#60;/script&#62;'), /<title>.*<\/title>/.exec(bare)?.[0]);
  assert.match(bare, /<title>[^<]*\(GPUs not recorded\)/);
  // A hostile GPU model is escaped too.
  const gpus = run.stamp!.gpus.map((g) => ({ ...g, name: HOSTILE }));
  const named = renderReport({ ...run, stamp: { ...run.stamp!, gpus } }, { webviewJsPath: stubBundle() });
  assert.ok(named.includes('<title>commcost — 4× &#60;/script&#62;'), /<title>.*<\/title>/.exec(named)?.[0]);
});

test('a bundle containing "</script" is neutralised when inlined', () => {
  const html = renderReport(fixture(), { webviewJsPath: stubBundle('const s = "</script><script>alert(1)</script>";\n//# sourceMappingURL=webview.js.map\n') });
  assert.equal(html.match(/<\/script/gi)?.length, 2);
  assert.ok(html.includes('const s = "<\\/script><script>alert(1)<\\/script>";'));
  assert.ok(!html.includes('sourceMappingURL'));
});

test('a simulated run says SIMULATED with the explanation', () => {
  const html = renderReport(fixture({ simulated: true }), { webviewJsPath: stubBundle() });
  assert.ok(html.includes('SIMULATED'));
  assert.ok(html.includes('figures come from commcost&#39;s simulated NCCL, not from a measurement'));
  // Named SIMULATED with its ranks, never by the GPUs its stamp lists.
  assert.match(html, /<title>commcost — SIMULATED · 4 ranks · NCCL 2\.28\.9 · [^<]*<\/title>/);
  assert.doesNotMatch(/<title>.*<\/title>/.exec(html)?.[0] ?? '', /A40/);
});

test('a run is SIMULATED in the report when any of its marks says so, not only the top-level flag', () => {
  const base = fixture();
  const marks: Partial<RunFile>[] = [
    { stamp: { ...base.stamp!, simulated: true } },
    { stamp: { ...base.stamp!, ncclSource: 'simulated' } },
    { stamp: { ...base.stamp!, ncclPath: '/work/dist/native/libnccl-sim.so' } },
  ];
  for (const over of marks) {
    const html = renderReport(fixture(over), { webviewJsPath: stubBundle() });
    assert.match(html, /<title>commcost — SIMULATED · [^<]*<\/title>/, JSON.stringify(over));
    assert.ok(html.includes('<strong>SIMULATED</strong>'), JSON.stringify(over));
  }
});

test('a missing bundle is a typed error naming where it looked', () => {
  assert.throws(() => renderReport(fixture(), { webviewJsPath: '/nonexistent/webview.js' }), (e: unknown) => {
    assert.ok(e instanceof ReportBundleError);
    assert.equal(e.code, 'WEBVIEW_BUNDLE_MISSING');
    assert.deepEqual(e.searched, ['/nonexistent/webview.js']);
    return true;
  });
});

test('the default bundle is dist/webview.js once built, and the real bundle embeds safely', (t) => {
  if (!existsSync(join(__dirname, '..', '..', 'dist', 'webview.js'))) {
    t.skip('dist/webview.js not built (run node scripts/build.mjs)');
    return;
  }
  const html = renderReport(fixture({ simulated: true, host: HOSTILE }));
  assert.equal(html.match(/<\/script/gi)?.length, 2);
  assert.ok(html.includes('SIMULATED'));
  assert.ok(html.length > 100_000, 'the webview bundle was not inlined');
});

const escapes: [unknown, string][] = [['<a href="x">&\'', '&#60;a href=&#34;x&#34;&#62;&#38;&#39;'], [undefined, ''], [42, '42']];
for (const [input, expected] of escapes) {
  test(`escapeHtml(${JSON.stringify(input)})`, () => assert.equal(escapeHtml(input), expected));
}

test('jsonForScript escapes <, >, &, U+2028/9 and stays JSON', () => {
  const v = { s: '</script><!-- & \u2028\u2029' };
  const out = jsonForScript(v);
  assert.ok(!/[<>&\u2028\u2029]/.test(out));
  assert.deepEqual(JSON.parse(out), v);
});

test('an expected hang (a field case\'s result) is listed under its case in the fallback, not among the errors', () => {
  const hang = { code: 'TIMEOUT' as const, message: 'timed out at init ncclCommInitRank', where: { host: 'gpu1', rank: 1, experiment: 'init' as const, variant: 'blocking' }, hint: 'field case C6: the hang is the result', fatal: false, expected: true };
  const html = renderReport(fixture({ errors: [hang] }), { webviewJsPath: stubBundle() });
  const noscript = /<noscript>([\s\S]*)<\/noscript>/.exec(html)?.[1] ?? '';
  assert.doesNotMatch(noscript, /<h2>Errors<\/h2>/);
  assert.doesNotMatch(noscript, /what to do/);
  const section = noscript.slice(noscript.indexOf('<h2>init</h2>'), noscript.indexOf('<h2>Skipped</h2>'));
  assert.match(section, /<h3>Expected hang: the hang is this case&#39;s result<\/h3><ul><li>TIMEOUT timed out at init ncclCommInitRank/);
  assert.match(section, /why: field case C6: the hang is the result/);
  // A real error is still an error, with what to do.
  const failed = renderReport(fixture({ errors: [{ ...hang, expected: undefined, hint: 'every rank must make the same NCCL calls' }] }), { webviewJsPath: stubBundle() });
  assert.match(failed, /<h2>Errors<\/h2><ul><li>TIMEOUT [^<]*what to do: every rank must make the same NCCL calls/);
});

test('the report is light or dark after the reader\'s prefers-color-scheme', () => {
  const html = renderReport(fixture(), { webviewJsPath: stubBundle() });
  assert.match(html, /<meta name="color-scheme" content="light dark">/);
  assert.match(html, /@media \(prefers-color-scheme: dark\)\{body\{color:#ccc;background:#1e1e1e\}/);
});

// ---- The 1×H200 runs: NCCL's count of its memory beside the free-memory delta, NCCL's view of a cold start,
// in the report's no-script fallback and in the CLI summary (cli/summary.ts formatSummary).
const oneH200 = (name: string): RunFile =>
  JSON.parse(readFileSync(join(__dirname, '..', '..', 'docs', 'results', 'h200x1-2026-12-01', name), 'utf8')) as RunFile;
const noscriptOf = (run: RunFile): string => /<noscript>([\s\S]*)<\/noscript>/.exec(renderReport(run, { webviewJsPath: stubBundle() }))?.[1] ?? '';

test('fallback (1×H200 2.30.7): NCCL\'s count (MemStats) beside the free-memory delta at every point that has it; NCCL\'s view of the cold start', () => {
  const noscript = noscriptOf(oneH200('h200x1-nccl2.30.7-source.json'));
  assert.match(noscript, /<td>memory after suspend<\/td><td>memory<\/td><td colspan="5">4\.0 MiB<\/td><\/tr><tr><td>default<\/td><td>NCCL&#39;s count \(MemStats\) after suspend<\/td><td>memory<\/td><td colspan="5">388\.0 MiB \(suspendable 384\.0 MiB, persistent 4\.0 MiB\)<\/td>/);
  assert.match(noscript, /<h3>NCCL&#39;s view \(Init timings\) · default<\/h3><p>Ratios of the medians: cold \/ warm \(init to first collective\) 19\.5×; cold \/ warm init 19\.5×<\/p><table><thead><tr><th>part<\/th><th>cold ms<\/th><th>warm ms<\/th><\/tr><\/thead><tbody><tr><td>total<\/td><td>340<\/td><td>20<\/td><\/tr><tr><td>kernels<\/td><td>280<\/td><td>0<\/td><\/tr>/);
  assert.match(noscript, /a 10 ms resolution/);
  assert.doesNotMatch(noscript, /not in NCCL/, 'the library has MemStats');
});

test('fallback (1×H200 2.28.9): no MemStats, and the report says why', () => {
  const noscript = noscriptOf(oneH200('h200x1-nccl2.28.9-wheel.json'));
  assert.doesNotMatch(noscript, /NCCL&#39;s count \(MemStats\) after/);
  assert.match(noscript, /<p>NCCL&#39;s count \(MemStats\): ncclCommMemStats is not in NCCL 2\.28\.9 \(the library does not export it; needs ≥ 2\.29\.7\): memory is the free-memory delta only<\/p>/);
});

test('CLI summary (1×H200): MemStats on the memory lines or why not; the cold start\'s ratios and NCCL\'s view as a table', () => {
  const src = formatSummary(oneH200('h200x1-nccl2.30.7-source.json'));
  assert.match(src, /\n {2}memory suspend default after suspend: 4\.0 MiB per GPU \(median of the per-GPU max\); NCCL's count \(MemStats\): 388\.0 MiB \(suspendable 384\.0 MiB, persistent 4\.0 MiB\)\n/);
  assert.match(src, /\n {2}memory abort default after the call: 388\.0 MiB per GPU \(median of the per-GPU max\)\n/, 'no count where NCCL was not asked');
  assert.match(src, /\n {2}cold-start default · ratios of the medians: cold \/ warm \(init to first collective\) 19\.5×; cold \/ warm init 19\.5×\n {2}cold-start default · NCCL's view \(Init timings, ms; 10 ms resolution; MAX over ranks, median over iterations\):\n {4}part +cold +warm\n {4}total +340 +20\n {4}kernels +280 +0\n/);
  assert.match(src, /\n {4}iterations read +5 +5\n/);
  assert.doesNotMatch(src, /not in NCCL/);
  const wheel = formatSummary(oneH200('h200x1-nccl2.28.9-wheel.json'));
  assert.match(wheel, /\n {2}NCCL's count \(MemStats\): ncclCommMemStats is not in NCCL 2\.28\.9 \(the library does not export it; needs ≥ 2\.29\.7\): memory is the free-memory delta only\n/);
  assert.doesNotMatch(wheel, /; NCCL's count/);
});

test('CLI summary: NCCL\'s view missing says why; hostile text from the file stays escaped', () => {
  const run = fixture();
  run.experiments[0]!.variants[0]!.ncclInit = { medians: {}, iterations: {}, malformedLines: 0, note: 'NCCL 2.21.5 predates the Init timings line\x1b[31m' };
  const text = formatSummary(run);
  assert.match(text, /NCCL's view is missing: NCCL 2\.21\.5 predates the Init timings line\\x1b\[31m/);
  const html = noscriptOf(run);
  assert.match(html, /NCCL&#39;s view is missing: NCCL 2\.21\.5 predates the Init timings line/);
});
