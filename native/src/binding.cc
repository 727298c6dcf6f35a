// binding.cc: the N-API surface (see native/index.d.ts). It only converts arguments and results;
// blocking work runs on a libuv worker thread (PromiseWorker) and settles a Promise. A
// NativeFailure becomes a JavaScript Error with code, call, result, libraryError, lastError, where.
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
namespace {

Napi::Error toJsError(Napi::Env env, const NativeFailure& f) {
  std::string message = f.message + " (" + f.where + ")";
  Napi::Error err = Napi::Error::New(env, message);
  Napi::Object o = err.Value();
  o.Set("code", f.code);
  o.Set("call", f.call);
  o.Set("where", f.where);
  if (f.hasResult) o.Set("result", f.result);
  if (!f.libraryError.empty()) o.Set("libraryError", f.libraryError);
  if (f.hasLastError) o.Set("lastError", f.lastError);
  return err;
}

[[noreturn]] void argError(const char* fn, const std::string& what) {
  NativeFailure f;
  f.code = "ARG";
  f.call = fn;
  f.message = std::string(fn) + ": " + what;
  f.where = "binding.cc";
  throw f;
}

// ---- argument conversion -------------------------------------------------------------------------

bool isAbsent(const Napi::CallbackInfo& info, size_t i) {
  return info.Length() <= i || info[i].IsUndefined() || info[i].IsNull();
}

double numberArg(const Napi::CallbackInfo& info, size_t i, const char* fn, const char* name) {
  if (info.Length() <= i || !info[i].IsNumber()) argError(fn, std::string(name) + " must be a number");
  double v = info[i].As<Napi::Number>().DoubleValue();
  if (!std::isfinite(v) || std::floor(v) != v) argError(fn, std::string(name) + " must be an integer");
  return v;
}

int intArg(const Napi::CallbackInfo& info, size_t i, const char* fn, const char* name, double lo, double hi) {
  double v = numberArg(info, i, fn, name);
  if (v < lo || v > hi) argError(fn, std::string(name) + " out of range");
  return static_cast<int>(v);
}

size_t bytesArg(const Napi::CallbackInfo& info, size_t i, const char* fn, const char* name) {
  double v = numberArg(info, i, fn, name);
  if (v < 0 || v > 9007199254740991.0) argError(fn, std::string(name) + " must be a non-negative safe integer");
  return static_cast<size_t>(v);
}

std::optional<uint64_t> genArg(const Napi::CallbackInfo& info, size_t i, const char* fn) {
  if (isAbsent(info, i)) return std::nullopt;
  double v = numberArg(info, i, fn, "gen");
  if (v <= 0 || v > 9007199254740991.0) argError(fn, "gen must be a positive safe integer");
  return static_cast<uint64_t>(v);
}

std::optional<ncclConfig_t> configArg(const Napi::CallbackInfo& info, size_t i, const char* fn) {
  if (isAbsent(info, i)) return std::nullopt;
  if (!info[i].IsObject()) argError(fn, "config must be an object {blocking?, splitShare?}");
  Napi::Object o = info[i].As<Napi::Object>();
  CommConfigArg arg;
  auto field = [&](const char* name, std::optional<int>* out) {
    Napi::Value v = o.Get(name);
    if (v.IsUndefined() || v.IsNull()) return;
    if (!v.IsNumber()) argError(fn, std::string("config.") + name + " must be 0 or 1");
    *out = v.As<Napi::Number>().Int32Value();
  };
  field("blocking", &arg.blocking);
  field("splitShare", &arg.splitShare);
  return makeConfig(arg);
}

CommRef commArg(const Napi::CallbackInfo& info, size_t i, const char* fn, bool take) {
  int handle = intArg(info, i, fn, "comm", 1, 2147483647.0);
  return take ? takeComm(handle) : findComm(handle);
}

// ---- results -------------------------------------------------------------------------------------

Napi::Object timedObject(Napi::Env env, const Timed& t) {
  Napi::Object o = Napi::Object::New(env);
  o.Set("ms", t.ms);
  if (t.releaseNs) o.Set("releaseNs", static_cast<double>(*t.releaseNs));
  if (t.inFlight) {
    Napi::Object w = Napi::Object::New(env);
    w.Set("atStart", t.inFlight->atStart);
    w.Set("enqueued", t.inFlight->enqueued);
    w.Set("enqueueMs", t.inFlight->enqueueMs);
    w.Set("callMs", t.inFlight->callMs);
    o.Set("inFlight", w);
  }
  return o;
}

// ---- worker --------------------------------------------------------------------------------------

// Runs `work` on a libuv worker thread; `settle` builds the resolved value on the JS thread.
class PromiseWorker : public Napi::AsyncWorker {
 public:
  PromiseWorker(Napi::Env env, std::function<void()> work, std::function<Napi::Value(Napi::Env)> settle)
      : Napi::AsyncWorker(env, "commcost"),
        deferred_(Napi::Promise::Deferred::New(env)),
        work_(std::move(work)),
        settle_(std::move(settle)) {}

  Napi::Promise Promise() { return deferred_.Promise(); }

  void Execute() override {
    try {
      work_();
    } catch (const NativeFailure& f) {
      failure_ = f;
    } catch (const std::exception& e) {
      NativeFailure f;
      f.code = "NCCL";
      f.call = "worker";
      f.message = std::string("unexpected native exception: ") + e.what();
      f.where = "binding.cc";
      failure_ = f;
    }
  }

  void OnOK() override {
    Napi::Env env = Env();
    if (failure_) {
      deferred_.Reject(toJsError(env, *failure_).Value());
      return;
    }
    try {
      deferred_.Resolve(settle_(env));
    } catch (const Napi::Error& e) {
      deferred_.Reject(e.Value());
    }
  }

  void OnError(const Napi::Error& e) override { deferred_.Reject(e.Value()); }

 private:
  Napi::Promise::Deferred deferred_;
  std::function<void()> work_;
  std::function<Napi::Value(Napi::Env)> settle_;
  std::optional<NativeFailure> failure_;
};

// A binding that returns a Promise: `prepare` converts arguments on the JS thread (its failures
// reject the Promise) and returns the worker body plus the settle function.
using Prepared = std::pair<std::function<void()>, std::function<Napi::Value(Napi::Env)>>;

Napi::Value promised(const Napi::CallbackInfo& info, const std::function<Prepared()>& prepare) {
  Napi::Env env = info.Env();
  Prepared p;
  try {
    p = prepare();
  } catch (const NativeFailure& f) {
    auto d = Napi::Promise::Deferred::New(env);
    d.Reject(toJsError(env, f).Value());
    return d.Promise();
  }
  auto* worker = new PromiseWorker(env, std::move(p.first), std::move(p.second));
  Napi::Promise promise = worker->Promise();
  worker->Queue();
  return promise;
}

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
Napi::Value timedPromise(const Napi::CallbackInfo& info, std::function<std::function<Timed()>()> prepare) {
  return promised(info, [&]() -> Prepared {
    std::function<Timed()> op = prepare();
    auto result = std::make_shared<Timed>();
    return {[op, result] { *result = op(); }, [result](Napi::Env env) -> Napi::Value { return timedObject(env, *result); }};
  });
}

// ---- bindings ------------------------------------------------------------------------------------

Napi::Value Load(const Napi::CallbackInfo& info) {
  return sync(info, [&]() -> Napi::Value {
    Napi::Env env = info.Env();
    if (info.Length() < 1 || !info[0].IsObject()) argError("load", "expected {ncclPath, cudaPath?}");
    Napi::Object opts = info[0].As<Napi::Object>();
    Napi::Value np = opts.Get("ncclPath");
    Napi::Value cp = opts.Get("cudaPath");
    if (!np.IsString() || np.As<Napi::String>().Utf8Value().empty()) argError("load", "ncclPath must be a non-empty string");
    std::string cudaPath = "libcuda.so.1";
    if (!cp.IsUndefined() && !cp.IsNull()) {
      if (!cp.IsString()) argError("load", "cudaPath must be a string");
      cudaPath = cp.As<Napi::String>().Utf8Value();
    }
    const LoadInfo& li = loadLibraries(np.As<Napi::String>().Utf8Value(), cudaPath);
    Napi::Object o = Napi::Object::New(env);
    o.Set("ncclPath", li.ncclPath);
    o.Set("cudaPath", li.cudaPath);
    o.Set("ncclVersionCode", li.ncclVersionCode);
    o.Set("ncclVersion", li.ncclVersion);
    o.Set("driverVersion", li.driverVersion);
    o.Set("simulated", li.simulated);
    o.Set("cudaLoadMs", li.cudaLoadMs);
    o.Set("ncclLoadMs", li.ncclLoadMs);
    Napi::Object symbols = Napi::Object::New(env);
    for (const auto& s : li.symbols) symbols.Set(s.first, s.second);
    o.Set("symbols", symbols);
    return o;
  });
}

Napi::Value DeviceCount(const Napi::CallbackInfo& info) {
  return sync(info, [&]() -> Napi::Value { return Napi::Number::New(info.Env(), deviceCount()); });
}

Napi::Value DeviceInfoBinding(const Napi::CallbackInfo& info) {
  return sync(info, [&]() -> Napi::Value {
    int ordinal = intArg(info, 0, "deviceInfo", "ordinal", 0, 1 << 20);
    DeviceInfo d = deviceInfo(ordinal);
    Napi::Object o = Napi::Object::New(info.Env());
    o.Set("ordinal", d.ordinal);
    o.Set("name", d.name);
    o.Set("totalBytes", static_cast<double>(d.totalBytes));
    o.Set("pciBusId", d.pciBusId);
    return o;
  });
}

Napi::Value InitDevice(const Napi::CallbackInfo& info) {
  return promised(info, [&]() -> Prepared {
    cuda();
    int ordinal = intArg(info, 0, "initDevice", "ordinal", 0, 1 << 20);
    size_t bytes = bytesArg(info, 1, "initDevice", "bufferBytes");
    if (bytes == 0) argError("initDevice", "bufferBytes must be > 0");
    auto gen = genArg(info, 2, "initDevice");
    claimDeviceStart();
    struct R { Timed t; DeviceStartParts parts; };
    auto r = std::make_shared<R>();
    return {[r, ordinal, bytes, gen] { r->t = initDevice(ordinal, bytes, gen, &r->parts); },
            [r](Napi::Env env) -> Napi::Value {
              Napi::Object o = timedObject(env, r->t);
              o.Set("cuInitMs", r->parts.cuInitMs);
              o.Set("contextMs", r->parts.contextMs);
              return o;
            }};
  });
}

Napi::Value GetUniqueId(const Napi::CallbackInfo& info) {
  return promised(info, [&]() -> Prepared {
    nccl();
    auto gen = genArg(info, 0, "getUniqueId");
    struct R { Timed t; ncclUniqueId id; };
    auto r = std::make_shared<R>();
    return {[r, gen] { r->t = getUniqueId(&r->id, gen); },
            [r](Napi::Env env) -> Napi::Value {
              Napi::Object o = timedObject(env, r->t);
              o.Set("id", Napi::Buffer<char>::Copy(env, r->id.internal, sizeof r->id.internal));
              return o;
            }};
  });
}

Napi::Value CommInitRank(const Napi::CallbackInfo& info) {
  return promised(info, [&]() -> Prepared {
    nccl();
    int nranks = intArg(info, 0, "commInitRank", "nranks", 1, 1 << 24);
    if (info.Length() < 2 || !info[1].IsBuffer()) argError("commInitRank", "id must be a Buffer of 128 bytes");
    auto buf = info[1].As<Napi::Buffer<char>>();
    if (buf.Length() != sizeof(ncclUniqueId)) argError("commInitRank", "id must be a Buffer of 128 bytes");
    ncclUniqueId id;
    std::memcpy(id.internal, buf.Data(), sizeof id.internal);
    int rank = intArg(info, 2, "commInitRank", "rank", 0, nranks - 1);
    auto config = configArg(info, 3, "commInitRank");
    auto gen = genArg(info, 4, "commInitRank");
    struct R { Timed t; int handle = 0; };
    auto r = std::make_shared<R>();
    return {[=] { r->t = commInitRank(nranks, id, rank, config, gen, &r->handle); },
            [r](Napi::Env env) -> Napi::Value {
              Napi::Object o = timedObject(env, r->t);
              o.Set("comm", r->handle);
              return o;
            }};
  });
}

Napi::Value CommSplit(const Napi::CallbackInfo& info) {
  return promised(info, [&]() -> Prepared {
    nccl();
    CommRef parent = commArg(info, 0, "commSplit", false);
    int color = intArg(info, 1, "commSplit", "color", -1, 2147483647.0);
    int key = intArg(info, 2, "commSplit", "key", -2147483648.0, 2147483647.0);
    auto config = configArg(info, 3, "commSplit");
    auto gen = genArg(info, 4, "commSplit");
    struct R { Timed t; int handle = 0; };
    auto r = std::make_shared<R>();
    return {[=] { r->t = commSplit(parent, color, key, config, gen, &r->handle); },
            [r](Napi::Env env) -> Napi::Value {
              Napi::Object o = timedObject(env, r->t);
              if (r->handle) o.Set("comm", r->handle);
              else o.Set("comm", env.Null());
              return o;
            }};
  });
}

Napi::Value AllReduce(const Napi::CallbackInfo& info) {
  return timedPromise(info, [&]() -> std::function<Timed()> {
    nccl();
    CommRef ref = commArg(info, 0, "allReduce", false);
    size_t bytes = bytesArg(info, 1, "allReduce", "bytes");
    auto gen = genArg(info, 2, "allReduce");
    int bufferHandle = 0;
    bool sync = true;
    if (!isAbsent(info, 3)) {
      if (!info[3].IsObject()) argError("allReduce", "opts must be an object {buffer?, sync?}");
      Napi::Object o = info[3].As<Napi::Object>();
      Napi::Value b = o.Get("buffer");
      if (!b.IsUndefined() && !b.IsNull()) {
        if (!b.IsNumber()) argError("allReduce", "opts.buffer must be a buffer handle");
        double v = b.As<Napi::Number>().DoubleValue();
        if (!std::isfinite(v) || std::floor(v) != v || v < 0 || v > 2147483647.0) argError("allReduce", "opts.buffer must be a buffer handle");
        bufferHandle = static_cast<int>(v);
      }
      Napi::Value sy = o.Get("sync");
      if (!sy.IsUndefined() && !sy.IsNull()) {
        if (!sy.IsBoolean()) argError("allReduce", "opts.sync must be a boolean");
        sync = sy.As<Napi::Boolean>().Value();
      }
    }
    BufferInfo buf = findBuffer(bufferHandle);
    return [=] { return allReduce(ref, bytes, gen, buf, sync); };
  });
}

Napi::Value CommFinalize(const Napi::CallbackInfo& info) {
  return timedPromise(info, [&]() -> std::function<Timed()> {
    nccl();
    CommRef ref = commArg(info, 0, "commFinalize", false);
    auto gen = genArg(info, 1, "commFinalize");
    return [=] { return commFinalize(ref, gen); };
  });
}

Napi::Value CommDestroy(const Napi::CallbackInfo& info) {
  return timedPromise(info, [&]() -> std::function<Timed()> {
    nccl();
    auto gen = genArg(info, 1, "commDestroy");
    CommRef ref = commArg(info, 0, "commDestroy", true);
    return [=] { return commDestroy(ref, gen); };
  });
}

Napi::Value CommAbort(const Napi::CallbackInfo& info) {
  return timedPromise(info, [&]() -> std::function<Timed()> {
    nccl();
    auto gen = genArg(info, 1, "commAbort");
    CommRef ref = commArg(info, 0, "commAbort", true);
    return [=] { return commAbort(ref, gen); };
  });
}

Napi::Value AbortAll(const Napi::CallbackInfo& info) {
  return sync(info, [&]() -> Napi::Value {
    if (!loadedNccl()) return Napi::Number::New(info.Env(), 0);
    return Napi::Number::New(info.Env(), abortAll());
  });
}

Napi::Value MemInfo(const Napi::CallbackInfo& info) {
  return sync(info, [&]() -> Napi::Value {
    size_t freeBytes = 0, totalBytes = 0;
    memInfo(&freeBytes, &totalBytes);
    Napi::Object o = Napi::Object::New(info.Env());
    o.Set("freeBytes", static_cast<double>(freeBytes));
    o.Set("totalBytes", static_cast<double>(totalBytes));
    return o;
  });
}

Napi::Value CommCount(const Napi::CallbackInfo& info) {
  return sync(info, [&]() -> Napi::Value {
    nccl();
    return Napi::Number::New(info.Env(), commCount(commArg(info, 0, "commCount", false)));
  });
}

Napi::Value CommUserRank(const Napi::CallbackInfo& info) {
  return sync(info, [&]() -> Napi::Value {
    nccl();
    return Napi::Number::New(info.Env(), commUserRank(commArg(info, 0, "commUserRank", false)));
  });
}

Napi::Value BarrierConnect(const Napi::CallbackInfo& info) {
  return sync(info, [&]() -> Napi::Value {
    if (info.Length() < 1 || !info[0].IsString()) argError("barrierConnect", "host must be a string");
    int port = intArg(info, 1, "barrierConnect", "port", 1, 65535);
    int rank = intArg(info, 2, "barrierConnect", "rank", 0, 2147483647.0);
    if (info.Length() < 4 || !info[3].IsString()) argError("barrierConnect", "token must be a string (the session's secret)");
    barrierConnect(info[0].As<Napi::String>().Utf8Value(), port, static_cast<uint32_t>(rank), info[3].As<Napi::String>().Utf8Value());
    return info.Env().Undefined();
  });
}

Napi::Value BarrierAttachShm(const Napi::CallbackInfo& info) {
  return sync(info, [&]() -> Napi::Value {
    if (info.Length() < 1 || !info[0].IsString()) argError("barrierAttachShm", "path must be a string");
    int world = intArg(info, 1, "barrierAttachShm", "worldSize", 1, 2147483647.0);
    shmBarrierAttach(info[0].As<Napi::String>().Utf8Value(), static_cast<uint32_t>(world));
    return Napi::Number::New(info.Env(), static_cast<double>(shmBarrierSpinNs()) / 1000.0);
  });
}

Napi::Value BarrierWait(const Napi::CallbackInfo& info) {
  return timedPromise(info, [&]() -> std::function<Timed()> {
    auto gen = genArg(info, 0, "barrierWait");
    if (!gen) argError("barrierWait", "gen must be a positive integer");
    return [=] {
      Timed t = barrierOnly(gen);
      t.ms = 0;  // no library call
      return t;
    };
  });
}

Napi::Value Nop(const Napi::CallbackInfo& info) {
  return timedPromise(info, [&]() -> std::function<Timed()> {
    auto gen = genArg(info, 0, "nop");
    return [=] { return barrierOnly(gen); };
  });
}

Napi::Value MonotonicNs(const Napi::CallbackInfo& info) {
  return Napi::Number::New(info.Env(), static_cast<double>(monotonicNs()));
}

// ---- catalogue operations (optional NCCL functions) -----------------------------------------------

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

struct HandleResult {
  Timed t;
  int handle = 0;
};

Napi::Value handleOrNull(Napi::Env env, int handle) {
  return handle ? Napi::Value(Napi::Number::New(env, handle)) : env.Null();
}

int bufferHandleArg(const Napi::CallbackInfo& info, size_t i, const char* fn) {
  return intArg(info, i, fn, "buffer", 0, 2147483647.0);
}

ncclUniqueId idArg(const Napi::CallbackInfo& info, size_t i, const char* fn) {
  if (info.Length() <= i || !info[i].IsBuffer()) argError(fn, "id must be a Buffer of 128 bytes");
  auto buf = info[i].As<Napi::Buffer<char>>();
  if (buf.Length() != sizeof(ncclUniqueId)) argError(fn, "id must be a Buffer of 128 bytes");
  ncclUniqueId id;
  std::memcpy(id.internal, buf.Data(), sizeof id.internal);
  return id;
}

Napi::Value MemAlloc(const Napi::CallbackInfo& info) {
  return timedWith<HandleResult>(
      info,
      [&]() -> std::function<void(HandleResult&)> {
        nccl();
        size_t bytes = bytesArg(info, 0, "memAlloc", "bytes");
        if (bytes == 0) argError("memAlloc", "bytes must be > 0");
        if (info.Length() < 2 || !info[1].IsString()) argError("memAlloc", "kind must be 'cuda' or 'nccl'");
        std::string kind = info[1].As<Napi::String>().Utf8Value();
        if (kind != "cuda" && kind != "nccl") argError("memAlloc", "kind must be 'cuda' or 'nccl'");
        bool ncclMem = kind == "nccl";
        if (ncclMem) {
          COMMCOST_REQUIRE_NCCL(ncclMemAlloc, kMemAllocSince);
          COMMCOST_REQUIRE_NCCL(ncclMemFree, kMemAllocSince);
        }
        return [=](HandleResult& r) { r.t = memAlloc(bytes, ncclMem, &r.handle); };
      },
      [](Napi::Env, Napi::Object& o, const HandleResult& r) { o.Set("buffer", r.handle); });
}

Napi::Value MemFree(const Napi::CallbackInfo& info) {
  return timedPromise(info, [&]() -> std::function<Timed()> {
    nccl();
    BufferInfo b = takeBuffer(bufferHandleArg(info, 0, "memFree"));
    return [=] { return memFree(b); };
  });
}

Napi::Value StreamSynchronize(const Napi::CallbackInfo& info) {
  return timedPromise(info, [&]() -> std::function<Timed()> {
    cuda();
    auto gen = genArg(info, 0, "streamSynchronize");
    return [=] { return streamSynchronize(gen); };
  });
}

Napi::Value CommShrink(const Napi::CallbackInfo& info) {
  return timedWith<HandleResult>(
      info,
      [&]() -> std::function<void(HandleResult&)> {
        nccl();
        COMMCOST_REQUIRE_NCCL(ncclCommShrink, kShrinkSince);
        CommRef parent = commArg(info, 0, "commShrink", false);
        if (info.Length() < 2 || !info[1].IsArray()) argError("commShrink", "excludeRanks must be an array of ranks");
        Napi::Array arr = info[1].As<Napi::Array>();
        std::vector<int> exclude;
        for (uint32_t k = 0; k < arr.Length(); k++) {
          Napi::Value v = arr.Get(k);
          if (!v.IsNumber()) argError("commShrink", "excludeRanks must be an array of ranks");
          double d = v.As<Napi::Number>().DoubleValue();
          if (!std::isfinite(d) || std::floor(d) != d || d < 0 || d > 2147483647.0) argError("commShrink", "excludeRanks must hold ranks >= 0");
          exclude.push_back(static_cast<int>(d));
        }
        int flags = intArg(info, 2, "commShrink", "flags", 0, 1);
        auto config = configArg(info, 3, "commShrink");
        auto gen = genArg(info, 4, "commShrink");
        return [=](HandleResult& r) { r.t = commShrink(parent, exclude, flags, config, gen, &r.handle); };
      },
      [](Napi::Env env, Napi::Object& o, const HandleResult& r) { o.Set("comm", handleOrNull(env, r.handle)); });
}

Napi::Value CommGetUniqueId(const Napi::CallbackInfo& info) {
  struct R {
    Timed t;
    ncclUniqueId id;
  };
  return timedWith<R>(
      info,
      [&]() -> std::function<void(R&)> {
        nccl();
        COMMCOST_REQUIRE_NCCL(ncclCommGetUniqueId, kGrowSince);
        CommRef ref = commArg(info, 0, "commGetUniqueId", false);
        auto gen = genArg(info, 1, "commGetUniqueId");
        return [=](R& r) { r.t = commGetUniqueId(ref, &r.id, gen); };
      },
      [](Napi::Env env, Napi::Object& o, const R& r) {
        o.Set("id", Napi::Buffer<char>::Copy(env, r.id.internal, sizeof r.id.internal));
      });
}

Napi::Value CommGrow(const Napi::CallbackInfo& info) {
  return timedWith<HandleResult>(
      info,
      [&]() -> std::function<void(HandleResult&)> {
        nccl();
        COMMCOST_REQUIRE_NCCL(ncclCommGrow, kGrowSince);
        CommRef parent = isAbsent(info, 0) ? CommRef() : commArg(info, 0, "commGrow", false);
        int nranks = intArg(info, 1, "commGrow", "nranks", 1, 1 << 24);
        std::optional<ncclUniqueId> id;
        if (!isAbsent(info, 2)) id = idArg(info, 2, "commGrow");
        int rank = intArg(info, 3, "commGrow", "rank", -1, nranks - 1);
        if (parent) {
          if (rank != -1) argError("commGrow", "an existing rank (comm given) passes rank -1");
        } else {
          if (rank < 0) argError("commGrow", "a new rank (comm null) passes its rank in the grown communicator");
          if (!id) argError("commGrow", "a new rank (comm null) needs the id from commGetUniqueId");
        }
        auto config = configArg(info, 4, "commGrow");
        auto gen = genArg(info, 5, "commGrow");
        return [=](HandleResult& r) { r.t = commGrow(parent, nranks, id, rank, config, gen, &r.handle); };
      },
      [](Napi::Env, Napi::Object& o, const HandleResult& r) { o.Set("comm", r.handle); });
}

Napi::Value CommRevoke(const Napi::CallbackInfo& info) {
  struct R {
    Timed t;
    double callMs = 0;
  };
  return timedWith<R>(
      info,
      [&]() -> std::function<void(R&)> {
        nccl();
        COMMCOST_REQUIRE_NCCL(ncclCommRevoke, kRevokeSince);
        CommRef ref = commArg(info, 0, "commRevoke", false);
        auto gen = genArg(info, 1, "commRevoke");
        return [=](R& r) { r.t = commRevoke(ref, gen, &r.callMs); };
      },
      [](Napi::Env, Napi::Object& o, const R& r) { o.Set("callMs", r.callMs); });
}

Napi::Value CommRegister(const Napi::CallbackInfo& info) {
  return timedWith<HandleResult>(
      info,
      [&]() -> std::function<void(HandleResult&)> {
        nccl();
        COMMCOST_REQUIRE_NCCL(ncclCommRegister, kRegisterSince);
        CommRef ref = commArg(info, 0, "commRegister", false);
        BufferInfo buf = findBuffer(bufferHandleArg(info, 1, "commRegister"));
        size_t bytes = bytesArg(info, 2, "commRegister", "bytes");
        auto gen = genArg(info, 3, "commRegister");
        return [=](HandleResult& r) { r.t = commRegister(ref, buf, bytes, gen, &r.handle); };
      },
      [](Napi::Env, Napi::Object& o, const HandleResult& r) { o.Set("handle", r.handle); });
}

Napi::Value CommDeregister(const Napi::CallbackInfo& info) {
  return timedPromise(info, [&]() -> std::function<Timed()> {
    nccl();
    COMMCOST_REQUIRE_NCCL(ncclCommDeregister, kRegisterSince);
    CommRef ref = commArg(info, 0, "commDeregister", false);
    int handle = intArg(info, 1, "commDeregister", "handle", 1, 2147483647.0);
    auto gen = genArg(info, 2, "commDeregister");
    void* reg = takeRegistration(ref, handle);
    return [=] { return commDeregister(ref, reg, gen); };
  });
}

Napi::Value WindowRegister(const Napi::CallbackInfo& info) {
  return timedWith<HandleResult>(
      info,
      [&]() -> std::function<void(HandleResult&)> {
        nccl();
        COMMCOST_REQUIRE_NCCL(ncclCommWindowRegister, kWindowSince);
        CommRef ref = commArg(info, 0, "windowRegister", false);
        BufferInfo buf = findBuffer(bufferHandleArg(info, 1, "windowRegister"));
        size_t bytes = bytesArg(info, 2, "windowRegister", "bytes");
        int flags = intArg(info, 3, "windowRegister", "flags", 0, 2147483647.0);
        auto gen = genArg(info, 4, "windowRegister");
        return [=](HandleResult& r) { r.t = windowRegister(ref, buf, bytes, flags, gen, &r.handle); };
      },
      [](Napi::Env env, Napi::Object& o, const HandleResult& r) { o.Set("window", handleOrNull(env, r.handle)); });
}

Napi::Value WindowDeregister(const Napi::CallbackInfo& info) {
  return timedPromise(info, [&]() -> std::function<Timed()> {
    nccl();
    COMMCOST_REQUIRE_NCCL(ncclCommWindowDeregister, kWindowSince);
    CommRef ref = commArg(info, 0, "windowDeregister", false);
    int handle = intArg(info, 1, "windowDeregister", "window", 1, 2147483647.0);
    auto gen = genArg(info, 2, "windowDeregister");
    ncclWindow_t win = takeWindow(ref, handle);
    return [=] { return windowDeregister(ref, win, gen); };
  });
}

Napi::Value CommSuspend(const Napi::CallbackInfo& info) {
  return timedPromise(info, [&]() -> std::function<Timed()> {
    nccl();
    COMMCOST_REQUIRE_NCCL(ncclCommSuspend, kSuspendSince);
    CommRef ref = commArg(info, 0, "commSuspend", false);
    int flags = intArg(info, 1, "commSuspend", "flags", 0, 2147483647.0);
    auto gen = genArg(info, 2, "commSuspend");
    return [=] { return commSuspend(ref, flags, gen); };
  });
}

Napi::Value CommResume(const Napi::CallbackInfo& info) {
  return timedPromise(info, [&]() -> std::function<Timed()> {
    nccl();
    COMMCOST_REQUIRE_NCCL(ncclCommResume, kSuspendSince);
    CommRef ref = commArg(info, 0, "commResume", false);
    auto gen = genArg(info, 1, "commResume");
    return [=] { return commResume(ref, gen); };
  });
}

Napi::Value CommMemStats(const Napi::CallbackInfo& info) {
  return sync(info, [&]() -> Napi::Value {
    nccl();
    std::optional<MemStats> m = commMemStats(commArg(info, 0, "commMemStats", false));
    if (!m) return info.Env().Undefined();
    Napi::Object o = Napi::Object::New(info.Env());
    o.Set("suspendableBytes", static_cast<double>(m->suspendable));
    o.Set("persistentBytes", static_cast<double>(m->persistent));
    o.Set("totalBytes", static_cast<double>(m->total));
    o.Set("suspended", m->suspended != 0);
    return o;
  });
}

Napi::Value GraphAllReduce(const Napi::CallbackInfo& info) {
  struct R {
    Timed t;
    GraphTimes parts;
  };
  return timedWith<R>(
      info,
      [&]() -> std::function<void(R&)> {
        nccl();
        COMMCOST_REQUIRE_CUDA(cuStreamBeginCapture_v2);
        COMMCOST_REQUIRE_CUDA(cuStreamEndCapture);
        COMMCOST_REQUIRE_CUDA(cuGraphInstantiateWithFlags);
        COMMCOST_REQUIRE_CUDA(cuGraphLaunch);
        COMMCOST_REQUIRE_CUDA(cuGraphExecDestroy);
        COMMCOST_REQUIRE_CUDA(cuGraphDestroy);
        CommRef ref = commArg(info, 0, "graphAllReduce", false);
        size_t bytes = bytesArg(info, 1, "graphAllReduce", "bytes");
        auto gen = genArg(info, 2, "graphAllReduce");
        return [=](R& r) { r.t = graphAllReduce(ref, bytes, gen, &r.parts); };
      },
      [](Napi::Env, Napi::Object& o, const R& r) {
        o.Set("captureMs", r.parts.captureMs);
        o.Set("instantiateMs", r.parts.instantiateMs);
        o.Set("launchMs", r.parts.launchMs);
      });
}

Napi::Value CommInitRankAbortable(const Napi::CallbackInfo& info) {
  struct R {
    Timed t;
    int handle = 0;
    bool aborted = false;
    double abortMs = 0;
  };
  return timedWith<R>(
      info,
      [&]() -> std::function<void(R&)> {
        nccl();
        int nranks = intArg(info, 0, "commInitRankAbortable", "nranks", 1, 1 << 24);
        ncclUniqueId id = idArg(info, 1, "commInitRankAbortable");
        int rank = intArg(info, 2, "commInitRankAbortable", "rank", 0, nranks - 1);
        if (info.Length() < 4 || !info[3].IsNumber()) argError("commInitRankAbortable", "deadlineMs must be a number");
        double deadlineMs = info[3].As<Napi::Number>().DoubleValue();
        if (!std::isfinite(deadlineMs) || deadlineMs < 0) argError("commInitRankAbortable", "deadlineMs must be >= 0");
        auto gen = genArg(info, 4, "commInitRankAbortable");
        return [=](R& r) { r.t = commInitRankAbortable(nranks, id, rank, deadlineMs, gen, &r.handle, &r.aborted, &r.abortMs); };
      },
      [](Napi::Env env, Napi::Object& o, const R& r) {
        o.Set("comm", handleOrNull(env, r.handle));
        o.Set("aborted", r.aborted);
        o.Set("abortMs", r.abortMs);
      });
}

// ---- in-flight window and drop check (inFlight.h) ----------------------------------------------

size_t byteOffsetValue(Napi::Value v, const char* fn, const char* name) {
  if (!v.IsNumber()) argError(fn, std::string(name) + " must be a number");
  double d = v.As<Napi::Number>().DoubleValue();
  if (!std::isfinite(d) || std::floor(d) != d || d < 0 || d > 9007199254740991.0) argError(fn, std::string(name) + " must be a non-negative safe integer");
  return static_cast<size_t>(d);
}

Napi::Value ArmInFlight(const Napi::CallbackInfo& info) {
  return sync(info, [&]() -> Napi::Value {
    nccl();
    const char* fn = "armInFlight";
    if (info.Length() < 1 || !info[0].IsArray()) argError(fn, "ops must be an array of {comm, bytes, buffer?, recvBuffer?, recvOffset?}");
    Napi::Array arr = info[0].As<Napi::Array>();
    InFlightPlan plan;
    for (uint32_t k = 0; k < arr.Length(); k++) {
      Napi::Value v = arr.Get(k);
      if (!v.IsObject()) argError(fn, "ops[" + std::to_string(k) + "] must be an object {comm, bytes, buffer?, recvBuffer?, recvOffset?}");
      Napi::Object o = v.As<Napi::Object>();
      InFlightOp op;
      Napi::Value comm = o.Get("comm");
      if (!comm.IsNumber()) argError(fn, "ops[" + std::to_string(k) + "].comm must be a communicator handle");
      op.comm = findComm(static_cast<int>(byteOffsetValue(comm, fn, "comm")));
      op.bytes = byteOffsetValue(o.Get("bytes"), fn, "bytes");
      if (op.bytes == 0) argError(fn, "ops[" + std::to_string(k) + "].bytes must be > 0");
      Napi::Value b = o.Get("buffer");
      op.send = findBuffer(b.IsUndefined() || b.IsNull() ? 0 : static_cast<int>(byteOffsetValue(b, fn, "buffer")));
      Napi::Value r = o.Get("recvBuffer");
      if (!r.IsUndefined() && !r.IsNull()) op.recv = findBuffer(static_cast<int>(byteOffsetValue(r, fn, "recvBuffer")));
      Napi::Value ro = o.Get("recvOffset");
      if (!ro.IsUndefined() && !ro.IsNull()) {
        if (!op.recv) argError(fn, "ops[" + std::to_string(k) + "].recvOffset needs recvBuffer");
        op.recvOffset = byteOffsetValue(ro, fn, "recvOffset");
      }
      plan.ops.push_back(op);
    }
    if (!isAbsent(info, 1)) {
      if (!info[1].IsObject()) argError(fn, "opts must be an object {untilQuiet?}");
      Napi::Value q = info[1].As<Napi::Object>().Get("untilQuiet");
      if (!q.IsUndefined() && !q.IsNull()) {
        if (!q.IsBoolean()) argError(fn, "opts.untilQuiet must be a boolean");
        plan.untilQuiet = q.As<Napi::Boolean>().Value();
      }
    }
    armInFlight(std::move(plan));
    return info.Env().Undefined();
  });
}

Napi::Value MemFill(const Napi::CallbackInfo& info) {
  return sync(info, [&]() -> Napi::Value {
    useDevice("memFill");
    BufferInfo b = findBuffer(intArg(info, 0, "memFill", "buffer", 0, 2147483647.0));
    if (info.Length() < 2 || !info[1].IsNumber()) argError("memFill", "value must be a number");
    float value = static_cast<float>(info[1].As<Napi::Number>().DoubleValue());
    size_t bytes = isAbsent(info, 2) ? b.bytes - b.bytes % sizeof(float) : bytesArg(info, 2, "memFill", "bytes");
    memFill(b, value, bytes);
    return info.Env().Undefined();
  });
}

Napi::Value ReadFloats(const Napi::CallbackInfo& info) {
  return sync(info, [&]() -> Napi::Value {
    useDevice("readFloats");
    BufferInfo b = findBuffer(intArg(info, 0, "readFloats", "buffer", 0, 2147483647.0));
    if (info.Length() < 2 || !info[1].IsArray()) argError("readFloats", "offsets must be an array of byte offsets");
    Napi::Array arr = info[1].As<Napi::Array>();
    std::vector<size_t> offsets;
    for (uint32_t k = 0; k < arr.Length(); k++) offsets.push_back(byteOffsetValue(arr.Get(k), "readFloats", "offset"));
    std::vector<float> values = readFloats(b, offsets);
    Napi::Array out = Napi::Array::New(info.Env(), values.size());
    for (size_t k = 0; k < values.size(); k++) out.Set(static_cast<uint32_t>(k), static_cast<double>(values[k]));
    return out;
  });
}

}  // namespace
}  // namespace commcost

static Napi::Object InitModule(Napi::Env env, Napi::Object exports) {
  using namespace commcost;
  exports.Set("load", Napi::Function::New(env, Load, "load"));
  exports.Set("deviceCount", Napi::Function::New(env, DeviceCount, "deviceCount"));
  exports.Set("deviceInfo", Napi::Function::New(env, DeviceInfoBinding, "deviceInfo"));
  exports.Set("initDevice", Napi::Function::New(env, InitDevice, "initDevice"));
  exports.Set("getUniqueId", Napi::Function::New(env, GetUniqueId, "getUniqueId"));
  exports.Set("commInitRank", Napi::Function::New(env, CommInitRank, "commInitRank"));
  exports.Set("commSplit", Napi::Function::New(env, CommSplit, "commSplit"));
  exports.Set("allReduce", Napi::Function::New(env, AllReduce, "allReduce"));
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
