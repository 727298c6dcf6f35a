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
 * Creations NCCL pays after the call returned. Inside ncclGroupStart/End (NCCL's per-thread group
 * depth, counted here over the program's own calls) a creating call only queues its work; the
 * outermost ncclGroupEnd pays it. Such a call's record carries "group":<n> (this thread's n-th
 * outermost group), and that group's ncclGroupEnd is timed and recorded too (api "ncclGroupEnd",
 * the same "group", "creates": how many creating calls it held; an ncclGroupStart line before it),
 * but only for a group that held a creation: a group of collectives is forwarded untimed. Creations
 * record "nranks" and "rank" when the call names them (the merge joins a grouped call to NCCL's
 * communicator by them). A non-blocking creation (it returned ncclInProgress, or its group's
 * ncclGroupEnd did) completes in the background: its communicator is kept in a small table, and the
 * first ncclCommGetAsyncError that reports it no longer in progress is recorded (api
 * "ncclCommGetAsyncError", "comm", "async": the state it reported); other polls are only forwarded
 * (untimed while the table is empty). ncclCommDestroy/Abort drop a communicator from the table.
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
static void record(int start, const char* api, uint64_t t0, uint64_t t1, int r, void* ret, const void* comm, const void* parent, const char* extra) {
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
  int n = start ? snprintf(buf, sizeof buf, "{\"k\":\"ncallStart\",\"api\":\"%s\",\"t0\":%llu,\"tid\":%ld%s%s}\n", api, (unsigned long long)t0,
                           (long)syscall(SYS_gettid), extra, site)
                : snprintf(buf, sizeof buf, "{\"k\":\"ncall\",\"api\":\"%s\",\"t0\":%llu,\"t1\":%llu,\"tid\":%ld,\"r\":%d,\"comm\":\"%p\",\"parent\":\"%p\"%s%s}\n",
                           api, (unsigned long long)t0, (unsigned long long)t1, (long)syscall(SYS_gettid), r, comm, parent, extra, site);
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

/* Forwards `call` (an expression using `fn`), timing and recording it when outermost; `done` (a
 * function) writes the record of a finished call. */
#define FORWARD_WITH(name, ret, commOut, parentIn, call, done)                        \
  do {                                                                              \
    __typeof__(real_##name()) fn = real_##name();                                   \
    if (!fn) {                                                                      \
      if (depth == 0) record(0, #name, nowNs(), nowNs(), -1, ret, NULL, parentIn, ""); \
      return NCCL_INVALID_USAGE;                                                    \
    }                                                                               \
    if (depth > 0) return call;                                                     \
    depth++;                                                                        \
    record(1, #name, nowNs(), 0, 0, ret, NULL, NULL, ""); /* before t0: not timed */ \
    uint64_t t0 = nowNs();                                                          \
    ncclResult_t r = call;                                                          \
    uint64_t t1 = nowNs();                                                          \
    depth--;                                                                        \
    int saved = errno;                                                              \
    done;                                                                           \
    errno = saved;                                                                  \
    return r;                                                                       \
  } while (0)
#define FORWARD(name, ret, commOut, parentIn, call) \
  FORWARD_WITH(name, ret, commOut, parentIn, call, record(0, #name, t0, t1, r, ret, commOut, parentIn, ""))
/* A creating call: recorded with its group (inside one), nranks and rank (-1: the call names none). */
#define CREATE(name, ret, commOut, parentIn, nr, rk, call) \
  FORWARD_WITH(name, ret, commOut, parentIn, call, created(#name, t0, t1, r, ret, commOut, parentIn, nr, rk))

#define NCCL_IN_PROGRESS 7

/* The program's group state on this thread (its own ncclGroupStart/End calls, outermost only). */
static __thread int groupDepth = 0;
static __thread unsigned groupSeq = 0;   /* outermost groups this thread opened */
static __thread int groupCreates = 0;    /* creating calls in the open group */
#define GROUP_COMMS 64
static __thread const void* groupComms[GROUP_COMMS]; /* their communicators (non-blocking: kept pending) */
static __thread int groupNComms = 0;

/* Communicators whose non-blocking creation has not been seen complete (see the header). */
#define PENDING_MAX 256
static pthread_mutex_t pendingLock = PTHREAD_MUTEX_INITIALIZER;
static const void* pending[PENDING_MAX];
static atomic_int pendingCount = 0;

static void pendingAdd(const void* comm) {
  if (!comm) return;
  pthread_mutex_lock(&pendingLock);
  int free_ = -1, known = 0;
  for (int i = 0; i < PENDING_MAX; i++) {
    if (pending[i] == comm) known = 1;
    else if (!pending[i] && free_ < 0) free_ = i;
  }
  if (!known && free_ >= 0) { pending[free_] = comm; atomic_fetch_add(&pendingCount, 1); }
  pthread_mutex_unlock(&pendingLock);
}

/* 1 when `comm` was pending (it is no longer). */
static int pendingTake(const void* comm) {
  if (!comm || atomic_load_explicit(&pendingCount, memory_order_relaxed) == 0) return 0;
  int was = 0;
  pthread_mutex_lock(&pendingLock);
  for (int i = 0; i < PENDING_MAX; i++)
    if (pending[i] == comm) { pending[i] = NULL; was = 1; atomic_fetch_sub(&pendingCount, 1); break; }
  pthread_mutex_unlock(&pendingLock);
  return was;
}

/* The record of a finished creating call; inside a group, the call joins the group's count. */
static void created(const char* api, uint64_t t0, uint64_t t1, int r, void* ret, const void* comm, const void* parent, int nranks, int rank) {
  char extra[96] = "";
  size_t n = 0;
  if (nranks >= 0) n += (size_t)snprintf(extra + n, sizeof extra - n, ",\"nranks\":%d", nranks);
  if (nranks >= 0 && rank >= 0) n += (size_t)snprintf(extra + n, sizeof extra - n, ",\"rank\":%d", rank);
  if (groupDepth > 0) {
    snprintf(extra + n, sizeof extra - n, ",\"group\":%u", groupSeq);
    groupCreates++;
    if (comm && groupNComms < GROUP_COMMS) groupComms[groupNComms++] = comm;
  } else if (r == NCCL_IN_PROGRESS) {
    pendingAdd(comm);
  }
  record(0, api, t0, t1, r, ret, comm, parent, extra);
}

typedef ncclResult_t (*InitRankFn)(ncclComm_t*, int, ncclUniqueId, int);
typedef ncclResult_t (*InitRankConfigFn)(ncclComm_t*, int, ncclUniqueId, int, ncclConfig_t*);
typedef ncclResult_t (*InitAllFn)(ncclComm_t*, int, const int*);
typedef ncclResult_t (*InitScalableFn)(ncclComm_t*, int, int, int, ncclUniqueId*, ncclConfig_t*);
typedef ncclResult_t (*SplitFn)(ncclComm_t, int, int, ncclComm_t*, ncclConfig_t*);
typedef ncclResult_t (*ShrinkFn)(ncclComm_t, int*, int, ncclComm_t*, ncclConfig_t*, int);
typedef ncclResult_t (*GrowFn)(ncclComm_t, int, const ncclUniqueId*, int, ncclComm_t*, ncclConfig_t*);
typedef ncclResult_t (*CommFn)(ncclComm_t);
typedef ncclResult_t (*RevokeFn)(ncclComm_t, int);
typedef ncclResult_t (*GroupFn)(void);
typedef ncclResult_t (*AsyncErrorFn)(ncclComm_t, ncclResult_t*);

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
NEXT(GroupFn, ncclGroupStart)
NEXT(GroupFn, ncclGroupEnd)
NEXT(AsyncErrorFn, ncclCommGetAsyncError)

/* The communicator an out-parameter holds after the call (NULL when the call left none). */
static const void* made(ncclComm_t* out) { return out ? (const void*)*out : NULL; }

EXPORT ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank) {
  void* ret = __builtin_return_address(0);
  CREATE(ncclCommInitRank, ret, made(comm), NULL, nranks, rank, fn(comm, nranks, commId, rank));
}

EXPORT ncclResult_t ncclCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank, ncclConfig_t* config) {
  void* ret = __builtin_return_address(0);
  CREATE(ncclCommInitRankConfig, ret, made(comm), NULL, nranks, rank, fn(comm, nranks, commId, rank, config));
}

EXPORT ncclResult_t ncclCommInitAll(ncclComm_t* comm, int ndev, const int* devlist) {
  void* ret = __builtin_return_address(0);
  CREATE(ncclCommInitAll, ret, made(comm), NULL, ndev, -1, fn(comm, ndev, devlist));
}

EXPORT ncclResult_t ncclCommInitRankScalable(ncclComm_t* newcomm, int nranks, int myrank, int nId, ncclUniqueId* commIds, ncclConfig_t* config) {
  void* ret = __builtin_return_address(0);
  CREATE(ncclCommInitRankScalable, ret, made(newcomm), NULL, nranks, myrank, fn(newcomm, nranks, myrank, nId, commIds, config));
}

EXPORT ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t* newcomm, ncclConfig_t* config) {
  void* ret = __builtin_return_address(0);
  CREATE(ncclCommSplit, ret, made(newcomm), comm, -1, -1, fn(comm, color, key, newcomm, config));
}

EXPORT ncclResult_t ncclCommShrink(ncclComm_t comm, int* excludeRanksList, int excludeRanksCount, ncclComm_t* newcomm, ncclConfig_t* config, int shrinkFlags) {
  void* ret = __builtin_return_address(0);
  CREATE(ncclCommShrink, ret, made(newcomm), comm, -1, -1, fn(comm, excludeRanksList, excludeRanksCount, newcomm, config, shrinkFlags));
}

EXPORT ncclResult_t ncclCommGrow(ncclComm_t comm, int nRanks, const ncclUniqueId* uniqueId, int rank, ncclComm_t* newcomm, ncclConfig_t* config) {
  void* ret = __builtin_return_address(0);
  CREATE(ncclCommGrow, ret, made(newcomm), comm, nRanks, rank, fn(comm, nRanks, uniqueId, rank, newcomm, config));
}

EXPORT ncclResult_t ncclCommFinalize(ncclComm_t comm) {
  void* ret = __builtin_return_address(0);
  FORWARD(ncclCommFinalize, ret, comm, NULL, fn(comm));
}

EXPORT ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  void* ret = __builtin_return_address(0);
  pendingTake(comm);
  FORWARD(ncclCommDestroy, ret, comm, NULL, fn(comm));
}

EXPORT ncclResult_t ncclCommAbort(ncclComm_t comm) {
  void* ret = __builtin_return_address(0);
  pendingTake(comm);
  FORWARD(ncclCommAbort, ret, comm, NULL, fn(comm));
}

EXPORT ncclResult_t ncclCommRevoke(ncclComm_t comm, int revokeFlags) {
  void* ret = __builtin_return_address(0);
  FORWARD(ncclCommRevoke, ret, comm, NULL, fn(comm, revokeFlags));
}

/* Counts the program's group depth; never recorded (a group is timed at its end, when it created). */
EXPORT ncclResult_t ncclGroupStart(void) {
  GroupFn fn = real_ncclGroupStart();
  if (!fn) return NCCL_INVALID_USAGE;
  ncclResult_t r = fn();
  if (depth == 0 && r == 0 && groupDepth++ == 0) { groupSeq++; groupCreates = 0; groupNComms = 0; }
  return r;
}

/* The outermost end of a group that held a creating call: timed and recorded (it pays them). */
EXPORT ncclResult_t ncclGroupEnd(void) {
  void* ret = __builtin_return_address(0);
  GroupFn fn = real_ncclGroupEnd();
  if (!fn) return NCCL_INVALID_USAGE;
  if (depth > 0 || groupDepth == 0 || --groupDepth > 0 || groupCreates == 0) return fn();
  char extra[64];
  snprintf(extra, sizeof extra, ",\"group\":%u,\"creates\":%d", groupSeq, groupCreates);
  groupCreates = 0;
  depth++;
  record(1, "ncclGroupEnd", nowNs(), 0, 0, ret, NULL, NULL, extra);
  uint64_t t0 = nowNs();
  ncclResult_t r = fn();
  uint64_t t1 = nowNs();
  depth--;
  int saved = errno;
  if (r == NCCL_IN_PROGRESS) for (int i = 0; i < groupNComms; i++) pendingAdd(groupComms[i]);
  groupNComms = 0;
  record(0, "ncclGroupEnd", t0, t1, r, ret, NULL, NULL, extra);
  errno = saved;
  return r;
}

/* Forwarded; the first poll that sees a pending non-blocking creation done is recorded. */
EXPORT ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* asyncError) {
  void* ret = __builtin_return_address(0);
  AsyncErrorFn fn = real_ncclCommGetAsyncError();
  if (!fn) return NCCL_INVALID_USAGE;
  if (depth > 0 || atomic_load_explicit(&pendingCount, memory_order_relaxed) == 0) return fn(comm, asyncError);
  uint64_t t0 = nowNs();
  ncclResult_t r = fn(comm, asyncError);
  uint64_t t1 = nowNs();
  if (r == 0 && asyncError && *asyncError != NCCL_IN_PROGRESS && pendingTake(comm)) {
    int saved = errno;
    char extra[32];
    snprintf(extra, sizeof extra, ",\"async\":%d", (int)*asyncError);
    record(0, "ncclCommGetAsyncError", t0, t1, r, ret, comm, NULL, extra);
    errno = saved;
  }
  return r;
}
