// Ray records without a shared folder (#32), the parts that need no Ray (native/pyhook/commcost_ray.py):
// which worker ships its records to the driver's collector (the driver's marker not seen, or
// COMMCOST_TRACE_RAY_COLLECT=actor) and where it then writes them (a private folder, NCCL's log
// moved too); and what the collector writes into the driver's folder (record names only, each byte
// once, whatever the order or repetition of the shipments). End to end on a local Ray cluster:
// test/integration/traceRay.test.ts.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';

const hookDir = join(__dirname, '..', '..', 'native', 'pyhook');

/** Runs `body` in python3 with commcost_ray imported as `r`; its stdout parsed as JSON. */
function py(body: string, env: Record<string, string> = {}): unknown {
  const code = `import sys, os, json; sys.path.insert(0, ${JSON.stringify(hookDir)}); import commcost_ray as r\n${body}`;
  return JSON.parse(execFileSync('python3', ['-c', code], { encoding: 'utf8', env: { ...process.env, ...env } }));
}

const spec = (mode: string) => JSON.stringify({ name: 'commcost-collector-0123456789abcdef', namespace: 'commcost', token: '0123456789abcdef', mode });

test('a worker that sees the driver\'s marker writes the driver\'s folder; one that does not (or mode actor) moves its records and NCCL\'s log to a private folder', () => {
  const top = mkdtempSync(join(tmpdir(), 'commcost-raycollect-'));
  const driverDir = join(top, 'driver');
  const tmp = join(top, 'tmp');
  mkdirSync(driverDir);
  mkdirSync(tmp);
  writeFileSync(join(driverDir, '.commcost-ray-0123456789abcdef'), '0123456789abcdef');
  const run = (dir: string, mode: string) => py(`d = r.worker_trace_dir(${JSON.stringify(dir)}); print(json.dumps([d, os.environ["COMMCOST_TRACE_DIR"], os.environ.get("NCCL_DEBUG_FILE")]))`,
    { TMPDIR: tmp, COMMCOST_TRACE_DIR: dir, NCCL_DEBUG_FILE: `${dir}/%h-%p.nccl.log`, COMMCOST_TRACE_RAY_COLLECTOR: spec(mode) }) as [string | null, string, string];
  assert.deepEqual(run(driverDir, 'auto'), [null, driverDir, `${driverDir}/%h-%p.nccl.log`], 'the marker is seen: the shared folder is written as is');
  assert.deepEqual(run(driverDir, 'off'), [null, driverDir, `${driverDir}/%h-%p.nccl.log`]);
  const elsewhere = join(top, 'not-on-this-node');
  for (const [dir, mode] of [[elsewhere, 'auto'], [driverDir, 'actor']] as const) {
    const [local, traceDir, log] = run(dir, mode);
    assert.ok(local?.startsWith(join(tmp, `commcost-${process.getuid!()}`, 'ray-01234567-')), `${mode}: a private folder of the node: ${local}`);
    assert.equal(traceDir, local);
    assert.equal(log, `${local}/%h-%p.nccl.log`, "NCCL's log goes with the records");
    assert.equal(statSync(local!).mode & 0o777, 0o700);
  }
});

test('the collector appends only record files, each byte once, however often or late a shipment comes', () => {
  const dir = mkdtempSync(join(tmpdir(), 'commcost-raycollector-'));
  const out = py(`c = r.Collector(${JSON.stringify(dir)})
c.put("w1", 0, [("n1-7.py.jsonl", 0, b"a\\nb\\n")])
c.put("w1", 0, [("n1-7.py.jsonl", 0, b"a\\nb\\n"), ("n1-7.jsonl", 0, b"x\\n")])
c.put("w1", 1, [("n1-7.py.jsonl", 2, b"b\\nc\\n"), ("n1-7.py.jsonl", 9, b"gap\\n")])
c.put("w2", 1, [("../escape.jsonl", 0, b"no\\n"), (".commcost-ray-x", 0, b"no"), ("n2-8.nccl.log", 0, b"log\\n"), ("n2-8.txt", 0, b"no")])
print(json.dumps(c.flush(0.2)))`) as number;
  assert.equal(out, 0, 'both workers answered the flush round');
  assert.deepEqual(readdirSync(dir).sort(), ['n1-7.jsonl', 'n1-7.py.jsonl', 'n2-8.nccl.log']);
  assert.equal(readFileSync(join(dir, 'n1-7.py.jsonl'), 'utf8'), 'a\nb\nc\n', 'a repeated shipment is not written twice; a gap is not written');
  assert.equal(readFileSync(join(dir, 'n2-8.nccl.log'), 'utf8'), 'log\n');
});

test('a flush waits for a worker that has not answered, at most its timeout, and says how many did not', () => {
  const missing = py(`c = r.Collector(${JSON.stringify(tmpdir())})
c.put("alive", 0, [])
c.put("dead", 0, [])
c.gone("dead")
print(json.dumps(c.flush(0.3)))`) as number;
  assert.equal(missing, 1, 'the worker that did not answer is counted; the one that exited is not');
});

test("a flush waits for the job's live actors that have not reached the collector yet (a late worker's records are not lost)", () => {
  const dir = mkdtempSync(join(tmpdir(), 'commcost-raylate-'));
  // The late worker first polls 0.5 s after the flush began, then ships its records.
  const out = py(`import threading, time
c = r.Collector(${JSON.stringify(dir)})
def late():
    time.sleep(0.5)
    rnd = c.wait("node:42", 0, 5.0)
    c.put("node:42", rnd, [("n9-42.py.jsonl", 0, b"late\\n")])
threading.Thread(target=late).start()
t = time.time()
missing = c.flush(5.0, ["node:42"])
print(json.dumps([missing, os.path.exists(os.path.join(${JSON.stringify(dir)}, "n9-42.py.jsonl")), time.time() - t < 4.5]))`) as [number, boolean, boolean];
  assert.deepEqual(out, [0, true, true], 'the expected worker answered within the flush, and its records were written');
});
