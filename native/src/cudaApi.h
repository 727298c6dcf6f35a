// cudaApi.h: the CUDA driver API subset commcost uses, declared by hand for dlopen/dlsym.
// Never include cuda.h: the addon builds on machines without CUDA. Signatures are the driver's
// (_v2 names are the ones cuda.h maps the plain names to since CUDA 3.2).
#pragma once

#include <cstddef>

namespace commcost {

typedef int CUresult;  // enum cudaError_enum: 0 = CUDA_SUCCESS
typedef int CUdevice;
typedef struct CUctx_st* CUcontext;
typedef struct CUstream_st* CUstream;  // ABI-identical to cudaStream_t
typedef unsigned long long CUdeviceptr;
typedef struct CUgraph_st* CUgraph;
typedef struct CUgraphExec_st* CUgraphExec;
typedef struct CUevent_st* CUevent;

constexpr CUresult CUDA_SUCCESS = 0;
// cuEventQuery of an event whose preceding work on the stream has not finished yet.
constexpr CUresult CUDA_ERROR_NOT_READY = 600;
constexpr unsigned int CU_EVENT_DISABLE_TIMING = 0x2;
// CUstreamCaptureMode: GLOBAL 0, THREAD_LOCAL 1, RELAXED 2. NCCL capture uses RELAXED (NCCL's
// own threads may make capture-unsafe calls while the addon's stream captures).
constexpr int CU_STREAM_CAPTURE_MODE_RELAXED = 2;

// Spells a function-pointer type given in a macro argument as a declaration type.
template <class T>
using FnPtr = T;

// One entry per driver function; the loader fills `CudaApi` by these names.
#define COMMCOST_CUDA_FUNCTIONS(X)                                              \
  X(cuInit, CUresult (*)(unsigned int flags))                                   \
  X(cuDriverGetVersion, CUresult (*)(int* version))                             \
  X(cuDeviceGetCount, CUresult (*)(int* count))                                 \
  X(cuDeviceGet, CUresult (*)(CUdevice * device, int ordinal))                  \
  X(cuDeviceGetName, CUresult (*)(char* name, int len, CUdevice dev))           \
  X(cuDeviceTotalMem_v2, CUresult (*)(size_t * bytes, CUdevice dev))            \
  X(cuDeviceGetPCIBusId, CUresult (*)(char* busId, int len, CUdevice dev))      \
  X(cuDevicePrimaryCtxRetain, CUresult (*)(CUcontext * ctx, CUdevice dev))      \
  X(cuCtxSetCurrent, CUresult (*)(CUcontext ctx))                               \
  X(cuStreamCreate, CUresult (*)(CUstream * stream, unsigned int flags))        \
  X(cuStreamSynchronize, CUresult (*)(CUstream stream))                         \
  X(cuMemAlloc_v2, CUresult (*)(CUdeviceptr * ptr, size_t bytes))               \
  X(cuMemFree_v2, CUresult (*)(CUdeviceptr ptr))                                \
  X(cuMemsetD8_v2, CUresult (*)(CUdeviceptr ptr, unsigned char value, size_t n)) \
  X(cuMemGetInfo_v2, CUresult (*)(size_t * freeBytes, size_t * totalBytes))     \
  X(cuGetErrorString, CUresult (*)(CUresult error, const char** text))

// Optional driver functions (CUDA graphs, driver >= 11.4 for cuGraphInstantiateWithFlags; events,
// memset and copy back for the in-flight window of inFlight.cc); a missing one is reported in
// LoadInfo.symbols and makes graphAllReduce / armInFlight / memFill / readFloats fail with ARG.
#define COMMCOST_CUDA_OPTIONAL(X)                                                              \
  X(cuStreamBeginCapture_v2, CUresult (*)(CUstream stream, int mode))                         \
  X(cuStreamEndCapture, CUresult (*)(CUstream stream, CUgraph * graph))                       \
  X(cuGraphInstantiateWithFlags, CUresult (*)(CUgraphExec * exec, CUgraph graph, unsigned long long flags)) \
  X(cuGraphLaunch, CUresult (*)(CUgraphExec exec, CUstream stream))                           \
  X(cuGraphExecDestroy, CUresult (*)(CUgraphExec exec))                                       \
  X(cuGraphDestroy, CUresult (*)(CUgraph graph))                              \
  X(cuEventCreate, CUresult (*)(CUevent * event, unsigned int flags))         \
  X(cuEventRecord, CUresult (*)(CUevent event, CUstream stream))              \
  X(cuEventQuery, CUresult (*)(CUevent event))                                \
  X(cuEventDestroy_v2, CUresult (*)(CUevent event))                           \
  X(cuMemsetD32_v2, CUresult (*)(CUdeviceptr ptr, unsigned int value, size_t n)) \
  X(cuMemcpyDtoH_v2, CUresult (*)(void* dst, CUdeviceptr src, size_t bytes))

struct CudaApi {
#define COMMCOST_CUDA_FIELD(name, type) FnPtr<type> name = nullptr;
  COMMCOST_CUDA_FUNCTIONS(COMMCOST_CUDA_FIELD)
  COMMCOST_CUDA_OPTIONAL(COMMCOST_CUDA_FIELD)
#undef COMMCOST_CUDA_FIELD
};

}  // namespace commcost
