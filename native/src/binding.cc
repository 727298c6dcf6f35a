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

#include "barrier.h"
#include "commOps.h"
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
  return timedPromise(info, [&]() -> std::function<Timed()> {
    cuda();
    int ordinal = intArg(info, 0, "initDevice", "ordinal", 0, 1 << 20);
    size_t bytes = bytesArg(info, 1, "initDevice", "bufferBytes");
    if (bytes == 0) argError("initDevice", "bufferBytes must be > 0");
    auto gen = genArg(info, 2, "initDevice");
    claimDeviceStart();
    return [=] { return initDevice(ordinal, bytes, gen); };
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
    return [=] { return allReduce(ref, bytes, gen); };
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
    barrierConnect(info[0].As<Napi::String>().Utf8Value(), port, static_cast<uint32_t>(rank));
    return info.Env().Undefined();
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
  exports.Set("nop", Napi::Function::New(env, Nop, "nop"));
  exports.Set("monotonicNs", Napi::Function::New(env, MonotonicNs, "monotonicNs"));
  return exports;
}

NODE_API_MODULE(commcost, InitModule)
