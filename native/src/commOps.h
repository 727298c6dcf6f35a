// commOps.h: the process's device state, the communicator table and every timed operation.
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

#include "ncclApi.h"

namespace commcost {

struct Timed {
  double ms = 0;                       // duration of the library call, host monotonic
  std::optional<uint64_t> releaseNs;   // barrier release, CLOCK_MONOTONIC ns
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
Timed initDevice(int ordinal, size_t bufferBytes, std::optional<uint64_t> gen);  // worker
void memInfo(size_t* freeBytes, size_t* totalBytes);
size_t bufferBytes();  // 0 before initDevice completes

// Timed operations (worker).
Timed getUniqueId(ncclUniqueId* id, std::optional<uint64_t> gen);
Timed commInitRank(int nranks, const ncclUniqueId& id, int rank, const std::optional<ncclConfig_t>& config,
                   std::optional<uint64_t> gen, int* handle);
Timed commSplit(const CommRef& parent, int color, int key, const std::optional<ncclConfig_t>& config,
                std::optional<uint64_t> gen, int* handle /* 0 = no communicator (NOCOLOR) */);
Timed allReduce(const CommRef& comm, size_t bytes, std::optional<uint64_t> gen);
Timed commFinalize(const CommRef& comm, std::optional<uint64_t> gen);
Timed commDestroy(const CommRef& comm, std::optional<uint64_t> gen);  // comm already taken
Timed commAbort(const CommRef& comm, std::optional<uint64_t> gen);    // comm already taken
Timed barrierOnly(std::optional<uint64_t> gen);                       // nop / barrierWait

// JavaScript thread.
int abortAll();
int commCount(const CommRef& comm);
int commUserRank(const CommRef& comm);

}  // namespace commcost
