/**
 * A file opened again with the same content is annotated from the kept scan, without a parse
 * (annotationModel.ts `open`); an edit then parses in full and gives the edited file's sites.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { AnnotationModel, SCAN_CACHE_SIZE } from '../../extension/annotations/annotationModel';
import { ProfileStore } from '../../client/profileStore';
import { type StaleRules } from '../../readings/profiles';
import { CALLSITES, loadFinder } from '../support/annotationFixtures';

const RULES: StaleRules = { now: Date.parse('2026-12-01T00:00:00Z'), staleAfterDays: 30, expectedNcclVersion: '' };
const COMM = readFileSync(join(CALLSITES, 'comm.cc'), 'utf8');

test('an unchanged file opened again is annotated from the kept scan (no parse); an edit re-parses it in full', async () => {
  const finder = await loadFinder();
  let parses = 0;
  const parse = finder.parse.bind(finder);
  finder.parse = (...args: Parameters<typeof finder.parse>) => (parses++, parse(...args));
  const model = new AnnotationModel(finder, new ProfileStore(() => undefined), () => RULES);
  try {
    const first = model.open('file:///a/comm.cc', 'cpp', COMM, 1).scan.sites;
    assert.equal(parses, 1);
    assert.ok(first.length > 3, `comm.cc has NCCL sites: ${first.length}`);
    model.close('file:///a/comm.cc');
    // The same content under another name (or the same file reopened): no parse, the same sites.
    const again = model.open('file:///b/copy.cc', 'cpp', COMM, 1).scan.sites;
    assert.equal(parses, 1, 'no parse for an unchanged text');
    assert.equal(model.cachedOpens, 1);
    assert.deepEqual(again, first);
    // The first edit parses in full (no tree was kept) and sees the change.
    const edited = `${COMM}\nvoid extra(ncclComm_t c) { ncclCommDestroy(c); }\n`;
    model.edit('file:///b/copy.cc', [{ rangeOffset: COMM.length, rangeLength: 0, range: { start: { line: 0, character: 0 }, end: { line: 0, character: 0 } }, text: '' }]);
    const after = model.reparse('file:///b/copy.cc', edited, 2)!.scan.sites;
    assert.equal(parses, 2);
    assert.equal(after.length, first.length + 1);
    assert.equal(after[after.length - 1]!.api, 'ncclCommDestroy');
    // Other content, or the same text in another language, is parsed.
    model.open('file:///c/other.cc', 'cpp', `${COMM}\n// changed\n`, 1);
    assert.equal(parses, 3);
    assert.equal(model.cachedOpens, 1);
  } finally {
    model.dispose();
    finder.dispose();
  }
});

test('the scan cache is bounded', () => {
  assert.ok(SCAN_CACHE_SIZE > 0 && SCAN_CACHE_SIZE <= 256);
});
