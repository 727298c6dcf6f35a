/**
 * `commcost scan` of a large real repository (bench.ts section 9; issue #27): the bundled CLI
 * (dist/cli.js through bin/commcost.js) scans the repository several times, each run a fresh
 * process; rows give its wall time and peak RSS (a preloaded hook prints `process.resourceUsage()`
 * at exit) as distributions, and the ratio of its wall to a text-search floor over the same files:
 * `rg -l` for the finder's candidate words (sites/prefilter.ts `CANDIDATE_WORDS`), else `grep -rlE`
 * (said so). Targets: ≤ 3 s and ≤ 150 MB. A target the runs straddle (p50 on one side, p90 on the
 * other) reads 'cannot tell': the noise is larger than the effect.
 *
 * The repository is not committed: `COMMCOST_BENCH_SCAN_REPO`, else test-output/Megatron-LM
 * (`git clone https://github.com/NVIDIA/Megatron-LM test-output/Megatron-LM`); skipped, with the
 * reason, when absent.
 *
 * Alone: `node --import tsx test/bench/scanRepo.ts [--repo PATH] [--runs 5]`.
 */
import { spawnSync } from 'node:child_process';
import { closeSync, existsSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { CANDIDATE_WORDS } from '../../sites/prefilter';
import { distribution, distText, TargetTable, type Distribution } from './targets';

const TARGET_S = 3;
const TARGET_MB = 150;
const EXTENSIONS = ['py', 'c', 'cc', 'cpp', 'cxx', 'h', 'hh', 'hpp', 'cu', 'cuh'];

/** The verdict of `d` against `limit` (lower is better): met, not met, or cannot tell when p50 and p90 fall on either side. */
export function verdictOf(d: Distribution, limit: number): 'met' | 'not met' | 'cannot tell' {
  if (d.p90 <= limit) return 'met';
  if (d.p50 > limit) return 'not met';
  return 'cannot tell';
}

/** One fresh `commcost scan REPO --json`: wall ms, peak RSS MB, sites and files it reports. */
function scanOnce(root: string, repo: string): { ms: number; mb: number; sites: number; files: number } {
  const hook = path.join(root, 'test', 'bench', 'maxRss.cjs');
  // The report goes to a file: a pipe may lose the tail of stdout when the CLI exits.
  const out = path.join(mkdtempSync(path.join(tmpdir(), 'commcost-scan-')), 'scan.json');
  const fd = openSync(out, 'w');
  const t0 = process.hrtime.bigint();
  const r = spawnSync(process.execPath, ['-r', hook, path.join(root, 'bin', 'commcost.js'), 'scan', repo, '--json'], {
    encoding: 'utf8',
    stdio: ['ignore', fd, 'pipe'],
  });
  const ms = Number(process.hrtime.bigint() - t0) / 1e6;
  closeSync(fd);
  if (r.status !== 0) throw new Error(`commcost scan exited ${r.status}: ${r.stderr.slice(-500)}`);
  const kb = /MAXRSS_KB (\d+)/.exec(r.stderr)?.[1];
  const report = JSON.parse(readFileSync(out, 'utf8')) as { sites: unknown[]; filesScanned: number };
  rmSync(path.dirname(out), { recursive: true, force: true });
  return { ms, mb: kb ? Number(kb) / 1024 : NaN, sites: report.sites.length, files: report.filesScanned };
}

/** The floor: a text search for the candidate words over the same files, wall ms; which tool. */
function floorOnce(repo: string): { ms: number; tool: string; files: number } | undefined {
  const rg = spawnSync('rg', ['--version'], { encoding: 'utf8' });
  const t0 = process.hrtime.bigint();
  const r =
    rg.status === 0
      ? spawnSync('rg', ['-l', ...EXTENSIONS.flatMap((e) => ['-g', `*.${e}`]), '-e', CANDIDATE_WORDS, repo], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 })
      : spawnSync('grep', ['-rlE', ...EXTENSIONS.map((e) => `--include=*.${e}`), CANDIDATE_WORDS, repo], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  const ms = Number(process.hrtime.bigint() - t0) / 1e6;
  if (r.status !== 0 && r.status !== 1) return undefined;
  return { ms, tool: rg.status === 0 ? 'rg -l' : 'grep -rlE (no rg)', files: r.stdout.split('\n').filter(Boolean).length };
}

/**
 * Section 9 of the bench: `runs` scans of the repository, rows scan.repo.wall, scan.repo.rss and
 * scan.repo.floorRatio added to `table`.
 */
export function scanRepoBench(root: string, table: TargetTable, log: (line: string) => void, runs = 5, repo = process.env.COMMCOST_BENCH_SCAN_REPO ?? path.join(root, 'test-output', 'Megatron-LM')): void {
  const what = `commcost scan of ${path.basename(repo)}`;
  const skip = (note: string): void => {
    log(`   skipped: ${note}`);
    for (const id of ['wall', 'rss']) table.add({ id: `scan.repo.${id}`, what, unit: id === 'wall' ? 's' : 'MB', target: id === 'wall' ? `≤ ${TARGET_S} s` : `≤ ${TARGET_MB} MB`, verdict: 'skipped', note });
  };
  if (!existsSync(repo)) return skip(`no repository at ${repo}: git clone https://github.com/NVIDIA/Megatron-LM ${repo} (or set COMMCOST_BENCH_SCAN_REPO)`);
  if (!existsSync(path.join(root, 'dist', 'cli.js'))) return skip('no dist/cli.js: npm run build');
  const scans = Array.from({ length: runs }, () => scanOnce(root, repo));
  const floors = Array.from({ length: runs }, () => floorOnce(repo)).filter((f) => f !== undefined);
  const wall = distribution(scans.map((s) => s.ms / 1000));
  const rss = distribution(scans.map((s) => s.mb));
  log(`   ${scans[0]!.files} files scanned, ${scans[0]!.sites} sites; wall ${distText(wall, 2)} s; peak RSS ${distText(rss, 0)} MB`);
  table.add({ id: 'scan.repo.wall', what: `${what}: wall`, unit: 's', dist: wall, target: `≤ ${TARGET_S} s`, verdict: verdictOf(wall, TARGET_S), note: 'a fresh process each run (grammars, walk, index, figures)' });
  table.add({ id: 'scan.repo.rss', what: `${what}: peak RSS`, unit: 'MB', dist: rss, target: `≤ ${TARGET_MB} MB`, verdict: verdictOf(rss, TARGET_MB) });
  if (floors.length === 0) {
    log('   floor: neither rg nor grep ran');
    return;
  }
  const floor = distribution(floors.map((f) => f.ms / 1000));
  // Ratios of runs paired in order: each scan against the floor run of the same index.
  const ratio = distribution(scans.slice(0, floors.length).map((s, i) => s.ms / floors[i]!.ms));
  log(`   floor (${floors[0]!.tool}, ${floors[0]!.files} candidate files): ${distText(floor, 3)} s; scan / floor ${distText(ratio, 0)}`);
  table.add({ id: 'scan.repo.floorRatio', what: `${what}: wall / ${floors[0]!.tool} floor`, unit: '×', dist: ratio, target: 'reference', verdict: 'reference', note: `the floor finds ${floors[0]!.files} candidate files in p50 ${floor.p50.toFixed(3)} s` });
}

// Alone only (a regex on the script, not require.main: in the bundled bench every module is main).
if (/scanRepo\.[jt]s$/.test(process.argv[1] ?? '')) {
  const arg = (name: string): string | undefined => {
    const i = process.argv.indexOf(name);
    return i >= 0 ? process.argv[i + 1] : undefined;
  };
  const table = new TargetTable();
  const repo = arg('--repo');
  scanRepoBench(process.cwd(), table, (l) => console.log(l), Number(arg('--runs') ?? 5), repo ? path.resolve(repo) : undefined);
  for (const line of table.lines()) console.log(`  ${line}`);
}
