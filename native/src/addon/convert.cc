// JS <-> native conversions: requests (inputs borrowed zero-copy from their Uint8Arrays) and
// response / release events.
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "addon.h"

namespace warden_addon {

namespace {

constexpr size_t kZeroCopyOutputBytes = 64 * 1024;  // larger outputs are handed over, not copied

const char* Str(RequestBatch* b, std::string s) {
  b->strings.push_back(std::move(s));
  return b->strings.back().c_str();
}

uint64_t ToU64(Napi::Env env, Napi::Value v, const char* what) {
  if (v.IsUndefined() || v.IsNull()) return 0;
  if (v.IsBigInt()) {
    bool lossless = true;
    uint64_t x = v.As<Napi::BigInt>().Uint64Value(&lossless);
    if (!lossless) throw Napi::RangeError::New(env, std::string(what) + " does not fit in uint64");
    return x;
  }
  double d = v.ToNumber().DoubleValue();
  if (!(d >= 0) || d != std::floor(d) || d > 18446744073709551615.0) {
    throw Napi::RangeError::New(env, std::string(what) + " must be a non-negative integer");
  }
  return uint64_t(d);
}

Napi::Value U64(Napi::Env env, uint64_t v) { return Napi::BigInt::New(env, v); }

}  // namespace

void ParseRequests(Napi::Env env, Napi::Array requests, const std::shared_ptr<EventQueue>& queue, RequestBatch* batch,
                   std::vector<RequestContext*>* contexts) {
  uint32_t n = requests.Length();
  if (n == 0) throw Napi::TypeError::New(env, "execute needs at least one request");
  batch->descs.assign(n, WARDEN_RequestDesc{});
  batch->inputs.resize(n);
  batch->outputs.resize(n);
  batch->params.resize(n);
  for (uint32_t r = 0; r < n; ++r) {
    Napi::Value rv = requests.Get(r);
    if (!rv.IsObject()) throw Napi::TypeError::New(env, "request must be an object");
    Napi::Object o = rv.As<Napi::Object>();
    WARDEN_RequestDesc& d = batch->descs[r];
    uint32_t token = o.Get("token").ToNumber().Uint32Value();
    d.id = Str(batch, o.Get("id").IsString() ? o.Get("id").As<Napi::String>().Utf8Value() : "");
    Napi::Value corr = o.Get("correlationId");
    if (corr.IsString()) {
      d.correlation_id_string = Str(batch, corr.As<Napi::String>().Utf8Value());
    } else {
      d.correlation_id = ToU64(env, corr, "correlationId");
    }
    d.flags = o.Get("flags").ToNumber().Uint32Value();
    d.timeout_us = ToU64(env, o.Get("timeoutUs"), "timeoutUs");
    d.priority = ToU64(env, o.Get("priority"), "priority");
    d.cancelled = o.Get("cancelled").ToBoolean();
    d.reschedulable = o.Get("reschedulable").ToBoolean();

    Napi::Value inputs_v = o.Get("inputs");
    if (!inputs_v.IsArray()) throw Napi::TypeError::New(env, "request inputs must be an array");
    Napi::Array inputs = inputs_v.As<Napi::Array>();
    std::vector<WARDEN_InputDesc>& ins = batch->inputs[r];
    ins.resize(inputs.Length());
    for (uint32_t i = 0; i < inputs.Length(); ++i) {
      Napi::Value tv = inputs.Get(i);
      if (!tv.IsObject()) throw Napi::TypeError::New(env, "input must be a tensor object");
      Napi::Object t = tv.As<Napi::Object>();
      WARDEN_InputDesc& in = ins[i];
      in.name = Str(batch, t.Get("name").ToString().Utf8Value());
      std::string dt = t.Get("datatype").ToString().Utf8Value();
      in.datatype = TRITONSERVER_StringToDataType(dt.c_str());
      if (in.datatype == TRITONSERVER_TYPE_INVALID) {
        throw TritonError(env, TRITONSERVER_ERROR_INVALID_ARG,
                          "invalid datatype '" + dt + "' for input '" + in.name + "'");
      }
      Napi::Value shape_v = t.Get("shape");
      if (!shape_v.IsArray()) throw Napi::TypeError::New(env, "input shape must be an array");
      Napi::Array shape = shape_v.As<Napi::Array>();
      batch->shapes.emplace_back(shape.Length());
      std::vector<int64_t>& dims = batch->shapes.back();
      for (uint32_t k = 0; k < shape.Length(); ++k) dims[k] = shape.Get(k).ToNumber().Int64Value();
      in.shape = dims.data();
      in.dims_count = uint32_t(dims.size());
      Napi::Value data_v = t.Get("data");
      if (!data_v.IsTypedArray()) throw Napi::TypeError::New(env, "input data must be a Uint8Array");
      Napi::TypedArray ta = data_v.As<Napi::TypedArray>();
      if (ta.TypedArrayType() != napi_uint8_array) {
        throw Napi::TypeError::New(env, "input data must be a Uint8Array");
      }
      Napi::Uint8Array u8 = data_v.As<Napi::Uint8Array>();
      // Borrowed: the JS side keeps the array alive until this request's release event.
      in.data = u8.ByteLength() == 0 ? nullptr : u8.Data();
      in.byte_size = u8.ByteLength();
    }
    d.inputs = ins.data();
    d.input_count = uint32_t(ins.size());

    std::vector<const char*>& outs = batch->outputs[r];
    for (const std::string& s : StringArray(env, o.Get("outputs"), "outputs")) outs.push_back(Str(batch, s));
    d.requested_outputs = outs.data();
    d.requested_output_count = uint32_t(outs.size());

    Napi::Value params_v = o.Get("params");
    std::vector<WARDEN_ParamDesc>& ps = batch->params[r];
    if (params_v.IsArray()) {
      Napi::Array flat = params_v.As<Napi::Array>();  // [key, value, key, value, ...]
      for (uint32_t k = 0; k + 1 < flat.Length(); k += 2) {
        WARDEN_ParamDesc p{};
        p.key = Str(batch, flat.Get(k).ToString().Utf8Value());
        Napi::Value v = flat.Get(k + 1);
        if (!ScalarParamFromJs(v, p, [batch](std::string s) { return Str(batch, std::move(s)); })) {
          throw Napi::TypeError::New(env, "parameter values must be string, number, bigint or boolean");
        }
        ps.push_back(p);
      }
    }
    d.parameters = ps.data();
    d.parameter_count = uint32_t(ps.size());
    contexts->push_back(new RequestContext{queue, token});
  }
}

Napi::Object ResponseEvent(Napi::Env env, Event& e) {
  Napi::Object o = Napi::Object::New(env);
  o.Set("t", Napi::Number::New(env, 0));
  o.Set("token", Napi::Number::New(env, e.token));
  o.Set("final", Napi::Boolean::New(env, (e.flags & TRITONSERVER_RESPONSE_COMPLETE_FINAL) != 0));
  if (e.flags & WARDEN_RESPONSE_CLOSED) o.Set("closed", Napi::Boolean::New(env, true));
  TRITONSERVER_InferenceResponse* r = e.response;
  if (r == nullptr) return o;
  e.response = nullptr;
  if (TRITONSERVER_Error* err = TRITONSERVER_InferenceResponseError(r)) {
    Napi::Object eo = Napi::Object::New(env);
    eo.Set("code", Napi::Number::New(env, int(TRITONSERVER_ErrorCode(err))));
    eo.Set("message", Napi::String::New(env, TRITONSERVER_ErrorMessage(err)));
    o.Set("error", eo);
    TRITONSERVER_ErrorDelete(err);
    TRITONSERVER_InferenceResponseDelete(r);
    return o;
  }
  uint32_t count = 0;
  TRITONSERVER_ErrorDelete(TRITONSERVER_InferenceResponseOutputCount(r, &count));
  Napi::Array outputs = Napi::Array::New(env, count);
  for (uint32_t i = 0; i < count; ++i) {
    const char* name = nullptr;
    TRITONSERVER_DataType dt;
    const int64_t* shape = nullptr;
    uint64_t dims = 0;
    const void* base = nullptr;
    size_t size = 0;
    TRITONSERVER_MemoryType mt;
    int64_t mt_id;
    void* userp;
    TRITONSERVER_ErrorDelete(
        TRITONSERVER_InferenceResponseOutput(r, i, &name, &dt, &shape, &dims, &base, &size, &mt, &mt_id, &userp));
    Napi::Object t = Napi::Object::New(env);
    t.Set("name", Napi::String::New(env, name));
    t.Set("datatype", Napi::String::New(env, TRITONSERVER_DataTypeString(dt)));
    Napi::Array s = Napi::Array::New(env, size_t(dims));
    for (uint64_t k = 0; k < dims; ++k) s.Set(uint32_t(k), Napi::Number::New(env, double(shape[k])));
    t.Set("shape", s);
    Napi::ArrayBuffer ab;
    if (size >= kZeroCopyOutputBytes) {
      // Hand the backend-filled buffer to JS; freed by the GC, accounted as external memory.
      void* owned = WARDEN_InferenceResponseOutputTakeBuffer(r, i);
      Napi::MemoryManagement::AdjustExternalMemory(env, int64_t(size));
      ab = Napi::ArrayBuffer::New(
          env, owned, size,
          [](Napi::Env fenv, void* data, size_t* hint) {
            Napi::MemoryManagement::AdjustExternalMemory(fenv, -int64_t(*hint));
            std::free(data);
            delete hint;
          },
          new size_t(size));
    } else {
      ab = Napi::ArrayBuffer::New(env, size);
      if (size > 0) std::memcpy(ab.Data(), base, size);
    }
    t.Set("data", Napi::Uint8Array::New(env, size, ab, 0));
    outputs.Set(i, t);
  }
  o.Set("outputs", outputs);
  uint32_t pcount = 0;
  TRITONSERVER_ErrorDelete(TRITONSERVER_InferenceResponseParameterCount(r, &pcount));
  if (pcount > 0) {
    Napi::Object params = Napi::Object::New(env);
    for (uint32_t i = 0; i < pcount; ++i) {
      const char* key = nullptr;
      TRITONSERVER_ParameterType type;
      const void* v = nullptr;
      TRITONSERVER_ErrorDelete(TRITONSERVER_InferenceResponseParameter(r, i, &key, &type, &v));
      switch (type) {
        case TRITONSERVER_PARAMETER_INT: {
          int64_t x = *static_cast<const int64_t*>(v);
          params.Set(key, std::llabs(x) <= (int64_t(1) << 53) ? Napi::Value(Napi::Number::New(env, double(x)))
                                                              : Napi::Value(Napi::BigInt::New(env, x)));
          break;
        }
        case TRITONSERVER_PARAMETER_BOOL:
          params.Set(key, Napi::Boolean::New(env, *static_cast<const bool*>(v)));
          break;
        case TRITONSERVER_PARAMETER_DOUBLE:
          params.Set(key, Napi::Number::New(env, *static_cast<const double*>(v)));
          break;
        default:
          params.Set(key, Napi::String::New(env, static_cast<const char*>(v)));
      }
    }
    o.Set("parameters", params);
  }
  TRITONSERVER_InferenceResponseDelete(r);
  return o;
}

Napi::Object ReleasedEvent(Napi::Env env, const Event& e) {
  Napi::Object o = Napi::Object::New(env);
  o.Set("t", Napi::Number::New(env, 1));
  o.Set("token", Napi::Number::New(env, e.token));
  if (e.rescheduled) o.Set("rescheduled", Napi::Boolean::New(env, true));
  if (e.has_request_stats) {
    const WARDEN_RequestStats& s = e.request_stats;
    Napi::Object st = Napi::Object::New(env);
    st.Set("success", Napi::Boolean::New(env, s.success));
    st.Set("execStartNs", U64(env, s.exec_start_ns));
    st.Set("computeStartNs", U64(env, s.compute_start_ns));
    st.Set("computeEndNs", U64(env, s.compute_end_ns));
    st.Set("execEndNs", U64(env, s.exec_end_ns));
    o.Set("stats", st);
  }
  return o;
}

Napi::Value ExecStatsValue(Napi::Env env, const WARDEN_ExecStats& s) {
  Napi::Object st = Napi::Object::New(env);
  st.Set("reported", Napi::Boolean::New(env, s.reported));
  st.Set("returnedNs", U64(env, s.returned_ns));
  st.Set("batchSize", Napi::Number::New(env, double(s.batch_size)));
  st.Set("execStartNs", U64(env, s.exec_start_ns));
  st.Set("computeStartNs", U64(env, s.compute_start_ns));
  st.Set("computeEndNs", U64(env, s.compute_end_ns));
  st.Set("execEndNs", U64(env, s.exec_end_ns));
  return st;
}

}  // namespace warden_addon
