// `commcost scan` (cli/scan.ts): what the walk skips (.git, node_modules, virtual environments,
// .gitignore rules here and above), the JSON document's shape and figures from a run, the table,
// bad paths (exit 2 with what, where and what to do) and unreadable files (reported, skipped).
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { describe, test } from 'node:test';
import { main } from '../../cli/main';
import { formatScanTable, scanCommand, scanFiles, scanRoots, type ScanReport } from '../../cli/scan';
import { CommcostError } from '../../client/errors';
import type { RunFile } from '../../protocol/runFile';
import { CALLSITES, loadFinder, RESULTS } from '../support/annotationFixtures';

// Packages written for commcost's tests (test/fixtures/callsites/wrappers/README.md), no third-party code.
const SYNTHETIC = join(CALLSITES, 'wrappers', 'synthetic');
/** The Python files under the synthetic fixtures, counted from the folder (what scan must read). */
const SYNTHETIC_PY = readdirSync(SYNTHETIC, { recursive: true, encoding: 'utf8' }).filter((p) => p.endsWith('.py')).length;
const C10D_RUN = join(RESULTS, 'h200x2-torch2.11-nccl2.28.9-c10d.json');
const GROUP = 'import torch.distributed as dist\n\n\ndef make():\n    return dist.new_group()\n';

function tree(files: Record<string, string>): string {
  const root = mkdtempSync(join(tmpdir(), 'commcost-scan-'));
  for (const [rel, text] of Object.entries(files)) {
    mkdirSync(dirname(join(root, rel)), { recursive: true });
    writeFileSync(join(root, rel), text);
  }
  return root;
}

/** Runs scanCommand with `cwd`, returning the exit code and what it wrote. */
async function scan(
  paths: string[],
  flags: { run?: string; json?: boolean },
  cwd: string,
): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const code = await scanCommand(paths, flags, { out: (t) => (out += t), err: (t) => (err += t), cwd });
  return { code, out, err };
}

/** Runs the CLI's main() on `argv`, capturing stderr (stdout carries the test runner's report). */
async function cli(argv: string[]): Promise<{ code: number; err: string }> {
  let err = '';
  const write = process.stderr.write.bind(process.stderr);
  process.stderr.write = ((s: string | Uint8Array) => ((err += String(s)), true)) as typeof process.stderr.write;
  try {
    return { code: await main(['node', 'commcost', ...argv]), err };
  } finally {
    process.stderr.write = write;
  }
}

describe('what scan walks', () => {
  test('.git, node_modules, virtual environments and .gitignored paths are skipped; rules above the scanned folder apply', async () => {
    const root = tree({
      '.git/HEAD': 'ref: refs/heads/main\n',
      '.git/hooks/hook.py': GROUP,
      '.gitignore': 'build/\n*_gen.py\n!keep_gen.py\nsub/deep.py\n',
      'a.py': GROUP,
      'build/b.py': GROUP,
      'x_gen.py': GROUP,
      'keep_gen.py': GROUP,
      'node_modules/pkg/m.py': GROUP,
      'venv/lib/v.py': GROUP,
      '.venv/lib/v.py': GROUP,
      'env2/pyvenv.cfg': 'home = /usr/bin\n',
      'env2/lib/e.py': GROUP,
      'lib/python3.12/site-packages/s.py': GROUP,
      'sub/.gitignore': 'local.py\n',
      'sub/local.py': GROUP,
      'sub/deep.py': GROUP,
      'sub/ok.py': GROUP,
      'sub/notes.txt': 'dist.new_group()\n',
    });
    const all = JSON.parse((await scan([], { json: true }, root)).out) as ScanReport;
    assert.deepEqual([...new Set(all.sites.map((s) => s.file))].sort(), ['a.py', 'keep_gen.py', join('sub', 'ok.py')]);
    assert.equal(all.filesScanned, 3);
    // Scanning the sub-folder alone still obeys the root's .gitignore (sub/deep.py).
    const sub = JSON.parse((await scan(['sub'], { json: true }, root)).out) as ScanReport;
    assert.deepEqual(
      sub.sites.map((s) => s.file),
      [join('sub', 'ok.py')],
    );
    // A file named on the command line is scanned whatever the rules say.
    const named = JSON.parse((await scan(['build/b.py'], { json: true }, root)).out) as ScanReport;
    assert.deepEqual(
      named.sites.map((s) => s.file),
      [join('build', 'b.py')],
    );
  });
});

describe('the JSON document', () => {
  test('every field, on the made-up package with the c10d run: direct sites and sites through wrappers', async () => {
    const { code, out } = await scan([SYNTHETIC], { json: true, run: C10D_RUN }, SYNTHETIC);
    assert.equal(code, 0);
    const doc = JSON.parse(out) as ScanReport;
    assert.deepEqual(Object.keys(doc), ['commcostScan', 'roots', 'run', 'filesScanned', 'sites', 'skipped']);
    assert.equal(doc.commcostScan, 1);
    assert.deepEqual(doc.roots, ['.']);
    assert.equal(doc.run?.file, C10D_RUN);
    assert.match(doc.run?.label ?? '', / · NCCL 2\.28\.9 · \d{4}-\d\d-\d\d \d\d:\d\d UTC$/);
    assert.equal(doc.run?.simulated, false);
    assert.equal(doc.filesScanned, SYNTHETIC_PY);
    assert.equal(SYNTHETIC_PY, 19, 'the synthetic packages rl, mesh and tuner');
    assert.deepEqual(doc.skipped, []);
    const keys = [
      'file',
      'line',
      'column',
      'endLine',
      'endColumn',
      'callee',
      'api',
      'role',
      'language',
      'callsInto',
      'chain',
      'wrapper',
      'enclosingFunction',
      'repeated',
      'groupSize',
      'firstCallOnly',
      'figure',
      'notMeasured',
    ];
    for (const s of doc.sites) {
      assert.deepEqual(Object.keys(s), keys);
      assert.ok(Number.isInteger(s.line) && s.line >= 1 && Number.isInteger(s.column) && s.column >= 1);
      assert.ok(s.endLine >= s.line);
      assert.ok(s.callsInto === null || typeof s.callsInto === 'string');
      assert.equal(s.chain.length === 0, s.wrapper === null, 'a chain exactly when through a wrapper');
    }
    const loop = doc.sites.find((s) => s.file === join('rl', 'trainer', 'loop.py'));
    assert.ok(loop);
    assert.deepEqual(
      {
        line: loop.line,
        column: loop.column,
        callee: loop.callee,
        api: loop.api,
        role: loop.role,
        language: loop.language,
        chain: loop.chain,
        wrapper: loop.wrapper,
        enclosingFunction: loop.enclosingFunction,
      },
      {
        line: 6,
        column: 12,
        callee: 'cu.init_custom_process_group',
        api: 'new_group',
        role: 'create',
        language: 'python',
        chain: ['init_custom_process_group', 'torch.distributed.new_group'],
        wrapper: { file: join('rl', 'comm', 'utils.py'), line: 6, calls: 1 },
        enclosingFunction: 'build',
      },
    );
    // The figure is the run's own, for the variant and step the editor's rule picks.
    const run = JSON.parse(readFileSync(C10D_RUN, 'utf8')) as RunFile;
    const f = loop.figure;
    assert.ok(f, 'figure from the c10d run');
    assert.equal(loop.notMeasured, null);
    assert.equal(f.experiment, 'c10d');
    assert.match(f.variant, /^new_group\//);
    const step = run.experiments
      .find((e) => e.experiment === 'c10d')
      ?.variants.find((v) => v.variant === f.variant)
      ?.steps.find((st) => st.step === f.step);
    assert.ok(step);
    assert.deepEqual([f.medianMs, f.p90Ms, f.n, f.label], [step.stats.median, step.stats.p90, step.stats.n, step.label]);
    assert.equal(f.simulated, false);
    assert.equal(f.run, doc.run?.label);
    // Across files through the `mpu` alias, two and three hops deep; the MPI group is not listed.
    assert.deepEqual(
      doc.sites.filter((s) => s.file === join('mesh', 'training', 'launch.py')).map((s) => [s.callee, s.chain.join(' > ')]),
      [
        ['mpu.initialize_model_parallel', 'initialize_model_parallel > create_group > torch.distributed.new_group'],
        ['setup_distributed', 'setup_distributed > initialize_model_parallel > create_group > torch.distributed.new_group'],
      ],
    );
    // The wrapper's own call is listed too, with no chain.
    const inner = doc.sites.find((s) => s.file === join('rl', 'comm', 'utils.py'));
    assert.deepEqual([inner?.callee, inner?.chain, inner?.wrapper], ['dist.new_group', [], null]);
  });

  test('without --run every site is "not measured", said why', async () => {
    const doc = JSON.parse((await scan([SYNTHETIC], { json: true }, SYNTHETIC)).out) as ScanReport;
    assert.equal(doc.run, null);
    assert.ok(doc.sites.length > 0);
    for (const s of doc.sites) assert.deepEqual([s.figure, s.notMeasured], [null, 'no run given (--run FILE)']);
  });
});

test('the table: one line per site, the chain after "via", figures from the run', async () => {
  const { out } = await scan([SYNTHETIC], { run: C10D_RUN }, SYNTHETIC);
  const line = out.split('\n').find((l) => l.startsWith(`${join('rl', 'trainer', 'loop.py')}:6 `));
  assert.ok(line, out);
  assert.match(
    line,
    /cu\.init_custom_process_group +create +new_group( → nccl\w+)? +via init_custom_process_group → torch\.distributed\.new_group +\d[\d.]* (ms|s) /,
  );
  assert.match(
    out,
    new RegExp(
      `^\\d+ lifecycle call sites in \\d+ of ${SYNTHETIC_PY} files scanned \\(\\d+ through wrappers\\)\\nfigures from .* · NCCL 2\\.28\\.9 · `,
    ),
  );
  // Text from files reaches the terminal escaped.
  const report: ScanReport = {
    commcostScan: 1,
    roots: ['.'],
    run: null,
    filesScanned: 1,
    skipped: [],
    sites: [
      {
        file: 'a\x1b[2J.py',
        line: 1,
        column: 1,
        endLine: 1,
        endColumn: 2,
        callee: 'x',
        api: 'new_group',
        role: 'create',
        language: 'python',
        callsInto: null,
        chain: [],
        wrapper: null,
        enclosingFunction: null,
        repeated: null,
        groupSize: null,
        firstCallOnly: false,
        figure: null,
        notMeasured: 'no run given (--run FILE)',
      },
    ],
  };
  assert.ok(!formatScanTable(report).includes('\x1b'));
});

describe('bad input', () => {
  test('a path that does not exist: exit 2, naming it, where it was looked for, and what to do', async () => {
    const root = tree({ 'a.py': GROUP });
    await assert.rejects(
      scanRoots(['nope'], root),
      (e: unknown) => e instanceof CommcostError && e.code === 'BAD_INPUT' && e.message.includes(join(root, 'nope')),
    );
    const r = await cli(['scan', join(root, 'nope')]);
    assert.equal(r.code, 2);
    assert.match(r.err, /scan: no such file or folder ".*nope" \(.*nope\)\n {2}hint: give files or folders to scan/);
  });

  test('a file the finder does not read, and a run file that is not one: exit 2', async () => {
    const root = tree({ 'notes.txt': 'x', 'a.py': GROUP, 'bad.json': '{"not": "a run"}' });
    const txt = await cli(['scan', join(root, 'notes.txt')]);
    assert.equal(txt.code, 2);
    assert.match(txt.err, /is neither a folder nor a Python, C, C\+\+ or CUDA file\n {2}hint: give folders, or files ending in \.py /);
    const run = await cli(['scan', join(root, 'a.py'), '--run', join(root, 'bad.json')]);
    assert.equal(run.code, 2);
    assert.match(run.err, /bad\.json/);
  });

  test('an unreadable file is reported and skipped; the others are listed (exit 0)', async () => {
    const root = tree({ 'a.py': GROUP, 'b.py': GROUP });
    const warnings: string[] = [];
    const report = await scanFiles(await scanRoots([], root), {
      cwd: root,
      finder: await loadFinder(),
      warn: (l) => warnings.push(l),
      read: async (p) => {
        if (p.endsWith('a.py')) throw Object.assign(new Error(`EACCES: permission denied, open '${p}'`), { code: 'EACCES' });
        return readFileSync(p, 'utf8');
      },
    });
    assert.deepEqual(
      report.sites.map((s) => s.file),
      ['b.py'],
    );
    assert.deepEqual(report.skipped, [{ file: 'a.py', reason: `EACCES: permission denied, open '${join(root, 'a.py')}'` }]);
    assert.deepEqual(warnings, [`cannot read a.py: EACCES: permission denied, open '${join(root, 'a.py')}' (skipped)`]);
    assert.equal(report.filesScanned, 1);
  });
});
