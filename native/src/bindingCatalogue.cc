// bindingCatalogue.cc: the N-API bindings of the catalogue operations (optional NCCL functions: memory,
// InitRankScalable, shrink, grow, revoke, registration, windows, suspend/resume, MemStats, graphs, abortable init).
#include "bindingSupport.h"

namespace commcost {
namespace jsapi {

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

Napi::Value CommInitRankScalable(const Napi::CallbackInfo& info) {
  return timedWith<HandleResult>(
      info,
      [&]() -> std::function<void(HandleResult&)> {
        nccl();
        COMMCOST_REQUIRE_NCCL(ncclCommInitRankScalable, kScalableSince);
        const char* fn = "commInitRankScalable";
        int nranks = intArg(info, 0, fn, "nranks", 1, 1 << 24);
        if (info.Length() < 2 || !info[1].IsArray()) argError(fn, "ids must be an array of 128-byte Buffers");
        Napi::Array list = info[1].As<Napi::Array>();
        if (list.Length() < 1 || list.Length() > static_cast<uint32_t>(nranks))
          argError(fn, "ids must hold 1 to nranks unique ids (NCCL allows at most one per rank)");
        std::vector<ncclUniqueId> ids(list.Length());
        for (uint32_t i = 0; i < list.Length(); i++) {
          Napi::Value v = list.Get(i);
          if (!v.IsBuffer() || v.As<Napi::Buffer<char>>().Length() != sizeof(ncclUniqueId))
            argError(fn, "ids[" + std::to_string(i) + "] must be a Buffer of 128 bytes");
          std::memcpy(ids[i].internal, v.As<Napi::Buffer<char>>().Data(), sizeof ids[i].internal);
        }
        int rank = intArg(info, 2, fn, "rank", 0, nranks - 1);
        auto config = configArg(info, 3, fn);
        auto gen = genArg(info, 4, fn);
        return [=](HandleResult& r) { r.t = commInitRankScalable(nranks, ids, rank, config, gen, &r.handle); };
      },
      [](Napi::Env, Napi::Object& o, const HandleResult& r) { o.Set("comm", r.handle); });
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

}  // namespace jsapi
}  // namespace commcost
