// The house's import rules (scripts/checkLayers.mjs, run first by `npm test`): the repository keeps
// them, and each rule fails when a tree breaks it (a surface on another surface, the webview on the
// host core, Node in readings/ directly or through sites/, a circle, a file too long).
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { test } from 'node:test';
// @ts-expect-error -- a plain .mjs script without types
import { checkLayers, MAX_LINES } from '../../scripts/checkLayers.mjs';

const ROOT = join(__dirname, '..', '..');

type Problem = { file: string; line: number; rule: string };
const check = (root: string): { problems: Problem[]; files: number } => checkLayers(root);

/** A tree of `files` (path → text) in a fresh folder; removed after `fn`. */
function withTree(files: Record<string, string>, fn: (root: string) => void): void {
  const root = mkdtempSync(join(tmpdir(), 'commcost-layers-'));
  try {
    for (const [p, text] of Object.entries(files)) {
      mkdirSync(dirname(join(root, p)), { recursive: true });
      writeFileSync(join(root, p), text);
    }
    fn(root);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}

const GOOD = {
  'protocol/a.ts': 'export const a = 1;\n',
  'sites/finder.ts': "import { join } from 'node:path';\nimport { a } from '../protocol/a';\nexport const f = join(String(a));\n",
  'sites/words.ts': 'export const w = 1;\n',
  'readings/r.ts': "import type { f } from '../sites/finder';\nimport { w } from '../sites/words';\nexport const r: typeof f = String(w);\n",
  'client/c.ts': "import { readFileSync } from 'node:fs';\nimport { r } from '../readings/r';\nexport const c = [readFileSync, r];\n",
  'cli/main.ts': "import { c } from '../client/c';\nexport const m = c;\n",
  'extension/e.ts': "import * as vscode from 'vscode';\nimport { c } from '../client/c';\nexport const e = [vscode, c];\n",
  'webview/v.ts': "import { r } from '../readings/r';\nexport const v = r;\n",
};

test('layers: the repository keeps every import rule, and no file is a circle or too long', () => {
  const { problems, files } = check(ROOT);
  assert.ok(files > 200, `checked ${files} files: the rooms were not found`);
  assert.deepEqual(problems, []);
});

test('layers: a tree that keeps the rules passes (type-only imports of sites/ from readings/ allowed)', () => {
  withTree(GOOD, (root) => assert.deepEqual(check(root).problems, []));
});

for (const [what, file, text, expect] of [
  ['the CLI on the extension', 'cli/bad.ts', "import { e } from '../extension/e';\nexport const x = e;\n", /cli\/ may not import extension\//],
  ['the webview on the host core', 'webview/bad.ts', "import { c } from '../client/c';\nexport const x = c;\n", /webview\/ may not import client\//],
  ['the extension on the CLI', 'extension/bad.ts', "import { m } from '../cli/main';\nexport const x = m;\n", /extension\/ may not import cli\//],
  ['readings on the client', 'readings/bad.ts', "import { c } from '../client/c';\nexport const x = c;\n", /readings\/ may not import client\//],
  ['vscode in sites', 'sites/bad.ts', "import * as vscode from 'vscode';\nexport const x = vscode;\n", /sites\/ may not load 'vscode'/],
  ['node:fs in sites', 'sites/bad.ts', "import { readFileSync } from 'node:fs';\nexport const x = readFileSync;\n", /sites\/ may not load 'node:fs'/],
  ['node:path in readings', 'readings/bad.ts', "import { join } from 'node:path';\nexport const x = join;\n", /readings\/ may not load 'node:path'/],
  ['readings loading node:path through sites at run time', 'readings/bad.ts', "import { f } from '../sites/finder';\nexport const x = f;\n", /loads 'node:path' at run time through sites\/finder\.ts/],
  ['protocol on anything', 'protocol/bad.ts', "import { w } from '../sites/words';\nexport const x = w;\n", /protocol\/ may not import sites\//],
] as const) {
  test(`layers: ${what} is refused, with the file, the line and the rule`, () => {
    withTree({ ...GOOD, [file]: text }, (root) => {
      const { problems } = check(root);
      assert.ok(problems.length >= 1, 'not refused');
      assert.ok(problems.every((p) => p.file === file && p.line >= 1), JSON.stringify(problems));
      assert.ok(problems.some((p) => expect.test(p.rule)), JSON.stringify(problems));
    });
  });
}

test('layers: a circle is refused, type-only imports included', () => {
  withTree({ ...GOOD, 'sites/x.ts': "import type { Y } from './y';\nexport type X = Y | 1;\n", 'sites/y.ts': "import type { X } from './x';\nexport type Y = X | 2;\n" }, (root) => {
    const { problems } = check(root);
    assert.equal(problems.length, 1, JSON.stringify(problems));
    assert.match(problems[0]!.rule, /import circle: sites\/x\.ts ↔ sites\/y\.ts/);
  });
});

test('layers: a file over the line limit is reported', () => {
  withTree({ ...GOOD, 'client/long.ts': 'export const x = 1;\n'.repeat(MAX_LINES + 5) }, (root) => {
    const { problems } = check(root);
    assert.equal(problems.length, 1, JSON.stringify(problems));
    assert.match(problems[0]!.rule, /lines: split it by concern/);
  });
});
