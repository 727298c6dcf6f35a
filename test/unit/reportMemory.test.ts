/**
 * `commcost report` of a large run holds it in memory about once (issue #31): the run file is
 * parsed as it is read (never one string beside its tree), the terminal summary shares the sample
 * arrays instead of copying them, and the HTML page is written in pieces. Checked in a child
 * process whose V8 heap is capped below what the file's text beside its tree and copies took
 * (the code before: aborted at 72 MB; now it passes at 44 MB, not at 36 MB): `reportCommand`
 * (terminal and --html) of a generated full-catalogue run at 10,000 iterations (~40 MB of JSON,
 * 2.1 M samples, ~17 MB as numbers) must succeed. Also: the run-file limits (numbers, bytes) are
 * said as a bad run file.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, copyFileSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { sanitizeForTerminal } from '../../cli/summary';
import { writeBigRun } from '../bench/bigRun';

const ROOT = join(__dirname, '..', '..');
/** The V8 old-space cap of the child (MB): see the file's comment. */
const HEAP_MB = 64;

describe('report of a large run in bounded memory', () => {
  let dir = '';
  let file = '';
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'commcost-report-memory-'));
    file = join(dir, 'run.json');
    writeBigRun(ROOT, file, 10_000);
    // A stand-in webview bundle where the report looks for one under the working folder.
    mkdirSync(join(dir, 'dist'));
    copyFileSync(join(ROOT, 'test', 'fixtures', 'reportSnapshot', 'bundle.js'), join(dir, 'dist', 'webview.js'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  test(`report and report --html under a ${HEAP_MB} MB heap`, () => {
    assert.ok(statSync(file).size > 35e6, 'the generated run is the size this test is about');
    const script = join(dir, 'child.ts');
    writeFileSync(
      script,
      `import { reportCommand } from ${JSON.stringify(join(ROOT, 'cli', 'report'))};
(async () => {
  process.chdir(${JSON.stringify(dir)});
  const out = process.stdout.write.bind(process.stdout);
  let text = 0;
  process.stdout.write = ((s: string) => ((text += s.length), true)) as typeof process.stdout.write;
  await reportCommand([${JSON.stringify(file)}], undefined);
  await reportCommand([${JSON.stringify(file)}], ${JSON.stringify(join(dir, 'run.html'))});
  out('summary chars ' + text + '\\n');
})().catch((e) => { console.error(e); process.exit(3); });
`,
    );
    const r = spawnSync(process.execPath, [`--max-old-space-size=${HEAP_MB}`, '--import', 'tsx', script], { cwd: ROOT, encoding: 'utf8', timeout: 300_000 });
    assert.equal(r.status, 0, `exit ${r.status} ${r.signal ?? ''}: ${r.stderr.slice(-1500)}`);
    assert.match(r.stdout, /summary chars [1-9]/);
    const html = readFileSync(join(dir, 'run.html'), 'utf8');
    assert.ok(html.length > statSync(file).size, 'the page holds the run');
  });

  test('the terminal copy of a run shares its arrays of numbers and still makes every string safe', () => {
    const run = { samples: { v: { call: [1.5, 2.5, 3.5] } }, notes: ['a\u001b[31mred'], mixed: [1, 'x\u0007'] };
    const safe = sanitizeForTerminal(run);
    assert.equal(safe.samples.v.call, run.samples.v.call);
    assert.ok(!safe.notes[0]!.includes('\u001b'));
    assert.ok(!String(safe.mixed[1]).includes('\u0007'));
  });
});
