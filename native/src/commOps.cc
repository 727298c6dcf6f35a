#include "commOps.h"

#include <sched.h>

#include <cmath>

#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "barrier.h"
#include "inFlight.h"
#include "libraries.h"
#include "nativeError.h"

namespace commcost {
namespace {

// ---- device state: written once by initDevice, read by every worker ----------------------------
std::atomic<bool> deviceClaimed{false};
std::atomic<bool> deviceReady{false};
CUcontext context = nullptr;
CUstream stream = nullptr;
CUdeviceptr buffer = 0;
size_t bufferSize = 0;

// ---- communicator table ---------------------------------------------------------------------------
std::mutex tableMutex;
std::unordered_map<int, CommRef> table;
int nextHandle = 1;

int addComm(ncclComm_t comm) {
  auto entry = std::make_shared<CommEntry>();
  entry->comm = comm;
  std::lock_guard<std::mutex> lock(tableMutex);
  entry->handle = nextHandle++;
  table[entry->handle] = entry;
  return entry->handle;
}

// Bumped by abortAll: commInitRankAbortable's poll loop gives up when it changes.
std::atomic<uint64_t> abortGeneration{0};

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

// NCCL and the CUDA runtime inside it use the context current on the calling thread.
void makeContextCurrent(const char* call) {
  if (!deviceReady.load(std::memory_order_acquire)) {
    COMMCOST_FAIL("ARG", call, std::string(call) + " needs a device: call initDevice(ordinal, bufferBytes) first");
  }
  CU_CHECK(cuCtxSetCurrent, (context));
}

// The comm to hand to ncclGetLastError: none once abortAll may have freed it.
ncclComm_t lastErrorComm(const CommRef& ref) { return ref && !ref->aborted.load() ? ref->comm : nullptr; }

void requireAlive(const CommRef& ref, const char* call) {
  if (ref->aborted.load()) {
    COMMCOST_FAIL("NCCL", call, std::string(call) + ": communicator " + std::to_string(ref->handle) +
                                    " was aborted by abortAll");
  }
}

// Poll loop of non-blocking communicators; runs inside the timed span.
void waitReady(const char* call, ncclComm_t comm, const CommRef& ref) {
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

}  // namespace

ncclConfig_t makeConfig(const CommConfigArg& arg) {
  ncclConfig_t c;
  int* ints = reinterpret_cast<int*>(&c);
  for (size_t i = 0; i < sizeof c / sizeof(int); i++) ints[i] = NCCL_CONFIG_UNDEF_INT;
  c.size = sizeof c;
  c.magic = NCCL_CONFIG_MAGIC;
  c.version = NCCL_CONFIG_LAYOUT_VERSION;
  c.netName = nullptr;
  c.commName = nullptr;
  const int have = loadInfo().ncclVersionCode;
  auto setField = [&](const char* name, const std::optional<int>& value, int since, int* field) {
    if (!value) return;
    if (*value != 0 && *value != 1) COMMCOST_FAIL("ARG", "config", std::string("config.") + name + " must be 0 or 1");
    if (have < since) {
      COMMCOST_FAIL("ARG", "config",
                    std::string("config.") + name + " needs NCCL >= " + formatNcclVersion(since) + ", loaded " +
                        formatNcclVersion(have));
    }
    *field = *value;
  };
  setField("blocking", arg.blocking, kConfigBlockingSince, &c.blocking);
  setField("splitShare", arg.splitShare, kConfigSplitShareSince, &c.splitShare);
  return c;
}

CommRef findComm(int handle) {
  std::lock_guard<std::mutex> lock(tableMutex);
  auto it = table.find(handle);
  if (it == table.end()) {
    COMMCOST_FAIL("ARG", "comm", "unknown communicator handle " + std::to_string(handle) +
                                     " (never created, destroyed, aborted or aborted by abortAll)");
  }
  return it->second;
}

CommRef takeComm(int handle) {
  std::lock_guard<std::mutex> lock(tableMutex);
  auto it = table.find(handle);
  if (it == table.end()) {
    COMMCOST_FAIL("ARG", "comm", "unknown communicator handle " + std::to_string(handle) +
                                     " (never created, destroyed, aborted or aborted by abortAll)");
  }
  CommRef ref = it->second;
  table.erase(it);
  return ref;
}

int deviceCount() {
  CU_CHECK(cuInit, (0));
  int n = 0;
  CU_CHECK(cuDeviceGetCount, (&n));
  return n;
}

DeviceInfo deviceInfo(int ordinal) {
  CU_CHECK(cuInit, (0));
  CUdevice dev = 0;
  CU_CHECK(cuDeviceGet, (&dev, ordinal));
  char name[256] = {0};
  CU_CHECK(cuDeviceGetName, (name, sizeof name - 1, dev));
  size_t total = 0;
  CU_CHECK(cuDeviceTotalMem_v2, (&total, dev));
  char bus[64] = {0};
  CU_CHECK(cuDeviceGetPCIBusId, (bus, sizeof bus - 1, dev));
  return DeviceInfo{ordinal, name, total, bus};
}

void claimDeviceStart() {
  if (deviceClaimed.exchange(true)) {
    COMMCOST_FAIL("ARG", "initDevice", "initDevice was already called in this process (one device per process)");
  }
}

Timed initDevice(int ordinal, size_t bytes, std::optional<uint64_t> gen, DeviceStartParts* parts) {
  CUdevice dev = 0;
  CUcontext ctx = nullptr;
  CUstream s = nullptr;
  CUdeviceptr buf = 0;
  uint64_t c0 = 0, c1 = 0, c2 = 0;
  Timed t = timedCall(gen, [&] {
    c0 = monotonicNs();
    CU_CHECK(cuInit, (0));
    c1 = monotonicNs();
    CU_CHECK(cuDeviceGet, (&dev, ordinal));
    CU_CHECK(cuDevicePrimaryCtxRetain, (&ctx, dev));
    CU_CHECK(cuCtxSetCurrent, (ctx));
    c2 = monotonicNs();
    CU_CHECK(cuStreamCreate, (&s, 0));
    CU_CHECK(cuMemAlloc_v2, (&buf, bytes));
    CU_CHECK(cuMemsetD8_v2, (buf, 0, bytes));
    CU_CHECK(cuStreamSynchronize, (s));
  });
  if (parts) {
    parts->cuInitMs = static_cast<double>(c1 - c0) / 1e6;
    parts->contextMs = static_cast<double>(c2 - c1) / 1e6;
  }
  context = ctx;
  stream = s;
  buffer = buf;
  bufferSize = bytes;
  deviceReady.store(true, std::memory_order_release);
  return t;
}

void memInfo(size_t* freeBytes, size_t* totalBytes) {
  cuda();  // LOAD before "no device"
  makeContextCurrent("memInfo");
  CU_CHECK(cuMemGetInfo_v2, (freeBytes, totalBytes));
}

size_t bufferBytes() { return deviceReady.load(std::memory_order_acquire) ? bufferSize : 0; }

CUstream addonStream() { return deviceReady.load(std::memory_order_acquire) ? stream : nullptr; }

void useDevice(const char* call) {
  cuda();  // LOAD before "no device"
  makeContextCurrent(call);
}

Timed getUniqueId(ncclUniqueId* id, std::optional<uint64_t> gen) {
  if (deviceReady.load(std::memory_order_acquire)) CU_CHECK(cuCtxSetCurrent, (context));
  return timedCall(gen, [&] { NCCL_CHECK(ncclGetUniqueId, nullptr, (id)); });
}

Timed commInitRank(int nranks, const ncclUniqueId& id, int rank, const std::optional<ncclConfig_t>& config,
                   std::optional<uint64_t> gen, int* handle) {
  makeContextCurrent("ncclCommInitRank");
  ncclComm_t comm = nullptr;
  ncclConfig_t cfg = config ? *config : ncclConfig_t{};
  Timed t = timedCall(gen, [&] {
    ncclResult_t r = config ? NCCL_CHECK(ncclCommInitRankConfig, nullptr, (&comm, nranks, id, rank, &cfg))
                            : NCCL_CHECK(ncclCommInitRank, nullptr, (&comm, nranks, id, rank));
    if (r == ncclInProgress) waitReady(config ? "ncclCommInitRankConfig" : "ncclCommInitRank", comm, nullptr);
  });
  *handle = addComm(comm);
  return t;
}

Timed commSplit(const CommRef& parent, int color, int key, const std::optional<ncclConfig_t>& config,
                std::optional<uint64_t> gen, int* handle) {
  makeContextCurrent("ncclCommSplit");
  requireAlive(parent, "ncclCommSplit");
  ncclComm_t child = nullptr;
  ncclConfig_t cfg = config ? *config : ncclConfig_t{};
  Timed t = timedCall(gen, [&] {
    ncclResult_t r =
        NCCL_CHECK(ncclCommSplit, lastErrorComm(parent), (parent->comm, color, key, &child, config ? &cfg : nullptr));
    if (r == ncclInProgress) {
      // Progress is reported on the parent; the child must also be ready before use.
      waitReady("ncclCommSplit", parent->comm, parent);
      if (child) waitReady("ncclCommSplit", child, nullptr);
    }
  });
  *handle = child ? addComm(child) : 0;
  return t;
}

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

Timed streamSynchronize(std::optional<uint64_t> gen) {
  makeContextCurrent("cuStreamSynchronize");
  return timedCall(gen, [&] { CU_CHECK(cuStreamSynchronize, (stream)); });
}

Timed commFinalize(const CommRef& ref, std::optional<uint64_t> gen) {
  makeContextCurrent("ncclCommFinalize");
  requireAlive(ref, "ncclCommFinalize");
  return timedCall(gen, [&] {
    ncclResult_t r = NCCL_CHECK(ncclCommFinalize, lastErrorComm(ref), (ref->comm));
    if (r == ncclInProgress) waitReady("ncclCommFinalize", ref->comm, ref);
  });
}

Timed commDestroy(const CommRef& ref, std::optional<uint64_t> gen) {
  makeContextCurrent("ncclCommDestroy");
  requireAlive(ref, "ncclCommDestroy");
  return timedCall(gen, [&] { NCCL_CHECK(ncclCommDestroy, nullptr, (ref->comm)); });
}

Timed commAbort(const CommRef& ref, std::optional<uint64_t> gen) {
  makeContextCurrent("ncclCommAbort");
  requireAlive(ref, "ncclCommAbort");
  ref->aborted.store(true);
  return timedCall(gen, [&] { NCCL_CHECK(ncclCommAbort, nullptr, (ref->comm)); });
}

Timed barrierOnly(std::optional<uint64_t> gen) {
  return timedCall(gen, [] {});
}

int abortAll() {
  abortGeneration.fetch_add(1);
  std::vector<CommRef> live;
  {
    std::lock_guard<std::mutex> lock(tableMutex);
    for (auto& kv : table) live.push_back(kv.second);
    table.clear();
  }
  if (live.empty()) return 0;
  if (deviceReady.load(std::memory_order_acquire)) cuda().cuCtxSetCurrent(context);
  int n = 0;
  for (auto& ref : live) {
    if (ref->aborted.exchange(true)) continue;
    nccl().ncclCommAbort(ref->comm);  // best effort: a hang guard must not stop at the first error
    n++;
  }
  return n;
}

int commCount(const CommRef& ref) {
  requireAlive(ref, "ncclCommCount");
  int n = 0;
  NCCL_CHECK(ncclCommCount, ref->comm, (ref->comm, &n));
  return n;
}

int commUserRank(const CommRef& ref) {
  requireAlive(ref, "ncclCommUserRank");
  int r = 0;
  NCCL_CHECK(ncclCommUserRank, ref->comm, (ref->comm, &r));
  return r;
}

// ---- optional functions ------------------------------------------------------------------------

void requireNccl(bool present, const char* name, int since) {
  const int have = loadInfo().ncclVersionCode;
  if (present && have >= since) return;
  COMMCOST_FAIL("ARG", name,
                std::string(name) + " is not in this NCCL (needs \u2265 " + formatNcclVersion(since) + ", loaded " +
                    formatNcclVersion(have) + ")");
}

void requireCuda(bool present, const char* name) {
  if (present) return;
  COMMCOST_FAIL("ARG", name,
                std::string(name) + " is not in this CUDA driver (loaded driver " +
                    std::to_string(loadInfo().driverVersion) + ", needs CUDA \u2265 11.4)");
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

// ---- shrink, grow, revoke ------------------------------------------------------------------------

Timed commShrink(const CommRef& parent, const std::vector<int>& excludeRanks, int flags,
                 const std::optional<ncclConfig_t>& config, std::optional<uint64_t> gen, int* handle) {
  makeContextCurrent("ncclCommShrink");
  requireAlive(parent, "ncclCommShrink");
  std::vector<int> exclude = excludeRanks;
  ncclComm_t child = nullptr;
  ncclConfig_t cfg = config ? *config : ncclConfig_t{};
  Timed t = timedCall(gen, [&] {
    ncclResult_t r = NCCL_CHECK(ncclCommShrink, lastErrorComm(parent),
                                (parent->comm, exclude.empty() ? nullptr : exclude.data(), static_cast<int>(exclude.size()),
                                 &child, config ? &cfg : nullptr, flags));
    if (r == ncclInProgress) waitReady("ncclCommShrink", child ? child : parent->comm, child ? nullptr : parent);
  });
  *handle = child ? addComm(child) : 0;
  return t;
}

Timed commGetUniqueId(const CommRef& ref, ncclUniqueId* id, std::optional<uint64_t> gen) {
  makeContextCurrent("ncclCommGetUniqueId");
  requireAlive(ref, "ncclCommGetUniqueId");
  return timedCall(gen, [&] { NCCL_CHECK(ncclCommGetUniqueId, lastErrorComm(ref), (ref->comm, id)); });
}

Timed commGrow(const CommRef& parent, int nranks, const std::optional<ncclUniqueId>& id, int rank,
               const std::optional<ncclConfig_t>& config, std::optional<uint64_t> gen, int* handle) {
  makeContextCurrent("ncclCommGrow");
  if (parent) requireAlive(parent, "ncclCommGrow");
  ncclComm_t child = nullptr;
  ncclConfig_t cfg = config ? *config : ncclConfig_t{};
  ncclUniqueId idCopy = id ? *id : ncclUniqueId{};
  Timed t = timedCall(gen, [&] {
    ncclResult_t r = NCCL_CHECK(ncclCommGrow, parent ? lastErrorComm(parent) : nullptr,
                                (parent ? parent->comm : nullptr, nranks, id ? &idCopy : nullptr, rank, &child,
                                 config ? &cfg : nullptr));
    if (r == ncclInProgress) waitReady("ncclCommGrow", child, nullptr);
  });
  *handle = addComm(child);
  return t;
}

Timed commRevoke(const CommRef& ref, std::optional<uint64_t> gen, double* callMs) {
  makeContextCurrent("ncclCommRevoke");
  requireAlive(ref, "ncclCommRevoke");
  uint64_t called = 0;
  uint64_t start = 0;
  Timed t = timedCall(gen, [&] {
    start = monotonicNs();
    NCCL_CHECK(ncclCommRevoke, lastErrorComm(ref), (ref->comm, NCCL_REVOKE_DEFAULT));
    called = monotonicNs();
    waitReady("ncclCommRevoke", ref->comm, ref);  // until quiet
  });
  *callMs = static_cast<double>(called - start) / 1e6;
  return t;
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

// ---- suspend / resume ----------------------------------------------------------------------------

Timed commSuspend(const CommRef& ref, int flags, std::optional<uint64_t> gen) {
  makeContextCurrent("ncclCommSuspend");
  requireAlive(ref, "ncclCommSuspend");
  return timedCall(gen, [&] {
    ncclResult_t r = NCCL_CHECK(ncclCommSuspend, lastErrorComm(ref), (ref->comm, flags));
    if (r == ncclInProgress) waitReady("ncclCommSuspend", ref->comm, ref);
  });
}

Timed commResume(const CommRef& ref, std::optional<uint64_t> gen) {
  makeContextCurrent("ncclCommResume");
  requireAlive(ref, "ncclCommResume");
  return timedCall(gen, [&] {
    ncclResult_t r = NCCL_CHECK(ncclCommResume, lastErrorComm(ref), (ref->comm));
    if (r == ncclInProgress) waitReady("ncclCommResume", ref->comm, ref);
  });
}

std::optional<MemStats> commMemStats(const CommRef& ref) {
  const NcclApi& api = nccl();
  if (!api.ncclCommMemStats || loadInfo().ncclVersionCode < kSuspendSince) return std::nullopt;
  requireAlive(ref, "ncclCommMemStats");
  MemStats m;
  NCCL_CHECK(ncclCommMemStats, ref->comm, (ref->comm, ncclStatGpuMemSuspend, &m.suspendable));
  NCCL_CHECK(ncclCommMemStats, ref->comm, (ref->comm, ncclStatGpuMemSuspended, &m.suspended));
  NCCL_CHECK(ncclCommMemStats, ref->comm, (ref->comm, ncclStatGpuMemPersist, &m.persistent));
  NCCL_CHECK(ncclCommMemStats, ref->comm, (ref->comm, ncclStatGpuMemTotal, &m.total));
  return m;
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

// ---- abortable non-blocking init -----------------------------------------------------------------

Timed commInitRankAbortable(int nranks, const ncclUniqueId& id, int rank, double deadlineMs,
                            std::optional<uint64_t> gen, int* handle, bool* aborted, double* abortMs) {
  makeContextCurrent("ncclCommInitRankConfig");
  CommConfigArg arg;
  arg.blocking = 0;
  ncclConfig_t cfg = makeConfig(arg);
  ncclComm_t comm = nullptr;
  const uint64_t abortsBefore = abortGeneration.load();
  *aborted = false;
  *abortMs = 0;
  Timed t = timedCall(gen, [&] {
    const uint64_t start = monotonicNs();
    const uint64_t deadline = start + static_cast<uint64_t>(std::max(0.0, deadlineMs) * 1e6);
    ncclResult_t r = NCCL_CHECK(ncclCommInitRankConfig, nullptr, (&comm, nranks, id, rank, &cfg));
    while (r == ncclInProgress) {
      if (abortGeneration.load() != abortsBefore || monotonicNs() >= deadline) {
        *aborted = true;
        const uint64_t abortStart = monotonicNs();
        NCCL_CHECK(ncclCommAbort, nullptr, (comm));
        *abortMs = static_cast<double>(monotonicNs() - abortStart) / 1e6;
        return;
      }
      sched_yield();
      ncclResult_t state = ncclInProgress;
      NCCL_CHECK(ncclCommGetAsyncError, comm, (comm, &state));
      if (state != ncclSuccess && state != ncclInProgress) {
        // Release what the failed init holds, then report its error.
        nccl().ncclCommAbort(comm);
        failNccl("ncclCommInitRankConfig", state, nullptr, __FILE__, __LINE__);
      }
      r = state;
    }
  });
  *handle = *aborted ? 0 : addComm(comm);
  return t;
}

}  // namespace commcost
