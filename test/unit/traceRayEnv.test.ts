// What a Ray driver's ray.init passes on to its workers (#32 part 3): the variables the trace set,
// only the prepended part of a path list (jobEnv.ts rayForwardEnv), merged into the user's
// runtime_env without losing what they set (native/pyhook/commcost_ray.py runtime_env).
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { test } from 'node:test';
import { rayForwardEnv } from '../../client/trace/jobEnv';

const hookDir = join(__dirname, '..', '..', 'native', 'pyhook');

test('rayForwardEnv: set variables as set, path lists as the part prepended, RAY_ADDRESS not forwarded', () => {
  const base = { PYTHONPATH: '/opt/lib', LD_PRELOAD: 'libtcmalloc.so', UNRELATED: 'x' };
  const env = { ...base, PYTHONPATH: '/c/pyhook:/opt/lib', LD_PRELOAD: '/c/interposer.so:libtcmalloc.so', LD_LIBRARY_PATH: '/t/simlib', COMMCOST_TRACE_DIR: '/t/records', NCCL_PROFILER_PLUGIN: '/c/p.so', RAY_ADDRESS: 'auto' };
  assert.deepEqual(JSON.parse(rayForwardEnv(base, env)), {
    set: { COMMCOST_TRACE_DIR: '/t/records', NCCL_PROFILER_PLUGIN: '/c/p.so' },
    prepend: { PYTHONPATH: '/c/pyhook', LD_PRELOAD: '/c/interposer.so', LD_LIBRARY_PATH: '/t/simlib' },
  });
});

test("runtime_env: the trace's variables and setup hook added; the user's env_vars, NCCL log and setup hook kept; their plugin chained", () => {
  const py = `import sys, json; sys.path.insert(0, ${JSON.stringify(hookDir)}); import commcost_ray as r
fwd = {"set": {"COMMCOST_TRACE_DIR": "/t", "NCCL_PROFILER_PLUGIN": "/c/p.so", "NCCL_DEBUG": "INFO"}, "prepend": {"PYTHONPATH": "/c/hook"}}
print(json.dumps([r.runtime_env(None, fwd), r.runtime_env({"env_vars": {"PYTHONPATH": "/mine", "NCCL_PROFILER_PLUGIN": "/mine.so", "NCCL_DEBUG": "WARN"}, "worker_process_setup_hook": "my.hook", "pip": ["x"]}, fwd)]))`;
  const [plain, user] = JSON.parse(execFileSync('python3', ['-c', py], { encoding: 'utf8' })) as Array<{ env_vars: Record<string, string>; worker_process_setup_hook: string; pip?: string[] }>;
  assert.deepEqual(plain!.env_vars, { COMMCOST_TRACE_DIR: '/t', NCCL_PROFILER_PLUGIN: '/c/p.so', NCCL_DEBUG: 'INFO', PYTHONPATH: '/c/hook:${PYTHONPATH}' });
  assert.equal(plain!.worker_process_setup_hook, 'commcost_ray.setup');
  assert.deepEqual(user!.env_vars, { COMMCOST_TRACE_DIR: '/t', NCCL_PROFILER_PLUGIN: '/c/p.so', COMMCOST_TRACE_CHAIN_PLUGIN: '/mine.so', NCCL_DEBUG: 'WARN', PYTHONPATH: '/c/hook:/mine' });
  assert.equal(user!.worker_process_setup_hook, 'my.hook');
  assert.deepEqual(user!.pip, ['x']);
});
