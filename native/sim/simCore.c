/*
 * simCore.c: the settings (environment, read once), small helpers (last error, clock, sleeps, random,
 * socket I/O), the device-memory counter and the device-data model (uniform float32 ranges).
 * Part of the simulated NCCL (test fixture); the model is described in ncclsim.c.
 */
#include "ncclsim_internal.h"

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
  S.p2pConnectMs = envNum("COMMCOST_SIM_P2P_CONNECT_MS", 20);
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
    /* NCCL enables runtime connect only where cuMem is in use (runtimeConn = cuMemSupport &&
     * param): NCCL_CUMEM_ENABLE=0 connects inside creation too. */
    const char* cumem = getenv("NCCL_CUMEM_ENABLE");
    S.runtimeConnect = S.version >= 22200 && !(rc && strcmp(rc, "0") == 0) && !(cumem && strcmp(cumem, "0") == 0);
  }
  S.buffSize = envNum("NCCL_BUFFSIZE", SIM_DEFAULT_BUFFSIZE);
  if (S.buffSize <= 0) S.buffSize = SIM_DEFAULT_BUFFSIZE;
  S.envMinCtas = (int)envNum("NCCL_MIN_CTAS", 0);
  S.envMaxCtas = (int)envNum("NCCL_MAX_CTAS", 0);
  parseAddr();
  parseKernels();
  parseHook("COMMCOST_SIM_HANG", S.hangFn, sizeof S.hangFn, &S.hangRank);
  parseHook("COMMCOST_SIM_FAIL", S.failFn, sizeof S.failFn, &S.failRank);
  srand((unsigned)(getpid() ^ time(NULL)));
}

const SimSettings* settings(void) {
  pthread_once(&settingsOnce, loadSettings);
  return &S;
}

/* ------------------------------------------------------------------------------------------ */
/* Small helpers                                                                                */

pthread_mutex_t simLock = PTHREAD_MUTEX_INITIALIZER; /* memory, rng, last error */
char lastError[512] = "";

void setLastError(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
void setLastError(const char* fmt, ...) {
  __builtin_va_list ap;
  __builtin_va_start(ap, fmt);
  pthread_mutex_lock(&simLock);
  vsnprintf(lastError, sizeof lastError, fmt, ap);
  pthread_mutex_unlock(&simLock);
  __builtin_va_end(ap);
}

double nowMs(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

void sleepMs(double ms) {
  if (ms <= 0) return;
  struct timespec ts;
  ts.tv_sec = (time_t)(ms / 1000.0);
  ts.tv_nsec = (long)((ms - (double)ts.tv_sec * 1000.0) * 1e6);
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {}
}

/* ms scaled by a uniform factor in [1 - jitter, 1 + jitter]. */
double jittered(double ms) {
  pthread_mutex_lock(&simLock);
  double u = (double)rand() / (double)RAND_MAX;
  pthread_mutex_unlock(&simLock);
  return ms * (1.0 + settings()->jitter * (2.0 * u - 1.0));
}

uint64_t random64(void) {
  uint64_t v = 0;
  int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
  if (fd >= 0) { if (read(fd, &v, sizeof v) != (ssize_t)sizeof v) v = 0; close(fd); }
  if (v == 0) {
    struct timespec ts; clock_gettime(CLOCK_MONOTONIC, &ts);
    v = ((uint64_t)getpid() << 32) ^ (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 20);
  }
  return v;
}

uint64_t mix64(uint64_t x) { /* splitmix64 finalizer */
  x ^= x >> 30; x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27; x *= 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

int writeAll(int fd, const void* buf, size_t n) {
  const char* p = (const char*)buf;
  while (n > 0) {
    ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return -1;
    p += w; n -= (size_t)w;
  }
  return 0;
}

int readAll(int fd, void* buf, size_t n) {
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


unsigned long long memUsed = 0;
Alloc* allocs = NULL;
CUdeviceptr nextPtr = 0x7f0000000000ULL;

int memCharge(double bytes) {
  pthread_mutex_lock(&simLock);
  unsigned long long b = (unsigned long long)bytes;
  int ok = memUsed + b <= DEVICE_BYTES;
  if (ok) memUsed += b;
  pthread_mutex_unlock(&simLock);
  return ok;
}

void memRelease(unsigned long long bytes) {
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

void dataWrite(uintptr_t ptr, size_t bytes, float value) {
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

float dataRead(uintptr_t ptr) {
  float v = 0.0f;
  pthread_mutex_lock(&dataLock);
  for (Fill* f = fills; f; f = f->next) if (ptr >= f->ptr && ptr < f->ptr + f->bytes) { v = f->value; break; }
  pthread_mutex_unlock(&dataLock);
  return v;
}

void dataForget(uintptr_t ptr, size_t bytes) {
  pthread_mutex_lock(&dataLock);
  dataForgetLocked(ptr, bytes);
  pthread_mutex_unlock(&dataLock);
}

