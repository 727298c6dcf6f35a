// The comparison as a user runs it (bin/commcost.js, the built bundle): `report a.json b.json
// --html x` on the H200 runs of docs/results, and `measure --nccl A --nccl B` against a stand-in
// agent (test/support/fakeNcclAgent.js) that reports the version of the library it is given.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import type { RunFile } from '../../protocol/runFile';
import { formatMs } from '../../webview/format';

const repoRoot = join(__dirname, '..', '..');
const bin = join(repoRoot, 'bin', 'commcost.js');
const results = join(repoRoot, 'docs', 'results');
const H9 = join(results, 'h200x2-nccl2.28.9-wheel.json');
const H3 = join(results, 'h200x2-nccl2.28.3-system.json');
const skip = existsSync(join(repoRoot, 'dist', 'cli.js')) && existsSync(join(repoRoot, 'dist', 'webview.js')) ? false : 'dist/ is not built: run `npm run build` (npm test builds it)';

const dirs: string[] = [];
after(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});
const tmp = (): string => {
  const d = mkdtempSync(join(tmpdir(), 'commcost-compare-cli-'));
  dirs.push(d);
  return d;
};

function cli(args: string[], cwd = repoRoot): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [bin, ...args], { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
  return new Promise((resolve) =>
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    }),
  );
}

const read = (p: string): RunFile => JSON.parse(readFileSync(p, 'utf8')) as RunFile;

describe('commcost report with several runs', { skip }, () => {
  test('--html before the run file: `report --html run.json` reports run.json and writes run.html, as `report run.json --html` does', async () => {
    const dir = tmp();
    const run = join(dir, 'run.json');
    copyFileSync(H9, run);
    const before = readFileSync(run, 'utf8');
    const first = await cli(['report', '--html', run]);
    assert.equal(first.code, 0, first.stderr);
    assert.equal(readFileSync(run, 'utf8'), before, 'the run file is not taken as the page');
    assert.ok(readFileSync(join(dir, 'run.html'), 'utf8').includes('<html'));
    rmSync(join(dir, 'run.html'));
    const after = await cli(['report', run, '--html']);
    assert.equal(after.code, 0, after.stderr);
    assert.ok(existsSync(join(dir, 'run.html')));
    // Two runs with --html first: the first typed stays the baseline (A).
    const b = join(dir, 'b.json');
    copyFileSync(H3, b);
    const two = await cli(['report', '--html', run, b]);
    assert.equal(two.code, 0, two.stderr);
    assert.match(two.stdout, /A = .*NCCL 2\.28\.9[^\n]*\n\s+B = .*NCCL 2\.28\.3/);
    assert.ok(existsSync(join(dir, 'run.compare.html')));
  });

  test('report a.json b.json --html x: one comparison report with both NCCL versions and every median', async () => {
    const out = join(tmp(), 'compare.html');
    const r = await cli(['report', H9, H3, '--html', out]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stderr, /wrote .*compare\.html/);
    const html = readFileSync(out, 'utf8');
    assert.ok(html.includes('2.28.9') && html.includes('2.28.3'));
    assert.ok(html.includes('id="commcost-compare"'));
    const noscript = /<noscript>([\s\S]*)<\/noscript>/.exec(html)?.[1] ?? '';
    for (const run of [read(H9), read(H3)]) {
      for (const e of run.experiments) {
        for (const v of e.variants) {
          for (const s of v.steps) assert.ok(noscript.includes(`<td>${formatMs(s.stats.median)}</td>`), `${run.stamp?.ncclVersion} ${e.experiment} ${v.variant} ${s.step}: ${formatMs(s.stats.median)} missing`);
        }
      }
    }
    // stdout: the comparison table
    assert.match(r.stdout, /A = 2× H200 · NCCL 2\.28\.9/);
    assert.match(r.stdout, /B = 2× H200 · NCCL 2\.28\.3/);
    assert.match(r.stdout, /init default · total \(to first collective\): init to first collective\s+175\.7\s+190\.6\s+1\.09×/);
    // Marked only beyond the spread of both runs' samples: the 1.07× init call is not, splitShare=1's 0.64× is; the rule follows the table.
    assert.match(r.stdout, /init default · call: ncclCommInitRankConfig\s+31\.94\s+34\.26\s+1\.07×\n/);
    assert.match(r.stdout, /split whole\/splitShare=1 · call: ncclCommSplit\s+46\.64\s+29\.71\s+0\.64× beyond spread\n/);
    assert.match(r.stdout, /\nA ratio is marked only when the difference is beyond the spread of both runs' own per-iteration\n/);
  });

  test('one run keeps the single-run report; a file that is not a run is refused (exit 2)', async () => {
    const dir = tmp();
    const one = await cli(['report', H9, '--html', join(dir, 'one.html')]);
    assert.equal(one.code, 0, one.stderr);
    const html = readFileSync(join(dir, 'one.html'), 'utf8');
    assert.ok(html.includes('id="commcost-run"') && !html.includes('id="commcost-compare"'));
    const bad = await cli(['report', H9, join(results, 'h200x2-nccl2.28.9-wheel.reference.json'), '--html', join(dir, 'bad.html')]);
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /not a valid commcost run|is not a commcost run/);
    assert.ok(!existsSync(join(dir, 'bad.html')));
  });
});

describe('commcost report of one run: the terminal first, a page only where asked', { skip }, () => {
  /** A copy of `src` in a fresh folder (a page written by default would land beside it, never in docs/). */
  const copyOf = (src: string, edit?: (r: RunFile) => void): string => {
    const dir = tmp();
    const file = join(dir, 'run.json');
    const run = read(src);
    edit?.(run);
    writeFileSync(file, JSON.stringify(run));
    return file;
  };
  const ONE = join(results, 'h200x1-confirm-2026-12-01', 'h200x1-nccl2.28.9-wheel.json');

  test('report run.json prints the summary, named by its GPUs, and writes nothing', async () => {
    const file = copyOf(H9);
    const r = await cli(['report', file]);
    assert.equal(r.code, 0, r.stderr);
    const run = read(H9);
    const first = r.stdout.split('\n')[0]!;
    assert.equal(first, `${run.ranks}× ${run.stamp!.gpus[0]!.name.replace(/^NVIDIA /, '')} · NCCL ${run.stamp!.ncclVersion} · ${run.stamp!.startedAt.slice(0, 16).replace('T', ' ')} UTC`);
    assert.deepEqual(readdirSync(join(file, '..')), ['run.json'], 'no page without --html');
    assert.doesNotMatch(r.stderr, /wrote/);
  });

  test('--html without a file writes the page beside the run; --html FILE writes it there', async () => {
    const file = copyOf(H9);
    const beside = await cli(['report', file, '--html']);
    assert.equal(beside.code, 0, beside.stderr);
    assert.match(beside.stderr, /wrote .*run\.html/);
    assert.match(readFileSync(join(file, '..', 'run.html'), 'utf8'), /id="commcost-run"/);
    const there = join(tmp(), 'there.html');
    const named = await cli(['report', file, '--html', there]);
    assert.equal(named.code, 0, named.stderr);
    assert.ok(existsSync(there));
    // Two runs: the comparison on the terminal only, unless --html.
    const other = copyOf(H3);
    const cmp = await cli(['report', file, other]);
    assert.equal(cmp.code, 0, cmp.stderr);
    assert.ok(!existsSync(join(file, '..', 'run.compare.html')));
  });

  test("commcost's own diagnostics (wall split, efficiency targets, barrier skew) only with --verbose", async () => {
    const file = copyOf(ONE, (run) => {
      const e = run.experiments[0]!;
      e.releaseSkewUs = { [e.variants[0]!.variant]: { total: [3, 5, 8] } };
    });
    assert.ok(read(ONE).wallSplit, 'the committed run has a wall split');
    const plain = await cli(['report', file]);
    assert.equal(plain.code, 0, plain.stderr);
    assert.doesNotMatch(plain.stdout, /efficiency targets|barrier release skew|harness/);
    const verbose = await cli(['report', file, '--verbose']);
    assert.equal(verbose.code, 0, verbose.stderr);
    assert.match(verbose.stdout, /commcost's efficiency targets/);
    assert.match(verbose.stdout, /barrier release skew over 3 generations/);
  });
});

describe('commcost measure --nccl A --nccl B', { skip }, () => {
  const agentDir = (): string => {
    const d = join(tmp(), 'agent');
    mkdirSync(d);
    copyFileSync(join(repoRoot, 'test', 'support', 'fakeNcclAgent.js'), join(d, 'agent.js'));
    return d;
  };
  const A = '/opt/a/2.28.9/libnccl.so.2';
  const B = '/opt/b/2.28.3/libnccl.so.2';

  test('measures each library in turn, saves each run, prints the comparison and writes one comparison report', async () => {
    const dir = tmp();
    const save = join(dir, 'runs');
    const html = join(dir, 'm.html');
    const r = await cli(['measure', '--agent-dir', agentDir(), '--save-dir', save, '--experiments', 'init,split', '--iterations', '3', '--warmup', '0', '--nccl', A, '--nccl', B, '--html', html]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stderr, /measuring with NCCL \/opt\/a\/2\.28\.9\/libnccl\.so\.2 \(1\/2\)[\s\S]*measuring with NCCL \/opt\/b\/2\.28\.3\/libnccl\.so\.2 \(2\/2\)/);
    // both runs saved, even when they start in the same second
    const runs = readdirSync(save).map((f) => read(join(save, f)));
    assert.deepEqual(runs.map((x) => x.stamp?.ncclPath).sort(), [A, B].sort());
    assert.equal(new Set(runs.map((x) => x.id)).size, 2);
    // each run's summary, then the comparison: 90 ms on 2.28.9 (samples 90, 91, 92), 30 ms on 2.28.3
    assert.match(r.stdout, /A = \d+× Fake GPU · NCCL 2\.28\.9/);
    assert.match(r.stdout, /B = \d+× Fake GPU · NCCL 2\.28\.3/);
    // 3 samples against 3 cannot tell a difference at p < 0.05, even a threefold one.
    assert.match(r.stdout, /init default · call: ncclCommInitRank\s+91\.00\s+31\.00\s+0\.34× too few samples/);
    assert.match(r.stdout, /split default · call: ncclCommInitRank\s+91\.00\s+31\.00\s+0\.34×/);
    const page = readFileSync(html, 'utf8');
    const data = JSON.parse(/<script type="application\/json" id="commcost-compare">([\s\S]*?)<\/script>/.exec(page)![1]!) as { runs: RunFile[] };
    assert.deepEqual(data.runs.map((x) => x.stamp?.ncclVersion), ['2.28.9', '2.28.3']);
  });

  test('--nccl once keeps the single run: no comparison, a single-run report', async () => {
    const dir = tmp();
    const html = join(dir, 'one.html');
    const r = await cli(['measure', '--agent-dir', agentDir(), '--save-dir', join(dir, 'runs'), '--experiments', 'init', '--iterations', '3', '--warmup', '0', '--nccl', A, '--html', html]);
    assert.equal(r.code, 0, r.stderr);
    assert.doesNotMatch(r.stdout, /comparison of/);
    assert.doesNotMatch(r.stderr, /measuring with NCCL/);
    assert.ok(readFileSync(html, 'utf8').includes('id="commcost-run"'));
  });

  test('measure ends with what to do next: the report (the command that writes it, or its path), the extension, a GPU host', async () => {
    const dir = tmp();
    const save = join(dir, 'runs');
    const r = await cli(['measure', '--agent-dir', agentDir(), '--save-dir', save, '--experiments', 'init', '--iterations', '3', '--warmup', '0', '--nccl', A]);
    assert.equal(r.code, 0, r.stderr);
    const [saved] = readdirSync(save);
    assert.ok(saved);
    const next = r.stderr.slice(r.stderr.indexOf('\nnext:\n'));
    assert.ok(r.stderr.includes('\nnext:\n'), r.stderr);
    const path = join(save, saved);
    assert.ok(next.includes(`open the report:   node bin/commcost.js report ${path} --html   (writes ${path.replace(/\.json$/, '.html')})`), next);
    assert.match(next, /install the VS Code extension \(npm run package && code --install-extension commcost-\d+\.\d+\.\d+\.vsix\)/);
    assert.match(next, /measure another host: node bin\/commcost\.js measure --host user@gpu-host/);
    // The command it prints works: the page lands where it said.
    const report = await cli(['report', path, '--html']);
    assert.equal(report.code, 0, report.stderr);
    assert.ok(existsSync(path.replace(/\.json$/, '.html')));
    // With --html the report is already written: its path.
    const html = join(dir, 'm.html');
    const w = await cli(['measure', '--agent-dir', agentDir(), '--save-dir', save, '--experiments', 'init', '--iterations', '3', '--warmup', '0', '--nccl', A, '--html', html]);
    assert.equal(w.code, 0, w.stderr);
    assert.ok(w.stderr.includes(`open the report:   ${html}\n`), w.stderr);
    // Diagnostics stay off the first screen.
    assert.doesNotMatch(r.stdout + w.stdout, /efficiency targets|barrier release skew/);
  });

  test('--json with several --nccl is refused before measuring (exit 2); so is --simulate', async () => {
    const dir = tmp();
    const j = await cli(['measure', '--agent-dir', agentDir(), '--save-dir', join(dir, 'runs'), '--nccl', A, '--nccl', B, '--json', join(dir, 'x.json')]);
    assert.equal(j.code, 2);
    assert.match(j.stderr, /--json takes one run/);
    const s = await cli(['measure', '--agent-dir', agentDir(), '--save-dir', join(dir, 'runs'), '--nccl', A, '--nccl', B, '--simulate']);
    assert.equal(s.code, 2);
    assert.match(s.stderr, /--nccl and --simulate conflict/);
    assert.ok(!existsSync(join(dir, 'runs')) || readdirSync(join(dir, 'runs')).length === 0);
  });
});
