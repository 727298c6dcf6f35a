/*
 * simReshape.c: communicators made from others and their lifecycle since 2.19: ncclCommSplit, Shrink,
 * GetUniqueId + Grow, Revoke, collective windows, Suspend/Resume and MemStats (the symbols newer
 * than 2.19 are left out with -DCOMMCOST_SIM_LEGACY).
 * Part of the simulated NCCL (test fixture); the model is described in ncclsim.c.
 */
#include "ncclsim_internal.h"

typedef struct { int32_t color, key; } SplitPayload;

/* The work of a split: the color/key exchange on the parent, then the child's creation. `child`: the
 * communicator a grouped split already handed out (filled in here), or NULL to make one. */
static ncclResult_t splitWork(ncclComm_t comm, int color, int key, int blocking, ncclComm_t child, ncclComm_t* made, double tSplit) {
  const char* fn = "ncclCommSplit";
  SplitPayload mine = { color, key };
  SplitPayload* all = (SplitPayload*)calloc((size_t)comm->nranks, sizeof *all);
  if (!all) return ncclSystemError;
  uint64_t seq = comm->seq + 1;
  ncclResult_t r = commRendezvous(comm, &mine, sizeof mine, all, fn);
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
  uint64_t childTag = mix64(comm->tag ^ mix64(seq * 0x9e3779b97f4a7c15ULL ^ (uint64_t)(uint32_t)color));
  ncclComm_t c = child;
  if (c) { c->tag = childTag; c->nranks = n; c->rank = newRank; }
  else if (!(c = newComm(comm->addr, comm->port, childTag, n, newRank, blocking))) return ncclSystemError;
  c->splitShare = comm->splitShare;
  c->channels = comm->channels; /* config NULL: the child inherits the parent's config */
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
  if (made) *made = c;
  return ncclSuccess;
}

typedef struct { ncclComm_t parent; int color, key; double tSplit; } SplitArgs;

static ncclResult_t splitJob(GroupJob* job) {
  SplitArgs* a = (SplitArgs*)job->arg;
  return splitWork(a->parent, a->color, a->key, job->blocking, job->c, NULL, a->tSplit);
}

EXPORT ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t* newcomm, void* config) {
  const char* fn = "ncclCommSplit";
  double tSplit = nowMs();
  ncclResult_t r = ncclSuccess;
  if (!validComm(comm) || !newcomm) { setLastError("%s: invalid argument", fn); r = ncclInvalidArgument; }
  else {
    *newcomm = NULL;
    if (color < -1) { setLastError("%s: invalid color %d", fn, color); r = ncclInvalidArgument; }
    else if (commDead(comm)) { setLastError("%s: communicator aborted", fn); r = ncclInvalidUsage; }
  }
  int blocking = 1;
  if (r == ncclSuccess) r = parseConfig(config, comm->blocking, &blocking);
  if (r == ncclSuccess) r = hooks(fn, comm->rank, comm);
  if (r != ncclSuccess) {
    if (groupDepthNow() > 0) groupSetError(r);
    return r;
  }
  if (groupDepthNow() > 0) {
    /* Inside ncclGroupStart/End: the child is handed out now (NULL for NCCL_SPLIT_NOCOLOR), made at ncclGroupEnd. */
    ncclComm_t c = color == -1 ? NULL : newComm(comm->addr, comm->port, 0, 1, 0, blocking);
    GroupJob* job = (GroupJob*)calloc(1, sizeof *job);
    SplitArgs* a = (SplitArgs*)calloc(1, sizeof *a);
    if ((color != -1 && !c) || !job || !a) { free(job); free(a); groupSetError(ncclSystemError); return ncclSystemError; }
    a->parent = comm; a->color = color; a->key = key; a->tSplit = tSplit;
    job->run = splitJob; job->c = c; job->fn = fn; job->arg = a; job->blocking = blocking;
    if ((r = groupDefer(job)) != ncclSuccess) return r;
    *newcomm = c;
    return ncclSuccess;
  }
  if ((r = splitWork(comm, color, key, blocking, NULL, newcomm, tSplit)) != ncclSuccess) return r;
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
