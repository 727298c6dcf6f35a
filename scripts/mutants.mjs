#!/usr/bin/env node
// npm run mutants: checks that the tests fail when the measurement core times the wrong thing.
//
// Each mutation below is one small wrong change to the measurement core (what a timed step
// spans, where a cost lands, how ranks combine, how a figure is summarised or written). In a
// scratch copy of the repository (the working tree's tracked and untracked files, without
// node_modules, which is linked, and without build outputs), the script builds once, checks that
// every selected test passes on the unmutated code (the baseline), then for each mutation:
// applies it (its `find` text must occur exactly once in its file, so this list stays in step
// with the code), rebuilds what it touches (native/ → the addon; remote-agent/ and protocol/ →
// the bundles; other files are tested from their sources), runs its tests in order until one
// fails, and restores the file and the baseline build. It prints each mutation and the test that
// killed it, and exits 1 if a mutation survived, a `find` text is missing, or the baseline fails.
//
// Usage: node scripts/mutants.mjs [--only id,id] [--list] [--keep]
//   --only   run only these mutations (the baseline then covers only their tests)
//   --list   print the mutations and exit
//   --keep   keep the scratch copy (its path is printed)
import { execFileSync, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { clearTimeout, setTimeout } from 'node:timers';
import { fileURLToPath } from 'node:url';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

const UNIT_AGENT = 'test/unit/agent.test.ts';
const NATIVE = 'test/unit/native.test.ts';
const NATIVE_CATALOGUE = 'test/unit/nativeCatalogue.test.ts';
const VERDICT = 'test/unit/verdictRegimes.test.ts';
const CATALOGUE = 'test/integration/catalogue.test.ts';
const TIMING = 'test/integration/timingMutations.test.ts';

/**
 * @typedef {{ file: string, name?: string }} TestSelection  a test file, and a test name (a
 *   substring of the names to run, passed to --test-name-pattern); no name: the whole file
 * @typedef {{ id: string, what: string, file: string, find: string, replace: string, tests: TestSelection[] }} Mutation
 */

/** @type {Mutation[]} */
const MUTATIONS = [
  {
    id: 'drain-nothing-in-flight',
    what: 'drain enqueues no allreduce before the timed finalize / synchronize',
    file: 'remote-agent/experiments/drain.ts',
    find: 'rc.native.armInFlight(sizes.map((bytes) => ({ comm, bytes, buffer: state.buffer })), { untilQuiet })',
    replace: 'rc.native.armInFlight([], { untilQuiet })',
    tests: [{ file: CATALOGUE, name: 'drain as the study did it' }],
  },
  {
    id: 'revoke-nothing-in-flight',
    what: 'the in-flight revoke arms an empty window: nothing in flight as ncclCommRevoke begins',
    file: 'remote-agent/experiments/revoke.ts',
    find: 'if (check) armDropCheck(rc, check, comm);',
    replace: 'if (check) rc.native.armInFlight([]);',
    tests: [{ file: CATALOGUE, name: 'revoke drops the in-flight allreduces' }],
  },
  {
    id: 'in-flight-window-enqueues-nothing',
    what: "the addon's in-flight window counts its allreduces but enqueues none",
    file: 'native/src/inFlight.cc',
    find: 'NCCL_CHECK(ncclAllReduce, comm, (send, recv, op.bytes / sizeof(float), ncclFloat32, ncclSum, comm, s));',
    replace: '(void)send; (void)recv;',
    tests: [
      { file: NATIVE_CATALOGUE, name: 'armed allreduces are enqueued right before the call' },
      { file: CATALOGUE, name: 'drain as the study did it' },
      { file: CATALOGUE, name: 'revoke drops the in-flight allreduces' },
    ],
  },
  {
    id: 'graph-capture-zero',
    what: 'the pool switch records the CUDA-graph capture as 0 ms',
    file: 'remote-agent/experiments/pool.ts',
    find: "rc.record('switchCapture', graph.captureMs);",
    replace: "rc.record('switchCapture', 0);",
    tests: [{ file: TIMING, name: 'pool: the switch times the CUDA-graph capture' }],
  },
  {
    id: 'graph-capture-zero-native',
    what: 'graphAllReduce reports a capture of 0 ms',
    file: 'native/src/commBuffers.cc',
    find: 'parts->captureMs = msBetween(t0, t1);',
    replace: 'parts->captureMs = msBetween(t0, t0);',
    tests: [{ file: TIMING, name: 'pool: the switch times the CUDA-graph capture' }],
  },
  {
    id: 'split-first-on-parent',
    what: "split's first collective runs on the warm parent instead of the child",
    file: 'remote-agent/experiments/split.ts',
    find: 'await timeFirstUse(rc, child, firstUseOf(variant),',
    replace: 'await timeFirstUse(rc, state.parent, firstUseOf(variant),',
    tests: [{ file: TIMING, name: "split: the first collective is the child's" }],
  },
  {
    id: 'ranks-min-stats',
    what: 'combineRanks takes the MIN over ranks instead of the MAX',
    file: 'remote-agent/stats.ts',
    find: 'return Math.max(...perRank);',
    replace: 'return Math.min(...perRank);',
    tests: [
      { file: TIMING, name: 'ranks combine by MAX' },
      { file: UNIT_AGENT, name: 'combineRanks' },
    ],
  },
  {
    id: 'ranks-min-coordinator',
    what: "the coordinator combines a step's per-rank figures by MIN",
    file: 'remote-agent/rankCombine.ts',
    find: 'steps[plan.step] = combineRanks(values);',
    replace: 'steps[plan.step] = Math.min(...values);',
    tests: [{ file: TIMING, name: 'ranks combine by MAX' }],
  },
  {
    id: 'sum-drops-a-part',
    what: 'a derived step (sumOf, e.g. total = call + first) is its last part only',
    file: 'remote-agent/rankCombine.ts',
    find: 'steps[plan.step] = parts.reduce((a, b) => a! + b!, 0)!;',
    replace: 'steps[plan.step] = parts[parts.length - 1]!;',
    tests: [{ file: TIMING, name: "split: the first collective is the child's" }],
  },
  {
    id: 'stats-median-p90-swapped',
    what: 'summarize reports the p90 as the median and the median as the p90',
    file: 'remote-agent/stats.ts',
    find: 'median: quantileSorted(sorted, 0.5),\n    p90: quantileSorted(sorted, 0.9),',
    replace: 'median: quantileSorted(sorted, 0.9),\n    p90: quantileSorted(sorted, 0.5),',
    tests: [{ file: UNIT_AGENT, name: 'summarize' }],
  },
  {
    id: 'step-timer-after-call',
    what: 'the native step timer starts after the library call returns',
    file: 'native/src/commOpsInternal.h',
    find: '  uint64_t t0 = monotonicNs();\n  call();\n',
    replace: '  call();\n  uint64_t t0 = monotonicNs();\n',
    tests: [{ file: NATIVE, name: 'init, first and steady allreduce' }],
  },
  {
    id: 'shm-barrier-releases-early',
    what: 'the one-host barrier releases at the first arrival instead of the last',
    file: 'native/src/shmBarrier.cc',
    find: 'if (m->arrived.fetch_add(1, std::memory_order_acq_rel) + 1 == m->worldSize) {',
    replace: 'if (m->arrived.fetch_add(1, std::memory_order_acq_rel) + 1 >= 1) {',
    tests: [{ file: NATIVE, name: 'one-host release' }],
  },
  {
    id: 'revoke-call-is-the-span',
    what: 'revokeCall records the whole span until quiet instead of the call alone',
    file: 'remote-agent/experiments/revoke.ts',
    find: "rc.record('revokeCall', revoked.callMs);",
    replace: "rc.record('revokeCall', revoked.ms);",
    tests: [{ file: TIMING, name: 'revoke: the call alone is apart' }],
  },
  {
    id: 'registration-first-use-not-first',
    what: 'an untimed collective uses the registered buffer before the timed first use',
    file: 'remote-agent/experiments/registration.ts',
    find: 'const use = async (): Promise<void> => {\n',
    replace:
      "const use = async (): Promise<void> => {\n      await rc.untimed('allreduce (mutant)', () => rc.native.allReduce(comm, bytes, undefined, { buffer }));\n",
    tests: [{ file: CATALOGUE, name: 'registration: the first use of a registered buffer' }],
  },
  {
    id: 'verdict-share-x100',
    what: "the verdict reads its first-collective share's regime from a share 100× too large",
    file: 'readings/verdict/lifecycle.ts',
    find: 'const regime = shareRegime(first, sum);',
    replace: 'const regime = shareRegime(first * 100, sum);',
    tests: [{ file: VERDICT, name: 'first collective share' }],
  },
  {
    id: 'verdict-pct-x100',
    what: 'pct writes a share 100× too large',
    file: 'readings/verdict/format.ts',
    find: 'const p = x * 100;',
    replace: 'const p = x * 100 * 100;',
    tests: [{ file: VERDICT, name: 'pct: a share in percent' }],
  },
];

const TEST_TIMEOUT_MS = 300_000;

function parseArgs(argv) {
  const args = { only: undefined, list: false, keep: false };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--list') args.list = true;
    else if (a === '--keep') args.keep = true;
    else if (a === '--only') {
      const v = argv[++i];
      if (!v) throw new Error('--only needs a comma-separated list of mutation ids (see --list)');
      args.only = v
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean);
    } else throw new Error(`mutants: unknown argument "${a}" (use --only id,id, --list or --keep)`);
  }
  return args;
}

const label = (t) => (t.name ? `${t.file} › ${t.name}` : t.file);
const seconds = (ms) => `${(ms / 1000).toFixed(1)} s`;
const escapeRegExp = (s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** What a mutation of `file` needs rebuilt before its tests run. */
function buildKind(file) {
  if (file.startsWith('native/')) return 'native';
  if (file.startsWith('remote-agent/') || file.startsWith('protocol/')) return 'bundles';
  return 'none';
}

/** Every mutation's `find` occurs exactly once in its file. @returns the problems, one line each. */
function checkFinds(mutations) {
  const problems = [];
  for (const m of mutations) {
    const p = path.join(repo, m.file);
    if (!fs.existsSync(p)) {
      problems.push(`${m.id}: ${m.file} does not exist (update the mutation in scripts/mutants.mjs)`);
      continue;
    }
    const n = fs.readFileSync(p, 'utf8').split(m.find).length - 1;
    if (n !== 1)
      problems.push(
        `${m.id}: the text to replace occurs ${n} times in ${m.file}, not once (the code changed: update the mutation in scripts/mutants.mjs): ${JSON.stringify(m.find)}`,
      );
  }
  return problems;
}

/** The working tree's files (tracked and untracked, not ignored) copied into `dir`; node_modules linked. */
function scratchCopy(dir) {
  let out;
  try {
    out = execFileSync('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], {
      cwd: repo,
      maxBuffer: 64 << 20,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
  } catch (err) {
    throw new Error(
      `mutants: cannot list the files to copy with git ls-files in ${repo} (a git checkout is needed): ${String(err.stderr || err.message).trim()}`,
    );
  }
  let n = 0;
  for (const rel of out.toString('utf8').split('\0').filter(Boolean)) {
    const from = path.join(repo, rel);
    if (!fs.existsSync(from) || !fs.statSync(from).isFile()) continue; // deleted, or a submodule
    fs.mkdirSync(path.dirname(path.join(dir, rel)), { recursive: true });
    fs.copyFileSync(from, path.join(dir, rel));
    n++;
  }
  fs.symlinkSync(path.join(repo, 'node_modules'), path.join(dir, 'node_modules'), 'dir');
  return n;
}

/** Runs `cmd args` in `cwd`; resolves with its exit code (null on timeout) and output. */
function runCommand(cmd, args, cwd, timeoutMs) {
  return new Promise((resolve) => {
    const env = { ...process.env };
    delete env.NODE_TEST_CONTEXT; // a test run of its own, even when this script runs under node --test
    const child = spawn(cmd, args, { cwd, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (d) => (output += d));
    child.stderr.on('data', (d) => (output += d));
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch {
        /* already gone */
      }
    }, timeoutMs);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code: timedOut ? null : code, output });
    });
  });
}

async function build(dir, kind) {
  const args = kind === 'native' ? ['native/build.mjs'] : ['scripts/build.mjs'];
  const r = await runCommand(process.execPath, args, dir, 300_000);
  if (r.code !== 0) throw new Error(`mutants: the build (${args.join(' ')}) failed in ${dir}:\n${r.output.slice(-4000)}`);
}

/** Runs one test selection in the scratch copy. @returns passed, failed and why (the first error line). */
async function runTests(dir, t) {
  const args = ['--import', 'tsx', '--test', '--test-concurrency=1', '--test-reporter=tap'];
  if (t.name) args.push(`--test-name-pattern=${escapeRegExp(t.name)}`);
  args.push(t.file);
  const t0 = Date.now();
  const r = await runCommand(process.execPath, args, dir, TEST_TIMEOUT_MS);
  const count = (k) => Number(new RegExp(`^# ${k} (\\d+)$`, 'm').exec(r.output)?.[1] ?? 0);
  // The first failure's message (TAP YAML: inline, or a block scalar whose first line follows).
  const m = /^(\s+)error: (.*)\n(?:\1\s+(.*))?/m.exec(r.output);
  const error = m ? (/^[|>]-?$/.test(m[2]) ? (m[3] ?? '') : m[2]) : r.code === null ? `timed out after ${seconds(TEST_TIMEOUT_MS)}` : '';
  return {
    ok: r.code === 0,
    timedOut: r.code === null,
    pass: count('pass'),
    fail: count('fail'),
    error: error.slice(0, 200),
    ms: Date.now() - t0,
    output: r.output,
  };
}

function restoreDist(dir) {
  fs.rmSync(path.join(dir, 'dist'), { recursive: true, force: true });
  // A plain copy: the restored outputs are newer than every source, so no rebuild follows.
  fs.cpSync(path.join(dir, 'dist.baseline'), path.join(dir, 'dist'), { recursive: true });
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  let mutations = MUTATIONS;
  if (args.only) {
    const unknown = args.only.filter((id) => !MUTATIONS.some((m) => m.id === id));
    if (unknown.length > 0) throw new Error(`mutants: no mutation ${unknown.join(', ')} (known: ${MUTATIONS.map((m) => m.id).join(', ')})`);
    mutations = MUTATIONS.filter((m) => args.only.includes(m.id));
  }
  if (args.list) {
    for (const m of mutations) console.log(`${m.id}\t${m.file}\t${m.what}\n\ttests: ${m.tests.map(label).join(' ; ')}`);
    return 0;
  }
  const problems = checkFinds(mutations);
  if (problems.length > 0) {
    for (const p of problems) console.error(`mutants: ${p}`);
    return 1;
  }

  const start = Date.now();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'commcost-mutants-'));
  const cleanup = () => {
    if (!args.keep) fs.rmSync(dir, { recursive: true, force: true });
  };
  process.once('SIGINT', () => {
    cleanup();
    process.exit(130);
  });
  try {
    const files = scratchCopy(dir);
    let t0 = Date.now();
    await build(dir, 'bundles');
    fs.cpSync(path.join(dir, 'dist'), path.join(dir, 'dist.baseline'), { recursive: true });
    console.log(`mutants: scratch copy ${dir} (${files} files), built in ${seconds(Date.now() - t0)}`);

    // Baseline: every selected test passes on the unmutated code, and each selection runs a test.
    const selections = [];
    for (const m of mutations) for (const t of m.tests) if (!selections.some((s) => label(s) === label(t))) selections.push(t);
    t0 = Date.now();
    let baselineOk = true;
    for (const t of selections) {
      const r = await runTests(dir, t);
      const good = r.ok && r.pass > 0 && r.fail === 0;
      baselineOk &&= good;
      console.log(
        `  baseline ${good ? 'pass' : 'FAIL'}  ${label(t)}  (${r.pass} passed, ${r.fail} failed, ${seconds(r.ms)})${good ? '' : `\n${r.output.slice(-3000)}`}`,
      );
    }
    if (!baselineOk) {
      console.error('mutants: the baseline fails (a selected test fails or matches nothing on the unmutated code): no mutation was judged');
      return 1;
    }
    console.log(`mutants: baseline of ${selections.length} test selections passed in ${seconds(Date.now() - t0)}`);

    const results = [];
    for (const m of mutations) {
      const target = path.join(dir, m.file);
      const original = fs.readFileSync(target, 'utf8');
      fs.writeFileSync(
        target,
        original.replace(m.find, () => m.replace),
      );
      const tm = Date.now();
      let killer;
      try {
        const kind = buildKind(m.file);
        if (kind !== 'none') await build(dir, kind);
        for (const t of m.tests) {
          const r = await runTests(dir, t);
          if (!r.ok) {
            killer = { test: label(t), why: r.timedOut ? r.error : r.fail > 0 ? r.error : `exit ${r.error || 'without a failed test'}` };
            break;
          }
        }
      } catch (err) {
        // A mutation the compiler refuses is killed by the build.
        killer = { test: 'the build', why: String(err.message).split('\n').slice(0, 3).join(' ').slice(0, 200) };
      } finally {
        fs.writeFileSync(target, original);
        restoreDist(dir);
      }
      results.push({ m, killer });
      console.log(
        killer
          ? `  killed    ${m.id} (${m.file}: ${m.what})\n            by ${killer.test}: ${killer.why} (${seconds(Date.now() - tm)})`
          : `  SURVIVED  ${m.id} (${m.file}: ${m.what})\n            every test passed: ${m.tests.map(label).join(' ; ')} (${seconds(Date.now() - tm)})`,
      );
    }
    const survived = results.filter((r) => !r.killer);
    console.log(
      `mutants: ${results.length} tried, ${results.length - survived.length} killed, ${survived.length} survived (${seconds(Date.now() - start)})`,
    );
    if (survived.length > 0) console.error(`mutants: survived: ${survived.map((r) => r.m.id).join(', ')}: add a test that fails on each`);
    return survived.length > 0 ? 1 : 0;
  } finally {
    cleanup();
  }
}

main().then(
  (code) => process.exit(code),
  (err) => {
    console.error(err instanceof Error ? err.message : err);
    process.exit(1);
  },
);
