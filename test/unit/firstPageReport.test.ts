/**
 * The first page as the HTML report draws it: `renderReport` with the built dist/webview.js (the
 * results panel runs the same bundle), opened in headless Chromium, its DOM after the scripts ran
 * (`--dump-dom`). Asserted: the answer is the page's first section after the title (before the
 * run's facts, the verdict and the plan), it holds `firstPageSummary`'s lines and figures as text,
 * a failed run's holds one line, and a 1-rank run's plan table has no "missing" row.
 * Skipped with the reason when Chromium or the bundle is missing, unless COMMCOST_REQUIRE_UI=1.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { renderReport } from '../../client/htmlReport';
import { loadRun } from '../../client/resultsStore';
import { firstPageSummary } from '../../readings/verdict/summary';

const REPO = join(__dirname, '..', '..');
const CHROMIUM = process.env.COMMCOST_CHROMIUM ?? '/usr/bin/chromium';
const BUNDLE = process.env.COMMCOST_WEBVIEW_JS ?? join(REPO, 'dist', 'webview.js');
const missing = !existsSync(CHROMIUM)
  ? `${CHROMIUM} is missing (COMMCOST_CHROMIUM, or apt-get install -y chromium)`
  : !existsSync(BUNDLE)
    ? `${BUNDLE} is not built (node scripts/build.mjs)`
    : undefined;
if (missing && process.env.COMMCOST_REQUIRE_UI === '1') test('the headless report page is required (COMMCOST_REQUIRE_UI=1)', () => assert.fail(missing));

const dir = mkdtempSync(join(tmpdir(), 'commcost-first-page-dom-'));

/** The report of `file` (repository path) after its scripts ran, as HTML text. */
async function dom(file: string): Promise<{ html: string; lines: ReturnType<typeof firstPageSummary> }> {
  const run = await loadRun(join(REPO, file));
  const page = join(dir, `${file.replace(/[^a-z0-9]+/gi, '-')}.html`);
  writeFileSync(page, renderReport(run, { webviewJsPath: BUNDLE }));
  const html = execFileSync(
    CHROMIUM,
    ['--headless', '--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', `--user-data-dir=${join(dir, 'profile')}`, '--virtual-time-budget=5000', '--dump-dom', `file://${page}`],
    { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'], timeout: 120_000, maxBuffer: 64 * 2 ** 20 },
  );
  return { html, lines: firstPageSummary(run) };
}

/** The text of the first element with `class` in `html` (its tags dropped, entities decoded). */
function sectionText(html: string, cls: string): string {
  const at = html.indexOf(`class="${cls}"`);
  assert.ok(at >= 0, `no .${cls} in the page`);
  const end = html.indexOf('</section>', at);
  return html
    .slice(at, end)
    .replace(/<[^>]*>/g, '')
    .replace(/&amp;/g, '&')
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'");
}

describe('the first page in the HTML report (headless Chromium)', { skip: missing ?? false, timeout: 600_000 }, () => {
  after(() => rmSync(dir, { recursive: true, force: true }));

  test('2×H200: the answer opens the page, before the run facts, the verdict and the plan, with every line and figure', async () => {
    const { html, lines } = await dom('docs/results/h200x2-2026-12-01/h200x2-nccl2.30.7-source.json');
    const first = html.indexOf('class="first-page"');
    assert.ok(first > 0);
    for (const later of ['class="meta"', 'class="verdict"', 'Plan a reshape']) assert.ok(html.indexOf(later) > first, `${later} comes after the answer`);
    const text = sectionText(html, 'first-page');
    for (const l of lines) {
      assert.ok(text.includes(l.text), `the page shows: ${l.text}`);
      if (l.figure) assert.ok(text.includes(l.figure), `the page shows the figure ${l.figure}`);
      for (const s of l.study) assert.ok(text.includes(s.comparison ?? s.notCompared!), `the page shows the study beside ${l.label}`);
    }
  });

  test('a failed run: one line, what failed', async () => {
    const { html, lines } = await dom('test/fixtures/runs/simulated-2ranks-failed-startup.json');
    assert.equal(lines.length, 1);
    assert.equal((html.match(/class="answer /g) ?? []).length, 1);
    assert.ok(sectionText(html, 'first-page').includes(lines[0]!.text));
    // Nothing else stands beside it with nothing to show: the plan, recovery and study sections are hidden.
    for (const section of ['plan', 'recovery', 'study-figures'])
      assert.match(html, new RegExp(`<section[^>]*id="${section}"[^>]*hidden`), `the ${section} section is hidden on a failed run`);
  });

  test('1×H200: the 1-rank line, no "missing" in the answer, the plan one line (nothing to switch between), the recovery table with no row of "incomplete"', async () => {
    const { html } = await dom('docs/results/h200x1-2026-12-01/h200x1-nccl2.30.7-source.json');
    const text = sectionText(html, 'first-page');
    assert.match(text, /1 rank has no peer to connect to/);
    assert.doesNotMatch(text, /missing/);
    // One shape (TP1): nothing to switch between, so the plan is one line, no table of prices (issue #28).
    assert.equal(html.indexOf('class="plan-table"'), -1, 'no plan table at one shape');
    assert.match(sectionText(html, 'plan'), /no switch to plan: at 1 GPU the only TP shape is TP1: there is nothing to switch between at this GPU count/);
    assert.doesNotMatch(sectionText(html, 'plan'), /per switch|a switch is a rebuild/);
    // The recovery table the same way: only the paths the run can price, the others named in one line.
    const at = html.indexOf('class="plan-table recovery-table"');
    assert.ok(at > 0, 'the recovery table is drawn');
    assert.doesNotMatch(html.slice(at, html.indexOf('</table>', at)), /incomplete/);
    // One line of what a 1-rank run can and cannot show, no n-rank sentences (issue #28, audit FALSE 3 and MISLEADING 9).
    const recovery = sectionText(html, 'plan recovery');
    assert.match(recovery, /1 rank: losing it leaves no survivor, so this run can show only a full rebuild of its 1 rank: abort \+ re-init /);
    assert.match(recovery, /this run timed "ncclCommRevoke until quiet" in revoke\/idle\/destroy, 987 ms/);
    assert.doesNotMatch(recovery, /by the survivors|grow back to 1 rank|its 1 rank lost|ncclCommRevoke until quiet \(1 rank\) — not measured/);
  });
});
