// bindingCore.cc: the N-API bindings of the core operations (load, devices, creation, allreduce,
// teardown, barrier, clocks). Each converts arguments and results only.
#include "bindingSupport.h"

namespace commcost {
namespace jsapi {

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

Napi::Value Broadcast(const Napi::CallbackInfo& info) {
  return timedPromise(info, [&]() -> std::function<Timed()> {
    nccl();
    COMMCOST_REQUIRE_NCCL(ncclBroadcast, kP2pSince);
    CommRef ref = commArg(info, 0, "broadcast", false);
    size_t bytes = bytesArg(info, 1, "broadcast", "bytes");
    int root = intArg(info, 2, "broadcast", "root", 0, 2147483647.0);
    auto gen = genArg(info, 3, "broadcast");
    return [=] { return broadcast(ref, bytes, root, gen); };
  });
}

Napi::Value SendRecv(const Napi::CallbackInfo& info) {
  return timedPromise(info, [&]() -> std::function<Timed()> {
    nccl();
    COMMCOST_REQUIRE_NCCL(ncclSend, kP2pSince);
    COMMCOST_REQUIRE_NCCL(ncclRecv, kP2pSince);
    CommRef ref = commArg(info, 0, "sendRecv", false);
    int peer = intArg(info, 1, "sendRecv", "peer", 0, 2147483647.0);
    size_t bytes = bytesArg(info, 2, "sendRecv", "bytes");
    auto gen = genArg(info, 3, "sendRecv");
    return [=] { return sendRecv(ref, peer, bytes, gen); };
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

}  // namespace jsapi
}  // namespace commcost
