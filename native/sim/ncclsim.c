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
 * - ncclGetUniqueId starts (once per process) a rendezvous server on 127.0.0.1:<ephemeral> and
 *   writes its address and a random 64-bit communicator tag into the 128-byte id.
 * - Init, split, allreduce and finalize are rendezvous: each rank connects to the server, sends
 *   (tag, seq, nranks, rank, payload) and blocks until all nranks have arrived for that (tag, seq);
 *   then every rank gets all payloads back. A rank that never calls blocks the others forever.
 *   Costs (sleeps) are applied after the rendezvous completes.
 * - ncclCommAbort is local: it shuts down the socket of a thread of this process blocked in a
 *   rendezvous on that communicator, which then returns ncclRemoteError.
 *
 * Environment (read once, at first use): COMMCOST_SIM_VERSION, COMMCOST_SIM_GPUS,
 * COMMCOST_SIM_COMM_BYTES, COMMCOST_SIM_CONNECT_BYTES, COMMCOST_SIM_INIT_MS, COMMCOST_SIM_SPLIT_MS,
 * COMMCOST_SIM_CONNECT_MS, COMMCOST_SIM_BW_GBPS, COMMCOST_SIM_FINALIZE_MS, COMMCOST_SIM_DESTROY_MS,
 * COMMCOST_SIM_ABORT_MS, COMMCOST_SIM_UNIQUEID_MS, COMMCOST_SIM_CUINIT_MS, COMMCOST_SIM_JITTER,
 * COMMCOST_SIM_HANG="<fn>:<rank>", COMMCOST_SIM_FAIL="<fn>:<rank>".
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
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

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
       CUDA_ERROR_NOT_INITIALIZED = 3, CUDA_ERROR_NO_DEVICE = 100, CUDA_ERROR_INVALID_DEVICE = 101 };

/* ------------------------------------------------------------------------------------------ */
/* Settings                                                                                     */

typedef struct {
  int version, gpus;
  double commBytes, connectBytes;
  double initMs, splitMs, connectMs, bwGBps, finalizeMs, destroyMs, abortMs, uniqueIdMs, cuInitMs, jitter;
  char hangFn[64]; int hangRank;
  char failFn[64]; int failRank;
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

static void loadSettings(void) {
  S.version = (int)envNum("COMMCOST_SIM_VERSION", 22809);
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
typedef struct Alloc { CUdeviceptr ptr; size_t bytes; struct Alloc* next; } Alloc;
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

EXPORT CUresult cuStreamSynchronize(CUstream s) {
  (void)s;
  return cuInitialized ? CUDA_SUCCESS : CUDA_ERROR_NOT_INITIALIZED;
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
  free(a);
  return CUDA_SUCCESS;
}

EXPORT CUresult cuMemsetD8_v2(CUdeviceptr p, unsigned char v, size_t n) {
  (void)p; (void)v; (void)n;
  return cuInitialized ? CUDA_SUCCESS : CUDA_ERROR_NOT_INITIALIZED;
}

EXPORT CUresult cuMemsetD32_v2(CUdeviceptr p, unsigned int v, size_t n) {
  (void)p; (void)v; (void)n;
  return cuInitialized ? CUDA_SUCCESS : CUDA_ERROR_NOT_INITIALIZED;
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

static int ensureServer(void) {
  pthread_mutex_lock(&serverLock);
  int ok = serverFd >= 0;
  if (!ok) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = 0;
    socklen_t len = sizeof a;
    if (fd >= 0 && bind(fd, (struct sockaddr*)&a, sizeof a) == 0 && listen(fd, 1024) == 0 &&
        getsockname(fd, (struct sockaddr*)&a, &len) == 0) {
      pthread_t t;
      serverFd = fd;
      serverPort = ntohs(a.sin_port);
      if (pthread_create(&t, NULL, acceptThread, NULL) == 0) {
        pthread_detach(t);
        ok = 1;
      } else {
        close(fd); serverFd = -1;
      }
    } else if (fd >= 0) {
      close(fd);
    }
  }
  pthread_mutex_unlock(&serverLock);
  return ok;
}

/* ------------------------------------------------------------------------------------------ */
/* Communicators                                                                                */

#define COMM_MAGIC 0x434f4d4du
struct SimComm {
  uint32_t magic;
  uint32_t addr; /* network order */
  uint16_t port; /* host order */
  uint64_t tag, seq;
  int nranks, rank;
  int blocking;
  int connected, finalized, dead;
  unsigned long long chargedBytes;
  pthread_mutex_t lock; /* guards activeFd and dead */
  int activeFd;
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

static ncclComm_t newComm(uint32_t addr, uint16_t port, uint64_t tag, int nranks, int rank, int blocking) {
  ncclComm_t c = (ncclComm_t)calloc(1, sizeof *c);
  if (!c) return NULL;
  c->magic = COMM_MAGIC;
  c->addr = addr; c->port = port; c->tag = tag;
  c->nranks = nranks; c->rank = rank; c->blocking = blocking;
  c->activeFd = -1;
  pthread_mutex_init(&c->lock, NULL);
  return c;
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
  if (c) {
    pthread_mutex_lock(&c->lock);
    int dead = c->dead;
    if (!dead) c->activeFd = fd;
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
  if (c) {
    pthread_mutex_lock(&c->lock);
    c->activeFd = -1;
    pthread_mutex_unlock(&c->lock);
  }
  close(fd);
  if (rc != 0) {
    if (c && commDead(c)) setLastError("%s: rendezvous interrupted: communicator aborted", fn);
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
  sleepMs(jittered(settings()->uniqueIdMs));
  if (!ensureServer()) { setLastError("ncclGetUniqueId: cannot start the rendezvous server"); return ncclSystemError; }
  IdLayout l;
  memset(&l, 0, sizeof l);
  l.magic = ID_MAGIC;
  l.addr = htonl(INADDR_LOOPBACK);
  l.port = serverPort;
  l.tag = random64();
  memset(id, 0, sizeof *id);
  memcpy(id->internal, &l, sizeof l);
  return ncclSuccess;
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
  hangHook(fn, rank, NULL);
  r = rendezvous(l.addr, l.port, l.tag, 0, nranks, rank, NULL, 0, NULL, NULL, fn);
  if (r != ncclSuccess) return r;
  sleepMs(jittered(settings()->initMs));
  if (!memCharge(settings()->commBytes)) { setLastError("%s: out of device memory", fn); return ncclUnhandledCudaError; }
  ncclComm_t c = newComm(l.addr, l.port, l.tag, nranks, rank, blocking);
  if (!c) return ncclSystemError;
  c->chargedBytes = (unsigned long long)settings()->commBytes;
  *out = c;
  return blocking ? ncclSuccess : ncclInProgress; /* non-blocking: work already done, poll says success */
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
  if (!validComm(comm) || !newcomm) { setLastError("%s: invalid argument", fn); return ncclInvalidArgument; }
  *newcomm = NULL;
  if (color < -1) { setLastError("%s: invalid color %d", fn, color); return ncclInvalidArgument; }
  int blocking;
  ncclResult_t r = parseConfig(config, comm->blocking, &blocking);
  if (r != ncclSuccess) return r;
  if (failHook(fn, comm->rank)) return ncclInternalError;
  if (hangHook(fn, comm->rank, comm)) return ncclRemoteError;
  SplitPayload mine = { color, key };
  SplitPayload* all = (SplitPayload*)calloc((size_t)comm->nranks, sizeof *all);
  if (!all) return ncclSystemError;
  uint64_t seq = comm->seq + 1;
  r = commRendezvous(comm, &mine, sizeof mine, all, fn);
  if (r != ncclSuccess) { free(all); return r; }
  if (color == -1) { free(all); return ncclSuccess; }
  /* Members ordered by key, then parent rank. */
  int n = 0, newRank = 0;
  for (int i = 0; i < comm->nranks; i++) {
    if (all[i].color != color) continue;
    n++;
    if (all[i].key < key || (all[i].key == key && i < comm->rank)) newRank++;
  }
  free(all);
  sleepMs(jittered(settings()->splitMs));
  if (!memCharge(settings()->commBytes)) { setLastError("%s: out of device memory", fn); return ncclUnhandledCudaError; }
  uint64_t childTag = mix64(comm->tag ^ mix64(seq * 0x9e3779b97f4a7c15ULL ^ (uint64_t)(uint32_t)color));
  ncclComm_t c = newComm(comm->addr, comm->port, childTag, n, newRank, blocking);
  if (!c) return ncclSystemError;
  c->chargedBytes = (unsigned long long)settings()->commBytes;
  *newcomm = c;
  return blocking ? ncclSuccess : ncclInProgress;
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

EXPORT ncclResult_t ncclAllReduce(const void* sendbuff, void* recvbuff, size_t count, int datatype, int op,
                                  ncclComm_t comm, CUstream stream) {
  const char* fn = "ncclAllReduce";
  (void)sendbuff; (void)recvbuff; (void)stream;
  if (!validComm(comm) || typeSize(datatype) == 0 || op < 0 || op > 4) { setLastError("%s: invalid argument", fn); return ncclInvalidArgument; }
  if (comm->finalized || commDead(comm)) { setLastError("%s: communicator finalized or aborted", fn); return ncclInvalidUsage; }
  if (failHook(fn, comm->rank)) return ncclInternalError;
  if (hangHook(fn, comm->rank, comm)) return ncclRemoteError;
  ncclResult_t r = commRendezvous(comm, NULL, 0, NULL, fn);
  if (r != ncclSuccess) return r;
  const SimSettings* s = settings();
  double ms = 0;
  if (!comm->connected) {
    comm->connected = 1;
    ms += s->connectMs;
    if (memCharge(s->connectBytes)) comm->chargedBytes += (unsigned long long)s->connectBytes;
  }
  double bytes = (double)count * (double)typeSize(datatype);
  if (s->bwGBps > 0) ms += bytes / (s->bwGBps * 1e9) * 1e3;
  sleepMs(jittered(ms));
  return comm->blocking ? ncclSuccess : ncclInProgress;
}

EXPORT ncclResult_t ncclCommFinalize(ncclComm_t comm) {
  const char* fn = "ncclCommFinalize";
  if (!validComm(comm)) { setLastError("%s: invalid argument", fn); return ncclInvalidArgument; }
  if (comm->finalized) { setLastError("%s: communicator already finalized", fn); return ncclInvalidArgument; }
  if (failHook(fn, comm->rank)) return ncclInternalError;
  if (hangHook(fn, comm->rank, comm)) return ncclRemoteError;
  ncclResult_t r = commRendezvous(comm, NULL, 0, NULL, fn);
  if (r != ncclSuccess) return r;
  comm->finalized = 1;
  sleepMs(jittered(settings()->finalizeMs));
  return comm->blocking ? ncclSuccess : ncclInProgress;
}

static void releaseComm(ncclComm_t comm) {
  pthread_mutex_lock(&comm->lock);
  unsigned long long b = comm->chargedBytes;
  comm->chargedBytes = 0;
  comm->dead = 1;
  if (comm->activeFd >= 0) shutdown(comm->activeFd, SHUT_RDWR);
  pthread_mutex_unlock(&comm->lock);
  memRelease(b);
}

EXPORT ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  const char* fn = "ncclCommDestroy";
  if (!comm) return ncclSuccess;
  if (!validComm(comm) || commDead(comm)) { setLastError("%s: invalid communicator", fn); return ncclInvalidArgument; }
  if (failHook(fn, comm->rank)) return ncclInternalError;
  if (hangHook(fn, comm->rank, comm)) return ncclRemoteError;
  sleepMs(jittered(settings()->destroyMs));
  releaseComm(comm);
  return ncclSuccess;
}

EXPORT ncclResult_t ncclCommAbort(ncclComm_t comm) {
  const char* fn = "ncclCommAbort";
  if (!comm) return ncclSuccess;
  if (!validComm(comm) || commDead(comm)) { setLastError("%s: invalid communicator", fn); return ncclInvalidArgument; }
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  releaseComm(comm); /* unblocks a thread of this process waiting in a rendezvous on comm */
  if (failHook(fn, comm->rank)) return ncclInternalError;
  clock_gettime(CLOCK_MONOTONIC, &t1);
  double spent = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
  sleepMs(jittered(settings()->abortMs) - spent); /* floor on abort */
  return ncclSuccess;
}

EXPORT ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* asyncError) {
  if (!validComm(comm) || !asyncError) return ncclInvalidArgument;
  *asyncError = ncclSuccess; /* every simulated operation completes before it returns */
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
  if (cuMemAlloc_v2(&p, size) != CUDA_SUCCESS) return ncclUnhandledCudaError;
  *ptr = (void*)(uintptr_t)p;
  return ncclSuccess;
}
EXPORT ncclResult_t ncclMemFree(void* ptr) {
  return cuMemFree_v2((CUdeviceptr)(uintptr_t)ptr) == CUDA_SUCCESS ? ncclSuccess : ncclInvalidArgument;
}
