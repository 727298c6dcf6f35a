#include "commOps.h"

#include <sched.h>

#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "barrier.h"
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
  uint64_t t0 = monotonicNs();
  call();
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

Timed initDevice(int ordinal, size_t bytes, std::optional<uint64_t> gen) {
  CUdevice dev = 0;
  CUcontext ctx = nullptr;
  CUstream s = nullptr;
  CUdeviceptr buf = 0;
  Timed t = timedCall(gen, [&] {
    CU_CHECK(cuInit, (0));
    CU_CHECK(cuDeviceGet, (&dev, ordinal));
    CU_CHECK(cuDevicePrimaryCtxRetain, (&ctx, dev));
    CU_CHECK(cuCtxSetCurrent, (ctx));
    CU_CHECK(cuStreamCreate, (&s, 0));
    CU_CHECK(cuMemAlloc_v2, (&buf, bytes));
    CU_CHECK(cuMemsetD8_v2, (buf, 0, bytes));
    CU_CHECK(cuStreamSynchronize, (s));
  });
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

Timed allReduce(const CommRef& ref, size_t bytes, std::optional<uint64_t> gen) {
  makeContextCurrent("ncclAllReduce");
  requireAlive(ref, "ncclAllReduce");
  if (bytes > bufferSize) {
    COMMCOST_FAIL("ARG", "allReduce",
                  "allReduce of " + std::to_string(bytes) + " bytes exceeds the device buffer of " +
                      std::to_string(bufferSize) + " bytes given to initDevice");
  }
  const size_t count = bytes / sizeof(float);
  void* buf = reinterpret_cast<void*>(static_cast<uintptr_t>(buffer));
  return timedCall(gen, [&] {
    ncclResult_t r =
        NCCL_CHECK(ncclAllReduce, lastErrorComm(ref), (buf, buf, count, ncclFloat32, ncclSum, ref->comm, stream));
    if (r == ncclInProgress) waitReady("ncclAllReduce", ref->comm, ref);
    CU_CHECK(cuStreamSynchronize, (stream));
  });
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

}  // namespace commcost
