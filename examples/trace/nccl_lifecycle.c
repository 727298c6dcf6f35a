/*
 * nccl_lifecycle.c: a C program to trace with `commcost trace`: init, first collective, split,
 * first collective on the child, destroy of both.
 *
 * One process per rank: the first process makes the unique id and forks the others (world size
 * from NRANKS, default 2; 1 runs alone). Each rank uses device <rank>.
 *
 *   On the simulated NCCL (no GPU):
 *     cc -std=c11 -O2 examples/trace/nccl_lifecycle.c -o /tmp/lifecycle dist/native/libnccl-sim.so -Wl,-rpath,$PWD/dist/native
 *     commcost trace --simulate -- /tmp/lifecycle
 *   On a GPU host (NCCL and the CUDA driver):
 *     cc -std=c11 -O2 examples/trace/nccl_lifecycle.c -o /tmp/lifecycle -lnccl -lcuda
 *     NRANKS=1 commcost trace -- /tmp/lifecycle
 *
 * The NCCL and CUDA driver declarations below are the ones of nccl.h and cuda.h this program
 * uses (so that it builds where neither header is installed).
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

typedef struct { char internal[128]; } ncclUniqueId;
typedef struct ncclComm* ncclComm_t;
typedef int ncclResult_t;
typedef void* CUstream;
typedef unsigned long long CUdeviceptr;
typedef void* CUcontext;
extern ncclResult_t ncclGetUniqueId(ncclUniqueId* id);
extern ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId id, int rank);
extern ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t* newcomm, void* config);
extern ncclResult_t ncclAllReduce(const void* sendbuff, void* recvbuff, size_t count, int datatype, int op, ncclComm_t comm, CUstream stream);
extern ncclResult_t ncclCommDestroy(ncclComm_t comm);
extern const char* ncclGetErrorString(ncclResult_t r);
extern int cuInit(unsigned int flags);
extern int cuDeviceGet(int* device, int ordinal);
extern int cuDevicePrimaryCtxRetain(CUcontext* ctx, int device);
extern int cuCtxSetCurrent(CUcontext ctx);
extern int cuMemAlloc_v2(CUdeviceptr* ptr, size_t bytes);
extern int cuStreamCreate(CUstream* stream, unsigned int flags);
extern int cuStreamSynchronize(CUstream stream);

#define NCCL_FLOAT32 7
#define NCCL_SUM 0
#define CHECK(call)                                                                                     \
  do {                                                                                                  \
    ncclResult_t r_ = (call);                                                                           \
    if (r_ != 0) { fprintf(stderr, "rank %d: %s failed: %s\n", rank, #call, ncclGetErrorString(r_)); exit(1); } \
  } while (0)
#define CU(call)                                                                                        \
  do { if ((call) != 0) { fprintf(stderr, "rank %d: %s failed\n", rank, #call); exit(1); } } while (0)

static void firstCollective(ncclComm_t comm, CUdeviceptr buf, CUstream stream, int rank) {
  CHECK(ncclAllReduce((void*)buf, (void*)buf, 1 << 18, NCCL_FLOAT32, NCCL_SUM, comm, stream));
  CU(cuStreamSynchronize(stream));
}

static int runRank(int rank, int nranks, ncclUniqueId id) {
  int dev;
  CUcontext ctx;
  CUdeviceptr buf;
  CUstream stream;
  CU(cuInit(0));
  CU(cuDeviceGet(&dev, rank));
  CU(cuDevicePrimaryCtxRetain(&ctx, dev));
  CU(cuCtxSetCurrent(ctx));
  CU(cuMemAlloc_v2(&buf, 1 << 20));
  CU(cuStreamCreate(&stream, 0));

  ncclComm_t world, half;
  CHECK(ncclCommInitRank(&world, nranks, id, rank));            /* creation of the world communicator */
  firstCollective(world, buf, stream, rank);                      /* its first collective: the connect */
  CHECK(ncclCommSplit(world, rank < (nranks + 1) / 2 ? 0 : 1, rank, &half, NULL)); /* split in halves */
  firstCollective(half, buf, stream, rank);                       /* the child's first collective */
  firstCollective(half, buf, stream, rank);                       /* a later one */
  CHECK(ncclCommDestroy(half));                                   /* teardown */
  CHECK(ncclCommDestroy(world));
  return 0;
}

int main(void) {
  const char* n = getenv("NRANKS");
  int nranks = n && *n ? atoi(n) : 2;
  int rank = 0;
  if (nranks < 1 || nranks > 64) { fprintf(stderr, "NRANKS must be 1..64 (got %s)\n", n); return 2; }
  ncclUniqueId id;
  CHECK(ncclGetUniqueId(&id));
  for (int r = 1; r < nranks; r++) {
    pid_t pid = fork();
    if (pid < 0) { perror("fork"); return 1; }
    if (pid == 0) return runRank(r, nranks, id);
  }
  int status = runRank(0, nranks, id);
  for (int r = 1; r < nranks; r++) {
    int st = 0;
    if (wait(&st) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) status = 1;
  }
  printf("nccl_lifecycle: %d ranks done\n", nranks);
  return status;
}
