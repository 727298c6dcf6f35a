/**
 * Running a tree-sitter query over a few parts of a file instead of the whole tree.
 *
 * A whole-tree query walks every node in WebAssembly (~14 ms for a 5,000-line Python file,
 * whatever the query), and every match then crosses into JavaScript objects. The Python scan
 * wants only the nodes around a few words (keywords, API names), which a regular expression
 * finds in the text in well under a millisecond; a query limited to a byte range starts matches
 * only at nodes that intersect the range (their captures may lie outside it) and skips the
 * subtrees around it.
 *
 * No `vscode` import.
 */
import type { Parser as TsParser, Query as TsQuery, QueryMatch, Tree } from 'web-tree-sitter';

/** A half-open range of UTF-16 code units. */
export interface TextRange {
  start: number;
  end: number;
}

/**
 * Ranges closer than this (code units) are queried as one: a query call costs about as much as
 * walking a few hundred characters of tree.
 */
const MERGE_GAP = 256;

/** Past this many ranges, one whole-tree query is cheaper than a query per range. */
const MAX_RANGES = 200;

const isWordCode = (c: number): boolean => (c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c === 95;
const isDigitCode = (c: number): boolean => c >= 48 && c <= 57;

/**
 * False when the word at `index` is the inside of a longer identifier: a run of ASCII letters,
 * digits and `_` precedes it and starts with a letter or `_` (a digit starts a number, which can
 * end in a letter, as in `0xf` or `1j`; so can a float's exponent after `.`, as in `1.e5`).
 */
export function mayStartToken(text: string, index: number): boolean {
  let j = index;
  while (j > 0 && isWordCode(text.charCodeAt(j - 1))) j--;
  if (j === index || isDigitCode(text.charCodeAt(j))) return true;
  return text.charCodeAt(j - 1) === 46 /* . */ && j >= 2 && isDigitCode(text.charCodeAt(j - 2));
}

/**
 * The ranges of `re`'s matches in `text` (`re` must be global); with `tokens`, only those that
 * may start a token ({@link mayStartToken}). A match left out is looked past by one character
 * only, so a word it overlaps is still found.
 */
export function wordRanges(text: string, re: RegExp, options: { tokens?: boolean } = {}): TextRange[] {
  const out: TextRange[] = [];
  re.lastIndex = 0;
  for (let m = re.exec(text); m; m = re.exec(text)) {
    const start = m.index;
    const end = start + m[0].length;
    if (end === start || (options.tokens && !mayStartToken(text, start))) {
      re.lastIndex = start + 1;
      continue;
    }
    out.push({ start, end });
  }
  return out;
}

/** The ranges of `ranges` not inside one of `covered` (both sorted, disjoint). */
export function rangesOutside(ranges: readonly TextRange[], covered: readonly TextRange[]): TextRange[] {
  const out: TextRange[] = [];
  let c = 0;
  for (const r of ranges) {
    while (c < covered.length && (covered[c]?.end ?? 0) < r.end) c++;
    const k = covered[c];
    if (!k || k.start > r.start) out.push(r);
  }
  return out;
}

/** Sorted, merged (gaps under {@link MERGE_GAP} closed) copy of `ranges`. */
export function mergeRanges(ranges: readonly TextRange[], gap = MERGE_GAP): TextRange[] {
  const sorted = [...ranges].sort((a, b) => a.start - b.start);
  const out: TextRange[] = [];
  for (const r of sorted) {
    const last = out[out.length - 1];
    if (last && r.start - last.end < gap) last.end = Math.max(last.end, r.end);
    else out.push({ start: r.start, end: r.end });
  }
  return out;
}

/**
 * How `Query.matches`' `startIndex`/`endIndex` relate to node indices: web-tree-sitter 0.25
 * passes them to the C cursor as bytes of the UTF-16 text (2 per code unit) while nodes report
 * code units. Found by a probe rather than assumed: 2 or 1, or 0 when the probe is inconclusive
 * (then the callers query the whole tree, as before).
 *
 * `callQuery`'s pattern 0 must capture a Python call's callee first.
 */
export function probeIndexScale(parser: TsParser, callQuery: TsQuery): 0 | 1 | 2 {
  // `aaaa()` is [0, 6), `b()` is [7, 10): code units [7, 8) are `b`; bytes [7, 8) are in `aaaa`.
  let tree: Tree | null = null;
  try {
    tree = parser.parse('aaaa()\nb()\n');
    if (!tree) return 0;
    const names = (ms: QueryMatch[]): string[] => ms.filter((m) => m.patternIndex === 0).map((m) => m.captures[0]?.node.text ?? '');
    const got = names(callQuery.matches(tree.rootNode, { startIndex: 7, endIndex: 8 })).join(',');
    if (got === 'b') return 1;
    if (got === 'aaaa' && names(callQuery.matches(tree.rootNode, { startIndex: 14, endIndex: 16 })).join(',') === 'b') return 2;
    return 0;
  } catch {
    return 0;
  } finally {
    tree?.delete();
  }
}

/**
 * Calls `visit` with every match of `query` whose pattern root intersects one of `ranges`
 * (sorted, disjoint; code units), and maybe others; `scale` from {@link probeIndexScale}, 0 for
 * the whole tree. A match can be reported more than once (from two ranges): callers deduplicate.
 * Returns what was covered: `ranges`, or one range for the whole tree.
 */
export function forEachMatch(
  query: TsQuery,
  tree: Tree,
  ranges: readonly TextRange[],
  scale: number,
  visit: (m: QueryMatch) => void,
): readonly TextRange[] {
  if (ranges.length === 0) return ranges;
  const root = tree.rootNode;
  if (scale === 0 || ranges.length > MAX_RANGES) {
    for (const m of query.matches(root)) visit(m);
    return [{ start: 0, end: Number.MAX_SAFE_INTEGER }];
  }
  for (const r of ranges) for (const m of query.matches(root, { startIndex: r.start * scale, endIndex: r.end * scale })) visit(m);
  return ranges;
}
