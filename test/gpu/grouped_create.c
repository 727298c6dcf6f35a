/*
 * grouped_create.c: creations whose cost NCCL pays after the creating call returned, on one GPU
 * (GPU 0, one process), for test/gpu/grouped-trace.sh — the real-library check of
 * test/fixtures/trace/nccl_grouped.c (which runs on the simulated NCCL in CI):
 *   1. a grouped init: ncclGroupStart; ncclCommInitRank (nranks 1, rank 0); ncclGroupEnd — the
 *      process's first communicator (cold), the benchmark-harness shape;
 *   2. ncclCommInitAll of 1 device (NCCL's own group inside the call);
 *   3. a non-blocking init: ncclCommInitRankConfig with config.blocking = 0, polled with
 *      ncclCommGetAsyncError until ncclSuccess;
 *   4. a non-blocking init inside a group (its ncclGroupEnd returns ncclInProgress), polled;
 *   5. a plain blocking ncclCommInitRank (the warm reference: paid inside the call).
 * The program prints its own clock for each (CLOCK_MONOTONIC): the creating call's return and the
 * moment the creation was done (the group's end, the completing poll), to set beside the trace's
 * figures and NCCL's Init timings. Build: cc -std=c11 -O2 -g -I<dir of nccl.h> -I<CUDA include dir>
 * grouped_create.c -L<dir of libnccl.so.2> -l:libnccl.so.2 -Wl,-rpath,<that dir> (nccl.h includes
 * cuda_runtime.h); without those headers add -DGROUPED_OWN_DECLS.
 */
#define _POSIX_C_SOURCE 200809L
#include <stddef.h>
#ifndef GROUPED_OWN_DECLS
#include <nccl.h>
#else
/* No nccl.h (or no CUDA headers for it) on the host: nccl.h's declarations this program uses, and
 * ncclConfig_t's 2.18 layout (NCCL reads `size` bytes of it; the fields after it keep defaults). */
#include <limits.h>
typedef struct { char internal[128]; } ncclUniqueId;
typedef struct ncclComm* ncclComm_t;
typedef enum { ncclSuccess = 0, ncclInProgress = 7 } ncclResult_t;
typedef struct { size_t size; unsigned int magic; unsigned int version; int blocking, cgaClusterSize, minCTAs, maxCTAs; const char* netName; int splitShare; } ncclConfig_t;
#define NCCL_CONFIG_INITIALIZER { sizeof(ncclConfig_t), 0xcafebeef, 21800, INT_MIN, INT_MIN, INT_MIN, INT_MIN, NULL, INT_MIN }
ncclResult_t ncclGetUniqueId(ncclUniqueId* id);
ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId id, int rank);
ncclResult_t ncclCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId id, int rank, ncclConfig_t* config);
ncclResult_t ncclCommInitAll(ncclComm_t* comms, int ndev, const int* devlist);
ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* asyncError);
ncclResult_t ncclGroupStart(void);
ncclResult_t ncclGroupEnd(void);
ncclResult_t ncclCommDestroy(ncclComm_t comm);
const char* ncclGetErrorString(ncclResult_t r);
const char* ncclGetLastError(ncclComm_t comm);
#endif
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static int fails = 0;
static double nowMs(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}
static void check(ncclResult_t r, ncclResult_t want, const char* what) {
  if (r != want) { fprintf(stderr, "grouped_create: %s returned %d (%s), expected %d: %s\n", what, r, ncclGetErrorString(r), want, ncclGetLastError(NULL)); fails++; }
}
/* Polls until the creation is done (at most 60 s); the ms when it was seen done. */
static double await(ncclComm_t comm, const char* what) {
  ncclResult_t state = ncclInProgress;
  struct timespec pause = { 0, 100000 };
  for (long i = 0; i < 600000 && state == ncclInProgress; i++) {
    check(ncclCommGetAsyncError(comm, &state), ncclSuccess, "ncclCommGetAsyncError");
    if (state == ncclInProgress) nanosleep(&pause, NULL);
  }
  check(state, ncclSuccess, what);
  return nowMs();
}
static void say(const char* what, double t0, double tCall, double tDone) {
  printf("grouped_create: %-34s call %8.2f ms, created after %8.2f ms\n", what, tCall - t0, tDone - t0);
}

int main(void) {
  ncclComm_t grouped = NULL, all[1] = { NULL }, nb = NULL, gnb = NULL, plain = NULL;
  ncclUniqueId id;
  int devs[1] = { 0 };
  double t0, t1, t2;

  check(ncclGetUniqueId(&id), ncclSuccess, "ncclGetUniqueId");
  t0 = nowMs();
  check(ncclGroupStart(), ncclSuccess, "ncclGroupStart");
  check(ncclCommInitRank(&grouped, 1, id, 0), ncclSuccess, "grouped ncclCommInitRank"); /* 1. grouped init */
  t1 = nowMs();
  check(ncclGroupEnd(), ncclSuccess, "ncclGroupEnd");                                    /* pays it */
  t2 = nowMs();
  say("grouped ncclCommInitRank (cold)", t0, t1, t2);

  t0 = nowMs();
  check(ncclCommInitAll(all, 1, devs), ncclSuccess, "ncclCommInitAll");                  /* 2. own group */
  t1 = nowMs();
  say("ncclCommInitAll (1 device)", t0, t1, t1);

  ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
  cfg.blocking = 0;
  check(ncclGetUniqueId(&id), ncclSuccess, "ncclGetUniqueId");
  t0 = nowMs();
  ncclResult_t r = ncclCommInitRankConfig(&nb, 1, id, 0, &cfg);                          /* 3. non-blocking init */
  t1 = nowMs();
  if (r != ncclInProgress) check(r, ncclSuccess, "non-blocking ncclCommInitRankConfig");
  t2 = await(nb, "the non-blocking init");
  say("non-blocking ncclCommInitRankConfig", t0, t1, t2);

  check(ncclGetUniqueId(&id), ncclSuccess, "ncclGetUniqueId");
  t0 = nowMs();
  check(ncclGroupStart(), ncclSuccess, "ncclGroupStart");
  check(ncclCommInitRankConfig(&gnb, 1, id, 0, &cfg), ncclSuccess, "grouped non-blocking ncclCommInitRankConfig"); /* 4. grouped non-blocking */
  r = ncclGroupEnd();                                                                     /* returns ncclInProgress */
  t1 = nowMs();
  if (r != ncclInProgress) check(r, ncclSuccess, "ncclGroupEnd of the non-blocking init");
  t2 = await(gnb, "the grouped non-blocking init");
  say("grouped non-blocking init", t0, t1, t2);

  check(ncclGetUniqueId(&id), ncclSuccess, "ncclGetUniqueId");
  t0 = nowMs();
  check(ncclCommInitRank(&plain, 1, id, 0), ncclSuccess, "plain ncclCommInitRank");       /* 5. warm reference */
  t1 = nowMs();
  say("plain ncclCommInitRank (warm)", t0, t1, t1);

  ncclComm_t every[] = { grouped, all[0], nb, gnb, plain };
  for (size_t i = 0; i < sizeof every / sizeof every[0]; i++) if (every[i]) check(ncclCommDestroy(every[i]), ncclSuccess, "ncclCommDestroy");
  printf("grouped_create: %s\n", fails ? "FAILED" : "done");
  return fails ? 1 : 0;
}
