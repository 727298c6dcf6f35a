/*
 * simComm.c: the communicator: its state, the HANG/FAIL hooks, the rendezvous client, config parsing,
 * the cold kernel load and the creation cost (chargeCreation: connect inside creation or lazily).
 * Part of the simulated NCCL (test fixture); the model is described in ncclsim.c.
 */
#include "ncclsim_internal.h"

/* ------------------------------------------------------------------------------------------ */
/* Communicators                                                                                */

int validComm(ncclComm_t c) { return c && c->magic == COMM_MAGIC; }

int commDead(ncclComm_t c) {
  pthread_mutex_lock(&c->lock);
  int d = c->dead;
  pthread_mutex_unlock(&c->lock);
  return d;
}

/* Work on `c` must stop: aborted, revoked, or a NCCL_SHRINK_ABORT drain in progress. */
int commHalted(ncclComm_t c) {
  pthread_mutex_lock(&c->lock);
  int h = c->dead || c->revoked || c->abortFlag;
  pthread_mutex_unlock(&c->lock);
  return h;
}

/* Shuts down every rendezvous socket of `c` (caller holds c->lock). */
void killActiveLocked(ncclComm_t c) {
  for (int i = 0; i < MAX_ACTIVE_FDS; i++) if (c->activeFds[i] >= 0) shutdown(c->activeFds[i], SHUT_RDWR);
}

ncclComm_t newComm(uint32_t addr, uint16_t port, uint64_t tag, int nranks, int rank, int blocking) {
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
void sleepComm(double ms, ncclComm_t c) {
  double end = nowMs() + ms;
  for (;;) {
    double left = end - nowMs();
    if (left <= 0) return;
    if (c && commHalted(c)) return;
    sleepMs(left < 2 ? left : 2);
  }
}

/* Fault hooks. Returns nonzero when `fn` on `rank` must fail. */
int failHook(const char* fn, int rank) {
  const SimSettings* s = settings();
  if (!s->failFn[0] || strcmp(s->failFn, fn) != 0 || (s->failRank >= 0 && s->failRank != rank)) return 0;
  setLastError("simulated failure in %s on rank %d", fn, rank);
  return 1;
}

/* Sleeps forever (or until `c` is aborted) when the hang hook names `fn` on `rank`. */
int hangHook(const char* fn, int rank, ncclComm_t c) {
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
ncclResult_t hooks(const char* fn, int rank, ncclComm_t c) {
  if (failHook(fn, rank)) return ncclInternalError;
  if (hangHook(fn, rank, c)) return ncclRemoteError;
  return ncclSuccess;
}

/* One rendezvous on (tag, seq): sends `plen` bytes, receives nranks*plen bytes into `out`. */
ncclResult_t rendezvous(uint32_t addr, uint16_t port, uint64_t tag, uint64_t seq, int nranks,
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
    int collective = strcmp(fn, "ncclAllReduce") == 0 || strcmp(fn, "ncclBroadcast") == 0 || strcmp(fn, "ncclSend") == 0 ||
                     strcmp(fn, "ncclRecv") == 0;
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

ncclResult_t commRendezvous(ncclComm_t c, const void* payload, uint32_t plen, void* out, const char* fn) {
  uint64_t seq = ++c->seq;
  return rendezvous(c->addr, c->port, c->tag, seq, c->nranks, c->rank, payload, plen, out, c, fn);
}

/* Reads config->blocking if the caller passed a valid config; returns 0 or an error. */
/* splitShare of a creation config (offset 40, since 2.18), or NCCL_COMM_SPLIT_SHARE_RESOURCES,
 * which overrides the config as in NCCL. */
int configSplitShare(const void* config) {
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

/* Channels of a communicator created with `config`: SIM_DEFAULT_CHANNELS, raised to minCTAs and
 * capped at maxCTAs (offsets 24 and 28, since 2.17; NCCL_CONFIG_UNDEF_INT = unset), each of which
 * NCCL_MIN_CTAS / NCCL_MAX_CTAS overrides as NCCL's envConfigOverride does. */
int configChannels(const void* config) {
  const SimSettings* s = settings();
  int minCtas = INT_MIN, maxCtas = INT_MIN;
  if (config) {
    size_t size;
    memcpy(&size, config, sizeof size);
    if (size >= 32) {
      memcpy(&minCtas, (const char*)config + 24, sizeof minCtas);
      memcpy(&maxCtas, (const char*)config + 28, sizeof maxCtas);
    }
  }
  if (s->envMinCtas > 0) minCtas = s->envMinCtas;
  if (s->envMaxCtas > 0) maxCtas = s->envMaxCtas;
  int ch = SIM_DEFAULT_CHANNELS;
  if (minCtas != INT_MIN && minCtas > ch) ch = minCtas;
  if (maxCtas != INT_MIN && maxCtas > 0 && maxCtas < ch) ch = maxCtas;
  return ch;
}

/* Connection buffers of `c` (bytes), paid when it connects: COMMCOST_SIM_CONNECT_BYTES at the
 * defaults, three quarters of it the Simple protocol's buffers, which scale with NCCL_BUFFSIZE (4 MiB
 * by default), a quarter LL/LL128's, which do not; all of it in proportion to the communicator's
 * channels over SIM_DEFAULT_CHANNELS. */
double connectBytesOf(ncclComm_t c) {
  const SimSettings* s = settings();
  int ch = c->channels > 0 ? c->channels : configChannels(NULL);
  return s->connectBytes * (0.25 + 0.75 * s->buffSize / SIM_DEFAULT_BUFFSIZE) * ch / SIM_DEFAULT_CHANNELS;
}

ncclResult_t parseConfig(const void* config, int inherit, int* blocking) {
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
__thread double lastKernelsMs = 0;

ncclResult_t chargeCreation(ncclComm_t c, double baseMs, const char* fn) {
  const SimSettings* s = settings();
  double ms = baseMs;
  profInit(c);
  lastKernelsMs = loadKernelsOnce(c->rank);
  if (!memCharge(s->commBytes)) { setLastError("%s: out of device memory", fn); return ncclUnhandledCudaError; }
  c->chargedBytes = (unsigned long long)s->commBytes;
  if (!s->runtimeConnect) {
    c->connected = 1;
    /* Eager connect: a 1-rank communicator has no peer to connect (no time), yet allocates the
     * buffers (NVIDIA/nccl#2363: ~900 MiB against ~388 MiB with runtime connect on 1×H200). */
    if (c->nranks > 1) ms += s->connectMs;
    double bytes = connectBytesOf(c);
    if (memCharge(bytes)) {
      c->connectCharged = (unsigned long long)bytes;
      c->chargedBytes += c->connectCharged;
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

void versionText(char* buf, size_t n) {
  int v = settings()->version;
  snprintf(buf, n, "%d.%d.%d", v / 10000, (v % 10000) / 100, v % 100);
}

/* ncclInvalidUsage when the simulated version predates `since`. */
ncclResult_t versionGate(const char* fn, int since) {
  if (settings()->version >= since) return ncclSuccess;
  char v[32];
  versionText(v, sizeof v);
  setLastError("%s is not supported in simulated %s", fn, v);
  return ncclInvalidUsage;
}

