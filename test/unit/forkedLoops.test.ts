// Issue #27, loops: a "created in a loop" finding needs a loop that calls the creation more than
// once in one process (sites/forkedLoops.ts); a loop that forks or spawns a process each round is
// not one, in C (`if (fork() == 0) { create(); exit(0); }`) and in Python (`os.fork()`,
// `mp.Process(target=lambda: f(r))`), while a loop inside the child, the parent's branch and a
// loop of threads still are.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { scanText } from '../support/annotationFixtures';

/** "line api repeated-detail" of every site of `text`. */
async function repeats(language: 'python' | 'c', text: string): Promise<string[]> {
  const r = await scanText(language, text);
  return r.sites.map((s) => `${s.range.start.line + 1} ${s.api} ${s.repeated?.detail ?? '-'}`);
}

test('C: the child branch of a fork loop creates once per process; a loop inside the child, and the parent, repeat', async () => {
  const c = `#include <nccl.h>
#include <unistd.h>
#include <stdlib.h>
void child(int r, int n, ncclUniqueId id) {
  ncclComm_t c;
  ncclCommInitRank(&c, n, id, r);
  ncclCommDestroy(c);
}
int main(void) {
  ncclUniqueId id;
  int n = 4;
  for (int r = 0; r < n; r++) {
    pid_t pid = fork();
    if (pid == 0) {
      ncclComm_t c;
      ncclCommInitRank(&c, n, id, r);
      for (int k = 0; k < 3; k++) ncclCommSplit(c, 0, r, &c, NULL);
      exit(0);
    } else {
      ncclComm_t p;
      ncclCommInitRank(&p, n, id, 0);
    }
  }
  for (int r = 0; r < n; r++) {
    if ((pid = fork()) == 0) { child(r, n, id); _exit(0); }
  }
  return 0;
}
`;
  assert.deepEqual(await repeats('c', c), [
    '6 ncclCommInitRank -',
    '7 ncclCommDestroy -',
    '16 ncclCommInitRank -',
    '17 ncclCommSplit inside a for loop (line 17)',
    '21 ncclCommInitRank inside a for loop (line 12)',
  ]);
});

test('Python: os.fork() children and processes started with a lambda create once each; the parent and threads repeat', async () => {
  const py = `import os
import threading
import torch.multiprocessing as mp
import torch.distributed as dist

def run(rank, world):
    dist.init_process_group("nccl", rank=rank, world_size=world)

def start(world):
    for r in range(world):
        mp.Process(target=lambda: run(r, world)).start()

def forked(world):
    for r in range(world):
        pid = os.fork()
        if pid:
            dist.new_group([0, 1])
        else:
            dist.new_group([r])
            os._exit(0)
    for r in range(world):
        if os.fork() == 0:
            dist.init_process_group("nccl", rank=r, world_size=world)
            os._exit(0)

def threads(world):
    for r in range(world):
        threading.Thread(target=lambda: dist.new_group([r])).start()
`;
  assert.deepEqual(await repeats('python', py), [
    '7 init_process_group -',
    '17 new_group inside a for loop (line 14)',
    '19 new_group -',
    '23 init_process_group -',
    '28 new_group inside a for loop (line 27)',
  ]);
});
