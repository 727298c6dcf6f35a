// Overhead of `commcost trace` on a loop of small collectives, simulated NCCL (one rank):
// the same loop with and without the profiler plugin, host time per ncclAllReduce call.
// Run: node --import tsx test/bench/traceOverhead.ts [calls=20000] [rounds=7]
// Target (issue 16): < 1% of the loop's time or < 2 µs per collective, whichever is larger.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const root = join(__dirname, '..', '..');
const calls = Number(process.argv[2] ?? 20000);
const rounds = Number(process.argv[3] ?? 7);
const dir = mkdtempSync(join(tmpdir(), 'commcost-bench-'));
const src = join(dir, 'loop.c');
writeFileSync(src, `#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
typedef struct { char internal[128]; } ncclUniqueId;
typedef struct ncclComm* ncclComm_t;
extern int ncclGetUniqueId(ncclUniqueId*); extern int ncclCommInitRank(ncclComm_t*, int, ncclUniqueId, int);
extern int ncclAllReduce(const void*, void*, size_t, int, int, ncclComm_t, void*); extern int ncclCommDestroy(ncclComm_t);
extern int cuStreamSynchronize(void*); extern int cuMemAlloc_v2(unsigned long long*, size_t); extern int cuInit(unsigned);
int main(int argc, char** argv) {
  int n = atoi(argv[1]); ncclUniqueId id; ncclComm_t c; unsigned long long buf; struct timespec a, b;
  cuInit(0); cuMemAlloc_v2(&buf, 4096); ncclGetUniqueId(&id); ncclCommInitRank(&c, 1, id, 0);
  ncclAllReduce((void*)buf, (void*)buf, 256, 7, 0, c, 0); cuStreamSynchronize(0);
  clock_gettime(CLOCK_MONOTONIC, &a);
  for (int i = 0; i < n; i++) ncclAllReduce((void*)buf, (void*)buf, 256, 7, 0, c, 0);
  cuStreamSynchronize(0);
  clock_gettime(CLOCK_MONOTONIC, &b);
  printf("%.1f\\n", ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / n);
  ncclCommDestroy(c); return 0;
}
`);
const exe = join(dir, 'loop');
const sim = join(root, 'dist', 'native', 'libnccl-sim.so');
execFileSync('cc', ['-O2', src, '-o', exe, sim, `-Wl,-rpath,${join(root, 'dist', 'native')}`]);
const plugin = join(root, 'dist', 'native', 'libcommcost-profiler.so');
const once = (traced: boolean) => {
  const env = { ...process.env, COMMCOST_SIM_JITTER: '0', COMMCOST_SIM_BW_GBPS: '0' } as NodeJS.ProcessEnv;
  if (traced) Object.assign(env, { NCCL_PROFILER_PLUGIN: plugin, COMMCOST_TRACE_DIR: dir });
  return Number(execFileSync(exe, [String(calls)], { env, encoding: 'utf8' }).trim());
};
const plain: number[] = [], traced: number[] = [];
for (let r = 0; r < rounds; r++) { plain.push(once(false)); traced.push(once(true)); } // alternate: drift hits both
const med = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const fmt = (xs: number[]) => [...xs].sort((a, b) => a - b).map((x) => x.toFixed(0)).join(' ');
console.log(`SIMULATED NCCL, ${calls} small allreduces per round, ${rounds} rounds; ns per call (sorted)`);
console.log(`untraced: ${fmt(plain)}  median ${med(plain).toFixed(0)}`);
console.log(`traced:   ${fmt(traced)}  median ${med(traced).toFixed(0)}`);
const d = med(traced) - med(plain);
console.log(`overhead: ${(d / 1000).toFixed(2)} µs per collective, ratio ${(med(traced) / med(plain)).toFixed(3)} (target: < 2 µs or < 1%)`);
