/*
 * profilerAbi.h: the NCCL profiler plugin ABI (versions 4, 5, 6 and 7), declared by commcost from the
 * published interface (NCCL's plugins/profiler headers describe it; nothing is copied from them).
 * Used by the commcost profiler plugin (commcostProfiler.c) and by the simulated NCCL, which
 * loads a plugin the way NCCL does. Field order and types must match NCCL's exactly: they are
 * the binary interface.
 *
 *   v4 (NCCL 2.27.3): init(ctx, mask, name, commHash, nNodes, nranks, rank, log); event type is a uint8_t.
 *   v5 (NCCL 2.28.3): init(ctx, commId, mask, name, nNodes, nranks, rank, log); uint64_t type;
 *                     API-level events GroupApi / CollApi / P2pApi / KernelLaunch.
 *   v6 (NCCL 2.29.2): v5 plus copy-engine events (CeColl / CeSync / CeBatch).
 *   v7 (release not confirmed here: 2.31 or 2.32): v6 plus a UserTag descriptor member (a tag
 *                     string valid only during startEvent/stopEvent); init, state args and every
 *                     other member as in v6. Its event type bit is not declared here: commcost
 *                     neither asks for nor records it; a v7 event v6 does not know is not passed to v6.
 */
#ifndef COMMCOST_PROFILER_ABI_H
#define COMMCOST_PROFILER_ABI_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

typedef int ccNcclResult; /* ncclResult_t: 0 = success */
typedef void (*ccNcclLogger)(int level, unsigned long flags, const char* file, int line, const char* fmt, ...);

/* Event types (bit values: also the activation mask). */
enum {
  CC_EV_GROUP = 1 << 0, CC_EV_COLL = 1 << 1, CC_EV_P2P = 1 << 2, CC_EV_PROXY_OP = 1 << 3,
  CC_EV_PROXY_STEP = 1 << 4, CC_EV_PROXY_CTRL = 1 << 5, CC_EV_KERNEL_CH = 1 << 6, CC_EV_NET_PLUGIN = 1 << 7,
  CC_EV_GROUP_API = 1 << 8, CC_EV_COLL_API = 1 << 9, CC_EV_P2P_API = 1 << 10, CC_EV_KERNEL_LAUNCH = 1 << 11,
  CC_EV_CE_COLL = 1 << 12, CC_EV_CE_SYNC = 1 << 13, CC_EV_CE_BATCH = 1 << 14,
};
/* Event states used here (the state enum is an int in the ABI). */
enum { CC_STATE_KERNEL_CH_STOP = 22, CC_STATE_GROUP_START_API_STOP = 23, CC_STATE_GROUP_END_API_START = 24 };

/* Union members shared by v4 and v5/v6 (same layout in every version). */
typedef struct { uint64_t seqNumber; const char* func; const void* sendBuff; void* recvBuff; size_t count; int root;
                 const char* datatype; uint8_t nChannels; uint8_t nWarps; const char* algo; const char* proto; } ccCollV4;
typedef struct { const char* func; void* buff; const char* datatype; size_t count; int peer; uint8_t nChannels; } ccP2pV4;
typedef struct { pid_t pid; uint8_t channelId; int peer; int nSteps; int chunkSize; int isSend; } ccProxyOp;
typedef struct { int step; } ccProxyStep;
typedef struct { uint8_t channelId; uint64_t pTimer; } ccKernelCh;
typedef struct { int64_t id; void* data; } ccNetPlugin;

typedef struct {
  uint8_t type;
  void* parentObj;
  int rank;
  union { ccCollV4 coll; ccP2pV4 p2p; ccProxyOp proxyOp; ccProxyStep proxyStep; ccKernelCh kernelCh; ccNetPlugin netPlugin; };
} ccDescrV4;

#define CC_V5_UNION_MEMBERS \
    struct { bool graphCaptured; int groupDepth; } groupApi; \
    struct { const char* func; size_t count; const char* datatype; int root; void* stream; bool graphCaptured; } collApi; \
    struct { const char* func; size_t count; const char* datatype; void* stream; bool graphCaptured; } p2pApi; \
    struct { void* stream; } kernelLaunch; \
    struct { uint64_t seqNumber; const char* func; const void* sendBuff; void* recvBuff; size_t count; int root; \
             const char* datatype; uint8_t nChannels; uint8_t nWarps; const char* algo; const char* proto; void* parentGroup; } coll; \
    struct { const char* func; void* buff; const char* datatype; size_t count; int peer; uint8_t nChannels; void* parentGroup; } p2p; \
    ccProxyOp proxyOp; \
    ccProxyStep proxyStep; \
    ccKernelCh kernelCh; \
    ccNetPlugin netPlugin;

/* v5 descriptor: a v5 caller's struct is this size (never read or copy beyond it). */
typedef struct {
  uint64_t type;
  void* parentObj;
  int rank;
  union { CC_V5_UNION_MEMBERS };
} ccDescrV5;

#define CC_V6_CE_MEMBERS \
    struct { uint64_t seqNumber; const char* func; const void* sendBuff; void* recvBuff; size_t count; int root; \
             const char* datatype; const char* syncStrategy; bool intraBatchSync; uint32_t batchSize; uint32_t numBatches; \
             uint32_t ceSeqNum; void* stream; } ceColl; \
    struct { bool isComplete; int nRanks; } ceCollSync; \
    struct { int numOps; size_t totalBytes; bool useIntraSync; } ceCollBatch;

/* v6 descriptor: v5's members at the same offsets plus the copy-engine ones. */
typedef struct {
  uint64_t type;
  void* parentObj;
  int rank;
  union {
    CC_V5_UNION_MEMBERS
    CC_V6_CE_MEMBERS
  };
} ccDescrV6;

/* v7 descriptor: v6's members at the same offsets plus the user tag (a pointer: the union's size
 * is unchanged, so a v7 descriptor can be read as a v6 one and the other way round). */
typedef struct {
  uint64_t type;
  void* parentObj;
  int rank;
  union {
    CC_V5_UNION_MEMBERS
    CC_V6_CE_MEMBERS
    struct { const char* tag; } userTag; /* valid only during startEvent/stopEvent */
  };
} ccDescrV7;
_Static_assert(sizeof(ccDescrV7) == sizeof(ccDescrV6), "v7's descriptor has v6's size");

typedef union {
  struct { size_t transSize; } proxyStep;
  struct { int appendedProxyOps; } proxyCtrl;
  struct { void* data; } netPlugin;
  struct { uint64_t pTimer; } kernelCh;
} ccStateArgs; /* the same in v4, v5, v6 and v7 */

typedef struct {
  const char* name;
  ccNcclResult (*init)(void** ctx, int* mask, const char* commName, uint64_t commHash, int nNodes, int nranks, int rank, ccNcclLogger log);
  ccNcclResult (*startEvent)(void* ctx, void** handle, ccDescrV4* d);
  ccNcclResult (*stopEvent)(void* handle);
  ccNcclResult (*recordEventState)(void* handle, int state, ccStateArgs* args);
  ccNcclResult (*finalize)(void* ctx);
} ccProfilerV4;

typedef struct {
  const char* name;
  ccNcclResult (*init)(void** ctx, uint64_t commId, int* mask, const char* commName, int nNodes, int nranks, int rank, ccNcclLogger log);
  ccNcclResult (*startEvent)(void* ctx, void** handle, ccDescrV6* d);
  ccNcclResult (*stopEvent)(void* handle);
  ccNcclResult (*recordEventState)(void* handle, int state, ccStateArgs* args);
  ccNcclResult (*finalize)(void* ctx);
} ccProfilerV6;

typedef struct {
  const char* name;
  ccNcclResult (*init)(void** ctx, uint64_t commId, int* mask, const char* commName, int nNodes, int nranks, int rank, ccNcclLogger log);
  ccNcclResult (*startEvent)(void* ctx, void** handle, ccDescrV5* d);
  ccNcclResult (*stopEvent)(void* handle);
  ccNcclResult (*recordEventState)(void* handle, int state, ccStateArgs* args);
  ccNcclResult (*finalize)(void* ctx);
} ccProfilerV5;

typedef struct {
  const char* name;
  ccNcclResult (*init)(void** ctx, uint64_t commId, int* mask, const char* commName, int nNodes, int nranks, int rank, ccNcclLogger log);
  ccNcclResult (*startEvent)(void* ctx, void** handle, ccDescrV7* d);
  ccNcclResult (*stopEvent)(void* handle);
  ccNcclResult (*recordEventState)(void* handle, int state, ccStateArgs* args);
  ccNcclResult (*finalize)(void* ctx);
} ccProfilerV7; /* v6's table with the v7 descriptor */

#endif
