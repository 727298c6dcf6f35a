/**
 * `JSON.stringify(value)` written in pieces, so that a run of 100,000 iterations per step (400 MB
 * of JSON text) is never one string: the pieces joined are exactly `JSON.stringify(value)`
 * (`toJSON`, properties whose value is undefined, a function or a symbol left out, those in arrays
 * written `null`, a cycle a TypeError). Pure.
 */

/** About how many characters a piece holds (a piece may be longer by the text of one key and value). */
export const JSON_PIECE_CHARS = 1 << 20;

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
