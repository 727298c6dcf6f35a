// ncclApi.h: the NCCL C API subset commcost uses, declared by hand for dlopen/dlsym.
// Facts (signatures, ncclConfig_t layout, enum values) come from shared/reference/nccl-api.md.
// Never include nccl.h: the addon must load any NCCL from 2.18 to 2.30.x at run time.
#pragma once

#include <climits>
#include <cstddef>
#include <cstdint>

#include "cudaApi.h"

namespace commcost {

typedef int ncclResult_t;  // enum: sizeof(int)
constexpr ncclResult_t ncclSuccess = 0;
constexpr ncclResult_t ncclInternalError = 3;
constexpr ncclResult_t ncclInvalidArgument = 4;
constexpr ncclResult_t ncclInProgress = 7;

typedef struct ncclComm* ncclComm_t;
typedef struct ncclWindow_vidmem* ncclWindow_t;
typedef struct {
  char internal[128];
} ncclUniqueId;
static_assert(sizeof(ncclUniqueId) == 128, "NCCL_UNIQUE_ID_BYTES");

constexpr int ncclFloat32 = 7;  // ncclDataType_t
constexpr int ncclSum = 0;      // ncclRedOp_t
constexpr int NCCL_SPLIT_NOCOLOR = -1;
constexpr int NCCL_CONFIG_UNDEF_INT = INT_MIN;
constexpr unsigned int NCCL_CONFIG_MAGIC = 0xcafebeef;
constexpr unsigned int NCCL_CONFIG_LAYOUT_VERSION = 23007;  // the layout below = NCCL 2.30.7

// ncclConfig_t, newest layout (2.30.7, 96 bytes). Older libraries copy min(size, their size)
// bytes, so passing the newest layout is safe; see nccl-api.md §2.2.
struct ncclConfig_t {
  size_t size;               // 0
  unsigned int magic;        // 8
  unsigned int version;      // 12
  int blocking;              // 16, in header since 2.14.3
  int cgaClusterSize;        // 20, 2.17.1
  int minCTAs;               // 24, 2.17.1
  int maxCTAs;               // 28, 2.17.1
  const char* netName;       // 32, 2.17.1
  int splitShare;            // 40, 2.18.1
  int trafficClass;          // 44, 2.26.2
  const char* commName;      // 48, 2.27.3
  int collnetEnable;         // 56, 2.27.3
  int CTAPolicy;             // 60, 2.27.3
  int shrinkShare;           // 64, 2.27.3
  int nvlsCTAs;              // 68, 2.27.3
  int nChannelsPerNetPeer;   // 72, 2.28.3
  int nvlinkCentricSched;    // 76, 2.28.3
  int graphUsageMode;        // 80, 2.29.2
  int numRmaCtx;             // 84, 2.29.2
  int maxP2pPeers;           // 88, 2.30.3
  int graphStreamOrdering;   // 92, 2.30.7
};
static_assert(sizeof(ncclConfig_t) == 96, "ncclConfig_t 2.30.7 layout is 96 bytes");
static_assert(offsetof(ncclConfig_t, splitShare) == 40, "splitShare offset");
static_assert(offsetof(ncclConfig_t, minCTAs) == 24, "minCTAs offset");
static_assert(offsetof(ncclConfig_t, maxCTAs) == 28, "maxCTAs offset");
static_assert(offsetof(ncclConfig_t, maxP2pPeers) == 88, "maxP2pPeers offset");
static_assert(offsetof(ncclConfig_t, graphStreamOrdering) == 92, "graphStreamOrdering offset");

// Version codes (major*10000 + minor*100 + patch) from which a config field exists.
constexpr int kConfigBlockingSince = 21403;
constexpr int kConfigSplitShareSince = 21801;
constexpr int kConfigCTAsSince = 21701;        // minCTAs, maxCTAs
constexpr int kConfigMaxP2pPeersSince = 23003;  // maxP2pPeers (header 2.30.3, parser guard 2.30.0)

// First release of each optional function (nccl-api.md §1): the addon refuses a call when the
// symbol is missing or the loaded version is older (the simulated NCCL exports every symbol).
constexpr int kRegisterSince = 21901;    // ncclCommRegister / ncclCommDeregister
constexpr int kMemAllocSince = 21901;    // ncclMemAlloc / ncclMemFree
constexpr int kShrinkSince = 22703;      // ncclCommShrink
constexpr int kWindowSince = 22703;      // ncclCommWindowRegister / ncclCommWindowDeregister
constexpr int kRevokeSince = 22807;      // ncclCommRevoke
constexpr int kGrowSince = 22902;        // ncclCommGetUniqueId / ncclCommGrow
constexpr int kScalableSince = 22304;    // ncclCommInitRankScalable (several unique ids)
constexpr int kSuspendSince = 22907;     // ncclCommSuspend / ncclCommResume / ncclCommMemStats
constexpr int kP2pSince = 20700;         // ncclSend / ncclRecv (ncclBroadcast is older: optional only so
                                         // that a stand-in library without it still loads)

constexpr int NCCL_SHRINK_DEFAULT = 0x00;
constexpr int NCCL_SHRINK_ABORT = 0x01;
constexpr int NCCL_REVOKE_DEFAULT = 0x00;
// ncclCommMemStat_t
constexpr int ncclStatGpuMemSuspend = 0;
constexpr int ncclStatGpuMemSuspended = 1;
constexpr int ncclStatGpuMemPersist = 2;
constexpr int ncclStatGpuMemTotal = 3;

// Required functions: the addon refuses to load a library without any of them.
#define COMMCOST_NCCL_REQUIRED(X)                                                                    \
  X(ncclGetVersion, ncclResult_t (*)(int* version))                                                  \
  X(ncclGetUniqueId, ncclResult_t (*)(ncclUniqueId * uniqueId))                                      \
  X(ncclCommInitRank, ncclResult_t (*)(ncclComm_t * comm, int nranks, ncclUniqueId commId, int rank)) \
  X(ncclCommInitRankConfig,                                                                          \
    ncclResult_t (*)(ncclComm_t * comm, int nranks, ncclUniqueId commId, int rank, ncclConfig_t* config)) \
  X(ncclCommSplit,                                                                                   \
    ncclResult_t (*)(ncclComm_t comm, int color, int key, ncclComm_t* newcomm, ncclConfig_t* config)) \
  X(ncclAllReduce, ncclResult_t (*)(const void* sendbuff, void* recvbuff, size_t count, int datatype, \
                                    int op, ncclComm_t comm, CUstream stream))                       \
  X(ncclCommFinalize, ncclResult_t (*)(ncclComm_t comm))                                             \
  X(ncclCommDestroy, ncclResult_t (*)(ncclComm_t comm))                                              \
  X(ncclCommAbort, ncclResult_t (*)(ncclComm_t comm))                                                \
  X(ncclCommGetAsyncError, ncclResult_t (*)(ncclComm_t comm, ncclResult_t * asyncError))             \
  X(ncclGetErrorString, const char* (*)(ncclResult_t result))                                        \
  X(ncclGetLastError, const char* (*)(ncclComm_t comm))                                              \
  X(ncclCommCount, ncclResult_t (*)(const ncclComm_t comm, int* count))                              \
  X(ncclCommUserRank, ncclResult_t (*)(const ncclComm_t comm, int* rank))                            \
  X(ncclGroupStart, ncclResult_t (*)(void))                                                          \
  X(ncclGroupEnd, ncclResult_t (*)(void))

// Optional functions: allowed to be missing (newer than the oldest supported NCCL); presence is
// reported in LoadInfo.symbols; each call checks presence and version first (commOps.cc).
#define COMMCOST_NCCL_OPTIONAL(X)                                                                    \
  X(ncclCommShrink, ncclResult_t (*)(ncclComm_t comm, int* excludeRanksList, int excludeRanksCount,   \
                                     ncclComm_t* newcomm, ncclConfig_t* config, int shrinkFlags))     \
  X(ncclCommGrow, ncclResult_t (*)(ncclComm_t comm, int nRanks, const ncclUniqueId* uniqueId, int rank, \
                                   ncclComm_t* newcomm, ncclConfig_t* config))                       \
  X(ncclCommGetUniqueId, ncclResult_t (*)(ncclComm_t comm, ncclUniqueId * uniqueId))                 \
  X(ncclCommRevoke, ncclResult_t (*)(ncclComm_t comm, int revokeFlags))                              \
  X(ncclCommRegister, ncclResult_t (*)(const ncclComm_t comm, void* buff, size_t size, void** handle)) \
  X(ncclCommDeregister, ncclResult_t (*)(const ncclComm_t comm, void* handle))                       \
  X(ncclCommWindowRegister,                                                                          \
    ncclResult_t (*)(ncclComm_t comm, void* buff, size_t size, ncclWindow_t* win, int winFlags))     \
  X(ncclCommWindowDeregister, ncclResult_t (*)(ncclComm_t comm, ncclWindow_t win))                   \
  X(ncclMemAlloc, ncclResult_t (*)(void** ptr, size_t size))                                         \
  X(ncclMemFree, ncclResult_t (*)(void* ptr))                                                        \
  X(ncclCommSuspend, ncclResult_t (*)(ncclComm_t comm, int flags))                                   \
  X(ncclCommResume, ncclResult_t (*)(ncclComm_t comm))                                               \
  X(ncclCommMemStats, ncclResult_t (*)(ncclComm_t comm, int stat, uint64_t* value))                  \
  X(ncclBroadcast, ncclResult_t (*)(const void* sendbuff, void* recvbuff, size_t count, int datatype, int root, \
                                    ncclComm_t comm, CUstream stream))                               \
  X(ncclSend, ncclResult_t (*)(const void* sendbuff, size_t count, int datatype, int peer, ncclComm_t comm, \
                               CUstream stream))                                                     \
  X(ncclRecv, ncclResult_t (*)(void* recvbuff, size_t count, int datatype, int peer, ncclComm_t comm,  \
                               CUstream stream))                                                     \
  X(ncclCommInitRankScalable, ncclResult_t (*)(ncclComm_t * newcomm, int nranks, int myrank, int nId, \
                                               ncclUniqueId* commIds, ncclConfig_t* config))

struct NcclApi {
#define COMMCOST_NCCL_FIELD(name, type) FnPtr<type> name = nullptr;
  COMMCOST_NCCL_REQUIRED(COMMCOST_NCCL_FIELD)
  COMMCOST_NCCL_OPTIONAL(COMMCOST_NCCL_FIELD)
#undef COMMCOST_NCCL_FIELD
};

}  // namespace commcost
