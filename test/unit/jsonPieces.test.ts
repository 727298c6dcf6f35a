/**
 * `jsonPieces` (client/jsonPieces.ts): the pieces joined are exactly JSON.stringify's text, at any
 * piece size, for what a run holds and for what JSON.stringify treats specially (toJSON,
 * undefined, functions and symbols in objects and arrays, boxed primitives, -0, holes); a cycle
 * is a TypeError as with JSON.stringify.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { jsonPieces } from '../../client/jsonPieces';

const joined = (v: unknown, size?: number, indent?: number): string | undefined => {
  const pieces = [...jsonPieces(v, size, indent)];
  return pieces.length === 0 ? undefined : pieces.join('');
};

describe('JSON in pieces', () => {
  const run = JSON.parse(readFileSync(join(__dirname, '..', '..', 'docs', 'results', 'h200x2-2026-12-01', 'h200x2-nccl2.28.9-wheel.json'), 'utf8')) as unknown;
  const odd: unknown[] = [
    { a: undefined, b: () => 1, c: Symbol('s'), d: [undefined, () => 1, Symbol('t'), -0, NaN, Infinity], e: -0 },
    // eslint-disable-next-line no-sparse-arrays
    [1, , 3],
    { t: new Date(0), n: new Number(3), s: new String('x'), b: new Boolean(false), o: { toJSON: (k: string) => `key ${k}` } },
    { nested: { deeper: { list: [{ x: 1 }, [2, [3, { y: '</script>\u2028' }]]] } }, '': 0, 'caf\u00e9': '\u{1F600}' },
    [],
    {},
    'text',
    42,
    null,
    true,
    [[[[]]]],
    // Longer than a block of plain values, with values that are not plain among them.
    Array.from({ length: 20_000 }, (_, i) => (i === 9000 ? undefined : i === 15_000 ? { x: [i] } : i === 17_000 ? 'text' : i / 7)),
  ];

  test('a committed run and odd values: the text of JSON.stringify at piece sizes 1, 7, 100 and the default', () => {
    for (const v of [run, ...odd]) for (const size of [1, 7, 100, undefined]) assert.equal(joined(v, size), JSON.stringify(v));
  });

  test('indented: the text of JSON.stringify(value, null, n) (n = 2 as a run is saved, 1, 4, 10)', () => {
    for (const v of [run, ...odd, { a: [], b: {}, c: { d: undefined }, e: [[], {}], f: ['x,y', 1, 'z'] }]) {
      for (const indent of [2, 1, 4, 10]) for (const size of [1, 100, undefined]) assert.equal(joined(v, size, indent), JSON.stringify(v, null, indent), `indent ${indent} size ${size}`);
    }
  });

  test('pieces keep to about the size asked', () => {
    const pieces = [...jsonPieces(run, 4096)];
    assert.ok(pieces.length > 10);
    assert.ok(pieces.every((p) => p.length < 2 * 4096), `longest piece ${Math.max(...pieces.map((p) => p.length))}`);
  });

  test('nothing for what JSON.stringify returns undefined for; a cycle is a TypeError', () => {
    for (const v of [undefined, () => 1, Symbol('x')]) assert.equal(joined(v), undefined);
    const cyc: Record<string, unknown> = { a: 1 };
    cyc.self = { back: cyc };
    assert.throws(() => joined(cyc), TypeError);
    assert.throws(() => joined({ big: 1n }), TypeError);
  });
});
