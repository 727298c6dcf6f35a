// inFlight.cc: see inFlight.h.
#include "inFlight.h"

#include <cstring>
#include <mutex>
#include <string>

#include "barrier.h"
#include "libraries.h"
#include "nativeError.h"

namespace commcost {
namespace {

std::mutex planMutex;
std::optional<InFlightPlan> armed;  // guarded by planMutex
std::atomic<bool> anyArmed{false};  // cheap check for every timed op

void requireEventFunctions(const char* call) {
  const CudaApi& cu = cuda();
  if (!cu.cuEventCreate || !cu.cuEventRecord || !cu.cuEventQuery || !cu.cuEventDestroy_v2) {
    COMMCOST_FAIL("ARG", call,
                  std::string(call) + " needs cuEventCreate, cuEventRecord, cuEventQuery and cuEventDestroy_v2, "
                                      "which this CUDA driver lacks");
  }
}

void requireFits(const char* call, const BufferInfo& b, size_t offset, size_t bytes, const char* what) {
  if (offset > b.bytes || bytes > b.bytes - offset) {
    COMMCOST_FAIL("ARG", call,
                  std::string(call) + ": " + what + " of " + std::to_string(bytes) + " bytes at offset " +
                      std::to_string(offset) + " does not fit buffer " + std::to_string(b.handle) + " of " +
                      std::to_string(b.bytes) + " bytes");
  }
}

}  // namespace

void armInFlight(InFlightPlan plan) {
  requireEventFunctions("armInFlight");
  for (const InFlightOp& op : plan.ops) {
    if (op.bytes % sizeof(float) != 0) COMMCOST_FAIL("ARG", "armInFlight", "armInFlight: bytes must be a multiple of 4 (float32)");
    requireFits("armInFlight", op.send, 0, op.bytes, "the send range");
    if (op.recv) requireFits("armInFlight", *op.recv, op.recvOffset, op.bytes, "the receive range");
    if (op.comm->aborted.load()) COMMCOST_FAIL("ARG", "armInFlight", "armInFlight: a communicator of the plan was aborted");
  }
  std::lock_guard<std::mutex> lock(planMutex);
  armed = std::move(plan);
  anyArmed.store(true);
}

InFlightWindow::~InFlightWindow() {
  if (event) {
    const CudaApi* cu = loadedCuda();
    if (cu && cu->cuEventDestroy_v2) cu->cuEventDestroy_v2(event);
  }
}

std::unique_ptr<InFlightWindow> openInFlightWindow() {
  if (!anyArmed.load()) return nullptr;
  std::optional<InFlightPlan> plan;
  {
    std::lock_guard<std::mutex> lock(planMutex);
    plan.swap(armed);
    anyArmed.store(false);
  }
  if (!plan) return nullptr;
  auto w = std::make_unique<InFlightWindow>();
  w->untilQuiet = plan->untilQuiet;
  CUstream s = addonStream();
  if (!s) COMMCOST_FAIL("ARG", "armInFlight", "armInFlight needs a device: call initDevice first");
  uint64_t e0 = monotonicNs();
  for (const InFlightOp& op : plan->ops) {
    void* send = reinterpret_cast<void*>(static_cast<uintptr_t>(op.send.ptr));
    void* recv = op.recv ? reinterpret_cast<void*>(static_cast<uintptr_t>(op.recv->ptr + op.recvOffset)) : send;
    ncclComm_t comm = op.comm->aborted.load() ? nullptr : op.comm->comm;
    if (!comm) COMMCOST_FAIL("NCCL", "ncclAllReduce", "ncclAllReduce (in flight): the communicator was aborted by abortAll");
    NCCL_CHECK(ncclAllReduce, comm, (send, recv, op.bytes / sizeof(float), ncclFloat32, ncclSum, comm, s));
    w->report.enqueued++;
  }
  CU_CHECK(cuEventCreate, (&w->event, CU_EVENT_DISABLE_TIMING));
  CU_CHECK(cuEventRecord, (w->event, s));
  uint64_t e1 = monotonicNs();
  CUresult q = cuda().cuEventQuery(w->event);
  if (q != CUDA_SUCCESS && q != CUDA_ERROR_NOT_READY) failCuda("cuEventQuery", q, __FILE__, __LINE__);
  w->report.atStart = q == CUDA_ERROR_NOT_READY;
  w->report.enqueueMs = static_cast<double>(e1 - e0) / 1e6;
  return w;
}

void closeInFlightWindow(InFlightWindow& w, uint64_t t0, Timed* t) {
  w.report.callMs = static_cast<double>(monotonicNs() - t0) / 1e6;
  if (w.untilQuiet) CU_CHECK(cuStreamSynchronize, (addonStream()));
  t->inFlight = w.report;
}

void memFill(const BufferInfo& b, float value, size_t bytes) {
  if (!cuda().cuMemsetD32_v2) COMMCOST_FAIL("ARG", "memFill", "memFill needs cuMemsetD32_v2, which this CUDA driver lacks");
  if (bytes % sizeof(float) != 0) COMMCOST_FAIL("ARG", "memFill", "memFill: bytes must be a multiple of 4 (float32)");
  requireFits("memFill", b, 0, bytes, "the range");
  unsigned int bits = 0;
  std::memcpy(&bits, &value, sizeof bits);
  CU_CHECK(cuMemsetD32_v2, (b.ptr, bits, bytes / sizeof(float)));
}

std::vector<float> readFloats(const BufferInfo& b, const std::vector<size_t>& offsets) {
  if (!cuda().cuMemcpyDtoH_v2) COMMCOST_FAIL("ARG", "readFloats", "readFloats needs cuMemcpyDtoH_v2, which this CUDA driver lacks");
  std::vector<float> out;
  out.reserve(offsets.size());
  for (size_t off : offsets) {
    if (off % sizeof(float) != 0) COMMCOST_FAIL("ARG", "readFloats", "readFloats: offsets must be multiples of 4 (float32)");
    requireFits("readFloats", b, off, sizeof(float), "a float");
    float f = 0;
    CU_CHECK(cuMemcpyDtoH_v2, (&f, b.ptr + off, sizeof f));
    out.push_back(f);
  }
  return out;
}

}  // namespace commcost
