// The held-out batch's scoring (scripts/heldoutScore.mjs, issue #27): matching by file, line and
// role, the table by shape, false positives put under the label of their line, a look-alike or no
// label; bad labels named; and the batch itself (test/fixtures/callsites/heldout): labels that fit
// the committed files. The score of the finder on the batch is printed by the script, not asserted.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
// @ts-expect-error -- a plain .mjs script without types
import { formatScore, readLabels, score, SHAPES, ScoreInputError } from '../../scripts/heldoutScore.mjs';

const ROOT = join(__dirname, '..', '..');
const HELDOUT = join(ROOT, 'test', 'fixtures', 'callsites', 'heldout');

interface Row {
  shape: string;
  labelled: number;
  found: number;
  missed: number;
  falsePositives: number;
}

const site = (line: number, role: string, shape: string) => ({ file: 'a.py', line, api: 'new_group', role, kind: 'c10d', shape });
const labels = {
  sites: [site(1, 'create', 'direct'), site(2, 'teardown', 'direct'), site(3, 'create', 'deviceMesh')],
  wrapperCallers: [{ file: 'a.py', line: 4, kind: 'wrapperCaller', calls: 'new_group', role: 'create', shape: 'crossFileWrapper' }],
  lookalikes: [{ file: 'a.py', line: 5, why: 'a gloo group' }],
};
const found = (line: number, role: string) => ({ file: 'a.py', line, role, api: 'x' });

test('heldout score: a label is hit by file, line and role; a role that disagrees is a miss and a false positive of its shape', () => {
  const s = score(readLabels(labels), [found(1, 'create'), found(1, 'create'), found(2, 'create'), found(4, 'create')]);
  assert.equal(s.labelled, labels.sites.length + labels.wrapperCallers.length);
  assert.equal(s.found, 3, 'the two sites of line 1 with one role count once');
  assert.equal(s.hit, 2);
  assert.equal(s.recall, 2 / s.labelled);
  assert.equal(s.precision, 2 / 3);
  assert.deepEqual(
    s.misses.map((m: { line: number }) => m.line),
    [2, 3],
  );
  const rows = new Map<string, Row>(s.rows.map((r: Row) => [r.shape, r]));
  assert.deepEqual(rows.get('direct'), { shape: 'direct', labelled: 2, found: 1, missed: 1, falsePositives: 1 });
  assert.deepEqual(rows.get('deviceMesh'), { shape: 'deviceMesh', labelled: 1, found: 0, missed: 1, falsePositives: 0 });
  assert.deepEqual(rows.get('crossFileWrapper'), { shape: 'crossFileWrapper', labelled: 1, found: 1, missed: 0, falsePositives: 0 });
  assert.match(s.falsePositives[0].why, /labelled teardown .* found create/);
});

test('heldout score: a found site on a look-alike line or on no label is a false positive under that row, named with file:line', () => {
  const s = score(readLabels(labels), [found(5, 'create'), found(9, 'teardown')]);
  const rows = new Map<string, Row>(s.rows.map((r: Row) => [r.shape, r]));
  assert.equal(rows.get('look-alike')?.falsePositives, 1);
  assert.equal(rows.get('unlabelled')?.falsePositives, 1);
  assert.equal(s.precision, 0);
  const text = formatScore(s);
  assert.match(text, /a\.py:5 x create: look-alike: a gloo group/);
  assert.match(text, /a\.py:9 x teardown: no label on this line/);
  assert.match(text, /\| all \| 4 \| 0 \| 4 \| 2 \|/);
});

test('heldout score: a label without a known shape, file, line or role is refused, each named', () => {
  const bad = {
    sites: [
      { ...site(1, 'create', 'direct'), shape: 'sideways' },
      { file: 'a.py', line: 0, role: 'create', shape: 'direct' },
    ],
    wrapperCallers: [],
    lookalikes: [],
  };
  assert.throws(
    () => readLabels(bad),
    (e: Error) =>
      e instanceof ScoreInputError &&
      /sites\[0\] \(a\.py:1\): shape "sideways"/.test(e.message) &&
      /sites\[1\]: needs file, line/.test(e.message),
  );
});

test('heldout score: a folder without a manifest is bad input (exit 2, the file named)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'heldout-'));
  try {
    writeFileSync(join(dir, 'labels.json'), JSON.stringify(labels));
    const run = spawnSync(process.execPath, [join(ROOT, 'scripts', 'heldoutScore.mjs'), '--dir', dir], {
      encoding: 'utf8',
      timeout: 60_000,
    });
    assert.equal(run.status, 2, run.stderr);
    assert.match(run.stderr, /cannot read the manifest .*manifest\.json/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('heldout batch: every label names a committed file of the manifest (sha256 as pinned), each line once per role, with a known shape', () => {
  const manifest = JSON.parse(readFileSync(join(HELDOUT, 'manifest.json'), 'utf8')) as {
    files: { file: string; sha256: string; license: string }[];
  };
  const doc = JSON.parse(readFileSync(join(HELDOUT, 'labels.json'), 'utf8'));
  const { expected, lookalikes } = readLabels(doc);
  for (const f of manifest.files) {
    assert.match(f.license, /^(Apache-2\.0|BSD-3-Clause|MIT)$/, `${f.file}: only files whose licence lets them be committed`);
    assert.equal(
      createHash('sha256')
        .update(readFileSync(join(HELDOUT, f.file)))
        .digest('hex'),
      f.sha256,
      f.file,
    );
  }
  const files = new Map(manifest.files.map((f) => [f.file, readFileSync(join(HELDOUT, f.file), 'utf8').split('\n')]));
  // A line is labelled once per role (a call of a wrapper that both makes and destroys has two);
  // a look-alike's line has no other label.
  const seen = new Set<string>();
  const sites = new Set(expected.map((e: { file: string; line: number }) => `${e.file}:${e.line}`));
  for (const x of [...expected, ...lookalikes]) {
    const lines = files.get(x.file);
    assert.ok(lines, `${x.file} is not in manifest.json`);
    assert.ok(x.line <= lines.length && lines[x.line - 1]!.trim() !== '', `${x.file}:${x.line} is past the end or blank`);
    const k = `${x.file}:${x.line}:${'role' in x ? x.role : 'look-alike'}`;
    assert.ok(!seen.has(k), `${k} is labelled twice`);
    seen.add(k);
  }
  for (const l of lookalikes) assert.ok(!sites.has(`${l.file}:${l.line}`), `${l.file}:${l.line} is both a site and a look-alike`);
  assert.ok(doc.wrapperCallers.every((w: { kind: string }) => w.kind === 'wrapperCaller'));
  for (const shape of SHAPES as string[])
    assert.ok(
      expected.some((e: { shape: string }) => e.shape === shape),
      `no label of shape ${shape}`,
    );
});
