/*
 * commcostInterposer.c: the LD_PRELOAD interposer of `commcost trace --interpose`
 * (libcommcost-interposer.so). C/C++ attribution of NCCL's lifecycle calls.
 *
 * Over ncclCommInitRank, ncclCommInitRankConfig, ncclCommInitAll, ncclCommInitRankScalable,
 * ncclCommSplit, ncclCommShrink, ncclCommGrow, ncclCommFinalize, ncclCommDestroy, ncclCommAbort and
 * ncclCommRevoke: each wrapper finds the next definition of its function (dlsym(RTLD_NEXT), once),
 * calls it with the same arguments and returns its result unchanged, and records the call as one
 * JSON line:
 *
 *   {"k":"ncall","api":"ncclCommInitRank","t0":<ns>,"t1":<ns>,"tid":<tid>,"r":<ncclResult_t>,
 *    "comm":"0x…","parent":"0x…","site":{"obj":…,"addr":…,"base":…,"sym":…,"symOff":…}}
 *
 * t0/t1: CLOCK_MONOTONIC ns right around the forwarded call (the profiler plugin's and Python's
 * time.monotonic_ns() clock). site: the caller's return address (__builtin_return_address(0)) minus
 * one (the call instruction), its object and load base and nearest symbol by dladdr; the CLI
 * symbolises it to file:line with addr2line where the object has debug info, else shows
 * function+offset. comm: the communicator made (creations) or acted on (teardown, revoke);
 * parent: the communicator split, shrunk or grown.
 *
 * Before forwarding, a `ncallStart` line (api, t0, tid, site) is written too: a call that never
 * returns (a hang in bootstrap, a process killed inside it) is still seen, and the trace says so.
 *
 * Only the outermost lifecycle call of a thread is recorded (NCCL's own calls to its exported
 * functions from inside one are forwarded, not recorded).
 *
 * A function the next library does not have (an NCCL older than it) returns ncclInvalidUsage and
 * is recorded with r = -1: a program only calls it where its own NCCL headers declared it, so this
 * happens only for a program built against a newer NCCL than the one it runs with. Calls through a
 * handle of NCCL dlopened by path (ctypes, vLLM's PyNcclCommunicator) do not pass through an
 * LD_PRELOAD interposer; the profiler plugin and NCCL's log still see those communicators.
 *
 * Output: $COMMCOST_TRACE_DIR/<host>-<pid>.native.jsonl, opened O_APPEND at the first call (again
 * after a fork), one write(2) per line: safe to read while the job runs, every line written so far
 * kept if the process dies. Without COMMCOST_TRACE_DIR nothing is written and every call is only
 * forwarded. No lock is held around the forwarded call.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))
#define NCCL_INVALID_USAGE 5

typedef int ncclResult_t;
typedef struct ncclComm* ncclComm_t;
typedef struct { char internal[128]; } ncclUniqueId;
typedef struct ncclConfig ncclConfig_t; /* only passed through */

/* Marks this library (so that `commcost trace` and tests can tell it is loaded). */
EXPORT int commcostInterposerFormat = 1;

static pthread_mutex_t openLock = PTHREAD_MUTEX_INITIALIZER;
static int outFd = -1;
static pid_t outPid = 0;
static __thread int depth = 0;

static uint64_t nowNs(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The output of this process, opened at its first record (and again in a forked child). */
static int output(void) {
  pid_t pid = getpid();
  if (outPid == pid) return outFd;
  pthread_mutex_lock(&openLock);
  if (outPid != pid) {
    if (outFd >= 0) close(outFd);
    outFd = -1;
    const char* dir = getenv("COMMCOST_TRACE_DIR");
    if (dir && *dir) {
      char host[128] = "host";
      gethostname(host, sizeof host - 1);
      host[sizeof host - 1] = 0;
      for (char* p = host; *p; p++) if (*p == '/') *p = '_';
      char path[4096];
      snprintf(path, sizeof path, "%s/%s-%d.native.jsonl", dir, host, (int)pid);
      outFd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    }
    outPid = pid;
  }
  pthread_mutex_unlock(&openLock);
  return outFd;
}

/* JSON string body of `s` (at most 200 characters; control characters dropped). */
static const char* jsonText(const char* s, char* out, size_t cap) {
  size_t j = 0;
  if (!s) s = "";
  for (size_t i = 0; s[i] && i < 200 && j + 3 < cap; i++) {
    unsigned char ch = (unsigned char)s[i];
    if (ch == '"' || ch == '\\') { out[j++] = '\\'; out[j++] = (char)ch; }
    else if (ch >= 0x20) out[j++] = (char)ch;
  }
  out[j] = 0;
  return out;
}

/* One record, one write(2): the call's end (`ncall`), or with `start` its beginning (`ncallStart`). */
static void record(int start, const char* api, uint64_t t0, uint64_t t1, int r, void* ret, const void* comm, const void* parent) {
  int fd = output();
  if (fd < 0) return;
  char site[900] = "";
  Dl_info info;
  if (ret && dladdr(ret, &info) && info.dli_fname) {
    uintptr_t a = (uintptr_t)ret - 1; /* the call instruction is just before the return address */
    char obj[420], sym[420];
    snprintf(site, sizeof site, ",\"site\":{\"obj\":\"%s\",\"addr\":\"0x%llx\",\"base\":\"0x%llx\",\"sym\":\"%s\",\"symOff\":\"0x%llx\"}",
             jsonText(info.dli_fname, obj, sizeof obj), (unsigned long long)a, (unsigned long long)(uintptr_t)info.dli_fbase,
             jsonText(info.dli_sname, sym, sizeof sym), (unsigned long long)(info.dli_saddr ? a - (uintptr_t)info.dli_saddr : 0));
  }
  char buf[1400];
  int n = start ? snprintf(buf, sizeof buf, "{\"k\":\"ncallStart\",\"api\":\"%s\",\"t0\":%llu,\"tid\":%ld%s}\n", api, (unsigned long long)t0,
                           (long)syscall(SYS_gettid), site)
                : snprintf(buf, sizeof buf, "{\"k\":\"ncall\",\"api\":\"%s\",\"t0\":%llu,\"t1\":%llu,\"tid\":%ld,\"r\":%d,\"comm\":\"%p\",\"parent\":\"%p\"%s}\n",
                           api, (unsigned long long)t0, (unsigned long long)t1, (long)syscall(SYS_gettid), r, comm, parent, site);
  if (n <= 0) return;
  if (n >= (int)sizeof buf) { n = (int)sizeof buf - 1; buf[n - 1] = '\n'; }
  ssize_t w;
  do { w = write(fd, buf, (size_t)n); } while (w < 0 && errno == EINTR);
}

/* The next definition of `name` (the real NCCL), looked up once; NULL when it has none. */
#define NEXT(type, name)                                                            \
  static _Atomic(type) next_##name = NULL;                                          \
  static atomic_int looked_##name = 0;                                              \
  static type real_##name(void) {                                                   \
    if (!atomic_load_explicit(&looked_##name, memory_order_acquire)) {              \
      atomic_store(&next_##name, (type)dlsym(RTLD_NEXT, #name));                    \
      atomic_store_explicit(&looked_##name, 1, memory_order_release);               \
    }                                                                               \
    return atomic_load(&next_##name);                                               \
  }

/* Forwards `call` (an expression using `fn`), timing and recording it when outermost. */
#define FORWARD(name, ret, commOut, parentIn, call)                                 \
  do {                                                                              \
    __typeof__(real_##name()) fn = real_##name();                                   \
    if (!fn) {                                                                      \
      if (depth == 0) record(0, #name, nowNs(), nowNs(), -1, ret, NULL, parentIn);  \
      return NCCL_INVALID_USAGE;                                                    \
    }                                                                               \
    if (depth > 0) return call;                                                     \
    depth++;                                                                        \
    record(1, #name, nowNs(), 0, 0, ret, NULL, NULL); /* before t0: not timed */    \
    uint64_t t0 = nowNs();                                                          \
    ncclResult_t r = call;                                                          \
    uint64_t t1 = nowNs();                                                          \
    depth--;                                                                        \
    int saved = errno;                                                              \
    record(0, #name, t0, t1, r, ret, commOut, parentIn);                            \
    errno = saved;                                                                  \
    return r;                                                                       \
  } while (0)

typedef ncclResult_t (*InitRankFn)(ncclComm_t*, int, ncclUniqueId, int);
typedef ncclResult_t (*InitRankConfigFn)(ncclComm_t*, int, ncclUniqueId, int, ncclConfig_t*);
typedef ncclResult_t (*InitAllFn)(ncclComm_t*, int, const int*);
typedef ncclResult_t (*InitScalableFn)(ncclComm_t*, int, int, int, ncclUniqueId*, ncclConfig_t*);
typedef ncclResult_t (*SplitFn)(ncclComm_t, int, int, ncclComm_t*, ncclConfig_t*);
typedef ncclResult_t (*ShrinkFn)(ncclComm_t, int*, int, ncclComm_t*, ncclConfig_t*, int);
typedef ncclResult_t (*GrowFn)(ncclComm_t, int, const ncclUniqueId*, int, ncclComm_t*, ncclConfig_t*);
typedef ncclResult_t (*CommFn)(ncclComm_t);
typedef ncclResult_t (*RevokeFn)(ncclComm_t, int);

NEXT(InitRankFn, ncclCommInitRank)
NEXT(InitRankConfigFn, ncclCommInitRankConfig)
NEXT(InitAllFn, ncclCommInitAll)
NEXT(InitScalableFn, ncclCommInitRankScalable)
NEXT(SplitFn, ncclCommSplit)
NEXT(ShrinkFn, ncclCommShrink)
NEXT(GrowFn, ncclCommGrow)
NEXT(CommFn, ncclCommFinalize)
NEXT(CommFn, ncclCommDestroy)
NEXT(CommFn, ncclCommAbort)
NEXT(RevokeFn, ncclCommRevoke)

/* The communicator an out-parameter holds after the call (NULL when the call left none). */
static const void* made(ncclComm_t* out) { return out ? (const void*)*out : NULL; }

EXPORT ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank) {
  void* ret = __builtin_return_address(0);
  FORWARD(ncclCommInitRank, ret, made(comm), NULL, fn(comm, nranks, commId, rank));
}

EXPORT ncclResult_t ncclCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank, ncclConfig_t* config) {
  void* ret = __builtin_return_address(0);
  FORWARD(ncclCommInitRankConfig, ret, made(comm), NULL, fn(comm, nranks, commId, rank, config));
}

EXPORT ncclResult_t ncclCommInitAll(ncclComm_t* comm, int ndev, const int* devlist) {
  void* ret = __builtin_return_address(0);
  FORWARD(ncclCommInitAll, ret, made(comm), NULL, fn(comm, ndev, devlist));
}

EXPORT ncclResult_t ncclCommInitRankScalable(ncclComm_t* newcomm, int nranks, int myrank, int nId, ncclUniqueId* commIds, ncclConfig_t* config) {
  void* ret = __builtin_return_address(0);
  FORWARD(ncclCommInitRankScalable, ret, made(newcomm), NULL, fn(newcomm, nranks, myrank, nId, commIds, config));
}

EXPORT ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t* newcomm, ncclConfig_t* config) {
  void* ret = __builtin_return_address(0);
  FORWARD(ncclCommSplit, ret, made(newcomm), comm, fn(comm, color, key, newcomm, config));
}

EXPORT ncclResult_t ncclCommShrink(ncclComm_t comm, int* excludeRanksList, int excludeRanksCount, ncclComm_t* newcomm, ncclConfig_t* config, int shrinkFlags) {
  void* ret = __builtin_return_address(0);
  FORWARD(ncclCommShrink, ret, made(newcomm), comm, fn(comm, excludeRanksList, excludeRanksCount, newcomm, config, shrinkFlags));
}

EXPORT ncclResult_t ncclCommGrow(ncclComm_t comm, int nRanks, const ncclUniqueId* uniqueId, int rank, ncclComm_t* newcomm, ncclConfig_t* config) {
  void* ret = __builtin_return_address(0);
  FORWARD(ncclCommGrow, ret, made(newcomm), comm, fn(comm, nRanks, uniqueId, rank, newcomm, config));
}

EXPORT ncclResult_t ncclCommFinalize(ncclComm_t comm) {
  void* ret = __builtin_return_address(0);
  FORWARD(ncclCommFinalize, ret, comm, NULL, fn(comm));
}

EXPORT ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  void* ret = __builtin_return_address(0);
  FORWARD(ncclCommDestroy, ret, comm, NULL, fn(comm));
}

EXPORT ncclResult_t ncclCommAbort(ncclComm_t comm) {
  void* ret = __builtin_return_address(0);
  FORWARD(ncclCommAbort, ret, comm, NULL, fn(comm));
}

EXPORT ncclResult_t ncclCommRevoke(ncclComm_t comm, int revokeFlags) {
  void* ret = __builtin_return_address(0);
  FORWARD(ncclCommRevoke, ret, comm, NULL, fn(comm, revokeFlags));
}
