/*
 * simCollectives.c: buffer registration (ncclCommRegister/Deregister), ncclAllReduce and ncclBroadcast.
 * Part of the simulated NCCL (test fixture); the model is described in ncclsim.c.
 */
#include "ncclsim_internal.h"

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
  int dead = comm->dead, revoked = comm->revoked, suspended = comm->suspended, deferred = comm->deferred;
  ncclResult_t async = comm->asyncError;
  pthread_mutex_unlock(&comm->lock);
  if (deferred) { setLastError("%s: the communicator's creation has not run yet (it was created inside a group: call ncclGroupEnd first)", fn); return ncclInvalidUsage; }
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


/* ncclBroadcast: modelled as ncclAllReduce of `count` elements (every rank meets once; the first on a
   communicator pays the lazy connect), with no data model (only float32 sums are modelled). */
EXPORT ncclResult_t ncclBroadcast(const void* sendbuff, void* recvbuff, size_t count, int datatype, int root,
                                  ncclComm_t comm, CUstream stream) {
  if (!validComm(comm) || root < 0 || root >= comm->nranks) { setLastError("ncclBroadcast: invalid argument"); return ncclInvalidArgument; }
  return ncclAllReduce(sendbuff, recvbuff, count, datatype, 1 /* ncclProd: no data model */, comm, stream);
}
