/*
 * ncclsim_internal.h: what the files of the simulated NCCL (native/sim/: every .c file) share: the NCCL/CUDA
 * ABI types, the settings, the communicator, the rendezvous id layout, the stream's op, and the
 * functions and state one file defines and others use. Everything declared between the
 * visibility pragmas is hidden: libnccl-sim.so exports only what is marked EXPORT (the nccl* and
 * cu* symbols and commcostSimulated), as when the library was one file of static functions.
 * The model and its environment variables are described at the top of ncclsim.c.
 */
#ifndef COMMCOST_NCCLSIM_INTERNAL_H
#define COMMCOST_NCCLSIM_INTERNAL_H
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

#pragma GCC visibility push(hidden)

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
  double buffSize;          /* NCCL_BUFFSIZE (bytes; 4 MiB when unset): scales the Simple share of connect memory */
  int envMinCtas, envMaxCtas; /* NCCL_MIN_CTAS / NCCL_MAX_CTAS (0 when unset): override the config's channel limits */
  double initMs, splitMs, connectMs, bwGBps, finalizeMs, destroyMs, abortMs, uniqueIdMs, cuInitMs, jitter;
  double shrinkMs, growMs, revokeMs, registerMs, regFirstMs, windowMs, windowDeregMs, memAllocMs;
  double suspendMs, resumeMs, graphMs, captureMs;
  double p2pConnectMs; /* COMMCOST_SIM_P2P_CONNECT_MS: the lazy connect of one peer at its first send/recv */
  int destroyBarrierVersion; /* COMMCOST_SIM_DESTROY_BARRIER_VERSION (C5) */
  double kernelsMs[16]; int kernelsCount; /* COMMCOST_SIM_KERNELS_MS: per rank, the last repeats */
  char algoRefused[64];      /* COMMCOST_SIM_ALGO_REFUSED: refuse allreduce while NCCL_ALGO is this */
  char hangFn[64]; int hangRank;
  char failFn[64]; int failRank;
  /* COMMCOST_SIM_ADDR: rendezvous address (network order); addrError != "" when the value is bad. */
  uint32_t addr; int addrSet; char addrText[64]; char addrError[160];
} SimSettings;


#define ID_MAGIC 0x4d495343u /* "CSIM" */
typedef struct { uint32_t magic; uint32_t addr; uint16_t port; uint16_t pad; uint32_t pad2; uint64_t tag; } IdLayout;
typedef struct { uint64_t tag, seq; uint32_t nranks, rank, plen, pad; } RvHeader;
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
  int deferred; /* created inside a group: its creation waits for ncclGroupEnd (simGroup.c) */
  int splitShare; /* children of ncclCommSplit share this communicator's resources */
  int channels;   /* channels its connections are made on (SIM_DEFAULT_CHANNELS, bounded by min/maxCTAs) */
  int shrunkWithAbort; /* this rank made a child of it with ncclCommShrink(NCCL_SHRINK_ABORT) */
  uint64_t idsDigest;  /* ncclCommInitRankScalable: digest of nId and its ids, checked equal on every rank at the rendezvous; 0 otherwise */
  double revokeUntil; /* nowMs() when a revoke is quiet */
  ncclResult_t asyncError; /* ncclInProgress while a non-blocking init runs */
  unsigned long long chargedBytes, connectCharged, suspendedBytes;
  int activeFds[MAX_ACTIVE_FDS];
  int pendingOps; /* ops on the stream (guarded by streamLock) */
  Reg* regs;
  void* profCtx; /* the profiler plugin's context (region "Profiler plugin"); NULL when none */
  int profMask;
  int profRef; /* holds a reference on the loaded plugin (released at finalize) */
  /* Send/recv (simCollectives.c): per peer, connected yet and the pair's next rendezvous seq;
   * allocated at the first send/recv (nranks entries each), never freed with the communicator. */
  unsigned char* peerConnected;
  uint64_t* peerSeq;
};
/* Communicator structs are never freed: an aborted one may still be referenced by a thread that
 * is returning from a rendezvous. The leak is bounded by the number of communicators a test makes. */

typedef struct SimEvent SimEvent;
/* An allreduce on `comm`, or (comm NULL) the marker of cuEventRecord for `event`. `src`/`dst`: the
 * float32 sum's buffers for the data model (0 = none: another type or op). */
/* `kind`: what the op is (OP_ALLREDUCE by default); `peer`: the root of a broadcast, the peer of a
 * send or recv. */
enum { OP_ALLREDUCE = 0, OP_BROADCAST = 1, OP_SEND = 2, OP_RECV = 3 };
typedef struct StreamOp { ncclComm_t comm; uint64_t seq; double bytes, extraMs; uintptr_t src, dst; SimEvent* event; int kind, peer; struct StreamOp* next; } StreamOp;
#define GRAPH_MAGIC 0x47524150u
#define EXEC_MAGIC 0x45584543u
#define GRAPH_MAX_OPS 16
typedef struct { ncclComm_t comm; double bytes; uintptr_t buf; } GraphOp;
typedef struct SimGraph { uint32_t magic; int nops; GraphOp ops[GRAPH_MAX_OPS]; } SimGraph;
typedef struct Alloc { CUdeviceptr ptr; size_t bytes; int cumem; struct Alloc* next; } Alloc;

/* simCore.c */
const SimSettings* settings(void);
extern pthread_mutex_t simLock;
extern char lastError[512];
void setLastError(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
double nowMs(void);
void sleepMs(double ms);
double jittered(double ms);
uint64_t random64(void);
uint64_t mix64(uint64_t x);
int writeAll(int fd, const void* buf, size_t n);
int readAll(int fd, void* buf, size_t n);
#define DEVICE_BYTES (80ULL * 1024 * 1024 * 1024)
extern unsigned long long memUsed; /* bytes of device memory in use (guarded by simLock) */
extern Alloc* allocs;
extern CUdeviceptr nextPtr;
int memCharge(double bytes);
void memRelease(unsigned long long bytes);
void dataWrite(uintptr_t ptr, size_t bytes, float value);
float dataRead(uintptr_t ptr);
void dataForget(uintptr_t ptr, size_t bytes);

/* simCuda.c */
extern int cuInitialized;

/* simBootstrap.c */
extern uint16_t serverPort;
int ensureServer(uint32_t addr, int* err);

/* simComm.c */
int validComm(ncclComm_t c);
int commDead(ncclComm_t c);
int commHalted(ncclComm_t c);
void killActiveLocked(ncclComm_t c);
ncclComm_t newComm(uint32_t addr, uint16_t port, uint64_t tag, int nranks, int rank, int blocking);
void sleepComm(double ms, ncclComm_t c);
int failHook(const char* fn, int rank);
int hangHook(const char* fn, int rank, ncclComm_t c);
ncclResult_t hooks(const char* fn, int rank, ncclComm_t c);
ncclResult_t rendezvous(uint32_t addr, uint16_t port, uint64_t tag, uint64_t seq, int nranks,
                               int rank, const void* payload, uint32_t plen, void* out, ncclComm_t c,
                               const char* fn);
ncclResult_t commRendezvous(ncclComm_t c, const void* payload, uint32_t plen, void* out, const char* fn);
int configSplitShare(const void* config);
#define SIM_DEFAULT_CHANNELS 16
#define SIM_DEFAULT_BUFFSIZE (4.0 * 1024 * 1024)
int configChannels(const void* config);
double connectBytesOf(ncclComm_t c);
ncclResult_t parseConfig(const void* config, int inherit, int* blocking);
extern __thread double lastKernelsMs;
ncclResult_t chargeCreation(ncclComm_t c, double baseMs, const char* fn);
void versionText(char* buf, size_t n);
/* ncclInvalidUsage with "<fn> is not supported in simulated <version>" below version `since`. */
ncclResult_t versionGate(const char* fn, int since);

/* simProfiler.c */
void profInit(ncclComm_t c);
void waitCommDrained(ncclComm_t c);
ncclResult_t profiledCollective(ncclComm_t c, size_t count, ncclResult_t (*enqueue)(void*), void* arg);
/* The same for any op: `func` as NCCL names it ("AllReduce", "Broadcast", "Send", "Recv"); `peer` >= 0
 * makes it a point-to-point op (P2pApi / P2p events) whose lazy connect is that peer's. */
ncclResult_t profiledOp(ncclComm_t c, const char* func, int peer, size_t count, ncclResult_t (*enqueue)(void*), void* arg);
/* Whether the next op of kind (OP_*) with `peer` on `c` pays a connect (simStream.c). */
int opConnectsNow(ncclComm_t c, int kind, int peer);
void profFinalize(ncclComm_t c);

/* simStream.c */
extern pthread_mutex_t streamLock;
extern SimGraph* captureGraph;
ncclResult_t enqueueOpData(ncclComm_t c, double bytes, double extraMs, uintptr_t src, uintptr_t dst);
ncclResult_t enqueueOp(ncclComm_t c, double bytes, double extraMs);
/* Appends an op of `kind` (OP_*) with its root or peer; a send/recv takes its pair's seq. */
ncclResult_t enqueueOpKind(ncclComm_t c, int kind, int peer, double bytes, double extraMs, uintptr_t src, uintptr_t dst);
double registrationExtra(ncclComm_t c, uintptr_t buf);
int commPending(ncclComm_t c);

/* simGroup.c: a creation queued inside ncclGroupStart/End, run by the outermost ncclGroupEnd. `c`: the
 * communicator it makes (NULL for a split with NCCL_SPLIT_NOCOLOR); `arg` is freed with the job. */
typedef struct GroupJob {
  ncclResult_t (*run)(struct GroupJob*);
  ncclComm_t c;
  const char* fn;
  void* arg;
  int blocking;
  ncclResult_t result;
  pthread_t thread;
  int threaded;
  struct GroupJob* next;
} GroupJob;
int groupDepthNow(void);
void groupStartInternal(void);
ncclResult_t groupEndInternal(void);
/* Queues `job` (taking it); ncclInvalidArgument when it mixes blocking and non-blocking communicators. */
ncclResult_t groupDefer(GroupJob* job);
/* A creation refused inside the group: the group's end fails with `r` and runs nothing. */
void groupSetError(ncclResult_t r);

/* simInit.c */
void logChild(const char* fn, ncclComm_t c, ncclComm_t parent, int childCount, int color, int key, double t0, double tBoot, int complete);

#pragma GCC visibility pop

#endif /* COMMCOST_NCCLSIM_INTERNAL_H */
