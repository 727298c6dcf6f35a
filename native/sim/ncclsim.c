/*
 * ncclsim.c: a simulated NCCL and CUDA driver API in one shared library (test fixture).
 *
 * The commcost addon loads this file as both ncclPath and cudaPath. It exports the nccl* and cu*
 * symbols the addon uses plus `commcostSimulated`, so every run against it is labelled simulated.
 *
 * Model
 * - One process = one rank = one device. Device memory is a counter per process: cuMemAlloc and
 *   communicators (COMMCOST_SIM_COMM_BYTES at creation, COMMCOST_SIM_CONNECT_BYTES at the first
 *   collective) consume it; cuMemGetInfo reports it.
 * - ncclGetUniqueId starts (once per process) a rendezvous server on 127.0.0.1:<ephemeral> (or
 *   on COMMCOST_SIM_ADDR:<ephemeral>) and writes its address and a random 64-bit communicator tag
 *   into the 128-byte id.
 * - Init, split, allreduce and finalize are rendezvous: each rank connects to the server, sends
 *   (tag, seq, nranks, rank, payload) and blocks until all nranks have arrived for that (tag, seq);
 *   then every rank gets all payloads back. A rank that never calls blocks the others forever.
 *   Costs (sleeps) are applied after the rendezvous completes.
 * - ncclCommAbort is local: it shuts down the socket of a thread of this process blocked in a
 *   rendezvous on that communicator, which then returns ncclRemoteError.
 *
 * - The device "stream" is one queue per process served by a background thread: ncclAllReduce
 *   only enqueues (validation and the HANG/FAIL hooks run in the call); the stream thread does the
 *   rendezvous and the cost sleep; cuStreamSynchronize waits until the queue is empty. A failed op
 *   sets the communicator's async error (ncclCommGetAsyncError). Sleeps on the stream end early
 *   when the communicator is aborted, revoked or shrunk with NCCL_SHRINK_ABORT.
 * - Connect (COMMCOST_SIM_CONNECT_MS / _CONNECT_BYTES) happens at the first collective (runtime
 *   connect, NCCL >= 2.22 default) or inside init/split/shrink/grow when NCCL_RUNTIME_CONNECT=0 or
 *   COMMCOST_SIM_VERSION < 22200. A 1-rank communicator never pays it.
 * - Non-blocking init (config.blocking = 0) returns ncclInProgress at once and runs on its own
 *   thread; ncclCommAbort interrupts it.
 * - Version gates inside the library (symbols are always exported): ncclCommGetUniqueId and
 *   ncclCommGrow answer ncclInvalidUsage below 22902, ncclCommSuspend/Resume/MemStats below 22907
 *   (lastError "... is not supported in simulated 2.28.9"). The addon itself refuses these calls
 *   with ARG when the loaded version is older than the function's first release.
 *   Build with -DCOMMCOST_SIM_LEGACY (dist/native/libnccl-sim-legacy.so) for a library that lacks
 *   every symbol newer than 2.19 (shrink, grow, revoke, windows, suspend), default version 2.26.2.
 * - Cold first creation: the first communicator a process creates (init, split, shrink or grow)
 *   pays COMMCOST_SIM_KERNELS_MS once more, the CUDA module ("kernel") load NCCL does in its first
 *   communicator (0 by default, so other tests' first inits are unchanged; one value, or a comma
 *   list by rank in the new communicator: rank r pays item r, ranks beyond the list the last
 *   item), after the rendezvous like every cost.
 * - NCCL's own log: with NCCL_DEBUG=INFO (or TRACE) and NCCL_DEBUG_SUBSYS unset or naming INIT
 *   (or ALL; a leading ^ excludes), ncclCommInitRank/Config write NCCL-like INFO lines, among them
 *   from version 2.23.4 on "Init timings - <fn>: rank R nranks N total T (kernels K, alloc 0.00,
 *   bootstrap B, allgathers 0.00, topo 0.00, graphs 0.00, connections 0.00, rest X)" (seconds,
 *   measured: bootstrap = the rendezvous, kernels = the kernel load, rest = the remainder), to
 *   NCCL_DEBUG_FILE (%h host, %p pid, %% a percent sign) or else stdout. Test hook:
 *   COMMCOST_SIM_INIT_TIMINGS_GARBLED=1 writes an unreadable "Init timings" line before each one.
 * - In-flight work and its data (the drain and drop checks): cuEventRecord puts a marker on the
 *   stream behind the work already queued; cuEventQuery answers CUDA_ERROR_NOT_READY (600) until
 *   the stream thread reaches it, so work is observably in flight while the stream's host-side
 *   timer (rendezvous + bytes / COMMCOST_SIM_BW_GBPS) runs. Device data is modelled as uniform
 *   float32 ranges: cuMemsetD32/D8 write one, a float32-sum allreduce that completes writes its
 *   receive range with the sum of every rank's value (carried in its rendezvous), cuMemcpyDtoH_v2
 *   reads them back; an allreduce dropped by ncclCommRevoke, ncclCommAbort or NCCL_SHRINK_ABORT
 *   before it finished writes nothing.
 * - CUDA graphs: cuStreamBeginCapture_v2 .. cuStreamEndCapture records the allreduces enqueued in
 *   between (not run; each one recorded costs COMMCOST_SIM_CAPTURE_MS, 0 by default, so a test
 *   can tell a timed capture from none); cuGraphInstantiateWithFlags costs COMMCOST_SIM_GRAPH_MS; cuGraphLaunch
 *   enqueues the recorded ops again (each launch is a new rendezvous).
 *
 * Environment (read once, at first use): COMMCOST_SIM_ADDR (IPv4 dotted address, e.g. 10.1.2.3:
 * the rendezvous server binds to it and the unique id carries it, so ranks on other hosts or in
 * other network namespaces can reach it; unset or empty = 127.0.0.1 as before; a value that is
 * not a unicast IPv4 address, or not an address of this host (bind: EADDRNOTAVAIL), fails
 * ncclGetUniqueId with ncclInvalidArgument and a lastError naming the variable and the value),
 * COMMCOST_SIM_VERSION, COMMCOST_SIM_GPUS,
 * COMMCOST_SIM_KERNELS_MS (0, see "Cold first creation"),
 * COMMCOST_SIM_COMM_BYTES, COMMCOST_SIM_CONNECT_BYTES, COMMCOST_SIM_INIT_MS, COMMCOST_SIM_SPLIT_MS,
 * COMMCOST_SIM_CONNECT_MS, COMMCOST_SIM_BW_GBPS, COMMCOST_SIM_FINALIZE_MS, COMMCOST_SIM_DESTROY_MS,
 * COMMCOST_SIM_ABORT_MS, COMMCOST_SIM_UNIQUEID_MS, COMMCOST_SIM_CUINIT_MS, COMMCOST_SIM_JITTER,
 * COMMCOST_SIM_SHRINK_MS (20; NCCL_SHRINK_ABORT adds COMMCOST_SIM_ABORT_MS/2 of drain),
 * COMMCOST_SIM_GROW_MS (30), COMMCOST_SIM_REVOKE_MS (25: ncclCommRevoke returns ncclInProgress and
 * ncclCommGetAsyncError reports success after that long), COMMCOST_SIM_REGISTER_MS (0.05, each of
 * register and deregister), COMMCOST_SIM_REG_FIRST_MS (2: the first collective using a registered
 * buffer), COMMCOST_SIM_WINDOW_MS (3, collective window register), COMMCOST_SIM_WINDOW_DEREG_MS
 * (0.5), COMMCOST_SIM_MEMALLOC_MS (0, ncclMemAlloc), COMMCOST_SIM_SUSPEND_MS (1),
 * COMMCOST_SIM_RESUME_MS (5), COMMCOST_SIM_GRAPH_MS (0.3, cuGraphInstantiateWithFlags),
 * COMMCOST_SIM_CAPTURE_MS (0, each collective recorded during stream capture),
 * NCCL_RUNTIME_CONNECT (0 = connect inside creation), splitShare (config) and
 * NCCL_COMM_SPLIT_SHARE_RESOURCES (split children then take no memory and reuse the parent's
 * connections),
 * COMMCOST_SIM_DESTROY_BARRIER_VERSION (23102, i.e. 2.31.2; field case C5, pytorch/pytorch#194679:
 * when COMMCOST_SIM_VERSION is at least this, ncclCommDestroy of a communicator this rank shrank
 * with NCCL_SHRINK_ABORT waits until every rank of it has called ncclCommDestroy on it, the
 * intra-node barrier NCCL 2.31.2 reportedly added to destroy and that ncclCommAbort skips: the
 * survivors block forever when the excluded rank aborts the parent or never releases it. To be
 * counted, every ncclCommDestroy of a multi-rank communicator then announces itself to that
 * barrier without waiting. Nothing else waits there; below this version destroy stays local),
 * COMMCOST_SIM_ALGO_REFUSED (a NCCL_ALGO value, e.g. Tree: while NCCL_ALGO is exactly that,
 * ncclAllReduce fails with ncclInvalidUsage and NCCL's text "no algorithm/protocol available ...",
 * as NCCL does when the algorithms it may use cannot run the collective; unset: NCCL_ALGO is
 * accepted and changes nothing in the simulated costs),
 * COMMCOST_SIM_HANG="<fn>:<rank>", COMMCOST_SIM_FAIL="<fn>:<rank>" (every nccl* function that takes
 * a communicator or creates one; <rank> is the rank in the parent, or in the new communicator for
 * init and grow).
 *
 * Profiler plugin (region "Profiler plugin" below): with NCCL_PROFILER_PLUGIN=<path, or a name
 * for libnccl-profiler-<name>.so> the library dlopens it once and takes ncclProfiler_v6, _v5 or
 * _v4, the newest the simulated version knows (v6 from 2.29.2, v5 from 2.28.3, v4 from 2.27.3;
 * older: none), the way NCCL does; unset or "none": no plugin. `init` runs at every creation after
 * the rendezvous (bootstrap) and before the connect, with the communicator's tag as commId; each
 * ncclAllReduce is a GroupApi span holding a CollApi span (v5+; v4: Group holding Coll), and the
 * first one on a communicator that is not connected waits inside the GroupApi span until its
 * connect is done (NCCL's lazy connect runs in the first group launch); `finalize` runs at the end
 * of ncclCommDestroy and ncclCommAbort. Without a plugin nothing changes.
 *
 * Plain C11 + pthreads; build: cc -std=c11 -O2 -fPIC -shared -pthread ncclsim.c -o libnccl-sim.so
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <dlfcn.h>

#include "../profiler/profilerAbi.h"

#define EXPORT __attribute__((visibility("default")))

EXPORT int commcostSimulated = 1;

/* ------------------------------------------------------------------------------------------ */
/* Types (ABI-compatible with nccl.h / cuda.h)                                                 */

typedef int ncclResult_t;
enum { ncclSuccess = 0, ncclUnhandledCudaError = 1, ncclSystemError = 2, ncclInternalError = 3,
       ncclInvalidArgument = 4, ncclInvalidUsage = 5, ncclRemoteError = 6, ncclInProgress = 7 };
typedef struct { char internal[128]; } ncclUniqueId;
typedef struct SimComm* ncclComm_t;

typedef int CUresult;
typedef int CUdevice;
typedef void* CUcontext;
typedef void* CUstream;
typedef unsigned long long CUdeviceptr;
enum { CUDA_SUCCESS = 0, CUDA_ERROR_INVALID_VALUE = 1, CUDA_ERROR_OUT_OF_MEMORY = 2,
       CUDA_ERROR_NOT_INITIALIZED = 3, CUDA_ERROR_NO_DEVICE = 100, CUDA_ERROR_INVALID_DEVICE = 101,
       CUDA_ERROR_ILLEGAL_STATE = 401, CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED = 900 };

/* ------------------------------------------------------------------------------------------ */
/* Settings                                                                                     */

typedef struct {
  int version, gpus, runtimeConnect;
  double commBytes, connectBytes;
  double initMs, splitMs, connectMs, bwGBps, finalizeMs, destroyMs, abortMs, uniqueIdMs, cuInitMs, jitter;
  double shrinkMs, growMs, revokeMs, registerMs, regFirstMs, windowMs, windowDeregMs, memAllocMs;
  double suspendMs, resumeMs, graphMs, captureMs;
  int destroyBarrierVersion; /* COMMCOST_SIM_DESTROY_BARRIER_VERSION (C5) */
  double kernelsMs[16]; int kernelsCount; /* COMMCOST_SIM_KERNELS_MS: per rank, the last repeats */
  char algoRefused[64];      /* COMMCOST_SIM_ALGO_REFUSED: refuse allreduce while NCCL_ALGO is this */
  char hangFn[64]; int hangRank;
  char failFn[64]; int failRank;
  /* COMMCOST_SIM_ADDR: rendezvous address (network order); addrError != "" when the value is bad. */
  uint32_t addr; int addrSet; char addrText[64]; char addrError[160];
} SimSettings;

static SimSettings S;
static pthread_once_t settingsOnce = PTHREAD_ONCE_INIT;

static double envNum(const char* name, double def) {
  const char* v = getenv(name);
  if (!v || !*v) return def;
  char* end = NULL;
  double d = strtod(v, &end);
  return end == v ? def : d;
}

static void parseHook(const char* name, char* fn, size_t fnLen, int* rank) {
  fn[0] = 0; *rank = -1;
  const char* v = getenv(name);
  if (!v || !*v) return;
  const char* colon = strrchr(v, ':');
  size_t n = colon ? (size_t)(colon - v) : strlen(v);
  if (n >= fnLen) n = fnLen - 1;
  memcpy(fn, v, n); fn[n] = 0;
  *rank = colon ? atoi(colon + 1) : -1; /* -1: every rank */
}

/* COMMCOST_SIM_ADDR: unset or empty = loopback; else a unicast IPv4 dotted address (inet_pton). */
static void parseAddr(void) {
  const char* v = getenv("COMMCOST_SIM_ADDR");
  S.addr = htonl(INADDR_LOOPBACK);
  S.addrSet = 0; S.addrText[0] = 0; S.addrError[0] = 0;
  if (!v || !*v) return;
  S.addrSet = 1;
  if (strlen(v) < 48) snprintf(S.addrText, sizeof S.addrText, "%s", v);
  else snprintf(S.addrText, sizeof S.addrText, "%.40s...", v); /* quoted in errors: keep it short */
  struct in_addr a;
  if (inet_pton(AF_INET, v, &a) != 1) {
    snprintf(S.addrError, sizeof S.addrError, "COMMCOST_SIM_ADDR=\"%s\" is not an IPv4 dotted address (e.g. 10.0.0.2)",
             S.addrText);
    return;
  }
  uint32_t h = ntohl(a.s_addr);
  if (h == INADDR_ANY || h == INADDR_BROADCAST || (h >> 28) == 0xe) {
    snprintf(S.addrError, sizeof S.addrError,
             "COMMCOST_SIM_ADDR=\"%s\" is not a unicast address the other ranks can connect to", S.addrText);
    return;
  }
  S.addr = a.s_addr;
}

/* COMMCOST_SIM_KERNELS_MS: "150" or "100,300" (ms by rank); unset or unreadable = 0. */
static void parseKernels(void) {
  const char* v = getenv("COMMCOST_SIM_KERNELS_MS");
  S.kernelsCount = 0;
  while (v && *v && S.kernelsCount < 16) {
    char* end = NULL;
    double d = strtod(v, &end);
    if (end == v || d < 0) break;
    S.kernelsMs[S.kernelsCount++] = d;
    v = *end == ',' ? end + 1 : end;
    if (*end != ',') break;
  }
  if (S.kernelsCount == 0) { S.kernelsMs[0] = 0; S.kernelsCount = 1; }
}

static void loadSettings(void) {
#ifdef COMMCOST_SIM_LEGACY
  S.version = (int)envNum("COMMCOST_SIM_VERSION", 22602);
#else
  S.version = (int)envNum("COMMCOST_SIM_VERSION", 22809);
#endif
  S.gpus = (int)envNum("COMMCOST_SIM_GPUS", 2);
  S.commBytes = envNum("COMMCOST_SIM_COMM_BYTES", 200.0 * 1024 * 1024);
  S.connectBytes = envNum("COMMCOST_SIM_CONNECT_BYTES", 60.0 * 1024 * 1024);
  S.initMs = envNum("COMMCOST_SIM_INIT_MS", 40);
  S.splitMs = envNum("COMMCOST_SIM_SPLIT_MS", 20);
  S.connectMs = envNum("COMMCOST_SIM_CONNECT_MS", 50);
  S.bwGBps = envNum("COMMCOST_SIM_BW_GBPS", 200);
  S.finalizeMs = envNum("COMMCOST_SIM_FINALIZE_MS", 5);
  S.destroyMs = envNum("COMMCOST_SIM_DESTROY_MS", 3);
  S.abortMs = envNum("COMMCOST_SIM_ABORT_MS", 30);
  S.uniqueIdMs = envNum("COMMCOST_SIM_UNIQUEID_MS", 2);
  S.cuInitMs = envNum("COMMCOST_SIM_CUINIT_MS", 100);
  S.jitter = envNum("COMMCOST_SIM_JITTER", 0.05);
  S.shrinkMs = envNum("COMMCOST_SIM_SHRINK_MS", 20);
  S.growMs = envNum("COMMCOST_SIM_GROW_MS", 30);
  S.revokeMs = envNum("COMMCOST_SIM_REVOKE_MS", 25);
  S.registerMs = envNum("COMMCOST_SIM_REGISTER_MS", 0.05);
  S.regFirstMs = envNum("COMMCOST_SIM_REG_FIRST_MS", 2);
  S.windowMs = envNum("COMMCOST_SIM_WINDOW_MS", 3);
  S.windowDeregMs = envNum("COMMCOST_SIM_WINDOW_DEREG_MS", 0.5);
  S.memAllocMs = envNum("COMMCOST_SIM_MEMALLOC_MS", 0);
  S.suspendMs = envNum("COMMCOST_SIM_SUSPEND_MS", 1);
  S.resumeMs = envNum("COMMCOST_SIM_RESUME_MS", 5);
  S.graphMs = envNum("COMMCOST_SIM_GRAPH_MS", 0.3);
  S.captureMs = envNum("COMMCOST_SIM_CAPTURE_MS", 0);
  S.destroyBarrierVersion = (int)envNum("COMMCOST_SIM_DESTROY_BARRIER_VERSION", 23102);
  {
    const char* refused = getenv("COMMCOST_SIM_ALGO_REFUSED");
    snprintf(S.algoRefused, sizeof S.algoRefused, "%s", refused ? refused : "");
  }
  {
    const char* rc = getenv("NCCL_RUNTIME_CONNECT");
    /* Runtime (lazy) connect exists from 2.22; NCCL_RUNTIME_CONNECT=0 turns it off. */
    S.runtimeConnect = S.version >= 22200 && !(rc && strcmp(rc, "0") == 0);
  }
  parseAddr();
  parseKernels();
  parseHook("COMMCOST_SIM_HANG", S.hangFn, sizeof S.hangFn, &S.hangRank);
  parseHook("COMMCOST_SIM_FAIL", S.failFn, sizeof S.failFn, &S.failRank);
  srand((unsigned)(getpid() ^ time(NULL)));
}

static const SimSettings* settings(void) {
  pthread_once(&settingsOnce, loadSettings);
  return &S;
}

/* ------------------------------------------------------------------------------------------ */
/* Small helpers                                                                                */

static pthread_mutex_t simLock = PTHREAD_MUTEX_INITIALIZER; /* memory, rng, last error */
static char lastError[512] = "";

static void setLastError(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
static void setLastError(const char* fmt, ...) {
  __builtin_va_list ap;
  __builtin_va_start(ap, fmt);
  pthread_mutex_lock(&simLock);
  vsnprintf(lastError, sizeof lastError, fmt, ap);
  pthread_mutex_unlock(&simLock);
  __builtin_va_end(ap);
}

static double nowMs(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void sleepMs(double ms) {
  if (ms <= 0) return;
  struct timespec ts;
  ts.tv_sec = (time_t)(ms / 1000.0);
  ts.tv_nsec = (long)((ms - (double)ts.tv_sec * 1000.0) * 1e6);
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {}
}

/* ms scaled by a uniform factor in [1 - jitter, 1 + jitter]. */
static double jittered(double ms) {
  pthread_mutex_lock(&simLock);
  double u = (double)rand() / (double)RAND_MAX;
  pthread_mutex_unlock(&simLock);
  return ms * (1.0 + settings()->jitter * (2.0 * u - 1.0));
}

static uint64_t random64(void) {
  uint64_t v = 0;
  int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
  if (fd >= 0) { if (read(fd, &v, sizeof v) != (ssize_t)sizeof v) v = 0; close(fd); }
  if (v == 0) {
    struct timespec ts; clock_gettime(CLOCK_MONOTONIC, &ts);
    v = ((uint64_t)getpid() << 32) ^ (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 20);
  }
  return v;
}

static uint64_t mix64(uint64_t x) { /* splitmix64 finalizer */
  x ^= x >> 30; x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27; x *= 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

static int writeAll(int fd, const void* buf, size_t n) {
  const char* p = (const char*)buf;
  while (n > 0) {
    ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return -1;
    p += w; n -= (size_t)w;
  }
  return 0;
}

static int readAll(int fd, void* buf, size_t n) {
  char* p = (char*)buf;
  while (n > 0) {
    ssize_t r = recv(fd, p, n, 0);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return -1;
    p += r; n -= (size_t)r;
  }
  return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* Device memory (one device per process)                                                      */

#define DEVICE_BYTES (80ULL * 1024 * 1024 * 1024)
static unsigned long long memUsed = 0;
typedef struct Alloc { CUdeviceptr ptr; size_t bytes; int cumem; struct Alloc* next; } Alloc;
static Alloc* allocs = NULL;
static CUdeviceptr nextPtr = 0x7f0000000000ULL;

static int memCharge(double bytes) {
  pthread_mutex_lock(&simLock);
  unsigned long long b = (unsigned long long)bytes;
  int ok = memUsed + b <= DEVICE_BYTES;
  if (ok) memUsed += b;
  pthread_mutex_unlock(&simLock);
  return ok;
}

static void memRelease(unsigned long long bytes) {
  pthread_mutex_lock(&simLock);
  memUsed = bytes > memUsed ? 0 : memUsed - bytes;
  pthread_mutex_unlock(&simLock);
}

/* ------------------------------------------------------------------------------------------ */
/* Device data (the drop check of in-flight work)                                              */
/* Device memory holds no bytes; what it holds is modelled as uniform float32 ranges, newest
 * first: cuMemsetD32/D8 write one, an allreduce that completes writes its receive range with the
 * sum of every rank's value at its send buffer (the first float of it: ranges are uniform), and
 * cuMemcpyDtoH reads them back (0 where nothing was written). A dropped allreduce (revoked,
 * aborted, shrunk with NCCL_SHRINK_ABORT before it finished) writes nothing. */

typedef struct Fill { uintptr_t ptr; size_t bytes; float value; struct Fill* next; } Fill;
static pthread_mutex_t dataLock = PTHREAD_MUTEX_INITIALIZER;
static Fill* fills = NULL;

/* Drops every range inside [ptr, ptr+bytes) (caller holds dataLock). */
static void dataForgetLocked(uintptr_t ptr, size_t bytes) {
  Fill** link = &fills;
  while (*link) {
    Fill* f = *link;
    if (f->ptr >= ptr && f->ptr + f->bytes <= ptr + bytes) { *link = f->next; free(f); }
    else link = &f->next;
  }
}

static void dataWrite(uintptr_t ptr, size_t bytes, float value) {
  if (!ptr || !bytes) return;
  Fill* f = (Fill*)calloc(1, sizeof *f);
  if (!f) return;
  f->ptr = ptr; f->bytes = bytes; f->value = value;
  pthread_mutex_lock(&dataLock);
  dataForgetLocked(ptr, bytes);
  f->next = fills;
  fills = f;
  pthread_mutex_unlock(&dataLock);
}

static float dataRead(uintptr_t ptr) {
  float v = 0.0f;
  pthread_mutex_lock(&dataLock);
  for (Fill* f = fills; f; f = f->next) if (ptr >= f->ptr && ptr < f->ptr + f->bytes) { v = f->value; break; }
  pthread_mutex_unlock(&dataLock);
  return v;
}

static void dataForget(uintptr_t ptr, size_t bytes) {
  pthread_mutex_lock(&dataLock);
  dataForgetLocked(ptr, bytes);
  pthread_mutex_unlock(&dataLock);
}

/* ------------------------------------------------------------------------------------------ */
/* CUDA driver API                                                                              */

static int cuInitialized = 0;
static int primaryCtxMade = 0;
static char ctxToken[64];
static char streamTokens[64];
static int streamCount = 0;

EXPORT CUresult cuInit(unsigned int flags) {
  (void)flags;
  settings();
  cuInitialized = 1;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuDriverGetVersion(int* v) {
  if (!v) return CUDA_ERROR_INVALID_VALUE;
  *v = 13000;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGetCount(int* n) {
  if (!cuInitialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (!n) return CUDA_ERROR_INVALID_VALUE;
  *n = settings()->gpus;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGet(CUdevice* d, int ordinal) {
  if (!cuInitialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (!d) return CUDA_ERROR_INVALID_VALUE;
  if (ordinal < 0 || ordinal >= settings()->gpus) return CUDA_ERROR_INVALID_DEVICE;
  *d = ordinal;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGetName(char* name, int len, CUdevice d) {
  if (!cuInitialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (!name || len <= 0) return CUDA_ERROR_INVALID_VALUE;
  if (d < 0 || d >= settings()->gpus) return CUDA_ERROR_INVALID_DEVICE;
  snprintf(name, (size_t)len, "Simulated GPU");
  return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceTotalMem_v2(size_t* bytes, CUdevice d) {
  if (!cuInitialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (!bytes) return CUDA_ERROR_INVALID_VALUE;
  if (d < 0 || d >= settings()->gpus) return CUDA_ERROR_INVALID_DEVICE;
  *bytes = (size_t)DEVICE_BYTES;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGetPCIBusId(char* id, int len, CUdevice d) {
  if (!cuInitialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (!id || len <= 0) return CUDA_ERROR_INVALID_VALUE;
  if (d < 0 || d >= settings()->gpus) return CUDA_ERROR_INVALID_DEVICE;
  snprintf(id, (size_t)len, "0000:%02X:00.0", 0x18 + d * 0x10);
  return CUDA_SUCCESS;
}

EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext* ctx, CUdevice d) {
  if (!cuInitialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (!ctx) return CUDA_ERROR_INVALID_VALUE;
  if (d < 0 || d >= settings()->gpus) return CUDA_ERROR_INVALID_DEVICE;
  pthread_mutex_lock(&simLock);
  int first = !primaryCtxMade;
  primaryCtxMade = 1;
  pthread_mutex_unlock(&simLock);
  if (first) sleepMs(jittered(settings()->cuInitMs));
  *ctx = &ctxToken[d % 64];
  return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxSetCurrent(CUcontext ctx) {
  (void)ctx;
  return cuInitialized ? CUDA_SUCCESS : CUDA_ERROR_NOT_INITIALIZED;
}

EXPORT CUresult cuStreamCreate(CUstream* s, unsigned int flags) {
  (void)flags;
  if (!cuInitialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (!s) return CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_lock(&simLock);
  *s = &streamTokens[streamCount++ % 64];
  pthread_mutex_unlock(&simLock);
  return CUDA_SUCCESS;
}

EXPORT CUresult cuMemAlloc_v2(CUdeviceptr* p, size_t bytes) {
  if (!cuInitialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (!p || bytes == 0) return CUDA_ERROR_INVALID_VALUE;
  if (!memCharge((double)bytes)) return CUDA_ERROR_OUT_OF_MEMORY;
  Alloc* a = (Alloc*)calloc(1, sizeof *a);
  if (!a) { memRelease(bytes); return CUDA_ERROR_OUT_OF_MEMORY; }
  pthread_mutex_lock(&simLock);
  a->ptr = nextPtr;
  nextPtr += (bytes + 0xfffffULL) & ~0xfffffULL;
  a->bytes = bytes;
  a->next = allocs;
  allocs = a;
  pthread_mutex_unlock(&simLock);
  *p = a->ptr;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuMemFree_v2(CUdeviceptr p) {
  if (!cuInitialized) return CUDA_ERROR_NOT_INITIALIZED;
  pthread_mutex_lock(&simLock);
  Alloc** link = &allocs;
  while (*link && (*link)->ptr != p) link = &(*link)->next;
  Alloc* a = *link;
  if (a) *link = a->next;
  pthread_mutex_unlock(&simLock);
  if (!a) return CUDA_ERROR_INVALID_VALUE;
  memRelease(a->bytes);
  dataForget((uintptr_t)a->ptr, a->bytes);
  free(a);
  return CUDA_SUCCESS;
}

EXPORT CUresult cuMemsetD8_v2(CUdeviceptr p, unsigned char v, size_t n) {
  if (!cuInitialized) return CUDA_ERROR_NOT_INITIALIZED;
  unsigned int bits = 0x01010101u * v;
  float f;
  memcpy(&f, &bits, sizeof f);
  dataWrite((uintptr_t)p, n, f);
  return CUDA_SUCCESS;
}

EXPORT CUresult cuMemsetD32_v2(CUdeviceptr p, unsigned int v, size_t n) {
  if (!cuInitialized) return CUDA_ERROR_NOT_INITIALIZED;
  float f;
  memcpy(&f, &v, sizeof f);
  dataWrite((uintptr_t)p, n * 4, f);
  return CUDA_SUCCESS;
}

/* Reads the modelled data back (see "Device data"); waits for the stream first, as a copy on the
 * legacy default stream waits for the work of blocking streams. */
EXPORT CUresult cuStreamSynchronize(CUstream s);
EXPORT CUresult cuMemcpyDtoH_v2(void* dst, CUdeviceptr src, size_t bytes) {
  if (!cuInitialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (!dst && bytes) return CUDA_ERROR_INVALID_VALUE;
  CUresult r = cuStreamSynchronize(NULL);
  if (r != CUDA_SUCCESS) return r;
  for (size_t i = 0; i < bytes; i += 4) {
    float f = dataRead((uintptr_t)(src + i));
    memcpy((char*)dst + i, &f, bytes - i < 4 ? bytes - i : 4);
  }
  return CUDA_SUCCESS;
}

EXPORT CUresult cuMemGetInfo_v2(size_t* freeBytes, size_t* totalBytes) {
  if (!cuInitialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (!freeBytes || !totalBytes) return CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_lock(&simLock);
  *freeBytes = (size_t)(DEVICE_BYTES - memUsed);
  pthread_mutex_unlock(&simLock);
  *totalBytes = (size_t)DEVICE_BYTES;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuGetErrorString(CUresult r, const char** s) {
  if (!s) return CUDA_ERROR_INVALID_VALUE;
  switch (r) {
    case CUDA_SUCCESS: *s = "no error"; break;
    case CUDA_ERROR_INVALID_VALUE: *s = "invalid argument"; break;
    case CUDA_ERROR_OUT_OF_MEMORY: *s = "out of memory"; break;
    case CUDA_ERROR_NOT_INITIALIZED: *s = "initialization error"; break;
    case CUDA_ERROR_NO_DEVICE: *s = "no CUDA-capable device is detected"; break;
    case CUDA_ERROR_INVALID_DEVICE: *s = "invalid device ordinal"; break;
    case CUDA_ERROR_ILLEGAL_STATE: *s = "the operation cannot be performed in the present state"; break;
    case CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED: *s = "operation not permitted when stream is capturing"; break;
    default: *s = NULL; return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}

/* ------------------------------------------------------------------------------------------ */
/* Rendezvous server                                                                            */

#define ID_MAGIC 0x4d495343u /* "CSIM" */
typedef struct { uint32_t magic; uint32_t addr; uint16_t port; uint16_t pad; uint32_t pad2; uint64_t tag; } IdLayout;
typedef struct { uint64_t tag, seq; uint32_t nranks, rank, plen, pad; } RvHeader;

typedef struct Pending {
  uint64_t tag, seq;
  uint32_t nranks, plen, arrived;
  int* fds;
  char* payloads;
  struct Pending* next;
} Pending;

static pthread_mutex_t serverLock = PTHREAD_MUTEX_INITIALIZER;
static Pending* pendings = NULL;
static int serverFd = -1;
static uint16_t serverPort = 0;

static void* connectionThread(void* arg) {
  int fd = (int)(intptr_t)arg;
  RvHeader h;
  if (readAll(fd, &h, sizeof h) != 0 || h.nranks == 0 || h.nranks > 65536 || h.rank >= h.nranks ||
      h.plen > 4096) {
    close(fd);
    return NULL;
  }
  char payload[4096];
  if (h.plen && readAll(fd, payload, h.plen) != 0) { close(fd); return NULL; }

  pthread_mutex_lock(&serverLock);
  Pending* p = pendings;
  while (p && !(p->tag == h.tag && p->seq == h.seq)) p = p->next;
  if (!p) {
    p = (Pending*)calloc(1, sizeof *p);
    p->tag = h.tag; p->seq = h.seq; p->nranks = h.nranks; p->plen = h.plen;
    p->fds = (int*)malloc(sizeof(int) * h.nranks);
    for (uint32_t i = 0; i < h.nranks; i++) p->fds[i] = -1;
    p->payloads = (char*)calloc(h.nranks, h.plen ? h.plen : 1);
    p->next = pendings;
    pendings = p;
  }
  if (p->nranks != h.nranks || p->plen != h.plen || p->fds[h.rank] >= 0) {
    pthread_mutex_unlock(&serverLock);
    close(fd); /* inconsistent call: the client sees a closed socket */
    return NULL;
  }
  p->fds[h.rank] = fd;
  if (h.plen) memcpy(p->payloads + (size_t)h.rank * h.plen, payload, h.plen);
  p->arrived++;
  int complete = p->arrived == p->nranks;
  if (complete) {
    Pending** link = &pendings;
    while (*link != p) link = &(*link)->next;
    *link = p->next;
  }
  pthread_mutex_unlock(&serverLock);
  if (!complete) return NULL; /* the thread of the last arrival answers everyone */

  size_t total = (size_t)p->nranks * p->plen;
  for (uint32_t i = 0; i < p->nranks; i++) {
    uint32_t n = p->nranks;
    if (writeAll(p->fds[i], &n, sizeof n) == 0 && total) writeAll(p->fds[i], p->payloads, total);
    close(p->fds[i]);
  }
  free(p->fds); free(p->payloads); free(p);
  return NULL;
}

static void* acceptThread(void* arg) {
  (void)arg;
  for (;;) {
    int fd = accept(serverFd, NULL, NULL);
    if (fd < 0) { if (errno == EINTR || errno == ECONNABORTED) continue; sleepMs(10); continue; }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    pthread_t t;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&attr, 128 * 1024);
    if (pthread_create(&t, &attr, connectionThread, (void*)(intptr_t)fd) != 0) close(fd);
    pthread_attr_destroy(&attr);
  }
  return NULL;
}

/* Starts the server once per process on addr (network order):<ephemeral>; on failure *err = errno. */
static int ensureServer(uint32_t addr, int* err) {
  pthread_mutex_lock(&serverLock);
  int ok = serverFd >= 0;
  *err = 0;
  if (!ok) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = addr;
    a.sin_port = 0;
    socklen_t len = sizeof a;
    if (fd >= 0 && bind(fd, (struct sockaddr*)&a, sizeof a) == 0 && listen(fd, 1024) == 0 &&
        getsockname(fd, (struct sockaddr*)&a, &len) == 0) {
      pthread_t t;
      serverFd = fd;
      serverPort = ntohs(a.sin_port);
      int rc = pthread_create(&t, NULL, acceptThread, NULL);
      if (rc == 0) {
        pthread_detach(t);
        ok = 1;
      } else {
        *err = rc;
        close(fd); serverFd = -1;
      }
    } else {
      *err = errno;
      if (fd >= 0) close(fd);
    }
  }
  pthread_mutex_unlock(&serverLock);
  return ok;
}

/* ------------------------------------------------------------------------------------------ */
/* Communicators                                                                                */

#define COMM_MAGIC 0x434f4d4du
#define MAX_ACTIVE_FDS 8
typedef struct Reg { uintptr_t base; size_t size; int used; struct Reg* next; } Reg;

struct SimComm {
  uint32_t magic;
  uint32_t addr; /* network order */
  uint16_t port; /* host order */
  uint64_t tag, seq;
  int nranks, rank;
  int blocking;
  int finalized;
  int growIdPending;
  pthread_mutex_t lock; /* guards everything below */
  int dead, revoked, abortFlag, suspended, connected;
  int splitShare; /* children of ncclCommSplit share this communicator's resources */
  int shrunkWithAbort; /* this rank made a child of it with ncclCommShrink(NCCL_SHRINK_ABORT) */
  double revokeUntil; /* nowMs() when a revoke is quiet */
  ncclResult_t asyncError; /* ncclInProgress while a non-blocking init runs */
  unsigned long long chargedBytes, connectCharged, suspendedBytes;
  int activeFds[MAX_ACTIVE_FDS];
  int pendingOps; /* ops on the stream (guarded by streamLock) */
  Reg* regs;
  void* profCtx; /* the profiler plugin's context (region "Profiler plugin"); NULL when none */
  int profMask;
};
/* Communicator structs are never freed: an aborted one may still be referenced by a thread that
 * is returning from a rendezvous. The leak is bounded by the number of communicators a test makes. */

static int validComm(ncclComm_t c) { return c && c->magic == COMM_MAGIC; }

static int commDead(ncclComm_t c) {
  pthread_mutex_lock(&c->lock);
  int d = c->dead;
  pthread_mutex_unlock(&c->lock);
  return d;
}

/* Work on `c` must stop: aborted, revoked, or a NCCL_SHRINK_ABORT drain in progress. */
static int commHalted(ncclComm_t c) {
  pthread_mutex_lock(&c->lock);
  int h = c->dead || c->revoked || c->abortFlag;
  pthread_mutex_unlock(&c->lock);
  return h;
}

/* Shuts down every rendezvous socket of `c` (caller holds c->lock). */
static void killActiveLocked(ncclComm_t c) {
  for (int i = 0; i < MAX_ACTIVE_FDS; i++) if (c->activeFds[i] >= 0) shutdown(c->activeFds[i], SHUT_RDWR);
}

static ncclComm_t newComm(uint32_t addr, uint16_t port, uint64_t tag, int nranks, int rank, int blocking) {
  ncclComm_t c = (ncclComm_t)calloc(1, sizeof *c);
  if (!c) return NULL;
  c->magic = COMM_MAGIC;
  c->addr = addr; c->port = port; c->tag = tag;
  c->nranks = nranks; c->rank = rank; c->blocking = blocking;
  for (int i = 0; i < MAX_ACTIVE_FDS; i++) c->activeFds[i] = -1;
  c->asyncError = ncclSuccess;
  pthread_mutex_init(&c->lock, NULL);
  return c;
}

/* Sleeps `ms`, ending early when `c` is halted. */
static void sleepComm(double ms, ncclComm_t c) {
  double end = nowMs() + ms;
  for (;;) {
    double left = end - nowMs();
    if (left <= 0) return;
    if (c && commHalted(c)) return;
    sleepMs(left < 2 ? left : 2);
  }
}

/* Fault hooks. Returns nonzero when `fn` on `rank` must fail. */
static int failHook(const char* fn, int rank) {
  const SimSettings* s = settings();
  if (!s->failFn[0] || strcmp(s->failFn, fn) != 0 || (s->failRank >= 0 && s->failRank != rank)) return 0;
  setLastError("simulated failure in %s on rank %d", fn, rank);
  return 1;
}

/* Sleeps forever (or until `c` is aborted) when the hang hook names `fn` on `rank`. */
static int hangHook(const char* fn, int rank, ncclComm_t c) {
  const SimSettings* s = settings();
  if (!s->hangFn[0] || strcmp(s->hangFn, fn) != 0 || (s->hangRank >= 0 && s->hangRank != rank)) return 0;
  for (;;) {
    sleepMs(10);
    if (c && commDead(c)) {
      setLastError("simulated hang in %s on rank %d ended by ncclCommAbort", fn, rank);
      return 1;
    }
  }
}

/* Both hooks; returns ncclSuccess or the error the call must return. */
static ncclResult_t hooks(const char* fn, int rank, ncclComm_t c) {
  if (failHook(fn, rank)) return ncclInternalError;
  if (hangHook(fn, rank, c)) return ncclRemoteError;
  return ncclSuccess;
}

/* One rendezvous on (tag, seq): sends `plen` bytes, receives nranks*plen bytes into `out`. */
static ncclResult_t rendezvous(uint32_t addr, uint16_t port, uint64_t tag, uint64_t seq, int nranks,
                               int rank, const void* payload, uint32_t plen, void* out, ncclComm_t c,
                               const char* fn) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) { setLastError("%s: socket: %s", fn, strerror(errno)); return ncclSystemError; }
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  struct sockaddr_in a;
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET; a.sin_addr.s_addr = addr; a.sin_port = htons(port);
  if (connect(fd, (struct sockaddr*)&a, sizeof a) != 0) {
    setLastError("%s: cannot reach the rendezvous server %s:%u: %s", fn, inet_ntoa(a.sin_addr), port, strerror(errno));
    close(fd);
    return ncclRemoteError;
  }
  int slot = -1;
  if (c) {
    /* A collective must not start on a halted communicator: checked again here, under the lock
       that revoke/abort take, so a revoke between runOp's check and this point cannot leave the
       rendezvous unkillable. Control rendezvous (e.g. shrink after revoke) may still run. */
    int collective = strcmp(fn, "ncclAllReduce") == 0;
    pthread_mutex_lock(&c->lock);
    int dead = c->dead || (collective && (c->revoked || c->abortFlag));
    if (!dead) {
      for (int i = 0; i < MAX_ACTIVE_FDS && slot < 0; i++) if (c->activeFds[i] < 0) slot = i;
      if (slot >= 0) c->activeFds[slot] = fd;
    }
    pthread_mutex_unlock(&c->lock);
    if (dead) { close(fd); setLastError("%s: communicator was aborted", fn); return ncclInvalidUsage; }
  }
  RvHeader h;
  memset(&h, 0, sizeof h);
  h.tag = tag; h.seq = seq; h.nranks = (uint32_t)nranks; h.rank = (uint32_t)rank; h.plen = plen;
  uint32_t n = 0;
  int rc = writeAll(fd, &h, sizeof h);
  if (rc == 0 && plen) rc = writeAll(fd, payload, plen);
  if (rc == 0) rc = readAll(fd, &n, sizeof n);
  if (rc == 0 && n != (uint32_t)nranks) rc = -1;
  if (rc == 0 && plen) rc = readAll(fd, out, (size_t)nranks * plen);
  if (c && slot >= 0) {
    pthread_mutex_lock(&c->lock);
    c->activeFds[slot] = -1;
    pthread_mutex_unlock(&c->lock);
  }
  close(fd);
  if (rc != 0) {
    if (c && commDead(c)) setLastError("%s: rendezvous interrupted: communicator aborted", fn);
    else if (c && commHalted(c)) setLastError("%s: rendezvous interrupted: communicator revoked or shrunk with abort", fn);
    else setLastError("%s: rendezvous connection lost", fn);
    return ncclRemoteError;
  }
  return ncclSuccess;
}

static ncclResult_t commRendezvous(ncclComm_t c, const void* payload, uint32_t plen, void* out, const char* fn) {
  uint64_t seq = ++c->seq;
  return rendezvous(c->addr, c->port, c->tag, seq, c->nranks, c->rank, payload, plen, out, c, fn);
}

/* Reads config->blocking if the caller passed a valid config; returns 0 or an error. */
/* splitShare of a creation config (offset 40, since 2.18), or NCCL_COMM_SPLIT_SHARE_RESOURCES,
 * which overrides the config as in NCCL. */
static int configSplitShare(const void* config) {
  const char* env = getenv("NCCL_COMM_SPLIT_SHARE_RESOURCES");
  if (env && *env) return atoi(env) == 1;
  if (!config) return 0;
  size_t size;
  memcpy(&size, config, sizeof size);
  if (size < 44) return 0;
  int v;
  memcpy(&v, (const char*)config + 40, sizeof v);
  return v == 1;
}

static ncclResult_t parseConfig(const void* config, int inherit, int* blocking) {
  *blocking = inherit;
  if (!config) return ncclSuccess;
  const unsigned char* p = (const unsigned char*)config;
  size_t size; unsigned int magic; int b;
  memcpy(&size, p, sizeof size);
  memcpy(&magic, p + 8, sizeof magic);
  if (magic != 0xcafebeefu) {
    setLastError("ncclConfig_t not initialized via NCCL_CONFIG_INITIALIZER (magic 0x%x)", magic);
    return ncclInvalidArgument;
  }
  if (size >= 20) {
    memcpy(&b, p + 16, sizeof b);
    if (b == 0 || b == 1) *blocking = b;
    else if (b != INT_MIN) { setLastError("invalid blocking %d", b); return ncclInvalidArgument; }
  }
  return ncclSuccess;
}

/* Creation cost of a new communicator: charges its memory (and, without runtime connect, the
 * connection buffers) and sleeps `baseMs` (+ connect). Returns ncclSuccess or an OOM error. */
static pthread_mutex_t kernelsLock = PTHREAD_MUTEX_INITIALIZER;
static int kernelsLoaded = 0;

/* The process's one-time kernel load, paid by its first communicator (rank `rank` in it): sleeps
 * and returns the ms it took; 0 once loaded. Concurrent first creations wait for the one loading. */
static double loadKernelsOnce(int rank) {
  const SimSettings* s = settings();
  pthread_mutex_lock(&kernelsLock);
  double took = 0;
  if (!kernelsLoaded) {
    double t0 = nowMs();
    sleepMs(jittered(s->kernelsMs[rank < s->kernelsCount ? rank : s->kernelsCount - 1]));
    took = nowMs() - t0;
    kernelsLoaded = 1;
  }
  pthread_mutex_unlock(&kernelsLock);
  return took;
}

/* Kernel load of the last chargeCreation on this thread, ms (for the Init timings line). */
static __thread double lastKernelsMs = 0;

/* ------------------------------------------------------------------------------------------ */
/* Profiler plugin (NCCL_PROFILER_PLUGIN), loaded and called the way NCCL does                   */

static struct { pthread_once_t once; int abi; ccProfilerV6* v6; ccProfilerV5* v5; ccProfilerV4* v4; } prof = { PTHREAD_ONCE_INIT, 0, NULL, NULL, NULL };

static void profLoad(void) {
  const char* name = getenv("NCCL_PROFILER_PLUGIN");
  int version = settings()->version;
  if (!name || !*name || strcasecmp(name, "none") == 0 || version < 22703) return;
  char path[1024];
  if (!strchr(name, '/') && strncmp(name, "lib", 3) != 0) snprintf(path, sizeof path, "libnccl-profiler-%s.so", name);
  else snprintf(path, sizeof path, "%s", name);
  void* lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!lib) { fprintf(stderr, "ncclsim: PROFILER/Plugin: %s: %s\n", path, dlerror()); return; }
  if (version >= 22902 && (prof.v6 = (ccProfilerV6*)dlsym(lib, "ncclProfiler_v6"))) prof.abi = 6;
  else if (version >= 22803 && (prof.v5 = (ccProfilerV5*)dlsym(lib, "ncclProfiler_v5"))) prof.abi = 5;
  else if ((prof.v4 = (ccProfilerV4*)dlsym(lib, "ncclProfiler_v4"))) prof.abi = 4;
  else fprintf(stderr, "ncclsim: PROFILER/Plugin: %s exports no version this library knows\n", path);
}

/* init: at creation, after the rendezvous (bootstrap) and before the connect. */
static void profInit(ncclComm_t c) {
  pthread_once(&prof.once, profLoad);
  if (!prof.abi) return;
  void* ctx = NULL;
  int mask = 0, r;
  if (prof.abi == 6) r = prof.v6->init(&ctx, c->tag, &mask, NULL, 1, c->nranks, c->rank, NULL);
  else if (prof.abi == 5) r = prof.v5->init(&ctx, c->tag, &mask, NULL, 1, c->nranks, c->rank, NULL);
  else r = prof.v4->init(&ctx, &mask, NULL, c->tag, 1, c->nranks, c->rank, NULL);
  if (r != 0) return; /* NCCL continues without the profiler */
  c->profCtx = ctx;
  c->profMask = mask;
}

static void* profStart(ncclComm_t c, int type, void* parent, const char* func, size_t count, uint64_t pTimer) {
  void* h = NULL;
  if (!c->profCtx) return NULL;
  if (prof.abi >= 5) {
    ccDescrV6 d;
    memset(&d, 0, sizeof d);
    d.type = (uint64_t)type; d.parentObj = parent; d.rank = c->rank;
    if (type == CC_EV_COLL_API) { d.collApi.func = func; d.collApi.count = count; d.collApi.datatype = "ncclFloat32"; }
    if (type == CC_EV_COLL) { d.coll.func = func; d.coll.count = count; d.coll.datatype = "ncclFloat32"; d.coll.algo = "RING"; d.coll.proto = "SIMPLE"; d.coll.parentGroup = parent; }
    if (type == CC_EV_KERNEL_CH) d.kernelCh.pTimer = pTimer;
    if (prof.abi == 6) prof.v6->startEvent(c->profCtx, &h, &d);
    else prof.v5->startEvent(c->profCtx, &h, (ccDescrV5*)&d);
  } else {
    ccDescrV4 d;
    memset(&d, 0, sizeof d);
    d.type = (uint8_t)type; d.parentObj = parent; d.rank = c->rank;
    if (type == CC_EV_COLL) { d.coll.func = func; d.coll.count = count; d.coll.datatype = "ncclFloat32"; d.coll.algo = "RING"; d.coll.proto = "SIMPLE"; }
    if (type == CC_EV_KERNEL_CH) d.kernelCh.pTimer = pTimer;
    prof.v4->startEvent(c->profCtx, &h, &d);
  }
  return h;
}

static void profStop(void* h) {
  if (!h) return;
  if (prof.abi == 6) prof.v6->stopEvent(h); else if (prof.abi == 5) prof.v5->stopEvent(h); else prof.v4->stopEvent(h);
}

static void profState(void* h, int state, ccStateArgs* args) {
  if (!h) return;
  if (prof.abi == 6) prof.v6->recordEventState(h, state, args);
  else if (prof.abi == 5) prof.v5->recordEventState(h, state, args);
  else prof.v4->recordEventState(h, state, args);
}

static void waitCommDrained(ncclComm_t c);

/* One ncclAllReduce seen by the plugin: GroupApi { CollApi } then the group launch (the lazy
 * connect of a communicator not yet connected, waited for here as NCCL does it on the host), with
 * Group { Coll { KernelCh } } around the launch where the mask asks for them. `enqueue` does the work. */
static ncclResult_t profiledCollective(ncclComm_t c, size_t count, ncclResult_t (*enqueue)(void*), void* arg) {
  int m = c->profMask;
  int v5 = prof.abi >= 5;
  int deep = CC_EV_GROUP | CC_EV_COLL | CC_EV_PROXY_OP | CC_EV_PROXY_STEP | CC_EV_KERNEL_CH | CC_EV_NET_PLUGIN;
  void* groupApi = v5 && (m & (CC_EV_GROUP_API | CC_EV_COLL_API | deep)) ? profStart(c, CC_EV_GROUP_API, NULL, NULL, 0, 0) : NULL;
  void* collApi = v5 && (m & (CC_EV_COLL_API | deep)) ? profStart(c, CC_EV_COLL_API, groupApi, "AllReduce", count, 0) : NULL;
  profStop(collApi);
  profState(groupApi, CC_STATE_GROUP_END_API_START, NULL);
  pthread_mutex_lock(&c->lock);
  int connectNow = !c->connected && c->nranks > 1;
  pthread_mutex_unlock(&c->lock);
  void* group = (m & deep) ? profStart(c, CC_EV_GROUP, NULL, NULL, 0, 0) : NULL;
  void* coll = (m & (deep & ~CC_EV_GROUP)) ? profStart(c, CC_EV_COLL, v5 ? collApi : group, "AllReduce", count, 0) : NULL;
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  uint64_t gpu0 = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
  void* kernel = (m & CC_EV_KERNEL_CH) ? profStart(c, CC_EV_KERNEL_CH, coll, NULL, 0, gpu0) : NULL;
  ncclResult_t r = enqueue(arg);
  if (r == ncclSuccess && connectNow) waitCommDrained(c); /* the lazy connect, inside the group launch */
  if (kernel) {
    clock_gettime(CLOCK_MONOTONIC, &ts);
    ccStateArgs a;
    memset(&a, 0, sizeof a);
    a.kernelCh.pTimer = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
    profState(kernel, CC_STATE_KERNEL_CH_STOP, &a);
    profStop(kernel);
  }
  profStop(coll);
  profStop(group);
  profStop(groupApi);
  return r;
}

/* finalize: at the end of teardown (destroy or abort), once per communicator. */
static void profFinalize(ncclComm_t c) {
  pthread_mutex_lock(&c->lock);
  void* ctx = c->profCtx;
  c->profCtx = NULL;
  pthread_mutex_unlock(&c->lock);
  if (!ctx) return;
  if (prof.abi == 6) prof.v6->finalize(ctx); else if (prof.abi == 5) prof.v5->finalize(ctx); else prof.v4->finalize(ctx);
}

static ncclResult_t chargeCreation(ncclComm_t c, double baseMs, const char* fn) {
  const SimSettings* s = settings();
  double ms = baseMs;
  profInit(c);
  lastKernelsMs = loadKernelsOnce(c->rank);
  if (!memCharge(s->commBytes)) { setLastError("%s: out of device memory", fn); return ncclUnhandledCudaError; }
  c->chargedBytes = (unsigned long long)s->commBytes;
  if (!s->runtimeConnect) {
    c->connected = 1;
    if (c->nranks > 1) {
      ms += s->connectMs;
      if (memCharge(s->connectBytes)) {
        c->connectCharged = (unsigned long long)s->connectBytes;
        c->chargedBytes += c->connectCharged;
      }
    }
  }
  sleepComm(jittered(ms), c);
  /* Aborted meanwhile (non-blocking init): releaseComm already ran, give the memory back. */
  pthread_mutex_lock(&c->lock);
  unsigned long long late = c->dead ? c->chargedBytes : 0;
  if (c->dead) { c->chargedBytes = 0; c->connectCharged = 0; }
  pthread_mutex_unlock(&c->lock);
  memRelease(late);
  return ncclSuccess;
}

static void versionText(char* buf, size_t n) {
  int v = settings()->version;
  snprintf(buf, n, "%d.%d.%d", v / 10000, (v % 10000) / 100, v % 100);
}

/* ncclInvalidUsage when the simulated version predates `since`. */
__attribute__((unused)) static ncclResult_t versionGate(const char* fn, int since) {
  if (settings()->version >= since) return ncclSuccess;
  char v[32];
  versionText(v, sizeof v);
  setLastError("%s is not supported in simulated %s", fn, v);
  return ncclInvalidUsage;
}

/* ------------------------------------------------------------------------------------------ */
/* The stream: one queue per process, served by a background thread                           */

typedef struct SimEvent SimEvent;
/* An allreduce on `comm`, or (comm NULL) the marker of cuEventRecord for `event`. `src`/`dst`: the
 * float32 sum's buffers for the data model (0 = none: another type or op). */
typedef struct StreamOp { ncclComm_t comm; uint64_t seq; double bytes, extraMs; uintptr_t src, dst; SimEvent* event; struct StreamOp* next; } StreamOp;
static void dataAllReduceDone(StreamOp* op, const float* contributions, int nranks);
static void eventReached(SimEvent* e);
static pthread_mutex_t streamLock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t streamWork = PTHREAD_COND_INITIALIZER;
static pthread_cond_t streamIdle = PTHREAD_COND_INITIALIZER;
static StreamOp *qHead = NULL, *qTail = NULL;
static int qBusy = 0, streamThreadStarted = 0;

#define GRAPH_MAGIC 0x47524150u
#define EXEC_MAGIC 0x45584543u
#define GRAPH_MAX_OPS 16
typedef struct { ncclComm_t comm; double bytes; uintptr_t buf; } GraphOp;
typedef struct SimGraph { uint32_t magic; int nops; GraphOp ops[GRAPH_MAX_OPS]; } SimGraph;
static SimGraph* captureGraph = NULL; /* non-NULL while the stream is capturing (guarded by streamLock) */

static void runOp(StreamOp* op) {
  ncclComm_t c = op->comm;
  const SimSettings* s = settings();
  if (commHalted(c)) return; /* killed: revoke, abort or shrink-abort */
  /* Each rank's value at src travels in the rendezvous (the data model: dataAllReduceDone). */
  float mine = op->src ? dataRead(op->src) : 0.0f;
  float* all = (float*)calloc((size_t)c->nranks, sizeof(float));
  if (!all) return;
  ncclResult_t r = rendezvous(c->addr, c->port, c->tag, op->seq, c->nranks, c->rank, &mine, sizeof mine, all, c, "ncclAllReduce");
  if (r != ncclSuccess) {
    pthread_mutex_lock(&c->lock);
    if (!c->dead && !c->revoked && !c->abortFlag && c->asyncError == ncclSuccess) c->asyncError = r;
    pthread_mutex_unlock(&c->lock);
    free(all);
    return;
  }
  double ms = op->extraMs;
  pthread_mutex_lock(&c->lock);
  int connectNow = !c->connected;
  c->connected = 1;
  pthread_mutex_unlock(&c->lock);
  if (connectNow && c->nranks > 1) { /* a 1-rank communicator has nothing to connect */
    ms += s->connectMs;
    if (memCharge(s->connectBytes)) {
      pthread_mutex_lock(&c->lock);
      c->connectCharged += (unsigned long long)s->connectBytes;
      c->chargedBytes += (unsigned long long)s->connectBytes;
      pthread_mutex_unlock(&c->lock);
    }
  }
  if (s->bwGBps > 0) ms += op->bytes / (s->bwGBps * 1e9) * 1e3;
  sleepComm(jittered(ms), c);
  /* Completed unless the work was killed meanwhile (revoke, abort, NCCL_SHRINK_ABORT): dropped. */
  if (!commHalted(c)) dataAllReduceDone(op, all, c->nranks);
  free(all);
}

static void* streamThread(void* arg) {
  (void)arg;
  for (;;) {
    pthread_mutex_lock(&streamLock);
    while (!qHead) pthread_cond_wait(&streamWork, &streamLock);
    StreamOp* op = qHead;
    qHead = op->next;
    if (!qHead) qTail = NULL;
    qBusy = 1;
    pthread_mutex_unlock(&streamLock);
    if (op->comm) runOp(op);
    else eventReached(op->event);
    pthread_mutex_lock(&streamLock);
    if (op->comm) op->comm->pendingOps--;
    qBusy = 0;
    pthread_cond_broadcast(&streamIdle);
    pthread_mutex_unlock(&streamLock);
    free(op);
  }
  return NULL;
}

/* Appends an allreduce on `c` to the stream; its rendezvous seq is taken now (program order). */
static ncclResult_t enqueueOpData(ncclComm_t c, double bytes, double extraMs, uintptr_t src, uintptr_t dst);
static ncclResult_t enqueueOp(ncclComm_t c, double bytes, double extraMs) { return enqueueOpData(c, bytes, extraMs, 0, 0); }

/* Appends an allreduce on `c` (or, c NULL, an event marker: see cuEventRecord) to the stream. */
static ncclResult_t enqueueOpData(ncclComm_t c, double bytes, double extraMs, uintptr_t src, uintptr_t dst) {
  StreamOp* op = (StreamOp*)calloc(1, sizeof *op);
  if (!op) return ncclSystemError;
  op->comm = c; op->seq = ++c->seq; op->bytes = bytes; op->extraMs = extraMs; op->src = src; op->dst = dst;
  pthread_mutex_lock(&streamLock);
  if (!streamThreadStarted) {
    pthread_t t;
    if (pthread_create(&t, NULL, streamThread, NULL) != 0) { pthread_mutex_unlock(&streamLock); free(op); return ncclSystemError; }
    pthread_detach(t);
    streamThreadStarted = 1;
  }
  c->pendingOps++;
  if (qTail) qTail->next = op; else qHead = op;
  qTail = op;
  pthread_cond_signal(&streamWork);
  pthread_mutex_unlock(&streamLock);
  return ncclSuccess;
}

/* Waits until no op of `c` is queued or running. */
static void waitCommDrained(ncclComm_t c) {
  pthread_mutex_lock(&streamLock);
  while (c->pendingOps > 0) pthread_cond_wait(&streamIdle, &streamLock);
  pthread_mutex_unlock(&streamLock);
}

__attribute__((unused)) static int commPending(ncclComm_t c) {
  pthread_mutex_lock(&streamLock);
  int n = c->pendingOps;
  pthread_mutex_unlock(&streamLock);
  return n;
}

EXPORT CUresult cuStreamSynchronize(CUstream s) {
  (void)s;
  if (!cuInitialized) return CUDA_ERROR_NOT_INITIALIZED;
  pthread_mutex_lock(&streamLock);
  if (captureGraph) { pthread_mutex_unlock(&streamLock); return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED; }
  while (qHead || qBusy) pthread_cond_wait(&streamIdle, &streamLock);
  pthread_mutex_unlock(&streamLock);
  return CUDA_SUCCESS;
}

/* ---- events and the data of completed allreduces (the in-flight window, see the addon's inFlight.h) ---- */

#define EVENT_MAGIC 0x45564e54u
/* done: the stream reached the event's marker; destroyed: freed by the marker once reached. */
struct SimEvent { uint32_t magic; int done, pending, destroyed; };

/* CUDA_ERROR_NOT_READY: cuEventQuery before the stream reached the marker. */
#define SIM_CUDA_ERROR_NOT_READY 600

/* Stream thread: the marker of `e` was reached (streamLock not held). */
static void eventReached(SimEvent* e) {
  pthread_mutex_lock(&streamLock);
  e->done = 1;
  e->pending--;
  int release = e->destroyed && e->pending == 0;
  pthread_mutex_unlock(&streamLock);
  if (release) { e->magic = 0; free(e); }
}

/* The float32 sum of every rank's contribution into the receive range of a completed allreduce. */
static void dataAllReduceDone(StreamOp* op, const float* contributions, int nranks) {
  if (!op->src || !op->dst) return;
  float sum = 0.0f;
  for (int i = 0; i < nranks; i++) sum += contributions[i];
  dataWrite(op->dst, (size_t)op->bytes, sum);
}

EXPORT CUresult cuEventCreate(void** event, unsigned int flags) {
  (void)flags;
  if (!cuInitialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (!event) return CUDA_ERROR_INVALID_VALUE;
  SimEvent* e = (SimEvent*)calloc(1, sizeof *e);
  if (!e) return CUDA_ERROR_OUT_OF_MEMORY;
  e->magic = EVENT_MAGIC;
  e->done = 1; /* an event never recorded is complete */
  *event = e;
  return CUDA_SUCCESS;
}

/* Puts a marker behind the work already on the stream; the event completes when it is reached. */
EXPORT CUresult cuEventRecord(void* event, CUstream s) {
  (void)s;
  SimEvent* e = (SimEvent*)event;
  if (!cuInitialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (!e || e->magic != EVENT_MAGIC || e->destroyed) return CUDA_ERROR_INVALID_VALUE;
  StreamOp* op = (StreamOp*)calloc(1, sizeof *op);
  if (!op) return CUDA_ERROR_OUT_OF_MEMORY;
  op->event = e;
  pthread_mutex_lock(&streamLock);
  if (captureGraph) { pthread_mutex_unlock(&streamLock); free(op); return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED; }
  if (!qHead && !qBusy) { /* nothing in flight: complete at once */
    e->done = 1;
    pthread_mutex_unlock(&streamLock);
    free(op);
    return CUDA_SUCCESS;
  }
  if (!streamThreadStarted) { pthread_mutex_unlock(&streamLock); free(op); return CUDA_ERROR_ILLEGAL_STATE; }
  e->done = 0;
  e->pending++;
  if (qTail) qTail->next = op; else qHead = op;
  qTail = op;
  pthread_cond_signal(&streamWork);
  pthread_mutex_unlock(&streamLock);
  return CUDA_SUCCESS;
}

EXPORT CUresult cuEventQuery(void* event) {
  SimEvent* e = (SimEvent*)event;
  if (!e || e->magic != EVENT_MAGIC) return CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_lock(&streamLock);
  int done = e->done;
  pthread_mutex_unlock(&streamLock);
  return done ? CUDA_SUCCESS : SIM_CUDA_ERROR_NOT_READY;
}

EXPORT CUresult cuEventDestroy_v2(void* event) {
  SimEvent* e = (SimEvent*)event;
  if (!e || e->magic != EVENT_MAGIC || e->destroyed) return CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_lock(&streamLock);
  e->destroyed = 1;
  int release = e->pending == 0;
  pthread_mutex_unlock(&streamLock);
  if (release) { e->magic = 0; free(e); }
  return CUDA_SUCCESS;
}

/* The registration extra of the first collective that uses a registered buffer. */
static double registrationExtra(ncclComm_t c, uintptr_t buf) {
  double extra = 0;
  pthread_mutex_lock(&c->lock);
  for (Reg* r = c->regs; r; r = r->next) {
    if (buf >= r->base && buf < r->base + r->size && !r->used) { r->used = 1; extra = settings()->regFirstMs; }
  }
  pthread_mutex_unlock(&c->lock);
  return extra;
}

EXPORT CUresult cuStreamBeginCapture_v2(CUstream s, int mode) {
  (void)s;
  if (!cuInitialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (mode < 0 || mode > 2) return CUDA_ERROR_INVALID_VALUE;
  SimGraph* g = (SimGraph*)calloc(1, sizeof *g);
  if (!g) return CUDA_ERROR_OUT_OF_MEMORY;
  g->magic = GRAPH_MAGIC;
  pthread_mutex_lock(&streamLock);
  int busy = captureGraph != NULL;
  if (!busy) captureGraph = g;
  pthread_mutex_unlock(&streamLock);
  if (busy) { free(g); return CUDA_ERROR_ILLEGAL_STATE; }
  return CUDA_SUCCESS;
}

EXPORT CUresult cuStreamEndCapture(CUstream s, void** graph) {
  (void)s;
  if (!graph) return CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_lock(&streamLock);
  SimGraph* g = captureGraph;
  captureGraph = NULL;
  pthread_mutex_unlock(&streamLock);
  if (!g) return CUDA_ERROR_ILLEGAL_STATE;
  *graph = g;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuGraphInstantiateWithFlags(void** exec, void* graph, unsigned long long flags) {
  (void)flags;
  SimGraph* g = (SimGraph*)graph;
  if (!exec || !g || g->magic != GRAPH_MAGIC) return CUDA_ERROR_INVALID_VALUE;
  SimGraph* e = (SimGraph*)malloc(sizeof *e);
  if (!e) return CUDA_ERROR_OUT_OF_MEMORY;
  *e = *g;
  e->magic = EXEC_MAGIC;
  sleepMs(jittered(settings()->graphMs));
  *exec = e;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuGraphLaunch(void* exec, CUstream s) {
  (void)s;
  SimGraph* e = (SimGraph*)exec;
  if (!e || e->magic != EXEC_MAGIC) return CUDA_ERROR_INVALID_VALUE;
  for (int i = 0; i < e->nops; i++) {
    ncclComm_t c = e->ops[i].comm;
    if (!validComm(c) || commDead(c)) return CUDA_ERROR_ILLEGAL_STATE;
    if (enqueueOp(c, e->ops[i].bytes, registrationExtra(c, e->ops[i].buf)) != ncclSuccess) return CUDA_ERROR_OUT_OF_MEMORY;
  }
  return CUDA_SUCCESS;
}

EXPORT CUresult cuGraphExecDestroy(void* exec) {
  SimGraph* e = (SimGraph*)exec;
  if (!e || e->magic != EXEC_MAGIC) return CUDA_ERROR_INVALID_VALUE;
  e->magic = 0;
  free(e);
  return CUDA_SUCCESS;
}

EXPORT CUresult cuGraphDestroy(void* graph) {
  SimGraph* g = (SimGraph*)graph;
  if (!g || g->magic != GRAPH_MAGIC) return CUDA_ERROR_INVALID_VALUE;
  g->magic = 0;
  free(g);
  return CUDA_SUCCESS;
}

/* ------------------------------------------------------------------------------------------ */
/* NCCL API                                                                                     */

EXPORT ncclResult_t ncclGetVersion(int* version) {
  if (!version) return ncclInvalidArgument;
  *version = settings()->version;
  return ncclSuccess;
}

EXPORT const char* ncclGetErrorString(ncclResult_t r) {
  switch (r) {
    case ncclSuccess: return "no error";
    case ncclUnhandledCudaError: return "unhandled cuda error (run with NCCL_DEBUG=INFO for details)";
    case ncclSystemError: return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
    case ncclInternalError: return "internal error - please report this issue to the NCCL developers";
    case ncclInvalidArgument: return "invalid argument (run with NCCL_DEBUG=WARN for details)";
    case ncclInvalidUsage: return "invalid usage (run with NCCL_DEBUG=WARN for details)";
    case ncclRemoteError: return "remote process exited or there was a network error";
    case ncclInProgress: return "NCCL operation in progress";
    default: return "unknown result code";
  }
}

EXPORT const char* ncclGetLastError(ncclComm_t comm) {
  (void)comm;
  return lastError;
}

EXPORT ncclResult_t ncclGetUniqueId(ncclUniqueId* id) {
  if (!id) return ncclInvalidArgument;
  const SimSettings* st = settings();
  if (st->addrError[0]) { setLastError("ncclGetUniqueId: %s", st->addrError); return ncclInvalidArgument; }
  sleepMs(jittered(st->uniqueIdMs));
  int err = 0;
  if (!ensureServer(st->addr, &err)) {
    if (!st->addrSet) {
      setLastError("ncclGetUniqueId: cannot start the rendezvous server: %s", strerror(err));
      return ncclSystemError;
    }
    /* EADDRNOTAVAIL: no interface of this host (namespace) has that address: the value is wrong. */
    setLastError("ncclGetUniqueId: cannot start the rendezvous server on COMMCOST_SIM_ADDR=\"%s\": %s", st->addrText,
                 strerror(err));
    return err == EADDRNOTAVAIL ? ncclInvalidArgument : ncclSystemError;
  }
  IdLayout l;
  memset(&l, 0, sizeof l);
  l.magic = ID_MAGIC;
  l.addr = st->addr;
  l.port = serverPort;
  l.tag = random64();
  memset(id, 0, sizeof *id);
  memcpy(id->internal, &l, sizeof l);
  return ncclSuccess;
}

/* NCCL's debug log (INFO lines of the INIT subsystem only), opened at the first line. */
static pthread_once_t logOnce = PTHREAD_ONCE_INIT;
static pthread_mutex_t logLock = PTHREAD_MUTEX_INITIALIZER;
static FILE* logFile = NULL;
static int logInit = 0;
static char logHost[256] = "localhost";

static void openLog(void) {
  const char* level = getenv("NCCL_DEBUG");
  if (!level || (strcasecmp(level, "INFO") != 0 && strcasecmp(level, "TRACE") != 0)) return;
  const char* subsys = getenv("NCCL_DEBUG_SUBSYS");
  if (!subsys || !*subsys) logInit = 1; /* NCCL's default set includes INIT */
  else {
    int invert = subsys[0] == '^';
    char buf[256];
    snprintf(buf, sizeof buf, "%s", subsys + invert);
    int named = 0;
    for (char* save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
      if (strcasecmp(tok, "INIT") == 0 || strcasecmp(tok, "ALL") == 0) named = 1;
    }
    logInit = invert ? !named : named;
  }
  if (!logInit) return;
  gethostname(logHost, sizeof logHost - 1);
  char* dot = strchr(logHost, '.');
  if (dot) *dot = '\0';
  const char* file = getenv("NCCL_DEBUG_FILE");
  logFile = stdout;
  if (file && *file) {
    char path[PATH_MAX];
    size_t n = 0;
    for (const char* p = file; *p && n + 1 < sizeof path; p++) {
      if (*p == '%' && p[1] == 'h') { n += (size_t)snprintf(path + n, sizeof path - n, "%s", logHost); p++; }
      else if (*p == '%' && p[1] == 'p') { n += (size_t)snprintf(path + n, sizeof path - n, "%d", (int)getpid()); p++; }
      else if (*p == '%' && p[1] == '%') { path[n++] = '%'; p++; }
      else path[n++] = *p;
      if (n >= sizeof path) n = sizeof path - 1;
    }
    path[n] = '\0';
    FILE* f = fopen(path, "w");
    if (f) { setlinebuf(f); logFile = f; }
  }
}

/* One "host:pid:tid [dev] NCCL INFO <text>" line when the INIT subsystem is logged. */
static void logInfo(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
static void logInfo(const char* fmt, ...) {
  pthread_once(&logOnce, openLog);
  if (!logInit || !logFile) return;
  char text[512];
  __builtin_va_list ap;
  __builtin_va_start(ap, fmt);
  vsnprintf(text, sizeof text, fmt, ap);
  __builtin_va_end(ap);
  pthread_mutex_lock(&logLock);
  fprintf(logFile, "%s:%d:%d [0] NCCL INFO %s\n", logHost, (int)getpid(), (int)syscall(SYS_gettid), text);
  fflush(logFile);
  pthread_mutex_unlock(&logLock);
}

/* NCCL's INIT lines of a child (split, shrink: parent, childCount, color, key; no commId) or of a
 * grown communicator (its commId), START when `t1` < 0, else COMPLETE and Init timings
 * (bootstrap = tBoot - t0, kernels = this thread's last kernel load), as NCCL 2.30 prints them. */
static void logChild(const char* fn, ncclComm_t c, ncclComm_t parent, int childCount, int color, int key, double t0, double tBoot, int complete) {
  if (!parent)
    logInfo("[Rank %d] %s comm %p rank %d nranks %d cudaDev 0 nvmlDev 0 busId 0 commId 0x%llx - Init %s", c->rank, fn, (void*)c, c->rank,
            c->nranks, (unsigned long long)c->tag, complete ? "COMPLETE" : "START");
  else
    logInfo("%s comm %p rank %d nranks %d cudaDev 0 nvmlDev 0 busId 0 parent %p childCount %d color %d key %d%s", fn, (void*)c, c->rank,
            c->nranks, (void*)parent, childCount, color, key, complete ? " - Init COMPLETE" : "- Init START");
  if (!complete || settings()->version < 22304) return;
  double total = (nowMs() - t0) / 1e3, kernels = lastKernelsMs / 1e3, bootstrap = (tBoot - t0) / 1e3;
  logInfo("Init timings - %s: rank %d nranks %d total %.2f (kernels %.2f, alloc 0.00, bootstrap %.2f, allgathers 0.00, "
          "topo 0.00, graphs 0.00, connections 0.00, rest %.2f)",
          fn, c->rank, c->nranks, total, kernels, bootstrap, total - kernels - bootstrap);
}

/* Rendezvous + creation cost of an init; sets c->asyncError on the way out. */
static ncclResult_t runInit(ncclComm_t c, const char* fn) {
  double t0 = nowMs();
  logInfo("%s comm %p rank %d nranks %d cudaDev 0 nvmlDev 0 busId 0 commId 0x%llx - Init START", fn, (void*)c, c->rank,
          c->nranks, (unsigned long long)c->tag);
  ncclResult_t r = hangHook(fn, c->rank, c) ? ncclRemoteError : ncclSuccess;
  if (r == ncclSuccess) r = rendezvous(c->addr, c->port, c->tag, 0, c->nranks, c->rank, NULL, 0, NULL, c, fn);
  double t1 = nowMs();
  if (r == ncclSuccess) r = chargeCreation(c, settings()->initMs, fn);
  if (r == ncclSuccess) {
    double total = (nowMs() - t0) / 1e3, kernels = lastKernelsMs / 1e3, bootstrap = (t1 - t0) / 1e3;
    logInfo("%s comm %p rank %d nranks %d cudaDev 0 nvmlDev 0 busId 0 commId 0x%llx - Init COMPLETE", fn, (void*)c,
            c->rank, c->nranks, (unsigned long long)c->tag);
    if (settings()->version >= 22304) {
      const char* garbled = getenv("COMMCOST_SIM_INIT_TIMINGS_GARBLED");
      if (garbled && strcmp(garbled, "1") == 0) logInfo("Init timings - %s: rank ? nranks %d total ?", fn, c->nranks);
      logInfo("Init timings - %s: rank %d nranks %d total %.2f (kernels %.2f, alloc 0.00, bootstrap %.2f, allgathers 0.00, "
              "topo 0.00, graphs 0.00, connections 0.00, rest %.2f)",
              fn, c->rank, c->nranks, total, kernels, bootstrap, total - kernels - bootstrap);
    }
  }
  pthread_mutex_lock(&c->lock);
  c->asyncError = r;
  pthread_mutex_unlock(&c->lock);
  return r;
}

typedef struct { ncclComm_t c; const char* fn; } InitJob;

static void* initThread(void* arg) {
  InitJob* job = (InitJob*)arg;
  runInit(job->c, job->fn);
  free(job);
  return NULL;
}

static ncclResult_t initRank(ncclComm_t* out, int nranks, ncclUniqueId commId, int rank, const void* config,
                             const char* fn) {
  if (!out || nranks <= 0 || rank < 0 || rank >= nranks) { setLastError("%s: invalid argument", fn); return ncclInvalidArgument; }
  *out = NULL;
  IdLayout l;
  memcpy(&l, commId.internal, sizeof l);
  if (l.magic != ID_MAGIC) { setLastError("%s: unique id was not made by ncclGetUniqueId", fn); return ncclInvalidArgument; }
  int blocking;
  ncclResult_t r = parseConfig(config, 1, &blocking);
  if (r != ncclSuccess) return r;
  if (failHook(fn, rank)) return ncclInternalError;
  ncclComm_t c = newComm(l.addr, l.port, l.tag, nranks, rank, blocking);
  if (c) c->splitShare = configSplitShare(config);
  if (!c) return ncclSystemError;
  if (blocking) {
    r = runInit(c, fn);
    if (r != ncclSuccess) return r;
    *out = c;
    return ncclSuccess;
  }
  /* Non-blocking: the work runs on its own thread; ncclCommGetAsyncError reports it, and
   * ncclCommAbort may end it at any time. */
  c->asyncError = ncclInProgress;
  InitJob* job = (InitJob*)calloc(1, sizeof *job);
  pthread_t t;
  if (!job) return ncclSystemError;
  job->c = c; job->fn = fn;
  if (pthread_create(&t, NULL, initThread, job) != 0) { free(job); return ncclSystemError; }
  pthread_detach(t);
  *out = c;
  return ncclInProgress;
}

EXPORT ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank) {
  return initRank(comm, nranks, commId, rank, NULL, "ncclCommInitRank");
}

EXPORT ncclResult_t ncclCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank, void* config) {
  return initRank(comm, nranks, commId, rank, config, "ncclCommInitRankConfig");
}

typedef struct { int32_t color, key; } SplitPayload;

EXPORT ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t* newcomm, void* config) {
  const char* fn = "ncclCommSplit";
  double tSplit = nowMs();
  if (!validComm(comm) || !newcomm) { setLastError("%s: invalid argument", fn); return ncclInvalidArgument; }
  *newcomm = NULL;
  if (color < -1) { setLastError("%s: invalid color %d", fn, color); return ncclInvalidArgument; }
  if (commDead(comm)) { setLastError("%s: communicator aborted", fn); return ncclInvalidUsage; }
  int blocking;
  ncclResult_t r = parseConfig(config, comm->blocking, &blocking);
  if (r != ncclSuccess) return r;
  if ((r = hooks(fn, comm->rank, comm)) != ncclSuccess) return r;
  SplitPayload mine = { color, key };
  SplitPayload* all = (SplitPayload*)calloc((size_t)comm->nranks, sizeof *all);
  if (!all) return ncclSystemError;
  uint64_t seq = comm->seq + 1;
  r = commRendezvous(comm, &mine, sizeof mine, all, fn);
  if (r != ncclSuccess) { free(all); return r; }
  if (color == -1) { free(all); return blocking ? ncclSuccess : ncclInProgress; }
  /* Members ordered by key, then parent rank. */
  int n = 0, newRank = 0;
  for (int i = 0; i < comm->nranks; i++) {
    if (all[i].color != color) continue;
    n++;
    if (all[i].key < key || (all[i].key == key && i < comm->rank)) newRank++;
  }
  free(all);
  uint64_t childTag = mix64(comm->tag ^ mix64(seq * 0x9e3779b97f4a7c15ULL ^ (uint64_t)(uint32_t)color));
  ncclComm_t c = newComm(comm->addr, comm->port, childTag, n, newRank, blocking);
  if (!c) return ncclSystemError;
  c->splitShare = comm->splitShare;
  /* NCCL's log of a split child: no commId, the parent, its child count, color and key. */
  logChild(fn, c, comm, (int)seq, color, key, tSplit, 0, 0);
  double tBoot = nowMs();
  lastKernelsMs = 0;
  if (comm->splitShare) {
    /* Shared resources: no memory of its own; the parent's connections serve it. */
    pthread_mutex_lock(&comm->lock);
    c->connected = comm->connected || !settings()->runtimeConnect;
    pthread_mutex_unlock(&comm->lock);
    profInit(c);
    sleepComm(jittered(settings()->splitMs), c);
  } else if ((r = chargeCreation(c, settings()->splitMs, fn)) != ncclSuccess) {
    return r;
  }
  logChild(fn, c, comm, (int)seq, color, key, tSplit, tBoot, 1);
  *newcomm = c;
  return blocking ? ncclSuccess : ncclInProgress;
}

EXPORT ncclResult_t ncclCommShrink(ncclComm_t comm, int* excludeRanksList, int excludeRanksCount, ncclComm_t* newcomm,
                                   void* config, int shrinkFlags);
EXPORT ncclResult_t ncclCommGetUniqueId(ncclComm_t comm, ncclUniqueId* uniqueId);
EXPORT ncclResult_t ncclCommGrow(ncclComm_t comm, int nRanks, const ncclUniqueId* uniqueId, int rank,
                                 ncclComm_t* newcomm, void* config);
EXPORT ncclResult_t ncclCommRevoke(ncclComm_t comm, int revokeFlags);
EXPORT ncclResult_t ncclCommWindowRegister(ncclComm_t comm, void* buff, size_t size, void** win, int winFlags);
EXPORT ncclResult_t ncclCommWindowDeregister(ncclComm_t comm, void* win);
EXPORT ncclResult_t ncclCommSuspend(ncclComm_t comm, int flags);
EXPORT ncclResult_t ncclCommResume(ncclComm_t comm);
EXPORT ncclResult_t ncclCommMemStats(ncclComm_t comm, int stat, uint64_t* value);

#ifndef COMMCOST_SIM_LEGACY
EXPORT ncclResult_t ncclCommShrink(ncclComm_t comm, int* excludeRanksList, int excludeRanksCount, ncclComm_t* newcomm,
                                   void* config, int shrinkFlags) {
  const char* fn = "ncclCommShrink";
  if (!validComm(comm) || !newcomm || excludeRanksCount < 0 || (excludeRanksCount > 0 && !excludeRanksList) ||
      (shrinkFlags != 0 && shrinkFlags != 1)) {
    setLastError("%s: invalid argument", fn);
    return ncclInvalidArgument;
  }
  *newcomm = NULL;
  if (commDead(comm)) { setLastError("%s: communicator aborted", fn); return ncclInvalidUsage; }
  char* excluded = (char*)calloc((size_t)comm->nranks, 1);
  if (!excluded) return ncclSystemError;
  for (int i = 0; i < excludeRanksCount; i++) {
    int x = excludeRanksList[i];
    if (x < 0 || x >= comm->nranks) { free(excluded); setLastError("%s: excluded rank %d out of range", fn, x); return ncclInvalidArgument; }
    excluded[x] = 1;
  }
  if (excluded[comm->rank]) {
    free(excluded);
    setLastError("%s: rank %d is in the exclude list; excluded ranks must not call ncclCommShrink", fn, comm->rank);
    return ncclInvalidArgument;
  }
  int n = 0, newRank = 0;
  for (int i = 0; i < comm->nranks; i++) {
    if (excluded[i]) continue;
    n++;
    if (i < comm->rank) newRank++;
  }
  free(excluded);
  int blocking;
  ncclResult_t r = parseConfig(config, comm->blocking, &blocking);
  if (r != ncclSuccess) return r;
  if ((r = hooks(fn, comm->rank, comm)) != ncclSuccess) return r;
  double extra = 0;
  if (shrinkFlags == 1) {
    /* NCCL_SHRINK_ABORT: set the parent's abort flag (in-flight work quits), drain its stream, clear it. */
    pthread_mutex_lock(&comm->lock);
    comm->abortFlag = 1;
    killActiveLocked(comm);
    pthread_mutex_unlock(&comm->lock);
    waitCommDrained(comm);
    pthread_mutex_lock(&comm->lock);
    comm->abortFlag = 0;
    pthread_mutex_unlock(&comm->lock);
    extra = settings()->abortMs / 2;
  } else if (commPending(comm) > 0) {
    setLastError("%s: operations are outstanding on the parent (use NCCL_SHRINK_ABORT)", fn);
    return ncclInvalidUsage;
  }
  /* The survivors rendezvous among themselves on a tag derived from the parent's. */
  uint64_t seq = ++comm->seq;
  uint64_t tag = mix64(comm->tag ^ 0x5348524b00000000ULL ^ mix64(seq));
  double tShrink = nowMs();
  r = rendezvous(comm->addr, comm->port, tag, 0, n, newRank, NULL, 0, NULL, comm, fn);
  if (r != ncclSuccess) return r;
  double tBoot = nowMs();
  ncclComm_t c = newComm(comm->addr, comm->port, tag, n, newRank, blocking);
  if (!c) return ncclSystemError;
  logChild(fn, c, comm, (int)seq, 0, newRank, tShrink, 0, 0);
  lastKernelsMs = 0;
  if ((r = chargeCreation(c, settings()->shrinkMs + extra, fn)) != ncclSuccess) return r;
  logChild(fn, c, comm, (int)seq, 0, newRank, tShrink, tBoot, 1);
  if (shrinkFlags == 1) {
    pthread_mutex_lock(&comm->lock);
    comm->shrunkWithAbort = 1;
    pthread_mutex_unlock(&comm->lock);
  }
  *newcomm = c;
  return blocking ? ncclSuccess : ncclInProgress;
}

/* The grow tag: the same on every existing rank (derived from the parent's tag and seq). */
static uint64_t growTag(ncclComm_t c) { return mix64(c->tag ^ 0x47524f5700000000ULL ^ mix64(c->seq + 1)); }

EXPORT ncclResult_t ncclCommGetUniqueId(ncclComm_t comm, ncclUniqueId* uniqueId) {
  const char* fn = "ncclCommGetUniqueId";
  ncclResult_t r = versionGate(fn, 22902);
  if (r != ncclSuccess) return r;
  if (!validComm(comm) || !uniqueId) { setLastError("%s: invalid argument", fn); return ncclInvalidArgument; }
  if (commHalted(comm)) { setLastError("%s: communicator aborted or revoked", fn); return ncclInvalidUsage; }
  if (comm->growIdPending) { setLastError("%s: the previous grow id was not consumed by ncclCommGrow", fn); return ncclInvalidUsage; }
  if ((r = hooks(fn, comm->rank, comm)) != ncclSuccess) return r;
  sleepMs(jittered(settings()->uniqueIdMs));
  IdLayout l;
  memset(&l, 0, sizeof l);
  l.magic = ID_MAGIC;
  l.addr = comm->addr;
  l.port = comm->port;
  l.tag = growTag(comm);
  memset(uniqueId, 0, sizeof *uniqueId);
  memcpy(uniqueId->internal, &l, sizeof l);
  comm->growIdPending = 1;
  return ncclSuccess;
}

EXPORT ncclResult_t ncclCommGrow(ncclComm_t comm, int nRanks, const ncclUniqueId* uniqueId, int rank,
                                 ncclComm_t* newcomm, void* config) {
  const char* fn = "ncclCommGrow";
  ncclResult_t r = versionGate(fn, 22902);
  if (r != ncclSuccess) return r;
  if (!newcomm || nRanks <= 0) { setLastError("%s: invalid argument", fn); return ncclInvalidArgument; }
  *newcomm = NULL;
  uint32_t addr; uint16_t port; uint64_t tag; int myRank, blocking;
  if (comm) {
    if (!validComm(comm)) { setLastError("%s: invalid communicator", fn); return ncclInvalidArgument; }
    if (nRanks <= comm->nranks || rank != -1) {
      setLastError("%s: an existing rank passes rank -1 and nRanks > %d", fn, comm->nranks);
      return ncclInvalidArgument;
    }
    if (commHalted(comm)) { setLastError("%s: communicator aborted or revoked", fn); return ncclInvalidUsage; }
    if ((r = parseConfig(config, comm->blocking, &blocking)) != ncclSuccess) return r;
    addr = comm->addr; port = comm->port; tag = growTag(comm); myRank = comm->rank;
    comm->seq++;
    comm->growIdPending = 0;
  } else {
    IdLayout l;
    if (!uniqueId) { setLastError("%s: a new rank needs the unique id", fn); return ncclInvalidArgument; }
    memcpy(&l, uniqueId->internal, sizeof l);
    if (l.magic != ID_MAGIC || rank < 0 || rank >= nRanks) { setLastError("%s: invalid unique id or rank", fn); return ncclInvalidArgument; }
    if ((r = parseConfig(config, 1, &blocking)) != ncclSuccess) return r;
    addr = l.addr; port = l.port; tag = l.tag; myRank = rank;
  }
  if ((r = hooks(fn, myRank, comm)) != ncclSuccess) return r;
  double tGrow = nowMs();
  r = rendezvous(addr, port, tag, 0, nRanks, myRank, NULL, 0, NULL, comm, fn);
  if (r != ncclSuccess) return r;
  double tBoot = nowMs();
  ncclComm_t c = newComm(addr, port, tag, nRanks, myRank, blocking);
  if (!c) return ncclSystemError;
  /* NCCL prints a grown communicator's commId (the hash it gives the profiler plugin). */
  logChild(fn, c, NULL, 0, 0, 0, tGrow, 0, 0);
  lastKernelsMs = 0;
  if ((r = chargeCreation(c, settings()->growMs, fn)) != ncclSuccess) return r;
  logChild(fn, c, NULL, 0, 0, 0, tGrow, tBoot, 1);
  *newcomm = c;
  return blocking ? ncclSuccess : ncclInProgress;
}

EXPORT ncclResult_t ncclCommRevoke(ncclComm_t comm, int revokeFlags) {
  const char* fn = "ncclCommRevoke";
  if (!validComm(comm) || revokeFlags != 0) { setLastError("%s: invalid argument", fn); return ncclInvalidArgument; }
  pthread_mutex_lock(&comm->lock);
  int bad = comm->dead || comm->revoked;
  pthread_mutex_unlock(&comm->lock);
  if (bad) { setLastError("%s: communicator already revoked or aborted", fn); return ncclInvalidArgument; }
  ncclResult_t r = hooks(fn, comm->rank, comm);
  if (r != ncclSuccess) return r;
  pthread_mutex_lock(&comm->lock);
  comm->revoked = 1;
  comm->revokeUntil = nowMs() + jittered(settings()->revokeMs);
  killActiveLocked(comm); /* in-flight work quits */
  pthread_mutex_unlock(&comm->lock);
  return ncclInProgress; /* quiet once ncclCommGetAsyncError says ncclSuccess */
}

typedef struct SimWindow { uint32_t magic; ncclComm_t comm; } SimWindow;
#define WINDOW_MAGIC 0x57494e44u

EXPORT ncclResult_t ncclCommWindowRegister(ncclComm_t comm, void* buff, size_t size, void** win, int winFlags) {
  const char* fn = "ncclCommWindowRegister";
  if (!validComm(comm) || !buff || !win || size == 0 || (winFlags & ~3)) { setLastError("%s: invalid argument", fn); return ncclInvalidArgument; }
  *win = NULL;
  if (commHalted(comm) || comm->finalized) { setLastError("%s: communicator finalized, revoked or aborted", fn); return ncclInvalidUsage; }
  uintptr_t p = (uintptr_t)buff;
  int cumem = 0;
  pthread_mutex_lock(&simLock);
  for (Alloc* a = allocs; a; a = a->next)
    if (p >= a->ptr && p + size <= a->ptr + a->bytes) cumem = a->cumem;
  pthread_mutex_unlock(&simLock);
  if (!cumem) {
    setLastError("%s: buffer %p is not cuMem memory (allocate it with ncclMemAlloc)", fn, buff);
    return ncclInvalidArgument;
  }
  ncclResult_t r = hooks(fn, comm->rank, comm);
  if (r != ncclSuccess) return r;
  r = commRendezvous(comm, NULL, 0, NULL, fn); /* collective */
  if (r != ncclSuccess) return r;
  sleepComm(jittered(settings()->windowMs), comm);
  SimWindow* w = (SimWindow*)calloc(1, sizeof *w);
  if (!w) return ncclSystemError;
  w->magic = WINDOW_MAGIC; w->comm = comm;
  *win = w;
  return ncclSuccess;
}

EXPORT ncclResult_t ncclCommWindowDeregister(ncclComm_t comm, void* win) {
  const char* fn = "ncclCommWindowDeregister";
  SimWindow* w = (SimWindow*)win;
  if (!validComm(comm) || !w || w->magic != WINDOW_MAGIC || w->comm != comm) { setLastError("%s: invalid window", fn); return ncclInvalidArgument; }
  ncclResult_t r = hooks(fn, comm->rank, comm);
  if (r != ncclSuccess) return r;
  sleepMs(jittered(settings()->windowDeregMs));
  w->magic = 0;
  free(w);
  return ncclSuccess;
}

EXPORT ncclResult_t ncclCommSuspend(ncclComm_t comm, int flags) {
  const char* fn = "ncclCommSuspend";
  ncclResult_t r = versionGate(fn, 22907);
  if (r != ncclSuccess) return r;
  if (!validComm(comm) || (flags & ~1)) { setLastError("%s: invalid argument", fn); return ncclInvalidArgument; }
  if (commHalted(comm) || comm->suspended) { setLastError("%s: communicator suspended, revoked or aborted", fn); return ncclInvalidUsage; }
  if (commPending(comm) > 0) { setLastError("%s: operations are outstanding", fn); return ncclInvalidUsage; }
  if ((r = hooks(fn, comm->rank, comm)) != ncclSuccess) return r;
  unsigned long long released = 0;
  pthread_mutex_lock(&comm->lock);
  comm->suspended = 1;
  if (flags & 1) { /* NCCL_SUSPEND_MEM: the connection buffers go */
    released = comm->connectCharged;
    comm->suspendedBytes = released;
    comm->chargedBytes -= released;
    comm->connectCharged = 0;
  }
  pthread_mutex_unlock(&comm->lock);
  memRelease(released);
  sleepMs(jittered(settings()->suspendMs));
  return ncclSuccess;
}

EXPORT ncclResult_t ncclCommResume(ncclComm_t comm) {
  const char* fn = "ncclCommResume";
  ncclResult_t r = versionGate(fn, 22907);
  if (r != ncclSuccess) return r;
  if (!validComm(comm)) { setLastError("%s: invalid argument", fn); return ncclInvalidArgument; }
  if (!comm->suspended || commHalted(comm)) { setLastError("%s: communicator is not suspended", fn); return ncclInvalidUsage; }
  if ((r = hooks(fn, comm->rank, comm)) != ncclSuccess) return r;
  unsigned long long bytes = comm->suspendedBytes;
  if (!memCharge((double)bytes)) { setLastError("%s: out of device memory", fn); return ncclUnhandledCudaError; }
  pthread_mutex_lock(&comm->lock);
  comm->connectCharged = bytes;
  comm->chargedBytes += bytes;
  comm->suspendedBytes = 0;
  comm->suspended = 0;
  pthread_mutex_unlock(&comm->lock);
  sleepMs(jittered(settings()->resumeMs));
  return ncclSuccess;
}

EXPORT ncclResult_t ncclCommMemStats(ncclComm_t comm, int stat, uint64_t* value) {
  ncclResult_t r = versionGate("ncclCommMemStats", 22907);
  if (r != ncclSuccess) return r;
  if (!validComm(comm) || !value || stat < 0 || stat > 3) return ncclInvalidArgument;
  pthread_mutex_lock(&comm->lock);
  switch (stat) {
    case 0: *value = comm->connectCharged; break;               /* ncclStatGpuMemSuspend: releasable */
    case 1: *value = (uint64_t)comm->suspended; break;          /* ncclStatGpuMemSuspended: flag */
    case 2: *value = comm->chargedBytes - comm->connectCharged; break; /* ncclStatGpuMemPersist */
    default: *value = comm->chargedBytes; break;                /* ncclStatGpuMemTotal */
  }
  pthread_mutex_unlock(&comm->lock);
  return ncclSuccess;
}
#endif /* !COMMCOST_SIM_LEGACY */

EXPORT ncclResult_t ncclCommRegister(const ncclComm_t comm, void* buff, size_t size, void** handle) {
  const char* fn = "ncclCommRegister";
  if (!validComm(comm) || !buff || !handle || size == 0) { setLastError("%s: invalid argument", fn); return ncclInvalidArgument; }
  *handle = NULL;
  if (commDead(comm)) { setLastError("%s: communicator aborted", fn); return ncclInvalidUsage; }
  ncclResult_t r = hooks(fn, comm->rank, comm);
  if (r != ncclSuccess) return r;
  Reg* reg = (Reg*)calloc(1, sizeof *reg);
  if (!reg) return ncclSystemError;
  reg->base = (uintptr_t)buff; reg->size = size;
  sleepMs(jittered(settings()->registerMs)); /* local: a cache insert; the real work is at first use */
  pthread_mutex_lock(&comm->lock);
  reg->next = comm->regs;
  comm->regs = reg;
  pthread_mutex_unlock(&comm->lock);
  *handle = reg;
  return ncclSuccess;
}

EXPORT ncclResult_t ncclCommDeregister(const ncclComm_t comm, void* handle) {
  const char* fn = "ncclCommDeregister";
  if (!validComm(comm) || !handle) { setLastError("%s: invalid argument", fn); return ncclInvalidArgument; }
  ncclResult_t r = hooks(fn, comm->rank, comm);
  if (r != ncclSuccess) return r;
  pthread_mutex_lock(&comm->lock);
  Reg** link = &comm->regs;
  while (*link && *link != (Reg*)handle) link = &(*link)->next;
  Reg* reg = *link;
  if (reg) *link = reg->next;
  pthread_mutex_unlock(&comm->lock);
  if (!reg) { setLastError("%s: handle %p is not registered with this communicator", fn, handle); return ncclInvalidArgument; }
  sleepMs(jittered(settings()->registerMs));
  free(reg);
  return ncclSuccess;
}

static size_t typeSize(int t) {
  switch (t) {
    case 0: case 1: case 10: case 11: return 1;
    case 6: case 9: return 2;
    case 2: case 3: case 7: return 4;
    case 4: case 5: case 8: return 8;
    default: return 0;
  }
}

typedef struct { ncclComm_t c; double bytes, extraMs; uintptr_t src, dst; } ProfiledEnqueue;
static ncclResult_t profiledEnqueue(void* arg) {
  ProfiledEnqueue* p = (ProfiledEnqueue*)arg;
  return enqueueOpData(p->c, p->bytes, p->extraMs, p->src, p->dst);
}

EXPORT ncclResult_t ncclAllReduce(const void* sendbuff, void* recvbuff, size_t count, int datatype, int op,
                                  ncclComm_t comm, CUstream stream) {
  const char* fn = "ncclAllReduce";
  (void)recvbuff; (void)stream;
  if (!validComm(comm) || typeSize(datatype) == 0 || op < 0 || op > 4) { setLastError("%s: invalid argument", fn); return ncclInvalidArgument; }
  pthread_mutex_lock(&comm->lock);
  int dead = comm->dead, revoked = comm->revoked, suspended = comm->suspended;
  ncclResult_t async = comm->asyncError;
  pthread_mutex_unlock(&comm->lock);
  if (comm->finalized || dead) { setLastError("%s: communicator finalized or aborted", fn); return ncclInvalidUsage; }
  if (revoked) { setLastError("%s: communicator was revoked", fn); return ncclInvalidUsage; }
  if (suspended) { setLastError("%s: communicator is suspended (ncclCommResume first)", fn); return ncclInvalidUsage; }
  if (async != ncclSuccess) { setLastError("%s: communicator has an asynchronous error %d", fn, async); return async; }
  if (failHook(fn, comm->rank)) return ncclInternalError;
  if (hangHook(fn, comm->rank, comm)) return ncclRemoteError;
  {
    const char* algo = getenv("NCCL_ALGO");
    if (settings()->algoRefused[0] && algo && strcmp(algo, settings()->algoRefused) == 0) {
      setLastError("Error : no algorithm/protocol available for function AllReduce with datatype %s. NCCL_ALGO was set to %s.",
                   datatype == 7 ? "ncclFloat32" : "this datatype", algo);
      return ncclInvalidUsage;
    }
  }
  double bytes = (double)count * (double)typeSize(datatype);
  ncclResult_t r = ncclSuccess;
  pthread_mutex_lock(&streamLock);
  SimGraph* g = captureGraph;
  if (g) { /* capturing: record, do not run */
    if (g->nops < GRAPH_MAX_OPS) {
      GraphOp* o = &g->ops[g->nops++];
      o->comm = comm; o->bytes = bytes; o->buf = (uintptr_t)sendbuff;
    } else {
      r = ncclInternalError;
    }
  }
  pthread_mutex_unlock(&streamLock);
  if (g) {
    if (r != ncclSuccess) setLastError("%s: more than %d operations captured in one graph", fn, GRAPH_MAX_OPS);
    else if (settings()->captureMs > 0) sleepMs(jittered(settings()->captureMs));
    return r;
  }
  int modelled = datatype == 7 && op == 0; /* the data model covers float32 sums only */
  if (comm->profCtx) {
    ProfiledEnqueue pe = { comm, bytes, registrationExtra(comm, (uintptr_t)sendbuff), modelled ? (uintptr_t)sendbuff : 0,
                           modelled ? (uintptr_t)recvbuff : 0 };
    r = profiledCollective(comm, count, profiledEnqueue, &pe);
  } else {
    r = enqueueOpData(comm, bytes, registrationExtra(comm, (uintptr_t)sendbuff), modelled ? (uintptr_t)sendbuff : 0,
                      modelled ? (uintptr_t)recvbuff : 0);
  }
  if (r != ncclSuccess) return r;
  return comm->blocking ? ncclSuccess : ncclInProgress;
}

EXPORT ncclResult_t ncclCommFinalize(ncclComm_t comm) {
  const char* fn = "ncclCommFinalize";
  if (!validComm(comm)) { setLastError("%s: invalid argument", fn); return ncclInvalidArgument; }
  if (comm->finalized) { setLastError("%s: communicator already finalized", fn); return ncclInvalidArgument; }
  pthread_mutex_lock(&comm->lock);
  int revoked = comm->revoked;
  pthread_mutex_unlock(&comm->lock);
  if (revoked) { setLastError("%s: communicator was revoked (destroy or abort it)", fn); return ncclInvalidArgument; }
  ncclResult_t r = hooks(fn, comm->rank, comm);
  if (r != ncclSuccess) return r;
  waitCommDrained(comm); /* flushes issued work */
  r = commRendezvous(comm, NULL, 0, NULL, fn);
  if (r != ncclSuccess) return r;
  comm->finalized = 1;
  sleepMs(jittered(settings()->finalizeMs));
  return comm->blocking ? ncclSuccess : ncclInProgress;
}

static void releaseComm(ncclComm_t comm) {
  pthread_mutex_lock(&comm->lock);
  unsigned long long b = comm->chargedBytes;
  comm->chargedBytes = 0;
  comm->connectCharged = 0;
  comm->dead = 1;
  killActiveLocked(comm);
  Reg* regs = comm->regs;
  comm->regs = NULL;
  pthread_mutex_unlock(&comm->lock);
  while (regs) { Reg* n = regs->next; free(regs); regs = n; }
  memRelease(b);
}

/* The destroy barrier of field case C5 (COMMCOST_SIM_DESTROY_BARRIER_VERSION): one rendezvous
 * per communicator on a tag derived from its own, which every rank's ncclCommDestroy joins. */
static uint64_t destroyTag(ncclComm_t c) { return mix64(c->tag ^ 0x4453545259000000ULL); }

/* Counts this rank at the destroy barrier without waiting for the others (best effort). */
static void announceDestroy(ncclComm_t c) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return;
  struct sockaddr_in a;
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET; a.sin_addr.s_addr = c->addr; a.sin_port = htons(c->port);
  if (connect(fd, (struct sockaddr*)&a, sizeof a) == 0) {
    RvHeader h;
    memset(&h, 0, sizeof h);
    h.tag = destroyTag(c); h.seq = 0; h.nranks = (uint32_t)c->nranks; h.rank = (uint32_t)c->rank;
    (void)writeAll(fd, &h, sizeof h);
  }
  close(fd);
}

EXPORT ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  const char* fn = "ncclCommDestroy";
  if (!comm) return ncclSuccess;
  if (!validComm(comm) || commDead(comm)) { setLastError("%s: invalid communicator", fn); return ncclInvalidArgument; }
  ncclResult_t r = hooks(fn, comm->rank, comm);
  if (r != ncclSuccess) return r;
  waitCommDrained(comm);
  if (settings()->version >= settings()->destroyBarrierVersion && comm->nranks > 1) {
    pthread_mutex_lock(&comm->lock);
    int wait = comm->shrunkWithAbort;
    pthread_mutex_unlock(&comm->lock);
    if (!wait) {
      announceDestroy(comm);
    } else {
      r = rendezvous(comm->addr, comm->port, destroyTag(comm), 0, comm->nranks, comm->rank, NULL, 0, NULL, comm, fn);
      if (r != ncclSuccess) return r;
    }
  }
  sleepMs(jittered(settings()->destroyMs));
  releaseComm(comm);
  profFinalize(comm);
  return ncclSuccess;
}

EXPORT ncclResult_t ncclCommAbort(ncclComm_t comm) {
  const char* fn = "ncclCommAbort";
  if (!comm) return ncclSuccess;
  if (!validComm(comm) || commDead(comm)) { setLastError("%s: invalid communicator", fn); return ncclInvalidArgument; }
  double t0 = nowMs();
  releaseComm(comm); /* unblocks threads of this process waiting in a rendezvous on comm */
  if (failHook(fn, comm->rank)) return ncclInternalError;
  sleepMs(jittered(settings()->abortMs) - (nowMs() - t0)); /* floor on abort */
  profFinalize(comm);
  return ncclSuccess;
}

EXPORT ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* asyncError) {
  if (!validComm(comm) || !asyncError) return ncclInvalidArgument;
  pthread_mutex_lock(&comm->lock);
  if (comm->revoked && nowMs() < comm->revokeUntil) *asyncError = ncclInProgress;
  else *asyncError = comm->asyncError;
  pthread_mutex_unlock(&comm->lock);
  return ncclSuccess;
}

EXPORT ncclResult_t ncclCommCount(const ncclComm_t comm, int* count) {
  if (!validComm(comm) || !count) return ncclInvalidArgument;
  *count = comm->nranks;
  return ncclSuccess;
}

EXPORT ncclResult_t ncclCommUserRank(const ncclComm_t comm, int* rank) {
  if (!validComm(comm) || !rank) return ncclInvalidArgument;
  *rank = comm->rank;
  return ncclSuccess;
}

EXPORT ncclResult_t ncclGroupStart(void) { return ncclSuccess; }
EXPORT ncclResult_t ncclGroupEnd(void) { return ncclSuccess; }

EXPORT ncclResult_t ncclMemAlloc(void** ptr, size_t size) {
  if (!ptr) return ncclInvalidArgument;
  CUdeviceptr p = 0;
  if (!cuInitialized) cuInit(0);
  /* cuMem granularity: the real size is rounded up (2 MiB here). */
  size_t rounded = (size + (2u << 20) - 1) & ~(size_t)((2u << 20) - 1);
  if (cuMemAlloc_v2(&p, rounded) != CUDA_SUCCESS) { setLastError("ncclMemAlloc: out of device memory"); return ncclUnhandledCudaError; }
  pthread_mutex_lock(&simLock);
  for (Alloc* a = allocs; a; a = a->next) if (a->ptr == p) a->cumem = 1;
  pthread_mutex_unlock(&simLock);
  sleepMs(jittered(settings()->memAllocMs));
  *ptr = (void*)(uintptr_t)p;
  return ncclSuccess;
}

EXPORT ncclResult_t ncclMemFree(void* ptr) {
  if (!ptr) return ncclSuccess;
  return cuMemFree_v2((CUdeviceptr)(uintptr_t)ptr) == CUDA_SUCCESS ? ncclSuccess : ncclInvalidArgument;
}
