/* Overhead of commcost's NCCL profiler plugin on a loop of small collectives, one rank: the one
 * loop program of test/gpu/one-gpu-trace.sh and of test/bench/traceOverhead.ts (npm run bench).
 * Loads NCCL and the CUDA driver by path (dlopen, so nothing is linked to either library), makes one
 * 1-rank communicator, runs 100 warm-up calls (the connect and first launches), then times <calls>
 * ncclAllReduce calls of 256 floats on the legacy default stream: host wall from before the first
 * enqueue to after the stream is synchronised, in ns per call. The plugin is on when the caller
 * sets NCCL_PROFILER_PLUGIN (the callers alternate traced and untraced rounds).
 * Usage: trace_overhead <libnccl.so.2> <calls> [<libcuda.so.1>]; prints "<ns per call>".
 * Exit 1 on any failed call (named on stderr), 2 on bad arguments. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
typedef struct { char internal[128]; } ncclUniqueId;
typedef void* ncclComm_t;
static int (*ncclGetUniqueId)(ncclUniqueId*);
static int (*ncclCommInitRank)(ncclComm_t*, int, ncclUniqueId, int);
static int (*ncclAllReduce)(const void*, void*, size_t, int, int, ncclComm_t, void*);
static int (*ncclCommDestroy)(ncclComm_t);
static int (*cuInit)(unsigned);
static int (*cuDeviceGet)(int*, int);
static int (*cuDevicePrimaryCtxRetain)(void**, int);
static int (*cuCtxSetCurrent)(void*);
static int (*cuMemAlloc_v2)(unsigned long long*, size_t);
static int (*cuStreamSynchronize)(void*);
#define LOAD(h, f) do { *(void**)&f = dlsym(h, #f); if (!f) { fprintf(stderr, "missing %s\n", #f); return 1; } } while (0)
#define OK(x) do { int r_ = (x); if (r_) { fprintf(stderr, "%s failed: %d\n", #x, r_); return 1; } } while (0)
int main(int argc, char** argv) {
  if (argc < 3 || argc > 4 || atoi(argv[2]) <= 0) { fprintf(stderr, "usage: %s <libnccl.so.2> <calls> [<libcuda.so.1>]\n", argv[0]); return 2; }
  int n = atoi(argv[2]);
  void* cu = dlopen(argc == 4 ? argv[3] : "libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
  void* nc = dlopen(argv[1], RTLD_NOW | RTLD_GLOBAL);
  if (!cu || !nc) { fprintf(stderr, "dlopen: %s\n", dlerror()); return 1; }
  LOAD(cu, cuInit); LOAD(cu, cuDeviceGet); LOAD(cu, cuDevicePrimaryCtxRetain); LOAD(cu, cuCtxSetCurrent); LOAD(cu, cuMemAlloc_v2); LOAD(cu, cuStreamSynchronize);
  LOAD(nc, ncclGetUniqueId); LOAD(nc, ncclCommInitRank); LOAD(nc, ncclAllReduce); LOAD(nc, ncclCommDestroy);
  int dev; void* ctx; unsigned long long buf; ncclUniqueId id; ncclComm_t c; struct timespec a, b;
  OK(cuInit(0)); OK(cuDeviceGet(&dev, 0)); OK(cuDevicePrimaryCtxRetain(&ctx, dev)); OK(cuCtxSetCurrent(ctx)); OK(cuMemAlloc_v2(&buf, 4096));
  OK(ncclGetUniqueId(&id)); OK(ncclCommInitRank(&c, 1, id, 0));
  for (int i = 0; i < 100; i++) OK(ncclAllReduce((void*)buf, (void*)buf, 256, 7, 0, c, 0));
  OK(cuStreamSynchronize(0));
  clock_gettime(CLOCK_MONOTONIC, &a);
  for (int i = 0; i < n; i++) OK(ncclAllReduce((void*)buf, (void*)buf, 256, 7, 0, c, 0));
  OK(cuStreamSynchronize(0));
  clock_gettime(CLOCK_MONOTONIC, &b);
  printf("%.1f\n", ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / n);
  OK(ncclCommDestroy(c));
  return 0;
}
