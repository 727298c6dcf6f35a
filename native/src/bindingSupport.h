// bindingSupport.h: what the files of the N-API surface share (binding.cc registers the functions;
// bindingCore.cc, bindingCatalogue.cc and bindingInFlight.cc define them; bindingSupport.cc holds the
// argument conversions, the result objects and the Promise worker). Everything is in
// commcost::jsapi; the addon is built with -fvisibility=hidden, so none of it is exported.
#pragma once

#include <napi.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "barrier.h"
#include "shmBarrier.h"
#include "commOps.h"
#include "inFlight.h"
#include "libraries.h"
#include "nativeError.h"

namespace commcost {
namespace jsapi {

// ---- errors --------------------------------------------------------------------------------------

// A NativeFailure as a JavaScript Error with code, call, result, libraryError, lastError, where.
Napi::Error toJsError(Napi::Env env, const NativeFailure& f);
// Throws NativeFailure ARG "<fn>: <what>" (where: binding.cc).
[[noreturn]] void argError(const char* fn, const std::string& what);

// ---- argument conversion (each throws ARG naming fn and the argument) -----------------------------

bool isAbsent(const Napi::CallbackInfo& info, size_t i);
double numberArg(const Napi::CallbackInfo& info, size_t i, const char* fn, const char* name);
int intArg(const Napi::CallbackInfo& info, size_t i, const char* fn, const char* name, double lo, double hi);
size_t bytesArg(const Napi::CallbackInfo& info, size_t i, const char* fn, const char* name);
std::optional<uint64_t> genArg(const Napi::CallbackInfo& info, size_t i, const char* fn);
std::optional<ncclConfig_t> configArg(const Napi::CallbackInfo& info, size_t i, const char* fn);
CommRef commArg(const Napi::CallbackInfo& info, size_t i, const char* fn, bool take);
int bufferHandleArg(const Napi::CallbackInfo& info, size_t i, const char* fn);
ncclUniqueId idArg(const Napi::CallbackInfo& info, size_t i, const char* fn);
size_t byteOffsetValue(Napi::Value v, const char* fn, const char* name);

// ---- results -------------------------------------------------------------------------------------

// {ms, releaseNs?, inFlight?} of a Timed (ms: milliseconds; releaseNs: CLOCK_MONOTONIC ns).
Napi::Object timedObject(Napi::Env env, const Timed& t);
Napi::Value handleOrNull(Napi::Env env, int handle);

struct HandleResult {
  Timed t;
  int handle = 0;
};

// ---- Promise and sync wrappers -------------------------------------------------------------------

// A binding that returns a Promise: `prepare` converts arguments on the JS thread (its failures
// reject the Promise) and returns the worker body plus the settle function.
using Prepared = std::pair<std::function<void()>, std::function<Napi::Value(Napi::Env)>>;

Napi::Value promised(const Napi::CallbackInfo& info, const std::function<Prepared()>& prepare);

// Sync bindings: NativeFailure -> thrown JavaScript error.
template <class F>
Napi::Value sync(const Napi::CallbackInfo& info, F&& body) {
  try {
    return body();
  } catch (const NativeFailure& f) {
    throw toJsError(info.Env(), f);
  }
}

// A timed operation whose only result is Timed.
Napi::Value timedPromise(const Napi::CallbackInfo& info, std::function<std::function<Timed()>()> prepare);

// A Promise of Timed plus the fields `extra` adds.
template <class R>
Napi::Value timedWith(const Napi::CallbackInfo& info, std::function<std::function<void(R&)>()> prepare,
                      std::function<void(Napi::Env, Napi::Object&, const R&)> extra) {
  return promised(info, [&]() -> Prepared {
    std::function<void(R&)> op = prepare();
    auto r = std::make_shared<R>();
    return {[op, r] { op(*r); },
            [r, extra](Napi::Env env) -> Napi::Value {
              Napi::Object o = timedObject(env, r->t);
              extra(env, o, *r);
              return o;
            }};
  });
}

// ---- the bindings (registered by binding.cc under their camelCase names) ---------------------------

// bindingCore.cc: load, devices, creation, allreduce, teardown, barrier, clocks.
Napi::Value Load(const Napi::CallbackInfo& info);
Napi::Value DeviceCount(const Napi::CallbackInfo& info);
Napi::Value DeviceInfoBinding(const Napi::CallbackInfo& info);
Napi::Value InitDevice(const Napi::CallbackInfo& info);
Napi::Value GetUniqueId(const Napi::CallbackInfo& info);
Napi::Value CommInitRank(const Napi::CallbackInfo& info);
Napi::Value CommSplit(const Napi::CallbackInfo& info);
Napi::Value AllReduce(const Napi::CallbackInfo& info);
Napi::Value Broadcast(const Napi::CallbackInfo& info);
Napi::Value SendRecv(const Napi::CallbackInfo& info);
Napi::Value CommFinalize(const Napi::CallbackInfo& info);
Napi::Value CommDestroy(const Napi::CallbackInfo& info);
Napi::Value CommAbort(const Napi::CallbackInfo& info);
Napi::Value AbortAll(const Napi::CallbackInfo& info);
Napi::Value MemInfo(const Napi::CallbackInfo& info);
Napi::Value CommCount(const Napi::CallbackInfo& info);
Napi::Value CommUserRank(const Napi::CallbackInfo& info);
Napi::Value BarrierConnect(const Napi::CallbackInfo& info);
Napi::Value BarrierAttachShm(const Napi::CallbackInfo& info);
Napi::Value BarrierWait(const Napi::CallbackInfo& info);
Napi::Value Nop(const Napi::CallbackInfo& info);
Napi::Value MonotonicNs(const Napi::CallbackInfo& info);

// bindingCatalogue.cc: catalogue operations (optional NCCL functions).
Napi::Value MemAlloc(const Napi::CallbackInfo& info);
Napi::Value MemFree(const Napi::CallbackInfo& info);
Napi::Value StreamSynchronize(const Napi::CallbackInfo& info);
Napi::Value CommShrink(const Napi::CallbackInfo& info);
Napi::Value CommGetUniqueId(const Napi::CallbackInfo& info);
Napi::Value CommInitRankScalable(const Napi::CallbackInfo& info);
Napi::Value CommGrow(const Napi::CallbackInfo& info);
Napi::Value CommRevoke(const Napi::CallbackInfo& info);
Napi::Value CommRegister(const Napi::CallbackInfo& info);
Napi::Value CommDeregister(const Napi::CallbackInfo& info);
Napi::Value WindowRegister(const Napi::CallbackInfo& info);
Napi::Value WindowDeregister(const Napi::CallbackInfo& info);
Napi::Value CommSuspend(const Napi::CallbackInfo& info);
Napi::Value CommResume(const Napi::CallbackInfo& info);
Napi::Value CommMemStats(const Napi::CallbackInfo& info);
Napi::Value GraphAllReduce(const Napi::CallbackInfo& info);
Napi::Value CommInitRankAbortable(const Napi::CallbackInfo& info);

// bindingInFlight.cc: the in-flight window and the drop check (inFlight.h).
Napi::Value ArmInFlight(const Napi::CallbackInfo& info);
Napi::Value MemFill(const Napi::CallbackInfo& info);
Napi::Value ReadFloats(const Napi::CallbackInfo& info);

}  // namespace jsapi
}  // namespace commcost
