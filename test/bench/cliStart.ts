/**
 * The CLI's start (issue #31): `node dist/cli.js --version` beside `node -e 0`, spawn → exit of
 * each, in turns (so that both see the same load of the machine). The figure: the median of each
 * pair's ratio --version / node -e 0 with its interval (verdict.ts pairedRatioEstimate: the load a
 * pair shares divides out); target ≤ 1.5. What the
 * entry loads is tested, not timed, in test/unit/cliStart.test.ts (no vendor library at
 * `--version`, no ssh2 for report, scan, plan).
 *
 * Alone: `node --import tsx test/bench/cliStart.ts [--rounds 30]` (dist/ built).
 */
import { spawnSync } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';
import * as path from 'node:path';
import { distribution, distText, estimateRow, TargetTable } from './targets';
import { pairedRatioEstimate } from './verdict';

/** ms from the spawn of `node …args` to its exit. @throws Error on another exit status than 0 */
function wallMs(args: string[], cwd: string): number {
  const t0 = process.hrtime.bigint();
  const r = spawnSync(process.execPath, args, { cwd, stdio: 'ignore', timeout: 60_000 });
  const ms = Number(process.hrtime.bigint() - t0) / 1e6;
  if (r.status !== 0) throw new Error(`node ${args.join(' ')} exited ${r.status}`);
  return ms;
}

/** Adds the rows cli.version (judged) and cli.version.anchor to `table`; skipped without dist/cli.js. */
export function cliStartBench(root: string, table: TargetTable, log: (line: string) => void, rounds = 30): void {
  const cli = path.join(root, 'dist', 'cli.js');
  const head = { id: 'cli.version', what: 'CLI start: commcost --version / node -e 0', unit: 'ms', target: 'ratio (median of pairs) ≤ 1.5' };
  if (!existsSync(cli)) {
    table.add({ ...head, verdict: 'skipped', note: 'dist/cli.js not built (node scripts/build.mjs)' });
    return;
  }
  const version: number[] = [];
  const node: number[] = [];
  wallMs([cli, '--version'], root); // the file's first read from disk: not counted
  for (let i = 0; i < rounds; i++) {
    // Alternate which goes first, so that neither always follows the other.
    if (i % 2 === 0) node.push(wallMs(['-e', '0'], root));
    version.push(wallMs([cli, '--version'], root));
    if (i % 2 === 1) node.push(wallMs(['-e', '0'], root));
  }
  const e = pairedRatioEstimate(version, node);
  const dv = distribution(version);
  const dn = distribution(node);
  log(`   node dist/cli.js --version (${(statSync(cli).size / 1024).toFixed(0)} KiB): ${distText(dv)} ms`);
  log(`   node -e 0, same rounds:                  ${distText(dn)} ms`);
  log(`   median of the pairs' ratios ${e.value.toFixed(2)} [${e.lo.toFixed(2)}, ${e.hi.toFixed(2)}]`);
  table.add(
    estimateRow(
      { ...head, span: 'spawn of `node dist/cli.js --version` → its exit (the bundle read, compiled, the entry evaluated, the line printed)', anchor: `node -e 0 in the same rounds, in turns: p50 ${dn.p50.toFixed(1)} ms` },
      'median of --version / node -e 0, per pair',
      e,
      { op: '≤', limit: 1.5 },
      dv,
    ),
  );
  table.add({ id: 'cli.version.anchor', what: '  anchor: node -e 0 (same rounds)', unit: 'ms', dist: dn, target: '—', verdict: 'reference', span: 'spawn → exit of an empty Node' });
}

if (/cliStart\.[jt]s$/.test(process.argv[1] ?? '')) {
  const i = process.argv.indexOf('--rounds');
  const table = new TargetTable();
  cliStartBench(process.cwd(), table, (l) => console.log(l), i >= 0 ? Number(process.argv[i + 1]) : 30);
  for (const line of table.lines()) console.log(`  ${line}`);
}
