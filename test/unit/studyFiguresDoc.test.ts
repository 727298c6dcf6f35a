/**
 * The study's figures are cited in every verdict sentence as 'docs/METHOD.md "The study's
 * figures"': that section must exist, and hold every figure of readings/studyFigures.ts as written
 * and the measurement it comes from, so that a reader who follows a citation finds the figure.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { STUDY_FIGURES, STUDY_POOL_ESTIMATE } from '../../readings/studyFigures';

const method = readFileSync(join(__dirname, '../../docs/METHOD.md'), 'utf8');

/** The text of the section under `## heading`, up to the next `## `. */
function section(heading: string): string {
  const start = method.indexOf(`\n## ${heading}\n`);
  assert.ok(start >= 0, `docs/METHOD.md has no section "## ${heading}"`);
  const end = method.indexOf('\n## ', start + 4);
  return method.slice(start, end < 0 ? undefined : end);
}

test('every figure of the study is in the section its sentences cite, as written, with its measurement', () => {
  for (const [key, f] of Object.entries(STUDY_FIGURES)) {
    const m = /^docs\/METHOD\.md "(.+)"$/.exec(f.document);
    assert.ok(m, `${key}: cites ${f.document}, not a section of docs/METHOD.md`);
    // The table row of its measurement holds the figure as written and its host.
    const rows = section(m[1]!).split('\n').filter((l) => l.startsWith('|'));
    const row = rows.find((r) => r.split('|')[1]!.includes(f.measurement));
    assert.ok(row, `${key}: no row for its measurement "${f.measurement}" in docs/METHOD.md "${m[1]}"`);
    assert.ok(row.split('|')[2]!.includes(f.written), `${key}: "${f.written}" is not in its row: ${row}`);
    assert.ok(row.split('|')[3]!.includes(f.host.text), `${key}: its setting ${f.host.text} is not in its row: ${row}`);
  }
  assert.match(STUDY_POOL_ESTIMATE.source, /docs\/METHOD\.md "The study's figures"/);
});
