/**
 * Helpers of the wrapper-index tests (test/unit/wrapperGroups.test.ts, wrapperShapes.test.ts): a
 * fixture line found by its text, and the first-collective sites in one comparable line each.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import type { CallSite } from '../../sites/callSites';

/** The 1-based line of `file` that matches `re` (exactly one; asserts so). */
export function lineOf(file: string, re: RegExp): number {
  const lines = readFileSync(file, 'utf8')
    .split('\n')
    .flatMap((l, i) => (re.test(l) ? [i + 1] : []));
  assert.equal(lines.length, 1, `${file}: ${re} matches ${lines.length} lines`);
  return lines[0]!;
}

/** "line callee <- group (created at line, by api)" of the first-collective sites (lines 1-based). */
export const firsts = (sites: readonly CallSite[]): string[] =>
  sites
    .filter((s) => s.role === 'firstCollective')
    .map(
      (s) =>
        `${s.range.start.line + 1} ${s.written} <- ${s.firstCollectiveOf?.variable} (${(s.firstCollectiveOf?.line ?? -2) + 1}, ${s.firstCollectiveOf?.api})`,
    );
