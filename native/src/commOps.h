// commOps.h: the process's device state, the communicator table and every timed operation
// (defined in commOps.cc, commLifecycle.cc and commBuffers.cc; commOpsInternal.h says which).
//
// Timing rule (DESIGN.md, "Measurement method"): make the primary context current on the calling
// thread, then (if a barrier gen is given) wait at the barrier, then take CLOCK_MONOTONIC around
// the library call only. Collectives include cuStreamSynchronize; a call that answers
// ncclInProgress (non-blocking config) is timed until ncclCommGetAsyncError reports success.
//
// Functions marked "worker" block and must run off the JavaScript thread; all throw NativeFailure.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ncclApi.h"

namespace commcost {

// What the in-flight window (inFlight.h, armed by armInFlight) saw around one timed call.
struct InFlightReport {
  bool atStart = false;  // the event recorded after the enqueues was not complete when the call began
  int enqueued = 0;      // allreduces enqueued after the barrier, before the span
  double enqueueMs = 0;  // their enqueue calls, outside the span
  double callMs = 0;     // the library call alone (the span may add a stream synchronize: untilQuiet)
};

struct Timed {
  double ms = 0;                       // duration of the library call, host monotonic
  std::optional<uint64_t> releaseNs;   // barrier release, CLOCK_MONOTONIC ns
  std::optional<InFlightReport> inFlight;  // set when an armed in-flight window ran around the call
};

struct CommEntry {
  int handle = 0;
  ncclComm_t comm = nullptr;
  std::atomic<bool> aborted{false};  // set by abortAll while a worker may still use `comm`
};
using CommRef = std::shared_ptr<CommEntry>;

// Fields left unset keep the library default (NCCL_CONFIG_UNDEF_INT).
struct CommConfigArg {
  std::optional<int> blocking;
  std::optional<int> splitShare;
  // Counts (>= 1), not flags: channel limits (NCCL >= 2.17.1) and the peers a rank keeps P2P
  // buffers for (NCCL >= 2.30.3).
  std::optional<int> minCTAs;
  std::optional<int> maxCTAs;
  std::optional<int> maxP2pPeers;
};

// Builds the newest-layout ncclConfig_t; throws ARG when a field is newer than the loaded NCCL.
ncclConfig_t makeConfig(const CommConfigArg& arg);

// Communicator table (JavaScript thread).
CommRef findComm(int handle);  // throws ARG for an unknown or released handle
CommRef takeComm(int handle);  // removes it from the table; throws ARG

// Device (JavaScript thread unless noted).
int deviceCount();
struct DeviceInfo {
  int ordinal;
  std::string name;
  size_t totalBytes;
  std::string pciBusId;
};
DeviceInfo deviceInfo(int ordinal);
void claimDeviceStart();  // throws ARG if initDevice was already called
// Parts of initDevice's span, host monotonic ms: cuInit alone; cuDeviceGet + primary context
// retain + make current (the CUDA context creation). The rest of the span is stream + buffer.
struct DeviceStartParts {
  double cuInitMs = 0;
  double contextMs = 0;
};
Timed initDevice(int ordinal, size_t bufferBytes, std::optional<uint64_t> gen,
                 DeviceStartParts* parts = nullptr);  // worker
void memInfo(size_t* freeBytes, size_t* totalBytes);
size_t bufferBytes();  // 0 before initDevice completes
CUstream addonStream();  // the stream every operation uses (nullptr before initDevice)
void useDevice(const char* call);  // makes the device's context current on this thread; ARG before initDevice

// Timed operations (worker).
Timed getUniqueId(ncclUniqueId* id, std::optional<uint64_t> gen);
Timed commInitRank(int nranks, const ncclUniqueId& id, int rank, const std::optional<ncclConfig_t>& config,
                   std::optional<uint64_t> gen, int* handle);
Timed commSplit(const CommRef& parent, int color, int key, const std::optional<ncclConfig_t>& config,
                std::optional<uint64_t> gen, int* handle /* 0 = no communicator (NOCOLOR) */);
// Device buffers: handle 0 is the addon's own buffer (initDevice), others come from memAlloc.
struct BufferInfo {
  int handle = 0;
  CUdeviceptr ptr = 0;
  size_t bytes = 0;
  bool ncclMem = false;  // ncclMemAlloc (cuMem-backed) rather than cuMemAlloc
};
BufferInfo findBuffer(int handle);  // JavaScript thread; throws ARG
BufferInfo takeBuffer(int handle);  // removes it; handle 0 cannot be taken (ARG)

// ARG "<name> is not in this NCCL (needs ≥ <since>, loaded <version>)" when the optional symbol
// is missing or the loaded version predates its first release.
void requireNccl(bool present, const char* name, int since);
// ARG when an optional CUDA driver function is missing.
void requireCuda(bool present, const char* name);
#define COMMCOST_REQUIRE_NCCL(fn, since) ::commcost::requireNccl(::commcost::nccl().fn != nullptr, #fn, since)
#define COMMCOST_REQUIRE_CUDA(fn) ::commcost::requireCuda(::commcost::cuda().fn != nullptr, #fn)

Timed memAlloc(size_t bytes, bool ncclMem, int* handle);
Timed memFree(const BufferInfo& buffer);

// sync = false: only ncclAllReduce is timed (the work stays in flight on the stream).
Timed allReduce(const CommRef& comm, size_t bytes, std::optional<uint64_t> gen, const BufferInfo& buffer, bool sync);
Timed streamSynchronize(std::optional<uint64_t> gen);
// ncclBroadcast of `bytes` (float32) from `root` in place on buffer 0 + cuStreamSynchronize.
Timed broadcast(const CommRef& comm, size_t bytes, int root, std::optional<uint64_t> gen);
// ncclGroupStart / ncclSend(peer) / ncclRecv(peer) / ncclGroupEnd + cuStreamSynchronize: `bytes` sent from
// the first half of buffer 0, received into the bytes after it (2 * bytes <= the buffer).
Timed sendRecv(const CommRef& comm, int peer, size_t bytes, std::optional<uint64_t> gen);
Timed commShrink(const CommRef& parent, const std::vector<int>& excludeRanks, int flags,
                 const std::optional<ncclConfig_t>& config, std::optional<uint64_t> gen, int* handle);
// ncclCommInitRankScalable: `ids` (nId = ids.size() ≥ 1) in the same order on every rank; blocking or
// non-blocking as ncclCommInitRankConfig (config absent: NCCL's default config).
Timed commInitRankScalable(int nranks, const std::vector<ncclUniqueId>& ids, int rank,
                           const std::optional<ncclConfig_t>& config, std::optional<uint64_t> gen, int* handle);
Timed commGetUniqueId(const CommRef& comm, ncclUniqueId* id, std::optional<uint64_t> gen);
// parent null on a new rank (then `id` is required and rank >= 0); existing ranks pass rank -1.
Timed commGrow(const CommRef& parent, int nranks, const std::optional<ncclUniqueId>& id, int rank,
               const std::optional<ncclConfig_t>& config, std::optional<uint64_t> gen, int* handle);
Timed commRevoke(const CommRef& comm, std::optional<uint64_t> gen, double* callMs);
Timed commRegister(const CommRef& comm, const BufferInfo& buffer, size_t bytes, std::optional<uint64_t> gen,
                   int* handle);
void* takeRegistration(const CommRef& comm, int handle);  // JavaScript thread; throws ARG
Timed commDeregister(const CommRef& comm, void* registration, std::optional<uint64_t> gen);
Timed windowRegister(const CommRef& comm, const BufferInfo& buffer, size_t bytes, int flags,
                     std::optional<uint64_t> gen, int* window /* 0 = NULL window */);
ncclWindow_t takeWindow(const CommRef& comm, int handle);  // JavaScript thread; throws ARG
Timed windowDeregister(const CommRef& comm, ncclWindow_t window, std::optional<uint64_t> gen);
Timed commSuspend(const CommRef& comm, int flags, std::optional<uint64_t> gen);
Timed commResume(const CommRef& comm, std::optional<uint64_t> gen);

struct MemStats {
  uint64_t suspendable = 0, suspended = 0, persistent = 0, total = 0;
};
std::optional<MemStats> commMemStats(const CommRef& comm);  // JavaScript thread; nullopt: not in this NCCL

struct GraphTimes {
  double captureMs = 0, instantiateMs = 0, launchMs = 0;
};
Timed graphAllReduce(const CommRef& comm, size_t bytes, std::optional<uint64_t> gen, GraphTimes* parts);

// Non-blocking init polled until ready, abortAll() or `deadlineMs`; *handle 0, *aborted true and
// *abortMs the ncclCommAbort call alone (host monotonic ms) when it was aborted.
Timed commInitRankAbortable(int nranks, const ncclUniqueId& id, int rank, double deadlineMs,
                            std::optional<uint64_t> gen, int* handle, bool* aborted, double* abortMs);
Timed commFinalize(const CommRef& comm, std::optional<uint64_t> gen);
Timed commDestroy(const CommRef& comm, std::optional<uint64_t> gen);  // comm already taken
Timed commAbort(const CommRef& comm, std::optional<uint64_t> gen);    // comm already taken
Timed barrierOnly(std::optional<uint64_t> gen);                       // nop / barrierWait

// JavaScript thread.
int abortAll();
int commCount(const CommRef& comm);
int commUserRank(const CommRef& comm);

}  // namespace commcost
