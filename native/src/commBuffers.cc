// commBuffers.cc: device buffers and the timed operations on them (commOps.h; shared state and the
// timed span in commOpsInternal.h): the buffer / registration / window tables, memAlloc / memFree,
// allreduce, broadcast, a send/recv pair, stream synchronize, registration, windows and the CUDA graph of one
// allreduce.
#include <mutex>
#include <string>
#include <unordered_map>

#include "commOpsInternal.h"

namespace commcost {

using namespace ops;

namespace {

// Small handle tables (buffers, registrations, windows): add on a worker, find/take on the JS thread.
template <class T>
class HandleTable {
 public:
  int add(T value) {
    std::lock_guard<std::mutex> lock(mutex_);
    int h = next_++;
    map_[h] = std::move(value);
    return h;
  }
  T find(int h, const char* what) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = map_.find(h);
    if (it == map_.end()) COMMCOST_FAIL("ARG", what, std::string("unknown ") + what + " handle " + std::to_string(h));
    return it->second;
  }
  T take(int h, const char* what) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = map_.find(h);
    if (it == map_.end()) COMMCOST_FAIL("ARG", what, std::string("unknown ") + what + " handle " + std::to_string(h));
    T v = it->second;
    map_.erase(it);
    return v;
  }

 private:
  std::mutex mutex_;
  std::unordered_map<int, T> map_;
  int next_ = 1;
};

struct Registration {
  int comm = 0;  // communicator handle it belongs to
  void* handle = nullptr;
};
struct Window {
  int comm = 0;
  ncclWindow_t window = nullptr;
};
HandleTable<BufferInfo> buffers;
HandleTable<Registration> registrations;
HandleTable<Window> windows;

}  // namespace

// After a synchronized collective: an abortAll that raced it, or an asynchronous NCCL error.
static void checkAfterSync(const char* call, const CommRef& ref) {
  if (ref->aborted.load()) failNccl(call, 6 /* ncclRemoteError */, nullptr, __FILE__, __LINE__);
  ncclResult_t state = ncclSuccess;
  NCCL_CHECK(ncclCommGetAsyncError, lastErrorComm(ref), (ref->comm, &state));
  if (state != ncclSuccess && state != ncclInProgress) failNccl(call, state, lastErrorComm(ref), __FILE__, __LINE__);
}

static void checkBytes(const char* call, size_t bytes, const BufferInfo& buf) {
  if (bytes > buf.bytes) {
    COMMCOST_FAIL("ARG", call,
                  std::string(call) + " of " + std::to_string(bytes) + " bytes exceeds buffer " + std::to_string(buf.handle) +
                      " of " + std::to_string(buf.bytes) + " bytes" + (buf.handle == 0 ? " given to initDevice" : ""));
  }
}

// ---- buffers -------------------------------------------------------------------------------------

BufferInfo findBuffer(int handle) {
  if (handle == 0) {
    if (!deviceReady.load(std::memory_order_acquire)) {
      COMMCOST_FAIL("ARG", "buffer", "buffer 0 is the device buffer of initDevice: call initDevice first");
    }
    BufferInfo b;
    b.ptr = buffer;
    b.bytes = bufferSize;
    return b;
  }
  return buffers.find(handle, "buffer");
}

BufferInfo takeBuffer(int handle) {
  if (handle == 0) COMMCOST_FAIL("ARG", "memFree", "buffer 0 belongs to initDevice and cannot be freed");
  return buffers.take(handle, "buffer");
}

Timed memAlloc(size_t bytes, bool ncclMem, int* handle) {
  makeContextCurrent(ncclMem ? "ncclMemAlloc" : "cuMemAlloc_v2");
  BufferInfo b;
  b.bytes = bytes;
  b.ncclMem = ncclMem;
  Timed t = timedCall(std::nullopt, [&] {
    if (ncclMem) {
      void* p = nullptr;
      NCCL_CHECK(ncclMemAlloc, nullptr, (&p, bytes));
      b.ptr = static_cast<CUdeviceptr>(reinterpret_cast<uintptr_t>(p));
    } else {
      CU_CHECK(cuMemAlloc_v2, (&b.ptr, bytes));
    }
  });
  b.handle = *handle = buffers.add(b);
  return t;
}

Timed memFree(const BufferInfo& b) {
  makeContextCurrent(b.ncclMem ? "ncclMemFree" : "cuMemFree_v2");
  return timedCall(std::nullopt, [&] {
    if (b.ncclMem) {
      NCCL_CHECK(ncclMemFree, nullptr, (reinterpret_cast<void*>(static_cast<uintptr_t>(b.ptr))));
    } else {
      CU_CHECK(cuMemFree_v2, (b.ptr));
    }
  });
}

// ---- allreduce, stream synchronize ---------------------------------------------------------------

Timed allReduce(const CommRef& ref, size_t bytes, std::optional<uint64_t> gen, const BufferInfo& buffer, bool sync) {
  makeContextCurrent("ncclAllReduce");
  requireAlive(ref, "ncclAllReduce");
  checkBytes("allReduce", bytes, buffer);
  const size_t count = bytes / sizeof(float);
  void* buf = reinterpret_cast<void*>(static_cast<uintptr_t>(buffer.ptr));
  Timed t = timedCall(gen, [&] {
    ncclResult_t r =
        NCCL_CHECK(ncclAllReduce, lastErrorComm(ref), (buf, buf, count, ncclFloat32, ncclSum, ref->comm, stream));
    if (r == ncclInProgress) waitReady("ncclAllReduce", ref->comm, ref);
    if (sync) CU_CHECK(cuStreamSynchronize, (stream));
  });
  if (sync) checkAfterSync("ncclAllReduce", ref);
  return t;
}

// ---- broadcast and a send/recv pair: first uses other than an allreduce ---------------------------

Timed broadcast(const CommRef& ref, size_t bytes, int root, std::optional<uint64_t> gen) {
  makeContextCurrent("ncclBroadcast");
  requireAlive(ref, "ncclBroadcast");
  BufferInfo b = findBuffer(0);
  checkBytes("broadcast", bytes, b);
  const size_t count = bytes / sizeof(float);
  void* buf = reinterpret_cast<void*>(static_cast<uintptr_t>(b.ptr));
  Timed t = timedCall(gen, [&] {
    ncclResult_t r =
        NCCL_CHECK(ncclBroadcast, lastErrorComm(ref), (buf, buf, count, ncclFloat32, root, ref->comm, stream));
    if (r == ncclInProgress) waitReady("ncclBroadcast", ref->comm, ref);
    CU_CHECK(cuStreamSynchronize, (stream));
  });
  checkAfterSync("ncclBroadcast", ref);
  return t;
}

Timed sendRecv(const CommRef& ref, int peer, size_t bytes, std::optional<uint64_t> gen) {
  makeContextCurrent("ncclSend");
  requireAlive(ref, "ncclSend");
  BufferInfo b = findBuffer(0);
  checkBytes("sendRecv", bytes * 2, b);
  const size_t count = bytes / sizeof(float);
  void* send = reinterpret_cast<void*>(static_cast<uintptr_t>(b.ptr));
  void* recv = reinterpret_cast<void*>(static_cast<uintptr_t>(b.ptr + bytes));
  Timed t = timedCall(gen, [&] {
    NCCL_CHECK(ncclGroupStart, nullptr, ());
    try {
      NCCL_CHECK(ncclSend, lastErrorComm(ref), (send, count, ncclFloat32, peer, ref->comm, stream));
      NCCL_CHECK(ncclRecv, lastErrorComm(ref), (recv, count, ncclFloat32, peer, ref->comm, stream));
    } catch (...) {
      nccl().ncclGroupEnd();  // the group is closed before the error goes on (its own result ignored)
      throw;
    }
    ncclResult_t r = NCCL_CHECK(ncclGroupEnd, lastErrorComm(ref), ());
    if (r == ncclInProgress) waitReady("ncclGroupEnd", ref->comm, ref);
    CU_CHECK(cuStreamSynchronize, (stream));
  });
  checkAfterSync("ncclSend", ref);
  return t;
}

Timed streamSynchronize(std::optional<uint64_t> gen) {
  makeContextCurrent("cuStreamSynchronize");
  return timedCall(gen, [&] { CU_CHECK(cuStreamSynchronize, (stream)); });
}

// ---- registration and windows --------------------------------------------------------------------

Timed commRegister(const CommRef& ref, const BufferInfo& buf, size_t bytes, std::optional<uint64_t> gen, int* handle) {
  makeContextCurrent("ncclCommRegister");
  requireAlive(ref, "ncclCommRegister");
  checkBytes("commRegister", bytes, buf);
  Registration reg;
  reg.comm = ref->handle;
  Timed t = timedCall(gen, [&] {
    NCCL_CHECK(ncclCommRegister, lastErrorComm(ref),
               (ref->comm, reinterpret_cast<void*>(static_cast<uintptr_t>(buf.ptr)), bytes, &reg.handle));
  });
  *handle = registrations.add(reg);
  return t;
}

void* takeRegistration(const CommRef& ref, int handle) {
  Registration reg = registrations.find(handle, "registration");
  if (reg.comm != ref->handle) {
    COMMCOST_FAIL("ARG", "commDeregister",
                  "registration " + std::to_string(handle) + " belongs to communicator " + std::to_string(reg.comm) +
                      ", not " + std::to_string(ref->handle));
  }
  return registrations.take(handle, "registration").handle;
}

Timed commDeregister(const CommRef& ref, void* registration, std::optional<uint64_t> gen) {
  makeContextCurrent("ncclCommDeregister");
  requireAlive(ref, "ncclCommDeregister");
  return timedCall(gen, [&] { NCCL_CHECK(ncclCommDeregister, lastErrorComm(ref), (ref->comm, registration)); });
}

Timed windowRegister(const CommRef& ref, const BufferInfo& buf, size_t bytes, int flags, std::optional<uint64_t> gen,
                     int* window) {
  makeContextCurrent("ncclCommWindowRegister");
  requireAlive(ref, "ncclCommWindowRegister");
  checkBytes("windowRegister", bytes, buf);
  ncclWindow_t win = nullptr;
  Timed t = timedCall(gen, [&] {
    ncclResult_t r = NCCL_CHECK(ncclCommWindowRegister, lastErrorComm(ref),
                                (ref->comm, reinterpret_cast<void*>(static_cast<uintptr_t>(buf.ptr)), bytes, &win, flags));
    if (r == ncclInProgress) waitReady("ncclCommWindowRegister", ref->comm, ref);
  });
  *window = win ? windows.add(Window{ref->handle, win}) : 0;
  return t;
}

ncclWindow_t takeWindow(const CommRef& ref, int handle) {
  Window w = windows.find(handle, "window");
  if (w.comm != ref->handle) {
    COMMCOST_FAIL("ARG", "windowDeregister",
                  "window " + std::to_string(handle) + " belongs to communicator " + std::to_string(w.comm) + ", not " +
                      std::to_string(ref->handle));
  }
  return windows.take(handle, "window").window;
}

Timed windowDeregister(const CommRef& ref, ncclWindow_t window, std::optional<uint64_t> gen) {
  makeContextCurrent("ncclCommWindowDeregister");
  requireAlive(ref, "ncclCommWindowDeregister");
  return timedCall(gen, [&] { NCCL_CHECK(ncclCommWindowDeregister, lastErrorComm(ref), (ref->comm, window)); });
}

// ---- CUDA graph of one allreduce -----------------------------------------------------------------

namespace {

// Ends a capture left open by a failure and destroys what was made (errors ignored: cleanup only).
struct GraphScope {
  bool capturing = false;
  CUgraph graph = nullptr;
  CUgraphExec exec = nullptr;
  ~GraphScope() {
    const CudaApi& cu = cuda();
    if (capturing) {
      CUgraph g = nullptr;
      if (cu.cuStreamEndCapture(stream, &g) == CUDA_SUCCESS && g && !graph) graph = g;
    }
    if (exec) cu.cuGraphExecDestroy(exec);
    if (graph) cu.cuGraphDestroy(graph);
  }
};

double msBetween(uint64_t a, uint64_t b) { return static_cast<double>(b - a) / 1e6; }

}  // namespace

Timed graphAllReduce(const CommRef& ref, size_t bytes, std::optional<uint64_t> gen, GraphTimes* parts) {
  makeContextCurrent("graphAllReduce");
  requireAlive(ref, "graphAllReduce");
  BufferInfo buf = findBuffer(0);
  checkBytes("graphAllReduce", bytes, buf);
  const size_t count = bytes / sizeof(float);
  void* p = reinterpret_cast<void*>(static_cast<uintptr_t>(buf.ptr));
  GraphScope scope;
  uint64_t t1 = 0, t2 = 0;
  Timed t = timedCall(gen, [&] {
    uint64_t t0 = monotonicNs();
    CU_CHECK(cuStreamBeginCapture_v2, (stream, CU_STREAM_CAPTURE_MODE_RELAXED));
    scope.capturing = true;
    ncclResult_t r =
        NCCL_CHECK(ncclAllReduce, lastErrorComm(ref), (p, p, count, ncclFloat32, ncclSum, ref->comm, stream));
    if (r == ncclInProgress) waitReady("ncclAllReduce", ref->comm, ref);
    scope.capturing = false;
    CU_CHECK(cuStreamEndCapture, (stream, &scope.graph));
    t1 = monotonicNs();
    CU_CHECK(cuGraphInstantiateWithFlags, (&scope.exec, scope.graph, 0));
    t2 = monotonicNs();
    CU_CHECK(cuGraphLaunch, (scope.exec, stream));
    CU_CHECK(cuStreamSynchronize, (stream));
    parts->captureMs = msBetween(t0, t1);
    parts->instantiateMs = msBetween(t1, t2);
    parts->launchMs = msBetween(t2, monotonicNs());
  });
  checkAfterSync("graphAllReduce", ref);
  return t;
}

}  // namespace commcost
