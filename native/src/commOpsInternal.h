// commOpsInternal.h: what the three files of commOps.h's operations share, not part of the
// addon's interface (hidden visibility):
//   commOps.cc        device state, communicator table, device start, optional-function checks,
//                     abortAll, count / user rank, barrierOnly
//   commLifecycle.cc  timed communicator lifecycle: unique ids, init, split, shrink, grow, revoke,
//                     finalize, destroy, abort, suspend / resume, MemStats, abortable init
//   commBuffers.cc    buffer / registration / window tables and the timed operations on buffers:
//                     memAlloc / memFree, allreduce, stream synchronize, registration, windows,
//                     the CUDA graph of one allreduce
//
// The timed span (DESIGN.md, "Measurement method") is timedCall below: barrier (when a gen is
// given), then the armed in-flight window's enqueues, then CLOCK_MONOTONIC immediately around the
// library call.
#pragma once

#include <sched.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>

#include "barrier.h"
#include "commOps.h"
#include "inFlight.h"
#include "libraries.h"
#include "nativeError.h"

namespace commcost {
namespace ops {
#pragma GCC visibility push(hidden)

// ---- device state: written once by initDevice (commOps.cc), read by every worker ----------------
extern std::atomic<bool> deviceReady;
extern CUcontext context;
extern CUstream stream;
extern CUdeviceptr buffer;
extern size_t bufferSize;

// Adds a communicator to the table (commOps.cc); returns its handle (>= 1).
int addComm(ncclComm_t comm);

// Bumped by abortAll: commInitRankAbortable's poll loop gives up when it changes.
extern std::atomic<uint64_t> abortGeneration;

// NCCL and the CUDA runtime inside it use the context current on the calling thread.
// Throws ARG before initDevice, CUDA when cuCtxSetCurrent fails.
void makeContextCurrent(const char* call);

// Throws NCCL when abortAll has aborted the communicator.
void requireAlive(const CommRef& ref, const char* call);

// The two helpers that run inside a timed span have internal linkage (a copy in each file, as
// the functions of one file's anonymous namespace had before the split), so that the compiler
// treats them as it did then (lastErrorComm inlined; waitReady called, its null CommRef known).

// The comm to hand to ncclGetLastError: none once abortAll may have freed it.
[[maybe_unused]] static ncclComm_t lastErrorComm(const CommRef& ref) {
  return ref && !ref->aborted.load() ? ref->comm : nullptr;
}

// Poll loop of non-blocking communicators; runs inside the timed span.
[[maybe_unused]] static void waitReady(const char* call, ncclComm_t comm, const CommRef& ref) {
  for (;;) {
    ncclResult_t state = ncclInProgress;
    NCCL_CHECK(ncclCommGetAsyncError, ref ? lastErrorComm(ref) : comm, (comm, &state));
    if (state == ncclSuccess) return;
    if (state != ncclInProgress) failNccl(call, state, ref ? lastErrorComm(ref) : comm, __FILE__, __LINE__);
    if (ref && ref->aborted.load()) failNccl(call, 6 /* ncclRemoteError */, nullptr, __FILE__, __LINE__);
    sched_yield();
  }
}

// Barrier (when gen is given), then the timed span around `call`.
template <class F>
Timed timedCall(std::optional<uint64_t> gen, F&& call) {
  Timed t;
  if (gen) t.releaseNs = barrierWait(*gen);
  // An armed in-flight window (armInFlight): enqueue its work now, outside the span.
  std::unique_ptr<InFlightWindow> window = openInFlightWindow();
  uint64_t t0 = monotonicNs();
  call();
  if (window) closeInFlightWindow(*window, t0, &t);  // the call alone; until quiet when asked
  uint64_t t1 = monotonicNs();
  t.ms = static_cast<double>(t1 - t0) / 1e6;
  return t;
}

#pragma GCC visibility pop
}  // namespace ops
}  // namespace commcost
