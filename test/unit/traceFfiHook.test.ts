// The Python hook's recorder of NCCL called through ctypes/cffi (native/pyhook/commcost_ffi.py),
// driven without NCCL: fake NCCL functions stand in, and the hook's records are collected. A
// group's creations carry its number and its outermost ncclGroupEnd is recorded (a group without
// creations is not); a non-blocking creation is completed by the first poll that sees it done,
// later polls are not recorded; out-pointers of ctypes and cffi are read; each call returns what
// the function returned. commcost_cext.py's test of an extension file for NCCL's names. Needs
// python3 (cffi optional).
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { test } from 'node:test';

const hookDir = join(__dirname, '..', '..', 'native', 'pyhook');

function hasPython(): boolean {
  try {
    execFileSync('python3', ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

const script = String.raw`
import ctypes, json, sys, threading
sys.path.insert(0, sys.argv[1])
import commcost_ffi as f

class Hook:
    local = threading.local()
    def __init__(self): self.records = []
    def emit(self, r): self.records.append(r)
    def site_and_chain(self, depth=2, innermost=False): return {"file": "job.py", "line": 1, "func": "main"}, []

hook = Hook()
rec = f.Recorder(hook)
state = {"next": 0x100, "async": {}}

def init(out, nranks, uid, rank, config=None):
    state["next"] += 0x10
    out._obj.value = state["next"]
    blocking = config is None
    state["async"][state["next"]] = 0 if blocking else 7
    return 0 if blocking else 7

def poll(comm, out):
    key = comm.value
    out._obj.value = state["async"][key]
    state["async"][key] = 0
    return 0

ok = lambda *a: 0
results = []
results.append(rec.call("ncclGroupStart", ok, ()))
a, b = ctypes.c_void_p(), ctypes.c_void_p()
results.append(rec.call("ncclCommInitRank", init, (ctypes.byref(a), 2, None, 0)))
results.append(rec.call("ncclCommInitRank", init, (ctypes.byref(b), 2, None, 1)))
results.append(rec.call("ncclGroupEnd", ok, ()))
rec.call("ncclGroupStart", ok, ()); rec.call("ncclGroupEnd", ok, ())  # a group of collectives: not recorded
nb = ctypes.c_void_p()
results.append(rec.call("ncclCommInitRankConfig", init, (ctypes.byref(nb), 1, None, 0, "nonblocking"), "cffi"))
s = ctypes.c_int(7)
results.append(rec.call("ncclCommGetAsyncError", poll, (nb, ctypes.byref(s))))
rec.call("ncclCommGetAsyncError", poll, (nb, ctypes.byref(s)))  # already seen done: not recorded
cffi_ok = None
try:
    import cffi
    ffi = cffi.FFI(); ffi.cdef("typedef struct ncclComm* ncclComm_t;")
    p = ffi.new("ncclComm_t*"); p[0] = ffi.cast("ncclComm_t", 0x1234)
    i = ffi.new("int*"); i[0] = 3
    cffi_ok = [f.out_value(p), f.out_value(i)]
except ImportError:
    pass
import commcost_cext, _ctypes, tempfile
with tempfile.NamedTemporaryFile(suffix=".so") as t:
    t.write(b"\0" * 100 + b"ncclCommInitRank\0"); t.flush()
    named = commcost_cext.calls_nccl(t.name)
scan = [commcost_cext.calls_nccl(_ctypes.__file__), named]
print(json.dumps({"records": hook.records, "results": results, "cffi": cffi_ok, "scan": scan}))
`;

test('commcost_ffi: grouped and non-blocking creations recorded with what grouped.ts needs; results unchanged', { skip: hasPython() ? false : 'python3 is not installed' }, () => {
  const out = JSON.parse(execFileSync('python3', ['-c', script, hookDir], { encoding: 'utf8' })) as {
    records: Array<Record<string, unknown>>; results: number[]; cffi: number[] | null; scan: boolean[];
  };
  assert.deepEqual(out.results, [0, 0, 0, 0, 7, 0], 'each call returns what the function returned');
  const apis = out.records.map((r) => `${r.api}${r.group !== undefined ? `#${String(r.group)}` : ''}`);
  assert.deepEqual(apis, ['ncclCommInitRank#1', 'ncclCommInitRank#1', 'ncclGroupEnd#1', 'ncclCommInitRankConfig', 'ncclCommGetAsyncError'],
    'the group of collectives (group 2) and the second poll are not recorded');
  const [r0, r1, end, nb, poll] = out.records;
  assert.deepEqual([r0!.nranks, r0!.rank, r1!.rank, r0!.comm, r1!.comm, r0!.via], [2, 0, 1, '0x110', '0x120', 'ctypes']);
  assert.equal(end!.creates, 2);
  assert.equal(nb!.r, 7);
  assert.equal(nb!.via, 'cffi');
  assert.deepEqual([poll!.comm, poll!.async], [nb!.comm, 0], 'the poll that saw the non-blocking creation done');
  for (const r of out.records) assert.ok(typeof r.t0 === 'number' && typeof r.t1 === 'number' && r.t1 >= r.t0 && r.tid !== undefined, JSON.stringify(r));
  if (out.cffi) assert.deepEqual(out.cffi, [0x1234, 3], 'cffi out-pointers read');
  assert.deepEqual(out.scan, [false, true], 'commcost_cext: an extension that never names NCCL is left alone; one that names ncclCommInitRank is wrapped');
});
