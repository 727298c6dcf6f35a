// bindingInFlight.cc: the N-API bindings of the in-flight window and the drop check (inFlight.h).
#include "bindingSupport.h"

namespace commcost {
namespace jsapi {

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

}  // namespace jsapi
}  // namespace commcost
