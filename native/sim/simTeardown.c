/*
 * simTeardown.c: teardown: ncclCommFinalize, ncclCommDestroy (with the 2.31.2 destroy barrier of field
 * case C5) and ncclCommAbort.
 * Part of the simulated NCCL (test fixture); the model is described in ncclsim.c.
 */
#include "ncclsim_internal.h"

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

