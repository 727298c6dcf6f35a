/*
 * simCuda.c: the CUDA driver API (init, devices, context, stream handle, memory, memset/memcpy) and
 * ncclMemAlloc/ncclMemFree on top of it.
 * Part of the simulated NCCL (test fixture); the model is described in ncclsim.c.
 */
#include "ncclsim_internal.h"

/* ------------------------------------------------------------------------------------------ */
/* CUDA driver API                                                                              */

int cuInitialized = 0;
static int primaryCtxMade = 0;
static char ctxToken[64];
static char streamTokens[64];
static int streamCount = 0;

EXPORT CUresult cuInit(unsigned int flags) {
  (void)flags;
  settings();
  cuInitialized = 1;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuDriverGetVersion(int* v) {
  if (!v) return CUDA_ERROR_INVALID_VALUE;
  *v = 13000;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGetCount(int* n) {
  if (!cuInitialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (!n) return CUDA_ERROR_INVALID_VALUE;
  *n = settings()->gpus;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGet(CUdevice* d, int ordinal) {
  if (!cuInitialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (!d) return CUDA_ERROR_INVALID_VALUE;
  if (ordinal < 0 || ordinal >= settings()->gpus) return CUDA_ERROR_INVALID_DEVICE;
  *d = ordinal;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGetName(char* name, int len, CUdevice d) {
  if (!cuInitialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (!name || len <= 0) return CUDA_ERROR_INVALID_VALUE;
  if (d < 0 || d >= settings()->gpus) return CUDA_ERROR_INVALID_DEVICE;
  snprintf(name, (size_t)len, "Simulated GPU");
  return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceTotalMem_v2(size_t* bytes, CUdevice d) {
  if (!cuInitialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (!bytes) return CUDA_ERROR_INVALID_VALUE;
  if (d < 0 || d >= settings()->gpus) return CUDA_ERROR_INVALID_DEVICE;
  *bytes = (size_t)DEVICE_BYTES;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGetPCIBusId(char* id, int len, CUdevice d) {
  if (!cuInitialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (!id || len <= 0) return CUDA_ERROR_INVALID_VALUE;
  if (d < 0 || d >= settings()->gpus) return CUDA_ERROR_INVALID_DEVICE;
  snprintf(id, (size_t)len, "0000:%02X:00.0", 0x18 + d * 0x10);
  return CUDA_SUCCESS;
}

EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext* ctx, CUdevice d) {
  if (!cuInitialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (!ctx) return CUDA_ERROR_INVALID_VALUE;
  if (d < 0 || d >= settings()->gpus) return CUDA_ERROR_INVALID_DEVICE;
  pthread_mutex_lock(&simLock);
  int first = !primaryCtxMade;
  primaryCtxMade = 1;
  pthread_mutex_unlock(&simLock);
  if (first) sleepMs(jittered(settings()->cuInitMs));
  *ctx = &ctxToken[d % 64];
  return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxSetCurrent(CUcontext ctx) {
  (void)ctx;
  return cuInitialized ? CUDA_SUCCESS : CUDA_ERROR_NOT_INITIALIZED;
}

EXPORT CUresult cuStreamCreate(CUstream* s, unsigned int flags) {
  (void)flags;
  if (!cuInitialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (!s) return CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_lock(&simLock);
  *s = &streamTokens[streamCount++ % 64];
  pthread_mutex_unlock(&simLock);
  return CUDA_SUCCESS;
}

EXPORT CUresult cuMemAlloc_v2(CUdeviceptr* p, size_t bytes) {
  if (!cuInitialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (!p || bytes == 0) return CUDA_ERROR_INVALID_VALUE;
  if (!memCharge((double)bytes)) return CUDA_ERROR_OUT_OF_MEMORY;
  Alloc* a = (Alloc*)calloc(1, sizeof *a);
  if (!a) { memRelease(bytes); return CUDA_ERROR_OUT_OF_MEMORY; }
  pthread_mutex_lock(&simLock);
  a->ptr = nextPtr;
  nextPtr += (bytes + 0xfffffULL) & ~0xfffffULL;
  a->bytes = bytes;
  a->next = allocs;
  allocs = a;
  pthread_mutex_unlock(&simLock);
  *p = a->ptr;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuMemFree_v2(CUdeviceptr p) {
  if (!cuInitialized) return CUDA_ERROR_NOT_INITIALIZED;
  pthread_mutex_lock(&simLock);
  Alloc** link = &allocs;
  while (*link && (*link)->ptr != p) link = &(*link)->next;
  Alloc* a = *link;
  if (a) *link = a->next;
  pthread_mutex_unlock(&simLock);
  if (!a) return CUDA_ERROR_INVALID_VALUE;
  memRelease(a->bytes);
  dataForget((uintptr_t)a->ptr, a->bytes);
  free(a);
  return CUDA_SUCCESS;
}

EXPORT CUresult cuMemsetD8_v2(CUdeviceptr p, unsigned char v, size_t n) {
  if (!cuInitialized) return CUDA_ERROR_NOT_INITIALIZED;
  unsigned int bits = 0x01010101u * v;
  float f;
  memcpy(&f, &bits, sizeof f);
  dataWrite((uintptr_t)p, n, f);
  return CUDA_SUCCESS;
}

EXPORT CUresult cuMemsetD32_v2(CUdeviceptr p, unsigned int v, size_t n) {
  if (!cuInitialized) return CUDA_ERROR_NOT_INITIALIZED;
  float f;
  memcpy(&f, &v, sizeof f);
  dataWrite((uintptr_t)p, n * 4, f);
  return CUDA_SUCCESS;
}

/* Reads the modelled data back (see "Device data"); waits for the stream first, as a copy on the
 * legacy default stream waits for the work of blocking streams. */
EXPORT CUresult cuStreamSynchronize(CUstream s);
EXPORT CUresult cuMemcpyDtoH_v2(void* dst, CUdeviceptr src, size_t bytes) {
  if (!cuInitialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (!dst && bytes) return CUDA_ERROR_INVALID_VALUE;
  CUresult r = cuStreamSynchronize(NULL);
  if (r != CUDA_SUCCESS) return r;
  for (size_t i = 0; i < bytes; i += 4) {
    float f = dataRead((uintptr_t)(src + i));
    memcpy((char*)dst + i, &f, bytes - i < 4 ? bytes - i : 4);
  }
  return CUDA_SUCCESS;
}

EXPORT CUresult cuMemGetInfo_v2(size_t* freeBytes, size_t* totalBytes) {
  if (!cuInitialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (!freeBytes || !totalBytes) return CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_lock(&simLock);
  *freeBytes = (size_t)(DEVICE_BYTES - memUsed);
  pthread_mutex_unlock(&simLock);
  *totalBytes = (size_t)DEVICE_BYTES;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuGetErrorString(CUresult r, const char** s) {
  if (!s) return CUDA_ERROR_INVALID_VALUE;
  switch (r) {
    case CUDA_SUCCESS: *s = "no error"; break;
    case CUDA_ERROR_INVALID_VALUE: *s = "invalid argument"; break;
    case CUDA_ERROR_OUT_OF_MEMORY: *s = "out of memory"; break;
    case CUDA_ERROR_NOT_INITIALIZED: *s = "initialization error"; break;
    case CUDA_ERROR_NO_DEVICE: *s = "no CUDA-capable device is detected"; break;
    case CUDA_ERROR_INVALID_DEVICE: *s = "invalid device ordinal"; break;
    case CUDA_ERROR_ILLEGAL_STATE: *s = "the operation cannot be performed in the present state"; break;
    case CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED: *s = "operation not permitted when stream is capturing"; break;
    default: *s = NULL; return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}


EXPORT ncclResult_t ncclMemAlloc(void** ptr, size_t size) {
  if (!ptr) return ncclInvalidArgument;
  CUdeviceptr p = 0;
  if (!cuInitialized) cuInit(0);
  /* cuMem granularity: the real size is rounded up (2 MiB here). */
  size_t rounded = (size + (2u << 20) - 1) & ~(size_t)((2u << 20) - 1);
  if (cuMemAlloc_v2(&p, rounded) != CUDA_SUCCESS) { setLastError("ncclMemAlloc: out of device memory"); return ncclUnhandledCudaError; }
  pthread_mutex_lock(&simLock);
  for (Alloc* a = allocs; a; a = a->next) if (a->ptr == p) a->cumem = 1;
  pthread_mutex_unlock(&simLock);
  sleepMs(jittered(settings()->memAllocMs));
  *ptr = (void*)(uintptr_t)p;
  return ncclSuccess;
}

EXPORT ncclResult_t ncclMemFree(void* ptr) {
  if (!ptr) return ncclSuccess;
  return cuMemFree_v2((CUdeviceptr)(uintptr_t)ptr) == CUDA_SUCCESS ? ncclSuccess : ncclInvalidArgument;
}
