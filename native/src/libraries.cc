#include "libraries.h"

#include <dlfcn.h>

#include <atomic>
#include <mutex>

#include "barrier.h"
#include "nativeError.h"

namespace commcost {
namespace {

std::mutex loadMutex;
std::atomic<bool> loaded{false};
NcclApi ncclTable;
CudaApi cudaTable;
LoadInfo info;
std::string requestedNccl, requestedCuda;

std::string dlerrorText() {
  const char* e = dlerror();
  return e ? e : "unknown dlopen error";
}

void* openLibrary(const std::string& path, const char* what) {
  dlerror();
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    COMMCOST_FAIL("LOAD", "dlopen", std::string("cannot load ") + what + " library '" + path + "': " + dlerrorText());
  }
  return handle;
}

std::string resolvedPath(void* symbol, const std::string& fallback) {
  Dl_info dl;
  if (symbol && dladdr(symbol, &dl) != 0 && dl.dli_fname && *dl.dli_fname) return dl.dli_fname;
  return fallback;
}

}  // namespace

std::string formatNcclVersion(int code) {
  int major, minor, patch;
  if (code >= 10000) {
    major = code / 10000;
    minor = (code % 10000) / 100;
    patch = code % 100;
  } else {  // NCCL <= 2.8: major*1000 + minor*100 + patch
    major = code / 1000;
    minor = (code % 1000) / 100;
    patch = code % 100;
  }
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
}

const LoadInfo& loadLibraries(const std::string& ncclPath, const std::string& cudaPath) {
  std::lock_guard<std::mutex> lock(loadMutex);
  if (loaded.load()) {
    if (ncclPath != requestedNccl || cudaPath != requestedCuda) {
      COMMCOST_FAIL("LOAD", "load",
                    "libraries already loaded from '" + requestedNccl + "' and '" + requestedCuda +
                        "'; a process can load only one NCCL (asked for '" + ncclPath + "' and '" + cudaPath + "')");
    }
    return info;
  }

  // Never dlclose: NCCL starts threads that outlive any caller.
  // Each dlopen is timed alone (the cold-start experiment's "NCCL library load").
  uint64_t t0 = monotonicNs();
  void* cudaHandle = openLibrary(cudaPath, "CUDA driver");
  uint64_t t1 = monotonicNs();
  void* ncclHandle = openLibrary(ncclPath, "NCCL");
  uint64_t t2 = monotonicNs();

  CudaApi cu;
  std::string missing;
#define COMMCOST_LOAD_CUDA(name, type)                                  \
  cu.name = reinterpret_cast<type>(dlsym(cudaHandle, #name));           \
  if (!cu.name) missing += std::string(missing.empty() ? "" : ", ") + #name;
  COMMCOST_CUDA_FUNCTIONS(COMMCOST_LOAD_CUDA)
#undef COMMCOST_LOAD_CUDA
  if (!missing.empty()) {
    COMMCOST_FAIL("LOAD", "dlsym", "CUDA driver library '" + cudaPath + "' lacks required symbols: " + missing);
  }

  std::vector<std::pair<std::string, bool>> cudaOptional;
#define COMMCOST_LOAD_CUDA_OPTIONAL(name, type)                         \
  cu.name = reinterpret_cast<type>(dlsym(cudaHandle, #name));           \
  cudaOptional.emplace_back(#name, cu.name != nullptr);
  COMMCOST_CUDA_OPTIONAL(COMMCOST_LOAD_CUDA_OPTIONAL)
#undef COMMCOST_LOAD_CUDA_OPTIONAL

  NcclApi nc;
#define COMMCOST_LOAD_NCCL(name, type)                                  \
  nc.name = reinterpret_cast<type>(dlsym(ncclHandle, #name));           \
  if (!nc.name) missing += std::string(missing.empty() ? "" : ", ") + #name;
  COMMCOST_NCCL_REQUIRED(COMMCOST_LOAD_NCCL)
#undef COMMCOST_LOAD_NCCL
  if (!missing.empty()) {
    COMMCOST_FAIL("LOAD", "dlsym",
                  "NCCL library '" + ncclPath + "' lacks required symbols (commcost needs NCCL >= 2.18): " + missing);
  }
  LoadInfo li;
#define COMMCOST_LOAD_OPTIONAL(name, type)                              \
  nc.name = reinterpret_cast<type>(dlsym(ncclHandle, #name));           \
  li.symbols.emplace_back(#name, nc.name != nullptr);
  COMMCOST_NCCL_OPTIONAL(COMMCOST_LOAD_OPTIONAL)
#undef COMMCOST_LOAD_OPTIONAL
  li.symbols.insert(li.symbols.end(), cudaOptional.begin(), cudaOptional.end());

  int version = 0;
  ncclResult_t r = nc.ncclGetVersion(&version);
  if (r != ncclSuccess) {
    const char* text = nc.ncclGetErrorString(r);
    COMMCOST_FAIL("LOAD", "ncclGetVersion",
                  "ncclGetVersion failed with " + std::to_string(r) + ": " + (text ? text : "unknown error"));
  }
  int driver = 0;
  CUresult cr = cu.cuDriverGetVersion(&driver);
  if (cr != CUDA_SUCCESS) {
    COMMCOST_FAIL("LOAD", "cuDriverGetVersion", "cuDriverGetVersion failed with CUresult " + std::to_string(cr));
  }

  li.ncclPath = resolvedPath(reinterpret_cast<void*>(nc.ncclGetVersion), ncclPath);
  li.cudaPath = resolvedPath(reinterpret_cast<void*>(cu.cuInit), cudaPath);
  li.ncclVersionCode = version;
  li.ncclVersion = formatNcclVersion(version);
  li.driverVersion = driver;
  li.simulated = dlsym(ncclHandle, "commcostSimulated") != nullptr;
  li.cudaLoadMs = static_cast<double>(t1 - t0) / 1e6;
  li.ncclLoadMs = static_cast<double>(t2 - t1) / 1e6;

  ncclTable = nc;
  cudaTable = cu;
  info = li;
  requestedNccl = ncclPath;
  requestedCuda = cudaPath;
  loaded.store(true);
  return info;
}

const NcclApi* loadedNccl() { return loaded.load() ? &ncclTable : nullptr; }
const CudaApi* loadedCuda() { return loaded.load() ? &cudaTable : nullptr; }

const NcclApi& nccl() {
  if (!loaded.load()) COMMCOST_FAIL("LOAD", "nccl", "NCCL is not loaded: call load({ncclPath}) first");
  return ncclTable;
}

const CudaApi& cuda() {
  if (!loaded.load()) COMMCOST_FAIL("LOAD", "cuda", "the CUDA driver is not loaded: call load({ncclPath}) first");
  return cudaTable;
}

const LoadInfo& loadInfo() {
  if (!loaded.load()) COMMCOST_FAIL("LOAD", "load", "libraries are not loaded: call load({ncclPath}) first");
  return info;
}

}  // namespace commcost
