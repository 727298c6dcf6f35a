#include "nativeError.h"

#include <cstring>

#include "libraries.h"

namespace commcost {

std::string sourceLocation(const char* file, int line) {
  const char* slash = std::strrchr(file, '/');
  return std::string(slash ? slash + 1 : file) + ":" + std::to_string(line);
}

void fail(const char* code, const std::string& call, const std::string& message, const char* file, int line) {
  NativeFailure f;
  f.code = code;
  f.call = call;
  f.message = message;
  f.where = sourceLocation(file, line);
  throw f;
}

void failCuda(const char* call, CUresult result, const char* file, int line) {
  NativeFailure f;
  f.code = "CUDA";
  f.call = call;
  f.hasResult = true;
  f.result = result;
  const char* text = nullptr;
  const CudaApi* api = loadedCuda();
  if (api && api->cuGetErrorString && api->cuGetErrorString(result, &text) == CUDA_SUCCESS && text) {
    f.libraryError = text;
  } else {
    f.libraryError = "unknown CUDA error";
  }
  f.message = std::string(call) + " failed with CUresult " + std::to_string(result) + ": " + f.libraryError;
  f.where = sourceLocation(file, line);
  throw f;
}

const char* ncclResultName(ncclResult_t result) {
  static const char* const names[] = {"ncclSuccess",         "ncclUnhandledCudaError", "ncclSystemError",
                                      "ncclInternalError",   "ncclInvalidArgument",    "ncclInvalidUsage",
                                      "ncclRemoteError",     "ncclInProgress",         "ncclTimeout"};
  return result >= 0 && result < 9 ? names[result] : "ncclResult";
}

void failNccl(const char* call, ncclResult_t result, ncclComm_t lastErrorComm, const char* file, int line) {
  NativeFailure f;
  f.code = "NCCL";
  f.call = call;
  f.hasResult = true;
  f.result = result;
  const NcclApi* api = loadedNccl();
  const char* text = api && api->ncclGetErrorString ? api->ncclGetErrorString(result) : nullptr;
  f.libraryError = text ? text : "unknown NCCL error";
  // ncclGetLastError is process-wide in every NCCL release so far; the comm argument is passed
  // only while the communicator is still alive.
  const char* last = api && api->ncclGetLastError ? api->ncclGetLastError(lastErrorComm) : nullptr;
  if (last && *last) {
    f.hasLastError = true;
    f.lastError = last;
  }
  f.message = std::string(call) + " failed with " + ncclResultName(result) + " (" + std::to_string(result) +
              "): " + f.libraryError;
  if (f.hasLastError) f.message += "; NCCL last error: " + f.lastError;
  f.where = sourceLocation(file, line);
  throw f;
}

ncclResult_t checkNccl(const char* call, ncclResult_t result, ncclComm_t lastErrorComm, const char* file, int line) {
  if (result == ncclSuccess || result == ncclInProgress) return result;
  failNccl(call, result, lastErrorComm, file, line);
}

}  // namespace commcost
