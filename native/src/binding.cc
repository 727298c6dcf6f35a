// binding.cc: the N-API surface (see native/index.d.ts). It only converts arguments and results;
// blocking work runs on a libuv worker thread (PromiseWorker) and settles a Promise. A
// NativeFailure becomes a JavaScript Error with code, call, result, libraryError, lastError, where.
// Files: bindingSupport.h/.cc (conversions, results, the Promise worker), bindingCore.cc,
// bindingCatalogue.cc, bindingInFlight.cc (the bindings); this file registers them.
#include "bindingSupport.h"

static Napi::Object InitModule(Napi::Env env, Napi::Object exports) {
  using namespace commcost::jsapi;
  exports.Set("load", Napi::Function::New(env, Load, "load"));
  exports.Set("deviceCount", Napi::Function::New(env, DeviceCount, "deviceCount"));
  exports.Set("deviceInfo", Napi::Function::New(env, DeviceInfoBinding, "deviceInfo"));
  exports.Set("initDevice", Napi::Function::New(env, InitDevice, "initDevice"));
  exports.Set("getUniqueId", Napi::Function::New(env, GetUniqueId, "getUniqueId"));
  exports.Set("commInitRank", Napi::Function::New(env, CommInitRank, "commInitRank"));
  exports.Set("commSplit", Napi::Function::New(env, CommSplit, "commSplit"));
  exports.Set("allReduce", Napi::Function::New(env, AllReduce, "allReduce"));
  exports.Set("broadcast", Napi::Function::New(env, Broadcast, "broadcast"));
  exports.Set("sendRecv", Napi::Function::New(env, SendRecv, "sendRecv"));
  exports.Set("commFinalize", Napi::Function::New(env, CommFinalize, "commFinalize"));
  exports.Set("commDestroy", Napi::Function::New(env, CommDestroy, "commDestroy"));
  exports.Set("commAbort", Napi::Function::New(env, CommAbort, "commAbort"));
  exports.Set("abortAll", Napi::Function::New(env, AbortAll, "abortAll"));
  exports.Set("memInfo", Napi::Function::New(env, MemInfo, "memInfo"));
  exports.Set("commCount", Napi::Function::New(env, CommCount, "commCount"));
  exports.Set("commUserRank", Napi::Function::New(env, CommUserRank, "commUserRank"));
  exports.Set("barrierConnect", Napi::Function::New(env, BarrierConnect, "barrierConnect"));
  exports.Set("barrierWait", Napi::Function::New(env, BarrierWait, "barrierWait"));
  exports.Set("barrierAttachShm", Napi::Function::New(env, BarrierAttachShm, "barrierAttachShm"));
  exports.Set("nop", Napi::Function::New(env, Nop, "nop"));
  exports.Set("monotonicNs", Napi::Function::New(env, MonotonicNs, "monotonicNs"));
  exports.Set("memAlloc", Napi::Function::New(env, MemAlloc, "memAlloc"));
  exports.Set("memFree", Napi::Function::New(env, MemFree, "memFree"));
  exports.Set("streamSynchronize", Napi::Function::New(env, StreamSynchronize, "streamSynchronize"));
  exports.Set("commShrink", Napi::Function::New(env, CommShrink, "commShrink"));
  exports.Set("commGetUniqueId", Napi::Function::New(env, CommGetUniqueId, "commGetUniqueId"));
  exports.Set("commInitRankScalable", Napi::Function::New(env, CommInitRankScalable, "commInitRankScalable"));
  exports.Set("commGrow", Napi::Function::New(env, CommGrow, "commGrow"));
  exports.Set("commRevoke", Napi::Function::New(env, CommRevoke, "commRevoke"));
  exports.Set("commRegister", Napi::Function::New(env, CommRegister, "commRegister"));
  exports.Set("commDeregister", Napi::Function::New(env, CommDeregister, "commDeregister"));
  exports.Set("windowRegister", Napi::Function::New(env, WindowRegister, "windowRegister"));
  exports.Set("windowDeregister", Napi::Function::New(env, WindowDeregister, "windowDeregister"));
  exports.Set("commSuspend", Napi::Function::New(env, CommSuspend, "commSuspend"));
  exports.Set("commResume", Napi::Function::New(env, CommResume, "commResume"));
  exports.Set("commMemStats", Napi::Function::New(env, CommMemStats, "commMemStats"));
  exports.Set("graphAllReduce", Napi::Function::New(env, GraphAllReduce, "graphAllReduce"));
  exports.Set("commInitRankAbortable", Napi::Function::New(env, CommInitRankAbortable, "commInitRankAbortable"));
  exports.Set("armInFlight", Napi::Function::New(env, ArmInFlight, "armInFlight"));
  exports.Set("memFill", Napi::Function::New(env, MemFill, "memFill"));
  exports.Set("readFloats", Napi::Function::New(env, ReadFloats, "readFloats"));
  return exports;
}

NODE_API_MODULE(commcost, InitModule)
