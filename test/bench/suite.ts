/**
 * The default suite's accounting (bench.ts, section 7): the built agent (dist/agent.js) runs the
 * default experiments (init, split, destroy, abort; 10 iterations + 1 warmup) on the simulated
 * NCCL at 2, 8 and 16 ranks, several runs each, and each run's `run/done` wall split (timed
 * calls, setup the method needs, rank process starts, exits, harness; coordinator.ts) is read.
 * Rows: process starts as a share of the wall (target < 10%), wall / (timed + setup) (target
 * ≤ 1.25), and, for reference, how long the coordinator's event loop spent in its spawn calls
 * (from its log line "spawned N rank processes in X ms").
 *
 * The figures come from the simulated library (SIMULATED: its costs are the library's defaults,
 * not a GPU's): they show where a run's wall goes on this host, never what NCCL costs.
 *
 * Alone: `node --import tsx test/bench/suite.ts [--agent dist/agent.js] [--runs 3] [--ranks 2,8,16]`
 * (`--agent` another build, e.g. an older commit's worktree, to compare).
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import * as path from 'node:path';
import type { WallSplit } from '../../protocol/events';
import { distribution, distText, judgedRow, TargetTable, type Distribution } from './targets';

/** One run's figures: the wall and its split, ms; the spawn calls' time from the agent's log, ms. */
export interface SuiteRun {
  status: string;
  wallMs: number;
  split: WallSplit;
  spawnLoopMs: number | undefined;
}

/**
 * Runs the default suite once at `ranks` simulated ranks through the agent at `agentJs`.
 * @throws Error when the agent exits without a `run/done` (its stderr's tail in the message) or
 *   takes longer than `timeoutMs`
 */
export function suiteRun(agentJs: string, ranks: number, timeoutMs = 300_000): Promise<SuiteRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [agentJs], { stdio: ['pipe', 'pipe', 'pipe'], env: { ...process.env } });
    let out = '';
    let err = '';
    let done: { status: string; wallMs: number; wallSplit?: WallSplit } | undefined;
    const timer = setTimeout(() => {
      child.kill('SIGTERM');
      reject(new Error(`the default suite at ${ranks} ranks took over ${timeoutMs / 1000} s`));
    }, timeoutMs);
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      let nl;
      while ((nl = out.indexOf('\n')) >= 0) {
        const line = out.slice(0, nl);
        out = out.slice(nl + 1);
        if (!line.includes('"run/done"')) continue;
        done = JSON.parse(line) as typeof done;
        child.stdin.end(); // the agent exits when its host goes away
      }
    });
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    child.on('error', reject);
    // 'close', not 'exit': 'exit' can come before stdout has drained.
    child.on('close', (code) => {
      clearTimeout(timer);
      if (!done) return reject(new Error(`the agent exited (${code}) without run/done: ${err.slice(-1500)}`));
      if (!done.wallSplit) return reject(new Error('run/done has no wallSplit (an agent older than the wall split)'));
      const spawned = /spawned \d+ rank process(?:es)? in ([\d.]+) ms/.exec(err);
      resolve({ status: done.status, wallMs: done.wallMs, split: done.wallSplit, spawnLoopMs: spawned ? Number(spawned[1]) : undefined });
    });
    child.stdin.write(JSON.stringify({ type: 'run/start', options: { simulate: true, ranks } }) + '\n');
  });
}

/** The distributions of a set of runs: process starts' share of the wall (%), wall / (timed + setup), start and spawn-call ms. */
export function suiteFigures(runs: SuiteRun[]): { startShare: Distribution; ratio: Distribution; startMs: Distribution; spawnLoopMs?: Distribution } {
  const loops = runs.flatMap((r) => (r.spawnLoopMs === undefined ? [] : [r.spawnLoopMs]));
  return {
    startShare: distribution(runs.map((r) => (100 * r.split.processStartMs) / r.wallMs)),
    ratio: distribution(runs.map((r) => r.wallMs / (r.split.timedMs + r.split.setupMs))),
    startMs: distribution(runs.map((r) => r.split.processStartMs)),
    ...(loops.length > 0 ? { spawnLoopMs: distribution(loops) } : {}),
  };
}

/**
 * Section 7 of the bench: `runs` runs of the default suite at each of `rankCounts`, rows added
 * to `table` (ids suite.processStarts.N, suite.ratio.N, suite.spawnCalls.N).
 */
export async function suiteBench(agentJs: string, table: TargetTable, log: (line: string) => void, runs = 3, rankCounts = [2, 8, 16]): Promise<void> {
  for (const ranks of rankCounts) {
    const got: SuiteRun[] = [];
    for (let i = 0; i < runs; i++) {
      const r = await suiteRun(agentJs, ranks);
      if (r.status !== 'complete') log(`   run ${i + 1} at ${ranks} ranks ended ${r.status}: its figures are kept`);
      got.push(r);
    }
    const f = suiteFigures(got);
    const s = got.map((r) => r.split);
    log(`   ${ranks} ranks, ${runs} runs (SIMULATED): process starts ${distText(f.startShare)} % of the wall; ${distText(f.startMs, 0)} ms`);
    log(`     wall / (timed + setup) ${distText(f.ratio, 2)}; spawn calls ${f.spawnLoopMs ? `${distText(f.spawnLoopMs)} ms` : 'not logged'}`);
    log(`     per run: ${got.map((r, i) => `wall ${(r.wallMs / 1000).toFixed(2)} s = timed ${(s[i]!.timedMs / 1000).toFixed(2)} + setup ${(s[i]!.setupMs / 1000).toFixed(2)} + starts ${(s[i]!.processStartMs / 1000).toFixed(2)} + exits ${(s[i]!.processExitMs / 1000).toFixed(2)} + harness ${(s[i]!.harnessMs / 1000).toFixed(2)}`).join('; ')}`);
    const note = 'simulated NCCL (the library\'s default costs): where the wall goes on this host, not what NCCL costs';
    const span = "the agent's run/done wall split (coordinator.ts): run/start → run/done";
    table.add({ ...judgedRow({ id: `suite.processStarts.${ranks}`, what: `default suite, ${ranks} ranks: process starts / wall`, unit: '%', target: 'p90 < 10', span }, got.map((r) => (100 * r.split.processStartMs) / r.wallMs), [{ q: 0.9, op: '<', limit: 10 }]), note });
    table.add(judgedRow({ id: `suite.ratio.${ranks}`, what: `default suite, ${ranks} ranks: wall / (timed + setup)`, unit: '×', target: 'p90 ≤ 1.25', span }, got.map((r) => r.wallMs / (r.split.timedMs + r.split.setupMs)), [{ q: 0.9, op: '≤', limit: 1.25 }], 2));
    if (f.spawnLoopMs) table.add({ id: `suite.spawnCalls.${ranks}`, what: `default suite, ${ranks} ranks: event loop in spawn calls`, unit: 'ms', dist: f.spawnLoopMs, target: 'reference', verdict: 'reference' });
  }
}

// Alone only (a regex on the script, not require.main: in the bundled bench every module is main).
if (/suite\.[jt]s$/.test(process.argv[1] ?? '')) {
  const arg = (name: string): string | undefined => {
    const i = process.argv.indexOf(name);
    return i >= 0 ? process.argv[i + 1] : undefined;
  };
  const agentJs = path.resolve(arg('--agent') ?? path.join(process.cwd(), 'dist', 'agent.js'));
  if (!existsSync(agentJs)) {
    console.error(`no agent at ${agentJs}: build it (npm run build) or give --agent PATH`);
    process.exit(2);
  }
  const table = new TargetTable();
  const ranks = (arg('--ranks') ?? '2,8,16').split(',').map(Number);
  console.log(`default suite through ${agentJs}`);
  suiteBench(agentJs, table, (l) => console.log(l), Number(arg('--runs') ?? 3), ranks).then(
    () => {
      for (const line of table.lines()) console.log(`  ${line}`);
    },
    (e: unknown) => {
      console.error(e);
      process.exitCode = 1;
    },
  );
}
