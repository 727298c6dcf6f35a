/**
 * Overhead of `commcost trace` on a loop of small collectives (issue 16, deliverable 8): the same
 * loop of ncclAllReduce calls (256 floats, one rank, stream 0) with and without the tracing
 * environment — commcost's profiler plugin (NCCL_PROFILER_PLUGIN), the records folder
 * (COMMCOST_TRACE_DIR) and NCCL's INIT log, exactly as `commcost trace` sets them — host wall time
 * from before the first call to after the stream is synchronised, ns per collective. Rounds
 * alternate untraced/traced so that drift hits both; the figures are distributions, never asserted.
 *
 * Target: the traced loop costs < 1% more, or < 2 µs more per collective, whichever is larger.
 *
 * Part of `npm run bench` (on the simulated NCCL, labelled SIMULATED). Alone, on a GPU host with
 * the real library:
 *   node --import tsx test/bench/traceOverhead.ts --nccl /path/libnccl.so.2 [--cuda libcuda.so.1] [--calls 20000] [--rounds 9]
 * (needs cc and the built plugin in dist/native; the loop program dlopens NCCL and the CUDA driver
 * by path, so nothing is linked to the simulated NCCL).
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { differenceEstimate, judge, type Estimate, type Verdict } from './verdict';

/** The loop program, one copy shared with test/gpu/one-gpu-trace.sh (relative to the repository root). */
const LOOP_C = join('test', 'gpu', 'trace_overhead.c');

/** What to measure. */
export interface OverheadOptions {
  /** libnccl.so.2 to load; default: commcost's simulated NCCL (dist/native/libnccl-sim.so). */
  nccl?: string;
  /** The CUDA driver; default: the simulated NCCL for it, libcuda.so.1 with a real NCCL. */
  cuda?: string;
  calls?: number;
  rounds?: number;
  /** The repository (dist/native holds the plugin). */
  root?: string;
}

/** One figure set, ns per collective. */
export interface OverheadResult {
  simulated: boolean;
  untraced: number[];
  traced: number[];
  /** traced − untraced of each alternating pair, ns. */
  pairs: number[];
  /** median(traced) − median(untraced), ns per collective. */
  overheadNs: number;
  /** The target for this loop, ns per collective: max(1% of untraced, 2000 ns). */
  targetNs: number;
  /** The untraced loop's own spread (p90 − p10 over rounds), ns per collective. */
  noiseNs: number;
  /** median(traced) − median(untraced) with its 95% interval from both medians' order statistics, ns (verdict.ts). */
  estimate: Estimate;
  /**
   * verdict.ts's rule, always with the noise: met when the whole interval is ≤ the target, not met
   * when it is all above, cannot tell when the target is inside it (an overhead of −38 µs inside
   * ±250 µs of noise is "cannot tell", never "met").
   */
  verdict: Verdict;
  /** The judged figure in words, µs. */
  basis: string;
}

function quantile(xs: number[], q: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil(q * s.length) - 1))]!;
}

/**
 * Builds the loop, runs `rounds` alternating untraced/traced rounds of `calls` collectives and
 * prints the distributions with the target and the verdict through `log`.
 * @throws Error when cc, the plugin or the library is missing, or the loop fails (its stderr)
 */
export function traceOverheadBench(log: (line: string) => void, o: OverheadOptions = {}): OverheadResult {
  const root = o.root ?? process.cwd();
  const native = join(root, 'dist', 'native');
  const sim = join(native, 'libnccl-sim.so');
  const simulated = o.nccl === undefined;
  const nccl = resolve(o.nccl ?? sim);
  const cuda = o.cuda ?? (simulated ? sim : 'libcuda.so.1');
  const plugin = join(native, 'libcommcost-profiler.so');
  for (const [what, f] of [['the profiler plugin', plugin], ['NCCL', nccl], ['the loop program', join(root, LOOP_C)]] as const)
    if (!existsSync(f)) throw new Error(`${what} ${f} is missing: build it (node scripts/build.mjs) or give --nccl PATH`);
  const calls = o.calls ?? 20000, rounds = o.rounds ?? 7;
  const dir = mkdtempSync(join(tmpdir(), 'commcost-bench-'));
  try {
    execFileSync('cc', ['-std=c11', '-O2', join(root, LOOP_C), '-o', join(dir, 'loop'), '-ldl']);
    const once = (traced: boolean): number => {
      const env: NodeJS.ProcessEnv = { ...process.env, COMMCOST_SIM_JITTER: '0', COMMCOST_SIM_BW_GBPS: '0' };
      for (const k of ['NCCL_PROFILER_PLUGIN', 'COMMCOST_TRACE_DIR', 'NCCL_DEBUG', 'NCCL_DEBUG_SUBSYS', 'NCCL_DEBUG_FILE']) delete env[k];
      if (traced) {
        const rec = mkdtempSync(join(dir, 'rec-'));
        // What `commcost trace` gives a job (client/trace/run.ts traceEnv, jobEnv.ts ncclLogEnv).
        Object.assign(env, { NCCL_PROFILER_PLUGIN: plugin, COMMCOST_TRACE_DIR: rec, NCCL_DEBUG: 'INFO', NCCL_DEBUG_SUBSYS: 'INIT', NCCL_DEBUG_FILE: `${rec}/%h-%p.nccl.log` });
      }
      try {
        return Number(execFileSync(join(dir, 'loop'), [nccl, String(calls), cuda], { env, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim());
      } catch (e) {
        throw new Error(`the ${traced ? 'traced' : 'untraced'} loop failed: ${String((e as { stderr?: unknown }).stderr ?? (e as Error).message).trim()}`);
      }
    };
    once(false); // first load of the library and the driver: not counted
    const untraced: number[] = [], traced: number[] = [], pairs: number[] = [];
    for (let r = 0; r < rounds; r++) {
      const u = once(false), t = once(true);
      untraced.push(u); traced.push(t); pairs.push(t - u);
    }
    const med = (xs: number[]) => quantile(xs, 0.5);
    const overheadNs = med(traced) - med(untraced);
    const targetNs = Math.max(0.01 * med(untraced), 2000);
    const noiseNs = quantile(untraced, 0.9) - quantile(untraced, 0.1);
    const estimate = differenceEstimate(traced, untraced);
    const j = judge('median(traced) − median(untraced)', { value: estimate.value / 1000, lo: estimate.lo / 1000, hi: estimate.hi / 1000 }, { op: '≤', limit: targetNs / 1000 });
    const verdict = j.verdict;
    const us = (ns: number) => (ns / 1000).toFixed(2);
    const dist = (xs: number[]) => `p10 ${us(quantile(xs, 0.1))}  p50 ${us(quantile(xs, 0.5))}  p90 ${us(quantile(xs, 0.9))}  (n=${xs.length})`;
    log(`   ${simulated ? 'SIMULATED NCCL' : `NCCL ${nccl}`}: ${calls} allreduces of 256 floats per round, one rank, ${rounds} rounds alternating; µs per collective`);
    log(`   untraced: ${dist(untraced)}`);
    log(`   traced:   ${dist(traced)}`);
    log(`   traced − untraced, per pair of rounds: ${dist(pairs)}`);
    log(`   overhead: ${us(overheadNs)} µs per collective, ${((overheadNs / med(untraced)) * 100).toFixed(2)}% of the loop; target ≤ ${us(targetNs)} µs (1% or 2 µs, whichever is larger): ${verdict === 'met' ? 'MEETS the target' : verdict === 'not met' ? 'MISSES the target' : `CANNOT TELL — the target is inside the overhead's 95% interval [${us(estimate.lo)}, ${us(estimate.hi)}] µs (the untraced loop alone spreads p10–p90 ${us(noiseNs)} µs): more calls or rounds`}${simulated ? ' (SIMULATED: the library is commcost\'s simulation; measure on a GPU with --nccl)' : ''}`);
    return { simulated, untraced, traced, pairs, overheadNs, targetNs, noiseNs, estimate, verdict, basis: j.text };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function argValue(args: string[], name: string): string | undefined {
  const i = args.indexOf(name);
  if (i < 0) return undefined;
  const v = args[i + 1];
  if (v === undefined || v.startsWith('--')) throw new Error(`${name} needs a value`);
  return v;
}

// Run alone only when this file is the program (not when bench.ts, or a bundle of it, imports it).
if (/traceOverhead\.[jt]s$/.test(process.argv[1] ?? '')) {
  try {
    const args = process.argv.slice(2);
    const num = (name: string) => {
      const v = argValue(args, name);
      if (v === undefined) return undefined;
      const n = Number(v);
      if (!Number.isInteger(n) || n < 1) throw new Error(`${name} ${v}: give a whole number ≥ 1`);
      return n;
    };
    const nccl = argValue(args, '--nccl'), cuda = argValue(args, '--cuda'), calls = num('--calls'), rounds = num('--rounds');
    console.log('Overhead of commcost trace on a loop of small collectives');
    traceOverheadBench((l) => console.log(l), {
      // The repository root: run from it (npm run bench does; so does a bundled copy, dist/traceOverhead.js, on a GPU host).
      root: process.cwd(), ...(nccl ? { nccl } : {}), ...(cuda ? { cuda } : {}), ...(calls ? { calls } : {}), ...(rounds ? { rounds } : {}),
    });
  } catch (e) {
    console.error(`traceOverhead: ${(e as Error).message}`);
    process.exit(1);
  }
}
