// commcost trace of a Ray driver (#32 part 3), CPU only, on the simulated NCCL: the driver's
// ray.init() starts a local cluster; a trainer actor and two engine actors make a weight-sync
// communicator through ctypes (as vLLM's PyNcclCommunicator does), first use it by a broadcast,
// destroy it and make it again per sync. The trace reaches every actor through ray.init's
// runtime_env (the setup hook is Ray's, seen in each worker), and each actor's sites come back
// into the one trace with figures, the actor's class and its node. A second run gives the workers
// a records folder of their own (as on a node without a shared folder): their records come back
// through the driver's collector actor (#32). Ray starts slowly: one driver run per test; skipped,
// with the reason, when python3 has no ray (pip install ray==2.58.0).
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { before, test } from 'node:test';
import { formatTrace, traceCommand } from '../../cli/trace';
import { validateTraceFile } from '../../client/traceSchema';
import type { TraceFile } from '../../protocol/trace';

const root = join(__dirname, '..', '..');
const driver = join(root, 'test', 'fixtures', 'trace', 'ray', 'weight_sync.py');

function rayMissing(): string | false {
  try {
    execFileSync('python3', ['-c', 'import ray'], { stdio: 'ignore', timeout: 60_000 });
    return false;
  } catch {
    return 'ray is not installed for python3 (pip install ray==2.58.0; .ci/run installs it)';
  }
}
const skip = rayMissing();

before(() => {
  if (!skip) execFileSync('flock', ['/tmp/commcost-build.lock', 'node', 'scripts/build.mjs'], { cwd: root, stdio: 'ignore' });
});

/** The 1-based line of the `# site: <name>` comment in the driver. */
function siteLine(name: string): number {
  return readFileSync(driver, 'utf8').split('\n').findIndex((l) => l.endsWith(`# site: ${name}`)) + 1;
}

/** Runs the driver traced (simulated NCCL) with `env` added; the saved trace, the output and the workers' report. */
async function traceDriver(env: Record<string, string> = {}): Promise<{ code: number; trace: TraceFile; out: string; seen: string }> {
  const cwd = mkdtempSync(join(tmpdir(), 'commcost-trace-ray-'));
  const report = join(cwd, 'workers.txt');
  let out = '';
  const saved = { ...process.env };
  for (const k of ['NCCL_DEBUG', 'NCCL_DEBUG_FILE', 'LD_PRELOAD', 'RAY_ADDRESS', 'COMMCOST_TRACE_RAY_COLLECT']) delete process.env[k];
  Object.assign(process.env, { COMMCOST_SIM_CONNECT_MS: '30', COMMCOST_SIM_INIT_MS: '10', COMMCOST_SIM_DESTROY_MS: '5', COMMCOST_STUB_NCCL: join(root, 'dist', 'native', 'libnccl-sim.so'), RAY_USAGE_STATS_ENABLED: '0', WEIGHT_SYNC_REPORT: report, ...env });
  let code: number;
  try {
    code = await traceCommand(['python3', driver], { simulate: true, deadline: '360' }, { out: (t) => (out += t), err: (t) => (out += t), cwd, base: join(root, 'cli') });
  } finally {
    process.env = saved;
  }
  const dir = join(cwd, '.commcost', 'traces');
  const trace = validateTraceFile(JSON.parse(readFileSync(join(dir, readdirSync(dir).find((n) => n.endsWith('.json'))!), 'utf8')));
  console.log(formatTrace(trace));
  return { code, trace, out, seen: existsSync(report) ? readFileSync(report, 'utf8') : '' };
}

/** Every actor's records are in the trace: its sites with figures, its actor class and node. */
function checkActors(trace: TraceFile): void {
  const workers = trace.processes.filter((p) => p.ray);
  assert.deepEqual(workers.map((p) => p.ray!.actor).sort(), ['Engine', 'Engine', 'Trainer'], JSON.stringify(trace.processes));
  assert.ok(workers.every((p) => p.ray!.node.length > 0 && p.communicators === 2), JSON.stringify(workers));
  const where = trace.sites.map((s) => `${s.api}@${s.file}:${s.line} ${s.actors?.join(',')}`).join('; ');
  assert.equal(trace.sites.length, 2, where);
  for (const [who, actor, ranks] of [['trainer', 'Trainer', 1], ['engine', 'Engine', 2]] as const) {
    const s = trace.sites.find((x) => x.line === siteLine(`${who} init`));
    assert.ok(s, `the ${who}'s init at its line: ${where}`);
    assert.equal(s.file, driver);
    assert.equal(s.api, 'ncclCommInitRank');
    assert.equal(s.source, 'python');
    assert.ok(s.actors?.length === 1 && s.actors[0]!.startsWith(`${actor}@`), `the ${who}'s site names its actor and node: ${s.actors}`);
    assert.equal(s.count, 2, `one communicator per sync, two syncs: ${who}`);
    assert.ok(s.occurrences.every((o) => o.ranks === ranks && o.commRanks[0] === 3), `${who}: ${ranks} process(es) of the 3-rank group`);
    assert.ok(s.creation && s.creation.n === 2 && s.creation.medianMs >= 8, `${who}: the init call is timed (10 ms simulated): ${JSON.stringify(s.creation)}`);
    assert.ok(s.firstCollective && s.firstCollective.medianMs >= 25, `${who}: the first broadcast pays the lazy connect (30 ms simulated): ${JSON.stringify(s.firstCollective)}`);
    assert.ok(s.teardown && s.teardown.n === 2, `${who}: each destroy is timed`);
    assert.equal(s.teardownSite, `${driver}:${siteLine(`${who} destroy`)}`);
  }
}

test('Ray: every actor of a local cluster is traced through ray.init\'s runtime_env; each site with figures, its actor class and node', { skip, timeout: 420_000 }, async () => {
  const { code, trace, out, seen } = await traceDriver();
  assert.equal(code, 0, out);
  assert.equal(trace.simulated, true);
  assert.equal(trace.status, 'complete', trace.missing.join('; '));
  // Ray gave every worker commcost's setup hook: the trace reached it through the job's runtime_env.
  for (const actor of ['Trainer', 'Engine']) assert.match(seen, new RegExp(`ray worker: ${actor} pid \\d+ setup hook commcost_ray\\.setup`), seen);
  checkActors(trace);
  assert.match(out, /Ray: 3 workers on 1 node/);
});

// #32: workers that cannot write the driver's records folder (another node, no shared folder: here
// each worker is given a folder of its own) write to a private folder of their node and ship the
// records to the driver's collector actor; every actor's records come back, none is left behind.
test('Ray: workers without the driver\'s folder ship their records to the driver\'s collector actor; every actor comes back with its class and node', { skip, timeout: 420_000 }, async () => {
  const elsewhere = mkdtempSync(join(tmpdir(), 'commcost-ray-elsewhere-'));
  const { code, trace, out } = await traceDriver({ WEIGHT_SYNC_WORKER_TRACE_DIR: elsewhere });
  assert.equal(code, 0, out);
  assert.equal(trace.status, 'complete', trace.missing.join('; '));
  checkActors(trace);
  assert.deepEqual(readdirSync(elsewhere), [], 'the workers wrote nothing in the folder they could not share with the driver');
});
