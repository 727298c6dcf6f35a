// bindingSupport.cc: argument conversions, result objects and the Promise worker of the N-API surface
// (declared in bindingSupport.h).
#include "bindingSupport.h"

namespace commcost {
namespace jsapi {

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
  if (!info[i].IsObject()) argError(fn, "config must be an object {blocking?, splitShare?, minCTAs?, maxCTAs?, maxP2pPeers?}");
  Napi::Object o = info[i].As<Napi::Object>();
  CommConfigArg arg;
  auto field = [&](const char* name, std::optional<int>* out) {
    Napi::Value v = o.Get(name);
    if (v.IsUndefined() || v.IsNull()) return;
    if (!v.IsNumber()) argError(fn, std::string("config.") + name + " must be a number");
    double d = v.As<Napi::Number>().DoubleValue();
    if (!(d == static_cast<double>(static_cast<int>(d)))) argError(fn, std::string("config.") + name + " must be a whole number");
    *out = static_cast<int>(d);
  };
  field("blocking", &arg.blocking);
  field("splitShare", &arg.splitShare);
  field("minCTAs", &arg.minCTAs);
  field("maxCTAs", &arg.maxCTAs);
  field("maxP2pPeers", &arg.maxP2pPeers);
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

// A timed operation whose only result is Timed.
Napi::Value timedPromise(const Napi::CallbackInfo& info, std::function<std::function<Timed()>()> prepare) {
  return promised(info, [&]() -> Prepared {
    std::function<Timed()> op = prepare();
    auto result = std::make_shared<Timed>();
    return {[op, result] { *result = op(); }, [result](Napi::Env env) -> Napi::Value { return timedObject(env, *result); }};
  });
}

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

size_t byteOffsetValue(Napi::Value v, const char* fn, const char* name) {
  if (!v.IsNumber()) argError(fn, std::string(name) + " must be a number");
  double d = v.As<Napi::Number>().DoubleValue();
  if (!std::isfinite(d) || std::floor(d) != d || d < 0 || d > 9007199254740991.0) argError(fn, std::string(name) + " must be a non-negative safe integer");
  return static_cast<size_t>(d);
}

}  // namespace jsapi
}  // namespace commcost
