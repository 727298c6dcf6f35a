/*
 * simStream.c: the device stream (one queue per process, served by a background thread), CUDA events
 * (the in-flight window) and CUDA graphs (capture, instantiate, launch).
 * Part of the simulated NCCL (test fixture); the model is described in ncclsim.c.
 */
#include "ncclsim_internal.h"

/* ------------------------------------------------------------------------------------------ */
/* The stream: one queue per process, served by a background thread                           */

static void dataAllReduceDone(StreamOp* op, const float* contributions, int nranks);
static void eventReached(SimEvent* e);
pthread_mutex_t streamLock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t streamWork = PTHREAD_COND_INITIALIZER;
static pthread_cond_t streamIdle = PTHREAD_COND_INITIALIZER;
static StreamOp *qHead = NULL, *qTail = NULL;
static int qBusy = 0, streamThreadStarted = 0;

SimGraph* captureGraph = NULL; /* non-NULL while the stream is capturing (guarded by streamLock) */

/* A send or recv: a rendezvous of the two ranks of the pair only (a tag of its own, the pair's seq), and
 * the lazy connect of that peer the first time (COMMCOST_SIM_P2P_CONNECT_MS; with oneself: none).
 * NCCL_RUNTIME_CONNECT=0 does not connect peers at creation: point-to-point connections are always lazy. */
static void runP2p(StreamOp* op) {
  ncclComm_t c = op->comm;
  const SimSettings* s = settings();
  double ms = op->extraMs;
  if (op->peer != c->rank) {
    int lo = c->rank < op->peer ? c->rank : op->peer, hi = c->rank < op->peer ? op->peer : c->rank;
    uint64_t pairTag = mix64(c->tag ^ (((uint64_t)(unsigned)lo << 32) | (uint64_t)(unsigned)hi) ^ 0x7032703270327032ull);
    ncclResult_t r = rendezvous(c->addr, c->port, pairTag, op->seq, 2, c->rank == lo ? 0 : 1, NULL, 0, NULL, c,
                                op->kind == OP_SEND ? "ncclSend" : "ncclRecv");
    if (r != ncclSuccess) {
      pthread_mutex_lock(&c->lock);
      if (!c->dead && !c->revoked && !c->abortFlag && c->asyncError == ncclSuccess) c->asyncError = r;
      pthread_mutex_unlock(&c->lock);
      return;
    }
    pthread_mutex_lock(&c->lock);
    int connectNow = !c->peerConnected[op->peer];
    c->peerConnected[op->peer] = 1;
    pthread_mutex_unlock(&c->lock);
    if (connectNow) ms += s->p2pConnectMs;
  }
  if (s->bwGBps > 0) ms += op->bytes / (s->bwGBps * 1e9) * 1e3;
  sleepComm(jittered(ms), c);
}

static void runOp(StreamOp* op) {
  ncclComm_t c = op->comm;
  const SimSettings* s = settings();
  if (commHalted(c)) return; /* killed: revoke, abort or shrink-abort */
  if (op->kind == OP_SEND || op->kind == OP_RECV) { runP2p(op); return; }
  /* Each rank's value at src travels in the rendezvous (the data model: dataAllReduceDone). */
  float mine = op->src ? dataRead(op->src) : 0.0f;
  float* all = (float*)calloc((size_t)c->nranks, sizeof(float));
  if (!all) return;
  ncclResult_t r = rendezvous(c->addr, c->port, c->tag, op->seq, c->nranks, c->rank, &mine, sizeof mine, all, c,
                              op->kind == OP_BROADCAST ? "ncclBroadcast" : "ncclAllReduce");
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
    double bytes = connectBytesOf(c);
    if (memCharge(bytes)) {
      pthread_mutex_lock(&c->lock);
      c->connectCharged += (unsigned long long)bytes;
      c->chargedBytes += (unsigned long long)bytes;
      pthread_mutex_unlock(&c->lock);
    }
  }
  if (s->bwGBps > 0) ms += op->bytes / (s->bwGBps * 1e9) * 1e3;
  sleepComm(jittered(ms), c);
  /* Completed unless the work was killed meanwhile (revoke, abort, NCCL_SHRINK_ABORT): dropped. */
  if (!commHalted(c)) {
    if (op->kind == OP_BROADCAST) { if (op->dst && op->peer >= 0 && op->peer < c->nranks) dataWrite(op->dst, (size_t)op->bytes, all[op->peer]); }
    else dataAllReduceDone(op, all, c->nranks);
  }
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
ncclResult_t enqueueOpData(ncclComm_t c, double bytes, double extraMs, uintptr_t src, uintptr_t dst);
ncclResult_t enqueueOp(ncclComm_t c, double bytes, double extraMs) { return enqueueOpData(c, bytes, extraMs, 0, 0); }

/* Appends an allreduce on `c` (or, c NULL, an event marker: see cuEventRecord) to the stream. */
ncclResult_t enqueueOpData(ncclComm_t c, double bytes, double extraMs, uintptr_t src, uintptr_t dst) {
  return enqueueOpKind(c, OP_ALLREDUCE, -1, bytes, extraMs, src, dst);
}

/* Whether the next op of `kind` with `peer` on `c` pays a connect: a collective on a communicator not
 * connected yet (more than one rank), a send/recv with a peer other than itself not connected yet. */
int opConnectsNow(ncclComm_t c, int kind, int peer) {
  pthread_mutex_lock(&c->lock);
  int now = (kind == OP_SEND || kind == OP_RECV) ? (peer != c->rank && (!c->peerConnected || !c->peerConnected[peer]))
                                                 : (!c->connected && c->nranks > 1);
  pthread_mutex_unlock(&c->lock);
  return now;
}

ncclResult_t enqueueOpKind(ncclComm_t c, int kind, int peer, double bytes, double extraMs, uintptr_t src, uintptr_t dst) {
  StreamOp* op = (StreamOp*)calloc(1, sizeof *op);
  if (!op) return ncclSystemError;
  uint64_t seq;
  if (kind == OP_SEND || kind == OP_RECV) {
    pthread_mutex_lock(&c->lock);
    if (!c->peerSeq) c->peerSeq = (uint64_t*)calloc((size_t)c->nranks, sizeof(uint64_t));
    if (!c->peerConnected) c->peerConnected = (unsigned char*)calloc((size_t)c->nranks, 1);
    int ok = c->peerSeq && c->peerConnected;
    seq = ok ? ++c->peerSeq[peer] : 0;
    pthread_mutex_unlock(&c->lock);
    if (!ok) { free(op); return ncclSystemError; }
  } else {
    seq = ++c->seq;
  }
  op->comm = c; op->seq = seq; op->bytes = bytes; op->extraMs = extraMs; op->src = src; op->dst = dst;
  op->kind = kind; op->peer = peer;
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
void waitCommDrained(ncclComm_t c) {
  pthread_mutex_lock(&streamLock);
  while (c->pendingOps > 0) pthread_cond_wait(&streamIdle, &streamLock);
  pthread_mutex_unlock(&streamLock);
}

int commPending(ncclComm_t c) {
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
double registrationExtra(ncclComm_t c, uintptr_t buf) {
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

