/**
 * Issue #27, rules 5 and 7. Saved references: a name bound to an API by an assignment
 * (`old_new_group = dist.new_group`) or a `functools.partial` of it naming no other backend is that
 * API's call site. Callbacks: a teardown in a function nested in another that only hands it on (a
 * timeout handler given to `threading.Timer`) is not credited to the outer function, so its callers
 * are no teardown sites; a nested function the outer one calls still is. Failed before the rules.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { WrapperIndex } from '../../sites/wrapperIndex';
import { loadFinder, scanText } from '../support/annotationFixtures';

test('saved references: old_new_group = dist.new_group and functools.partial(dist.new_group, backend="nccl") are new_group sites; a partial with gloo is none', async () => {
  const text = `import functools
import torch.distributed as dist

old_new_group = dist.new_group
nccl_group = functools.partial(dist.new_group, backend="nccl")
gloo_group = functools.partial(dist.new_group, backend="gloo")


def f(ranks):
    a = old_new_group(ranks)
    b = nccl_group(ranks)
    c = gloo_group(ranks)
`;
  const scan = await scanText('python', text);
  assert.deepEqual(
    scan.sites.map((s) => `${s.written} ${s.api}`),
    ['old_new_group new_group', 'nccl_group new_group'],
  );
});

test('callbacks: a teardown in a timeout handler is not credited to the function that hands it on; one in a nested function it calls is', async () => {
  const text = `import threading
import torch.distributed as dist


def train_loop(steps):
    def on_timeout():
        dist.destroy_process_group()

    timer = threading.Timer(30, on_timeout)
    timer.start()


def shutdown_all():
    def _teardown():
        dist.destroy_process_group()

    _teardown()


def main():
    train_loop(10)
    shutdown_all()
`;
  const index = await WrapperIndex.create(await loadFinder());
  index.setFile('/ws/run.py', 'python', text);
  const callers = index.callerSites('/ws/run.py').map((s) => `${s.written} ${s.api}`);
  // The nested `_teardown()` called by name is a call site of its own (issue #27, round three:
  // nested functions are wrappers); `on_timeout`, only handed to a Timer, is none.
  assert.deepEqual(callers, ['_teardown destroy_process_group', 'shutdown_all destroy_process_group']);
  index.dispose();
});
