/**
 * The streaming JSON parser (client/jsonStream.ts) gives what JSON.parse gives, whatever the
 * chunking: the same numbers (bit for bit, -0 included), strings (escapes, non-ASCII, split
 * multi-byte characters), key order, `__proto__` as an own key; and it refuses what JSON.parse
 * refuses.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { JsonLimitError, JsonStreamError, JsonStreamParser, type JsonLimits } from '../../client/jsonStream';

function parseChunked(text: string | Buffer, size: number, limits?: JsonLimits): unknown {
  const bytes = typeof text === 'string' ? Buffer.from(text, 'utf8') : text;
  const p = new JsonStreamParser(limits);
  for (let i = 0; i < bytes.length; i += size) p.push(bytes.subarray(i, i + size));
  return p.end();
}

/** Deep equality that also tells -0 from 0 and checks own `__proto__` keys. */
function same(a: unknown, b: unknown, where = '$'): void {
  if (typeof a === 'number') {
    assert.ok(Object.is(a, b), `${where}: ${String(a)} vs ${String(b)}`);
    return;
  }
  if (Array.isArray(a)) {
    assert.ok(Array.isArray(b), `${where}: array`);
    assert.equal(b.length, a.length, `${where}: length`);
    a.forEach((x, i) => same(x, (b as unknown[])[i], `${where}[${i}]`));
    return;
  }
  if (a && typeof a === 'object') {
    assert.ok(b && typeof b === 'object' && !Array.isArray(b), `${where}: object`);
    assert.equal(Object.getPrototypeOf(b), Object.prototype, `${where}: prototype`);
    assert.deepEqual(Object.keys(b), Object.keys(a), `${where}: keys`);
    for (const k of Object.keys(a)) same((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k], `${where}.${k}`);
    return;
  }
  assert.equal(b, a, where);
}

let seed = 7;
const rnd = (): number => {
  seed ^= seed << 13;
  seed ^= seed >>> 17;
  seed ^= seed << 5;
  return (seed >>> 0) / 2 ** 32;
};
const NUMBERS = ['0', '-0', '1', '-1', '0.5', '1e3', '1E-7', '-2.5e+10', '123456789012345678901234567890', '1e400', '-1e400', '5e-324', '2e-324', '0.1', '9007199254740993', '1.7976931348623157e308'];
const STRINGS = ['', 'a', 'caf\u00e9', '\u2192 \u00b7 \u2028', '\u{1F600}', 'say "hi"', 'back\\slash', 'tab\there', 'line\nbreak', '\u0000', '\ud800', '</script>'];

function randomJson(depth: number): string {
  const r = rnd();
  if (depth > 4 || r < 0.35) {
    const k = rnd();
    if (k < 0.5) return k < 0.25 ? NUMBERS[Math.floor(rnd() * NUMBERS.length)]! : String(rnd() * 10 ** Math.floor(rnd() * 8 - 4));
    if (k < 0.8) return JSON.stringify(STRINGS[Math.floor(rnd() * STRINGS.length)]);
    return ['true', 'false', 'null'][Math.floor(rnd() * 3)]!;
  }
  const ws = (): string => [' ', '', '\n  ', '\t', '\r\n'][Math.floor(rnd() * 5)]!;
  const n = Math.floor(rnd() * 6);
  if (r < 0.55) {
    // An array of numbers (a series of samples), sometimes with another value in it.
    const items = Array.from({ length: n * 5 }, () => String(rnd() * 100));
    if (rnd() < 0.3) items.splice(Math.floor(rnd() * (items.length + 1)), 0, randomJson(depth + 1));
    return `[${ws()}${items.join(`,${ws()}`)}${ws()}]`;
  }
  if (r < 0.75) return `[${Array.from({ length: n }, () => ws() + randomJson(depth + 1) + ws()).join(',')}]`;
  const keys = ['a', 'b', 'samples', '__proto__', 'caf\u00e9', 'a', '0', '10', '2'];
  return `{${Array.from({ length: n }, () => `${ws()}${JSON.stringify(keys[Math.floor(rnd() * keys.length)])}${ws()}:${ws()}${randomJson(depth + 1)}`).join(',')}${ws()}}`;
}

describe('streaming JSON parser', () => {
  test('random documents: the value JSON.parse gives, in chunks of 1, 2, 3, 7, 64 bytes and whole', () => {
    for (let i = 0; i < 400; i++) {
      const text = randomJson(0);
      const want = JSON.parse(text) as unknown;
      for (const size of [1, 2, 3, 7, 64, 1 << 20]) same(want, parseChunked(text, size), `doc ${i} chunk ${size}: ${text.slice(0, 80)}`);
    }
  });

  test('every number form and string of the lists, alone and in arrays', () => {
    for (const t of [...NUMBERS, ...STRINGS.map((s) => JSON.stringify(s)), `[${NUMBERS.join(',')}]`, ` [ ${NUMBERS.join(' , ')} ] `, '[[1,2],[3.5],[],[[]]]', '[1,"a",2]', '[1,[2,3],4]', '{"x":[1,2],"y":{"z":[]}}']) {
      for (const size of [1, 5, 1 << 20]) same(JSON.parse(t), parseChunked(t, size), t);
    }
  });

  test('long series of numbers (past what one read takes), a number longer than that, and errors deep in a series', () => {
    const long = `{"s":[${Array.from({ length: 30_001 }, (_, i) => (i % 3 === 0 ? i : Math.sqrt(i) * 1e-3)).join(', ')}],"t":[1,${'9'.repeat(40_000)}.5e-39990,2]}`;
    for (const size of [997, 65_536, 1 << 20]) same(JSON.parse(long), parseChunked(long, size), `chunk ${size}`);
    for (const bad of [long.replace('12, ', '12,, '), long.replace(', 20001,', ', 020001,'), long.replace(', 30000]', ', 30000,]')]) {
      assert.notEqual(bad, long);
      assert.throws(() => JSON.parse(bad), SyntaxError);
      for (const size of [997, 1 << 20]) assert.throws(() => parseChunked(bad, size), JsonStreamError);
    }
  });

  test('limits: numbers, other values and keys, bytes of strings, counted anywhere; one past a limit is refused', () => {
    const text = '{"a":[1,2,3],"b":{"c":4},"d":[5, "xy", true]}';
    const parse = (limits: JsonLimits, size = 1 << 20): unknown => parseChunked(text, size, limits);
    // 5 numbers; 10 other values and keys (2 objects, 2 arrays, 4 keys, "xy", true); 6 bytes of strings (a, b, c, d, xy).
    same(JSON.parse(text), parse({ maxNumbers: 5, maxValues: 10, maxStringBytes: 6 }));
    assert.throws(() => parse({ maxNumbers: 4 }), (e: unknown) => e instanceof JsonLimitError && e.what === 'numbers' && e.limit === 4);
    assert.throws(() => parse({ maxValues: 9 }), (e: unknown) => e instanceof JsonLimitError && e.what === 'other values');
    assert.throws(() => parse({ maxStringBytes: 5 }), (e: unknown) => e instanceof JsonLimitError && e.what === 'bytes of strings');
    // A string longer than the bound is refused while it is still being carried from chunk to chunk.
    const long = `["${'x'.repeat(100_000)}"]`;
    assert.throws(() => parseChunked(long, 1000, { maxStringBytes: 10_000 }), (e: unknown) => e instanceof JsonLimitError && e.what === 'bytes of strings');
  });

  test('"__proto__" is an own key, never the prototype', () => {
    const v = parseChunked('{"__proto__":{"polluted":1},"a":1}', 4) as Record<string, unknown>;
    assert.ok(Object.hasOwn(v, '__proto__'));
    assert.equal(Object.getPrototypeOf(v), Object.prototype);
    assert.equal(({} as Record<string, unknown>).polluted, undefined);
  });

  test('arrays of numbers are unboxed doubles at their exact length', () => {
    const v = parseChunked(`[${Array.from({ length: 5000 }, (_, i) => i + 0.25).join(',')}]`, 333) as number[];
    assert.equal(v.length, 5000);
    assert.equal(v[4999], 4999.25);
  });

  test('refuses what JSON.parse refuses', () => {
    const bad = ['', ' ', '{', '[', '[1,]', '{"a":1,}', '{a:1}', "{'a':1}", '01', '1.', '.5', '+1', '-', '1e', '0x10', 'NaN', 'Infinity', '-Infinity', 'tru', 'nul', 'truex', '[1 2]', '{"a" 1}', '{"a":}', '"abc', '"a\\"', '"\\x"', '"\t"', '[1]]', '{} {}', '1 2', '\ufeff{}', '{"a":1]', '[1}', '"\\u12"'];
    for (const t of bad) {
      assert.throws(() => JSON.parse(t), SyntaxError, `JSON.parse accepts ${JSON.stringify(t)}`);
      for (const size of [1, 2, 1 << 20]) assert.throws(() => parseChunked(t, size), JsonStreamError, `accepted ${JSON.stringify(t)} in chunks of ${size}`);
    }
  });

  test('invalid UTF-8 inside a string reads as the whole text decoded would (U+FFFD)', () => {
    const bytes = Buffer.concat([Buffer.from('{"a":"x'), Buffer.from([0xff, 0xc3]), Buffer.from('y"}')]);
    for (const size of [1, 3, 100]) same(JSON.parse(bytes.toString('utf8')), parseChunked(bytes, size));
  });
});
