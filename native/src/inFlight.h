// inFlight.h: the in-flight window of drain, revoke and shrink with NCCL_SHRINK_ABORT, and the
// data helpers of their drop check.
//
// armInFlight (JavaScript thread) arms a plan: a list of allreduces. The next timed operation
// (any op that goes through commOpsInternal.h's timedCall) runs it on its worker thread, after the
// barrier released and before its span starts: it enqueues the allreduces on the addon's stream
// (not synchronized), records a CUDA event after them and queries it (cuEventQuery ==
// CUDA_ERROR_NOT_READY: work was in flight when the call began). After the call it notes the call
// alone (callMs) and, when the plan says untilQuiet, synchronizes the stream inside the span, so
// the figure ends when the GPU work is done. One plan serves one timed op (one-shot).
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <vector>

#include "commOps.h"

namespace commcost {

struct InFlightOp {
  CommRef comm;
  size_t bytes = 0;
  BufferInfo send;                 // float32 sum of `bytes` from here
  std::optional<BufferInfo> recv;  // out of place into recv at recvOffset; in place when absent
  size_t recvOffset = 0;
};

struct InFlightPlan {
  std::vector<InFlightOp> ops;
  bool untilQuiet = false;
};

// JavaScript thread. Replaces a plan armed earlier and not yet used. Throws ARG when the CUDA
// driver lacks the event functions, or an op does not fit its buffers.
void armInFlight(InFlightPlan plan);

// Worker (timedCall): the armed plan's window, or nullptr when none is armed. Enqueues the work
// and queries the event; throws NCCL / CUDA when an enqueue fails (the plan is consumed anyway).
struct InFlightWindow;
std::unique_ptr<InFlightWindow> openInFlightWindow();
// Worker (timedCall), right after the call: callMs from t0; stream synchronize when untilQuiet.
void closeInFlightWindow(InFlightWindow& window, uint64_t t0, Timed* t);

struct InFlightWindow {
  InFlightReport report;
  bool untilQuiet = false;
  CUevent event = nullptr;
  ~InFlightWindow();
};

// JavaScript thread. cuMemsetD32 of the first `bytes` of a buffer with the float32 `value`
// (ordered before later work on the addon's stream by the legacy default stream).
void memFill(const BufferInfo& buffer, float value, size_t bytes);
// JavaScript thread. The float32 at each byte offset (multiple of 4, inside the buffer), copied
// back with cuMemcpyDtoH (waits for the work on the addon's stream).
std::vector<float> readFloats(const BufferInfo& buffer, const std::vector<size_t>& offsets);

}  // namespace commcost
