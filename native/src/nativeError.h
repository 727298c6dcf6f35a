// nativeError.h: the one error type native code throws, and the CHECK macros that make it.
// A NativeFailure never reaches JavaScript as a C++ exception: binding.cc converts it into a
// JavaScript Error with the fields of NativeError in index.d.ts.
#pragma once

#include <string>

#include "cudaApi.h"
#include "ncclApi.h"

namespace commcost {

struct NativeFailure {
  std::string code;  // LOAD | NCCL | CUDA | BARRIER | ARG
  std::string call;  // the library call or binding that failed, e.g. "ncclCommSplit"
  std::string message;
  bool hasResult = false;
  int result = 0;  // ncclResult_t or CUresult
  std::string libraryError;  // ncclGetErrorString / cuGetErrorString
  bool hasLastError = false;
  std::string lastError;  // ncclGetLastError
  std::string where;      // file:line
};

std::string sourceLocation(const char* file, int line);

[[noreturn]] void fail(const char* code, const std::string& call, const std::string& message, const char* file,
                       int line);
[[noreturn]] void failCuda(const char* call, CUresult result, const char* file, int line);
[[noreturn]] void failNccl(const char* call, ncclResult_t result, ncclComm_t lastErrorComm, const char* file,
                           int line);

// Returns `result` when it is ncclSuccess or ncclInProgress; throws a NCCL NativeFailure otherwise.
ncclResult_t checkNccl(const char* call, ncclResult_t result, ncclComm_t lastErrorComm, const char* file, int line);

const char* ncclResultName(ncclResult_t result);

}  // namespace commcost

// FAIL(code, call, message): throw a NativeFailure that records file:line.
#define COMMCOST_FAIL(code, call, message) ::commcost::fail(code, call, message, __FILE__, __LINE__)

// CU_CHECK(cuFoo, (args...)): call the driver through the loaded table; throw CUDA on error.
#define CU_CHECK(fn, args)                                                         \
  do {                                                                             \
    ::commcost::CUresult cuResult_ = ::commcost::cuda().fn args;                   \
    if (cuResult_ != ::commcost::CUDA_SUCCESS)                                     \
      ::commcost::failCuda(#fn, cuResult_, __FILE__, __LINE__);                    \
  } while (0)

// NCCL_CHECK(ncclFoo, lastErrorComm, (args...)): evaluates to ncclSuccess or ncclInProgress;
// throws NCCL with ncclGetErrorString and ncclGetLastError(lastErrorComm) otherwise.
#define NCCL_CHECK(fn, lastErrorComm, args) \
  ::commcost::checkNccl(#fn, ::commcost::nccl().fn args, lastErrorComm, __FILE__, __LINE__)
