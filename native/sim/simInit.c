/*
 * simInit.c: ncclGetUniqueId, NCCL's debug log (INIT INFO lines, "Init timings") and communicator
 * creation by ncclCommInitRank/Config (blocking and non-blocking; inside a group deferred to ncclGroupEnd,
 * simGroup.c), ncclCommInitRankScalable (several unique ids; not in the legacy build) and ncclCommInitAll
 * (one group of ndev ranks in this process).
 * Part of the simulated NCCL (test fixture); the model is described in ncclsim.c.
 */
#include "ncclsim_internal.h"

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
void logChild(const char* fn, ncclComm_t c, ncclComm_t parent, int childCount, int color, int key, double t0, double tBoot, int complete) {
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

/* The rendezvous of ncclCommInitRankScalable, on its first id (as NCCL: the first id names the
 * communicator; ranks given different first ids never meet): every rank's digest of nId and the ids
 * gathered and compared, so a rank given other ids after the first, fewer or more, fails the init on
 * every rank with ncclInvalidUsage. */
static ncclResult_t scalableRendezvous(ncclComm_t c, const char* fn) {
  uint64_t* all = (uint64_t*)calloc((size_t)c->nranks, sizeof *all);
  if (!all) return ncclSystemError;
  ncclResult_t r = rendezvous(c->addr, c->port, c->tag, 0, c->nranks, c->rank, &c->idsDigest, sizeof c->idsDigest, all, c, fn);
  for (int i = 0; r == ncclSuccess && i < c->nranks; i++) {
    if (all[i] != c->idsDigest) {
      setLastError("%s: rank %d passed other unique ids than rank %d (every rank must pass the same nId ids in the same order)",
                   fn, i, c->rank);
      r = ncclInvalidUsage;
    }
  }
  free(all);
  return r;
}

/* Rendezvous + creation cost of an init; sets c->asyncError on the way out. */
static ncclResult_t runInit(ncclComm_t c, const char* fn) {
  double t0 = nowMs();
  logInfo("%s comm %p rank %d nranks %d cudaDev 0 nvmlDev 0 busId 0 commId 0x%llx - Init START", fn, (void*)c, c->rank,
          c->nranks, (unsigned long long)c->tag);
  ncclResult_t r = hangHook(fn, c->rank, c) ? ncclRemoteError : ncclSuccess;
  if (r == ncclSuccess && c->idsDigest) r = scalableRendezvous(c, fn);
  else if (r == ncclSuccess) r = rendezvous(c->addr, c->port, c->tag, 0, c->nranks, c->rank, NULL, 0, NULL, c, fn);
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

static ncclResult_t initJob(GroupJob* job) { return runInit(job->c, job->fn); }

static ncclResult_t initRank(ncclComm_t* out, int nranks, ncclUniqueId commId, int rank, const void* config,
                             const char* fn, uint64_t idsDigest) {
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
  if (c) { c->splitShare = configSplitShare(config); c->channels = configChannels(config); c->idsDigest = idsDigest; }
  if (!c) return ncclSystemError;
  if (groupDepthNow() > 0) {
    /* Inside ncclGroupStart/End: the pointer is set now, the work waits for ncclGroupEnd (simGroup.c). */
    GroupJob* job = (GroupJob*)calloc(1, sizeof *job);
    if (!job) return ncclSystemError;
    job->run = initJob; job->c = c; job->fn = fn; job->blocking = blocking;
    if ((r = groupDefer(job)) != ncclSuccess) return r;
    *out = c;
    return ncclSuccess;
  }
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

/* initRank; a call refused inside a group fails the group too (NCCL's ncclGroupErrCheck). */
static ncclResult_t initRankChecked(ncclComm_t* out, int nranks, ncclUniqueId commId, int rank, const void* config, const char* fn,
                                    uint64_t idsDigest) {
  ncclResult_t r = initRank(out, nranks, commId, rank, config, fn, idsDigest);
  if (r != ncclSuccess && r != ncclInProgress && groupDepthNow() > 0) groupSetError(r);
  return r;
}

EXPORT ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank) {
  return initRankChecked(comm, nranks, commId, rank, NULL, "ncclCommInitRank", 0);
}

EXPORT ncclResult_t ncclCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank, void* config) {
  return initRankChecked(comm, nranks, commId, rank, config, "ncclCommInitRankConfig", 0);
}

#ifndef COMMCOST_SIM_LEGACY
/* As NCCL 2.23.4+: several unique ids (1 ≤ nId ≤ nranks, from ncclGetUniqueId, the same on every rank
 * in the same order); the communicator is named by the first (its rendezvous); the others are checked
 * for shape and folded into the digest every rank compares (scalableRendezvous). The creation cost is
 * the init's: the simulator does not model a bootstrap spread over several roots. */
EXPORT ncclResult_t ncclCommInitRankScalable(ncclComm_t* newcomm, int nranks, int myrank, int nId, ncclUniqueId* commIds,
                                             void* config) {
  const char* fn = "ncclCommInitRankScalable";
  ncclResult_t r = versionGate(fn, 22304);
  if (r != ncclSuccess) return r;
  if (!commIds || nId < 1 || nId > nranks) {
    setLastError("%s: nId %d must be between 1 and nranks (%d), with that many ids", fn, nId, nranks);
    return ncclInvalidArgument;
  }
  uint64_t digest = 1469598103934665603ull ^ (uint64_t)nId; /* FNV-1a over nId and the ids' tags */
  for (int i = 0; i < nId; i++) {
    IdLayout l;
    memcpy(&l, commIds[i].internal, sizeof l);
    if (l.magic != ID_MAGIC) { setLastError("%s: unique id %d was not made by ncclGetUniqueId", fn, i); return ncclInvalidArgument; }
    digest = (digest ^ l.tag) * 1099511628211ull;
  }
  return initRankChecked(newcomm, nranks, commIds[0], myrank, config, fn, digest ? digest : 1);
}
#endif

/* As NCCL: a unique id, then one ncclCommInitRank per device inside a group of its own, so the ranks
 * are created together at its end (each on its own thread) and the call returns when all are. */
EXPORT ncclResult_t ncclCommInitAll(ncclComm_t* comms, int ndev, const int* devlist) {
  const char* fn = "ncclCommInitAll";
  if (!comms || ndev < 0) { setLastError("%s: invalid argument", fn); return ncclInvalidArgument; }
  int gpus = settings()->gpus;
  for (int i = 0; i < ndev; i++) {
    int dev = devlist ? devlist[i] : i;
    if (dev < 0 || dev >= gpus) { setLastError("%s: invalid device %d (%d simulated devices)", fn, dev, gpus); return ncclInvalidArgument; }
    for (int j = 0; devlist && j < i; j++)
      if (devlist[j] == dev) { setLastError("%s: device %d listed twice", fn, dev); return ncclInvalidUsage; }
  }
  if (ndev == 0) return ncclSuccess;
  ncclUniqueId id;
  ncclResult_t r = ncclGetUniqueId(&id);
  if (r != ncclSuccess) return r;
  groupStartInternal();
  for (int i = 0; i < ndev; i++) initRankChecked(comms + i, ndev, id, i, NULL, fn, 0); /* an error fails the group's end, as NCCL */
  return groupEndInternal();
}
