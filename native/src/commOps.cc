// commOps.cc: the process's device state and communicator table (commOpsInternal.h lists the
// split): device queries and initDevice, the communicator table, the optional-function checks,
// abortAll, count / user rank and the timed nop (barrierOnly).
#include "commOps.h"

#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "commOpsInternal.h"

namespace commcost {
namespace ops {

// ---- device state: written once by initDevice, read by every worker ----------------------------
std::atomic<bool> deviceReady{false};
CUcontext context = nullptr;
CUstream stream = nullptr;
CUdeviceptr buffer = 0;
size_t bufferSize = 0;

std::atomic<uint64_t> abortGeneration{0};

}  // namespace ops

using namespace ops;

namespace {

std::atomic<bool> deviceClaimed{false};

// ---- communicator table ---------------------------------------------------------------------------
std::mutex tableMutex;
std::unordered_map<int, CommRef> table;
int nextHandle = 1;

}  // namespace

int ops::addComm(ncclComm_t comm) {
  auto entry = std::make_shared<CommEntry>();
  entry->comm = comm;
  std::lock_guard<std::mutex> lock(tableMutex);
  entry->handle = nextHandle++;
  table[entry->handle] = entry;
  return entry->handle;
}

void ops::makeContextCurrent(const char* call) {
  if (!deviceReady.load(std::memory_order_acquire)) {
    COMMCOST_FAIL("ARG", call, std::string(call) + " needs a device: call initDevice(ordinal, bufferBytes) first");
  }
  CU_CHECK(cuCtxSetCurrent, (context));
}

void ops::requireAlive(const CommRef& ref, const char* call) {
  if (ref->aborted.load()) {
    COMMCOST_FAIL("NCCL", call, std::string(call) + ": communicator " + std::to_string(ref->handle) +
                                    " was aborted by abortAll");
  }
}

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
  auto setCount = [&](const char* name, const std::optional<int>& value, int since, int* field) {
    if (!value) return;
    if (*value < 1) COMMCOST_FAIL("ARG", "config", std::string("config.") + name + " must be a whole number >= 1");
    if (have < since) {
      COMMCOST_FAIL("ARG", "config",
                    std::string("config.") + name + " needs NCCL >= " + formatNcclVersion(since) + ", loaded " +
                        formatNcclVersion(have));
    }
    *field = *value;
  };
  setCount("minCTAs", arg.minCTAs, kConfigCTAsSince, &c.minCTAs);
  setCount("maxCTAs", arg.maxCTAs, kConfigCTAsSince, &c.maxCTAs);
  setCount("maxP2pPeers", arg.maxP2pPeers, kConfigMaxP2pPeersSince, &c.maxP2pPeers);
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

}  // namespace commcost
