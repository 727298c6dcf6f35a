/* Overhead of commcost's NCCL profiler plugin on a loop of small collectives, real NCCL, one rank.
 * Loads NCCL and the CUDA driver by path (dlopen), makes one 1-rank communicator, then times N
 * ncclAllReduce calls of 256 floats on the legacy default stream, host wall from before the first
 * enqueue to after the stream is synchronised, in ns per call. The plugin is on when the caller
 * sets NCCL_PROFILER_PLUGIN (test/gpu/one-gpu-trace.sh alternates traced and untraced rounds).
 * Usage: trace_overhead <libnccl.so.2> <calls>; prints "<ns per call>". Exit 1 on any error. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
typedef struct { char internal[128]; } ncclUniqueId;
typedef void* ncclComm_t;
#define LOAD(h, name) do { *(void**)&name = dlsym(h, #name); if (!name) { fprintf(stderr, "missing %s\n", #name); return 1; } } while (0)
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
static double now_ns(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec * 1e9 + t.tv_nsec; }
int main(int argc, char** argv) {
  if (argc < 3) { fprintf(stderr, "usage: %s <libnccl.so.2> <calls>\n", argv[0]); return 1; }
  int n = atoi(argv[2]);
  void* cu = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
  void* nc = dlopen(argv[1], RTLD_NOW | RTLD_GLOBAL);
  if (!cu || !nc) { fprintf(stderr, "dlopen: %s\n", dlerror()); return 1; }
  LOAD(nc, ncclGetUniqueId); LOAD(nc, ncclCommInitRank); LOAD(nc, ncclAllReduce); LOAD(nc, ncclCommDestroy);
  LOAD(cu, cuInit); LOAD(cu, cuDeviceGet); LOAD(cu, cuDevicePrimaryCtxRetain); LOAD(cu, cuCtxSetCurrent);
  LOAD(cu, cuMemAlloc_v2); LOAD(cu, cuStreamSynchronize);
  int dev; void* ctx; unsigned long long buf; ncclUniqueId id; ncclComm_t c;
  if (cuInit(0) || cuDeviceGet(&dev, 0) || cuDevicePrimaryCtxRetain(&ctx, dev) || cuCtxSetCurrent(ctx) || cuMemAlloc_v2(&buf, 4096)) { fprintf(stderr, "cuda setup failed\n"); return 1; }
  if (ncclGetUniqueId(&id) || ncclCommInitRank(&c, 1, id, 0)) { fprintf(stderr, "nccl init failed\n"); return 1; }
  for (int i = 0; i < 100; i++) ncclAllReduce((void*)buf, (void*)buf, 256, 7, 0, c, 0); /* warm: connect, first kernels */
  cuStreamSynchronize(0);
  double a = now_ns();
  for (int i = 0; i < n; i++) if (ncclAllReduce((void*)buf, (void*)buf, 256, 7, 0, c, 0)) { fprintf(stderr, "allreduce failed\n"); return 1; }
  if (cuStreamSynchronize(0)) { fprintf(stderr, "sync failed\n"); return 1; }
  printf("%.1f\n", (now_ns() - a) / n);
  ncclCommDestroy(c);
  return 0;
}
