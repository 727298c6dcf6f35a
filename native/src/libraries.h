// libraries.h: run-time loading of NCCL and the CUDA driver (nvmlwrap style).
// dlopen once under a mutex, fill a table of function pointers by name, allow optional NCCL
// symbols to be missing (reported in LoadInfo.symbols), never dlclose.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "cudaApi.h"
#include "ncclApi.h"

namespace commcost {

struct LoadInfo {
  std::string ncclPath;  // file the loader resolved (dladdr of ncclGetVersion), else the path given
  std::string cudaPath;
  int ncclVersionCode = 0;
  std::string ncclVersion;  // "2.28.9"
  int driverVersion = 0;    // cuDriverGetVersion, e.g. 13000
  bool simulated = false;   // the NCCL library exports `commcostSimulated`
  std::vector<std::pair<std::string, bool>> symbols;  // optional NCCL (then CUDA) symbol -> present
  // The first (successful) load of this process: dlopen of each library alone, host monotonic ms.
  double cudaLoadMs = 0;
  double ncclLoadMs = 0;
};

// Loads both libraries once. Throws LOAD (with the dlerror text) on failure, or when called again
// with other paths than the first successful call.
const LoadInfo& loadLibraries(const std::string& ncclPath, const std::string& cudaPath);

// The loaded tables; both throw LOAD when load() has not succeeded yet.
const NcclApi& nccl();
const CudaApi& cuda();
const LoadInfo& loadInfo();

// Same, but nullptr instead of throwing (for error paths).
const NcclApi* loadedNccl();
const CudaApi* loadedCuda();

std::string formatNcclVersion(int code);

}  // namespace commcost
