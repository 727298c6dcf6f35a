#!/usr/bin/env node
// Scores the built `commcost scan` on the held-out call-site batch (test/fixtures/callsites/heldout,
// issue #27): real files labelled by hand before the scan ever ran on them. Prints recall and
// precision overall, a table by shape (labelled, found, missed, false positives) and every miss and
// false positive with file:line. A found site matches a label (a finder site or a wrapper caller)
// when the file, the line and the role agree. Measures only: it asserts nothing, and exits 0 on any score.
//
//   node scripts/build.mjs && node scripts/heldoutScore.mjs                 # the held-out batch
//   node scripts/heldoutScore.mjs --dir FOLDER [--timeout SECONDS]        # another folder of the same shape
//
// Exit codes: 0 scored; 2 bad input (no build, a folder without manifest.json / labels.json, a file
// missing or not the one labelled, a label without file, line, role or a known shape); 3 the scan
// failed or ran past its deadline (it is killed, no process left behind).
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const DEFAULT_DIR = join(ROOT, 'test', 'fixtures', 'callsites', 'heldout');
/** The shapes a label names (test/fixtures/callsites/heldout/README.md), in the table's order. */
export const SHAPES = [
  'direct',
  'deviceMesh',
  'instanceOrHolder',
  'cCppWrapper',
  'superClsOverrideStatic',
  'warmUp',
  'savedRefPartial',
  'crossFileWrapper',
  'devComm',
];

/** A bad batch or flag: what is wrong, where, what to do. */
export class ScoreInputError extends Error {}

/**
 * Checks and flattens a labels.json document: its `sites` and `wrapperCallers` are the expected
 * sites (each needs file, a positive integer line, role and one of SHAPES), its `lookalikes` the
 * lines that are not sites. Throws ScoreInputError naming every bad entry.
 * @param {{sites?: object[], wrapperCallers?: object[], lookalikes?: object[]}} doc
 * @returns {{expected: {file: string, line: number, role: string, api: string, kind: string, shape: string}[], lookalikes: {file: string, line: number, why: string}[]}}
 */
export function readLabels(doc) {
  const bad = [];
  const expected = [];
  for (const [list, entries] of [
    ['sites', doc.sites],
    ['wrapperCallers', doc.wrapperCallers],
  ]) {
    if (!Array.isArray(entries)) {
      bad.push(`"${list}" is not a list`);
      continue;
    }
    entries.forEach((e, i) => {
      const where = `${list}[${i}]`;
      if (typeof e?.file !== 'string' || !Number.isInteger(e.line) || e.line < 1 || typeof e.role !== 'string')
        bad.push(`${where}: needs file, line (1-based) and role`);
      else if (!SHAPES.includes(e.shape))
        bad.push(`${where} (${e.file}:${e.line}): shape ${JSON.stringify(e.shape)} is not one of ${SHAPES.join(', ')}`);
      else expected.push({ file: e.file, line: e.line, role: e.role, api: e.api ?? e.calls ?? '?', kind: e.kind ?? '?', shape: e.shape });
    });
  }
  const lookalikes = Array.isArray(doc.lookalikes) ? doc.lookalikes : [];
  if (bad.length) throw new ScoreInputError(`labels.json: ${bad.length} bad entr${bad.length === 1 ? 'y' : 'ies'}:\n  ${bad.join('\n  ')}`);
  return { expected, lookalikes };
}

const at = (x) => `${x.file}:${x.line}`;

/**
 * Scores found sites against labels. A label is hit when a found site has its file, line and role;
 * a found site (counted once per file, line and role) is right when a label has them. A wrong one
 * is put under the shape of a label on its line (the role disagrees), else under "look-alike" or
 * "unlabelled".
 * @param {ReturnType<typeof readLabels>} labels
 * @param {{file: string, line: number, role: string, api: string}[]} found  the scan's sites, file relative to the batch folder
 * @returns {{labelled: number, found: number, hit: number, right: number, recall: number, precision: number,
 *   rows: {shape: string, labelled: number, found: number, missed: number, falsePositives: number}[],
 *   misses: object[], falsePositives: {file: string, line: number, role: string, api: string, why: string}[]}}
 */
export function score(labels, found) {
  const key = (x) => `${at(x)}:${x.role}`;
  const foundOnce = [...new Map(found.map((f) => [key(f), f])).values()];
  const foundKeys = new Set(foundOnce.map(key));
  const expectedKeys = new Set(labels.expected.map(key));
  const labelAt = new Map(labels.expected.map((e) => [at(e), e]));
  const lookalikeAt = new Map(labels.lookalikes.map((l) => [at(l), l]));
  const misses = labels.expected.filter((e) => !foundKeys.has(key(e)));
  const falsePositives = foundOnce
    .filter((f) => !expectedKeys.has(key(f)))
    .map((f) => {
      const label = labelAt.get(at(f));
      const look = lookalikeAt.get(at(f));
      const shape = label ? label.shape : look ? 'look-alike' : 'unlabelled';
      const why = label
        ? `labelled ${label.role} (${label.api}), found ${f.role}`
        : look
          ? `look-alike: ${look.why}`
          : 'no label on this line';
      return { file: f.file, line: f.line, role: f.role, api: f.api, shape, why };
    });
  const rows = [...SHAPES, 'look-alike', 'unlabelled']
    .map((shape) => {
      const of = labels.expected.filter((e) => e.shape === shape);
      const hit = of.filter((e) => foundKeys.has(key(e))).length;
      return {
        shape,
        labelled: of.length,
        found: hit,
        missed: of.length - hit,
        falsePositives: falsePositives.filter((f) => f.shape === shape).length,
      };
    })
    .filter((r) => r.labelled > 0 || r.falsePositives > 0);
  const hit = labels.expected.length - misses.length;
  const right = foundOnce.length - falsePositives.length;
  return {
    labelled: labels.expected.length,
    found: foundOnce.length,
    hit,
    right,
    recall: labels.expected.length ? hit / labels.expected.length : 1,
    precision: foundOnce.length ? right / foundOnce.length : 1,
    rows,
    misses,
    falsePositives,
  };
}

const pct = (x) => `${(100 * x).toFixed(1)}%`;

/**
 * The score as text: the overall line, the shape table (Markdown), the misses and false positives.
 * @param {ReturnType<typeof score>} s
 * @returns {string}
 */
export function formatScore(s) {
  const lines = [
    `recall ${pct(s.recall)} (${s.hit}/${s.labelled})  precision ${pct(s.precision)} (${s.right}/${s.found})`,
    '',
    '| shape | labelled | found | missed | false positives |',
    '|---|---|---|---|---|',
    ...s.rows.map((r) => `| ${r.shape} | ${r.labelled} | ${r.found} | ${r.missed} | ${r.falsePositives} |`),
    `| all | ${s.labelled} | ${s.hit} | ${s.labelled - s.hit} | ${s.falsePositives.length} |`,
    '',
    `missed (${s.misses.length}):`,
    ...s.misses.map((m) => `  ${at(m)} ${m.api} ${m.role} [${m.shape}, ${m.kind}]`),
    `false positives (${s.falsePositives.length}):`,
    ...s.falsePositives.map((f) => `  ${at(f)} ${f.api} ${f.role}: ${f.why}`),
  ];
  return `${lines.join('\n')}\n`;
}

function readJson(path, what) {
  try {
    return JSON.parse(readFileSync(path, 'utf8'));
  } catch (e) {
    throw new ScoreInputError(`heldoutScore: cannot read ${what} ${path}: ${e.message}`);
  }
}

/** Runs `commcost scan DIR --json` from the build (bin/commcost.js), killed at the deadline; its sites with file relative to DIR. */
function scanFolder(dir, timeoutS) {
  if (!existsSync(join(ROOT, 'dist', 'cli.js')))
    throw new ScoreInputError('heldoutScore: no build (dist/cli.js): run node scripts/build.mjs first');
  const run = spawnSync(process.execPath, [join(ROOT, 'bin', 'commcost.js'), 'scan', dir, '--json'], {
    cwd: ROOT,
    encoding: 'utf8',
    maxBuffer: 256 << 20,
    timeout: timeoutS * 1000,
    killSignal: 'SIGKILL',
  });
  if (run.error?.code === 'ETIMEDOUT' || run.signal)
    throw new Error(`heldoutScore: the scan ran past ${timeoutS} s and was killed (raise --timeout)`);
  let doc;
  try {
    doc = JSON.parse(run.stdout);
  } catch {
    throw new Error(`heldoutScore: the scan failed (exit ${run.status}): ${(run.stderr || run.stdout).trim().slice(0, 2000)}`);
  }
  for (const s of doc.skipped ?? []) process.stderr.write(`heldoutScore: not scanned: ${JSON.stringify(s)} (its labels count as missed)\n`);
  return doc.sites.map((s) => ({ file: relative(dir, resolve(ROOT, s.file)), line: s.line, role: s.role, api: s.api }));
}

function main(argv) {
  const flag = (name) => {
    const i = argv.indexOf(name);
    if (i < 0) return undefined;
    if (!argv[i + 1] || argv[i + 1].startsWith('--')) throw new ScoreInputError(`heldoutScore: ${name} needs a value`);
    return argv[i + 1];
  };
  const dir = resolve(flag('--dir') ?? DEFAULT_DIR);
  const timeoutS = Number(flag('--timeout') ?? 300);
  if (!(timeoutS > 0)) throw new ScoreInputError(`heldoutScore: --timeout must be a positive number of seconds, not ${flag('--timeout')}`);
  const manifest = readJson(join(dir, 'manifest.json'), 'the manifest');
  const labels = readLabels(readJson(join(dir, 'labels.json'), 'the labels'));
  const files = new Set(manifest.files.map((f) => f.file));
  const wrong = manifest.files.filter(
    (f) =>
      !existsSync(join(dir, f.file)) ||
      createHash('sha256')
        .update(readFileSync(join(dir, f.file)))
        .digest('hex') !== f.sha256,
  );
  if (wrong.length)
    throw new ScoreInputError(
      `heldoutScore: ${wrong.length} file(s) missing or not the one labelled (sha256): ${wrong.map((f) => f.file).join(', ')}\n` +
        `  bring them: node test/fixtures/callsites/corpus/materialize.mjs --manifest ${relative(process.cwd(), join(dir, 'manifest.json'))}`,
    );
  const unknown = labels.expected.filter((e) => !files.has(e.file));
  if (unknown.length)
    throw new ScoreInputError(
      `heldoutScore: labels name files not in manifest.json: ${[...new Set(unknown.map((e) => e.file))].join(', ')}`,
    );
  const found = scanFolder(dir, timeoutS).filter((f) => files.has(f.file));
  process.stdout.write(formatScore(score(labels, found)));
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  try {
    main(process.argv.slice(2));
  } catch (e) {
    process.stderr.write(`${e.message}\n`);
    process.exit(e instanceof ScoreInputError ? 2 : 3);
  }
}
