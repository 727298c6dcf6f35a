/**
 * `JSON.stringify(value)` written in pieces, so that a run of 100,000 iterations per step (400 MB
 * of JSON text) is never one string: the pieces joined are exactly `JSON.stringify(value)`
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
 * The text of `JSON.stringify(value)` as pieces of about `pieceChars` characters, in order.
 * Yields nothing where JSON.stringify returns undefined (`value` undefined, a function, a symbol).
 * @throws TypeError as JSON.stringify does: a cycle, a BigInt
 */
export function* jsonPieces(value: unknown, pieceChars = JSON_PIECE_CHARS): Generator<string> {
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

  function* walk(v: unknown): Generator<string> {
    if (isLeaf(v)) {
      put(JSON.stringify(v));
      return;
    }
    const obj = v as object;
    if (ancestors.has(obj)) throw new TypeError('Converting circular structure to JSON');
    ancestors.add(obj);
    if (Array.isArray(obj)) {
      put('[');
      for (let i = 0; i < obj.length; i++) {
        if (i > 0) put(',');
        // A stretch of plain numbers, strings, booleans or nulls (a run's samples): one JSON.stringify.
        const block = obj.slice(i, i + BLOCK);
        if (block.length > 1 && block.every(isPlain)) {
          put(JSON.stringify(block).slice(1, -1));
          i += block.length - 1;
          if (full()) yield take();
          continue;
        }
        const x = jsonValue(obj[i], String(i));
        if (skipped(x)) put('null');
        else if (isLeaf(x)) put(JSON.stringify(x));
        else yield* walk(x);
        if (full()) yield take();
      }
      put(']');
    } else {
      put('{');
      let first = true;
      for (const k of Object.keys(obj)) {
        const x = jsonValue((obj as Record<string, unknown>)[k], k);
        if (skipped(x)) continue;
        put(`${first ? '' : ','}${JSON.stringify(k)}:`);
        first = false;
        yield* walk(x);
        if (full()) yield take();
      }
      put('}');
    }
    ancestors.delete(obj);
  }

  const top = jsonValue(value, '');
  if (skipped(top)) return;
  yield* walk(top);
  if (size > 0) yield take();
}
