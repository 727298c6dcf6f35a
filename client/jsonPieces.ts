/**
 * `JSON.stringify(value)` (or `JSON.stringify(value, null, indent)`) written in pieces, so that a
 * run of 100,000 iterations per step (400–700 MB of JSON text, past V8's longest string when
 * indented) is never one string: the pieces joined are exactly JSON.stringify's text
 * (`toJSON`, properties whose value is undefined, a function or a symbol left out, those in arrays
 * written `null`, a cycle a TypeError). Pure.
 */

/** About how many characters a piece holds (a piece may be longer by the text of one key and value): under 128 KiB, so that each piece is a small object V8 frees young. */
export const JSON_PIECE_CHARS = 1 << 16;

/** Elements of an array stringified together when all are plain (see {@link isPlain}). */
const BLOCK = 2048;

/** A primitive that JSON.stringify writes as itself (no toJSON, not left out). */
const isPlain = (v: unknown): boolean => typeof v === 'number' || typeof v === 'string' || typeof v === 'boolean' || v === null;

const skipped = (v: unknown): boolean => v === undefined || typeof v === 'function' || typeof v === 'symbol';

/** `v.toJSON(key)` when `v` has one, else `v` (as JSON.stringify reads a value). */
function jsonValue(v: unknown, key: string): unknown {
  if (v !== null && (typeof v === 'object' || typeof v === 'bigint')) {
    const toJSON = (v as { toJSON?: unknown }).toJSON;
    if (typeof toJSON === 'function') return (toJSON as (k: string) => unknown).call(v, key);
  }
  return v;
}

/** True for what JSON.stringify writes as its own text: anything but a plain object or an array (boxed primitives included). */
function isLeaf(v: unknown): boolean {
  return v === null || typeof v !== 'object' || v instanceof Number || v instanceof String || v instanceof Boolean;
}

/**
 * The text of `JSON.stringify(value, null, indent)` as pieces of about `pieceChars` characters,
 * in order. Yields nothing where JSON.stringify returns undefined (`value` undefined, a function,
 * a symbol).
 * @param indent spaces per level, 0–10 (0: compact, as `JSON.stringify(value)`)
 * @throws TypeError as JSON.stringify does: a cycle, a BigInt
 */
export function* jsonPieces(value: unknown, pieceChars = JSON_PIECE_CHARS, indent = 0): Generator<string> {
  const gap = ' '.repeat(Math.max(0, Math.min(10, Math.floor(indent))));
  // Indented, a block is split at its commas: only values whose text has none go in one.
  const inBlock = gap ? (v: unknown): boolean => typeof v === 'number' || typeof v === 'boolean' || v === null : isPlain;
  let parts: string[] = [];
  let size = 0;
  const ancestors = new Set<object>();
  const put = (s: string): void => {
    parts.push(s);
    size += s.length;
  };
  const full = (): boolean => size >= pieceChars;
  const take = (): string => {
    const piece = parts.join('');
    parts = [];
    size = 0;
    return piece;
  };

  function* walk(v: unknown, outer: string): Generator<string> {
    if (isLeaf(v)) {
      put(JSON.stringify(v));
      return;
    }
    const obj = v as object;
    if (ancestors.has(obj)) throw new TypeError('Converting circular structure to JSON');
    ancestors.add(obj);
    const inner = outer + gap;
    // Before each member: nothing compact; a new line at the inner indentation when indented.
    const lead = gap ? `\n${inner}` : '';
    if (Array.isArray(obj)) {
      put('[');
      for (let i = 0; i < obj.length; i++) {
        put(i > 0 ? `,${lead}` : lead);
        // A stretch of plain numbers, strings, booleans or nulls (a run's samples): one JSON.stringify.
        const block = obj.slice(i, i + BLOCK);
        if (block.length > 1 && block.every(inBlock)) {
          const text = JSON.stringify(block).slice(1, -1);
          put(gap ? text.replaceAll(',', `,${lead}`) : text);
          i += block.length - 1;
          if (full()) yield take();
          continue;
        }
        const x = jsonValue(obj[i], String(i));
        if (skipped(x)) put('null');
        else if (isLeaf(x)) put(JSON.stringify(x));
        else yield* walk(x, inner);
        if (full()) yield take();
      }
      put(gap && obj.length > 0 ? `\n${outer}]` : ']');
    } else {
      put('{');
      let first = true;
      for (const k of Object.keys(obj)) {
        const x = jsonValue((obj as Record<string, unknown>)[k], k);
        if (skipped(x)) continue;
        put(`${first ? '' : ','}${lead}${JSON.stringify(k)}:${gap ? ' ' : ''}`);
        first = false;
        yield* walk(x, inner);
        if (full()) yield take();
      }
      put(gap && !first ? `\n${outer}}` : '}');
    }
    ancestors.delete(obj);
  }

  const top = jsonValue(value, '');
  if (skipped(top)) return;
  yield* walk(top, '');
  if (size > 0) yield take();
}
