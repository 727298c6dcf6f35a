/**
 * `commcost report`'s text and HTML page of committed runs are byte-identical to what they were
 * before runs were parsed as read (client/jsonStream.ts) and pages written in pieces
 * (client/jsonPieces.ts): test/fixtures/reportSnapshot/snapshot.json holds, per run, the summary
 * (plain and --verbose) and the SHA-256 of the HTML page (nonce masked, the stand-in bundle
 * bundle.js inlined), first made by the code before that change, and made again (2026-12-02) once
 * the readings of issue #28 changed the text on purpose. Also: a run read as it streams equals the
 * same file parsed whole, and a page written piece by piece through writeFileSafely is the page as
 * one string. When a reading changes on purpose, make the snapshot again and read its diff:
 *   COMMCOST_UPDATE_SNAPSHOT=1 node --import tsx --test test/unit/reportSnapshot.test.ts
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { formatSummary } from '../../cli/summary';
import { renderReport, renderReportPieces } from '../../client/htmlReport';
import { loadRun, withCurrentVerdict } from '../../client/resultsStore';
import { validateRunFile } from '../../client/runFileSchema';
import { writeFileSafely } from '../../client/safeWrite';

const DIR = join(__dirname, '..', 'fixtures', 'reportSnapshot');
const BUNDLE = join(DIR, 'bundle.js');
const ROOT = join(__dirname, '..', '..');
const snapshot = JSON.parse(readFileSync(join(DIR, 'snapshot.json'), 'utf8')) as Record<string, { summary: string; verbose: string; htmlSha256: string; htmlBytes: number }>;
const masked = (html: string): string => html.replace(/nonce-[A-Za-z0-9+/=]+'|nonce="[A-Za-z0-9+/=]+"/g, 'NONCE');

if (process.env.COMMCOST_UPDATE_SNAPSHOT === '1') {
  test('the snapshot made again', async () => {
    for (const file of Object.keys(snapshot)) {
      const run = await loadRun(join(ROOT, file));
      const html = masked(renderReport(run, { webviewJsPath: BUNDLE }));
      snapshot[file] = { summary: formatSummary(run, {}), verbose: formatSummary(run, { verbose: true }), htmlSha256: createHash('sha256').update(html).digest('hex'), htmlBytes: Buffer.byteLength(html) };
    }
    writeFileSync(join(DIR, 'snapshot.json'), `${JSON.stringify(snapshot, null, 2)}\n`);
  });
}

describe('report output of committed runs is unchanged', () => {
  for (const [file, want] of Object.entries(snapshot)) {
    test(file, async () => {
      const run = await loadRun(join(ROOT, file));
      // Read as it streams (client/jsonStream.ts) = the file parsed whole.
      assert.deepEqual(run, withCurrentVerdict(validateRunFile(JSON.parse(readFileSync(join(ROOT, file), 'utf8')), file)));
      assert.equal(formatSummary(run, {}), want.summary);
      assert.equal(formatSummary(run, { verbose: true }), want.verbose);
      const html = masked(renderReport(run, { webviewJsPath: BUNDLE }));
      assert.equal(Buffer.byteLength(html), want.htmlBytes);
      assert.equal(createHash('sha256').update(html).digest('hex'), want.htmlSha256);
    });
  }

  test('a page written in pieces through writeFileSafely is the page as one string', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'commcost-snapshot-'));
    try {
      const first = Object.keys(snapshot)[0]!;
      const run = await loadRun(join(ROOT, first));
      const out = join(dir, 'report.html');
      await writeFileSafely(out, renderReportPieces(run, { webviewJsPath: BUNDLE }), 'the report');
      const html = masked(readFileSync(out, 'utf8'));
      assert.equal(createHash('sha256').update(html).digest('hex'), snapshot[first]!.htmlSha256);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
