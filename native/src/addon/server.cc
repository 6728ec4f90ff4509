// The server bridge: Triton's in-process inference API (spec §6.4) as the embedding host sees it.
// libtritonserver.so calls WARDEN_ServerHooks on a backend's thread; each call is handed to one JS
// handler on the JS thread (one ThreadSafeFunction) while the backend's thread waits for the
// answer — so TRITONSERVER_ServerInferAsync returns the data plane's own synchronous errors (unknown
// model, bad input) exactly as Triton does. Responses come back through `serverRespond`.
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <set>

#include "addon.h"

namespace warden_addon {

namespace {

enum CallKind : int { kInfer = 0, kCancel = 1, kQueryBase = 2 };

/** One hook call waiting for the JS thread. */
struct Call {
  int kind = kInfer;
  uint64_t owner = 0;
  uint64_t token = 0;
  const WARDEN_InferRequestView* view = nullptr;  // valid while the backend thread waits
  std::string model;
  int64_t version = -1;
  bool has_params = false;
  std::string params_json;

  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  bool abandoned = false;  // the backend thread stopped waiting: do not touch `view`
  TRITONSERVER_Error* error = nullptr;
  std::string result;
};

struct Bridge {
  std::mutex mu;
  bool active = false;
  Napi::ThreadSafeFunction tsfn;
  std::set<std::shared_ptr<Call>> pending;
  Napi::FunctionReference handler;  // JS thread only
};
Bridge& bridge = *new Bridge;  // never destroyed: backends may call during exit

/** How long a backend thread waits for the JS thread (loads may take that long). */
constexpr auto kMaxWait = std::chrono::minutes(10);

void Complete(const std::shared_ptr<Call>& call, TRITONSERVER_Error* error, std::string result) {
  {
    std::lock_guard<std::mutex> lk(bridge.mu);
    bridge.pending.erase(call);
  }
  std::lock_guard<std::mutex> lk(call->mu);
  if (call->done || call->abandoned) {
    TRITONSERVER_ErrorDelete(error);
    return;
  }
  call->done = true;
  call->error = error;
  call->result = std::move(result);
  call->cv.notify_all();
}

/** A JS error (TritonError from the handler: `tritonCode`, else INTERNAL) as a TRITONSERVER_Error. */
TRITONSERVER_Error* ErrorFromJs(Napi::Value v) {
  TRITONSERVER_Error_Code code = TRITONSERVER_ERROR_INTERNAL;
  std::string message = "unknown error";
  if (v.IsObject()) {
    Napi::Object o = v.As<Napi::Object>();
    Napi::Value c = o.Get("tritonCode");
    if (c.IsNumber()) code = TRITONSERVER_Error_Code(c.As<Napi::Number>().Int32Value());
    Napi::Value m = o.Get("message");
    if (m.IsString()) message = m.As<Napi::String>().Utf8Value();
  } else if (v.IsString()) {
    message = v.As<Napi::String>().Utf8Value();
  }
  return TRITONSERVER_ErrorNew(code, message.c_str());
}

Napi::Object InferPayload(Napi::Env env, const Call& call) {
  const WARDEN_InferRequestView& v = *call.view;
  Napi::Object o = Napi::Object::New(env);
  o.Set("token", Napi::Number::New(env, double(call.token)));
  o.Set("model", Napi::String::New(env, v.model_name));
  o.Set("version", Napi::Number::New(env, double(v.model_version)));
  o.Set("id", Napi::String::New(env, v.id));
  if (v.correlation_id_string != nullptr) {
    o.Set("correlationId", Napi::String::New(env, v.correlation_id_string));
  } else if (v.correlation_id <= (uint64_t(1) << 53)) {
    o.Set("correlationId", Napi::Number::New(env, double(v.correlation_id)));
  } else {
    o.Set("correlationId", Napi::BigInt::New(env, v.correlation_id));
  }
  o.Set("flags", Napi::Number::New(env, v.flags));
  o.Set("priority", Napi::Number::New(env, double(v.priority)));
  o.Set("timeoutUs", Napi::Number::New(env, double(v.timeout_us)));
  Napi::Array inputs = Napi::Array::New(env, v.input_count);
  for (uint32_t i = 0; i < v.input_count; ++i) {
    const WARDEN_InferInputView& in = v.inputs[i];
    Napi::Object t = Napi::Object::New(env);
    t.Set("name", Napi::String::New(env, in.name));
    t.Set("datatype", Napi::String::New(env, TRITONSERVER_DataTypeString(in.datatype)));
    Napi::Array shape = Napi::Array::New(env, in.dims_count);
    for (uint32_t k = 0; k < in.dims_count; ++k) shape.Set(k, Napi::Number::New(env, double(in.shape[k])));
    t.Set("shape", shape);
    if (in.raw) t.Set("raw", Napi::Boolean::New(env, true));
    // One copy into memory the data plane owns: the backend may reuse its buffers once released.
    Napi::ArrayBuffer ab = Napi::ArrayBuffer::New(env, size_t(in.byte_size));
    uint64_t off = 0;
    for (uint32_t c = 0; c < in.chunk_count && off < in.byte_size; ++c) {
      uint64_t n = std::min(in.chunks[c].byte_size, in.byte_size - off);
      std::memcpy(static_cast<uint8_t*>(ab.Data()) + off, in.chunks[c].base, size_t(n));
      off += n;
    }
    t.Set("data", Napi::Uint8Array::New(env, size_t(in.byte_size), ab, 0));
    inputs.Set(i, t);
  }
  o.Set("inputs", inputs);
  Napi::Array outputs = Napi::Array::New(env, v.requested_output_count);
  for (uint32_t i = 0; i < v.requested_output_count; ++i)
    outputs.Set(i, Napi::String::New(env, v.requested_outputs[i]));
  o.Set("outputs", outputs);
  Napi::Array params = Napi::Array::New(env);
  uint32_t n = 0;
  for (uint32_t i = 0; i < v.parameter_count; ++i) {
    const WARDEN_ParamDesc& p = v.parameters[i];
    params.Set(n++, Napi::String::New(env, p.key));
    switch (p.type) {
      case TRITONSERVER_PARAMETER_INT:
        if (p.int_value >= -(int64_t(1) << 53) && p.int_value <= (int64_t(1) << 53)) {
          params.Set(n++, Napi::Number::New(env, double(p.int_value)));
        } else {
          params.Set(n++, Napi::BigInt::New(env, p.int_value));  // beyond 2^53: exact
        }
        break;
      case TRITONSERVER_PARAMETER_BOOL:
        params.Set(n++, Napi::Boolean::New(env, p.bool_value));
        break;
      case TRITONSERVER_PARAMETER_DOUBLE:
        params.Set(n++, Napi::Number::New(env, p.double_value));
        break;
      default:
        params.Set(n++, Napi::String::New(env, p.string_value == nullptr ? "" : p.string_value));
    }
  }
  o.Set("params", params);
  return o;
}

/** JS thread: run one call through the handler. */
void RunCall(Napi::Env env, const std::shared_ptr<Call>& call) {
  Napi::HandleScope scope(env);
  if (bridge.handler.IsEmpty()) {
    Complete(call, TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_UNAVAILABLE, "the server is shutting down"), "");
    return;
  }
  Napi::Value result;
  {
    // Held while the view is read: a backend thread that gave up waiting cannot free it meanwhile.
    std::unique_lock<std::mutex> lk(call->mu);
    if (call->abandoned) return;
    try {
      Napi::Object payload = Napi::Object::New(env);
      if (call->kind == kInfer) {
        payload = InferPayload(env, *call);  // may throw (e.g. an input too large for an ArrayBuffer)
      } else {
        payload.Set("token", Napi::Number::New(env, double(call->token)));
        payload.Set("model", Napi::String::New(env, call->model));
        payload.Set("version", Napi::Number::New(env, double(call->version)));
        if (call->has_params) payload.Set("params", Napi::String::New(env, call->params_json));
      }
      lk.unlock();  // the handler may answer synchronously (Complete takes the lock)
      result = bridge.handler.Call(
          {Napi::Number::New(env, call->kind), Napi::Number::New(env, double(call->owner)), payload});
    } catch (const Napi::Error& e) {
      if (lk.owns_lock()) lk.unlock();
      Complete(call, ErrorFromJs(e.Value()), "");
      return;
    } catch (const std::exception& e) {
      if (lk.owns_lock()) lk.unlock();
      Complete(call, TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INTERNAL, e.what()), "");
      return;
    }
  }
  if (call->kind == kCancel) {
    Complete(call, nullptr, "");  // nobody waits; leaves the pending set
    return;
  }
  if (result.IsPromise()) {
    Napi::Object promise = result.As<Napi::Object>();
    Napi::Function then = promise.Get("then").As<Napi::Function>();
    auto on_ok = Napi::Function::New(env, [call](const Napi::CallbackInfo& info) {
      Complete(call, nullptr, info[0].IsString() ? info[0].As<Napi::String>().Utf8Value() : "");
    });
    auto on_err =
        Napi::Function::New(env, [call](const Napi::CallbackInfo& info) { Complete(call, ErrorFromJs(info[0]), ""); });
    then.Call(promise, {on_ok, on_err});
    return;
  }
  Complete(call, nullptr, result.IsString() ? result.As<Napi::String>().Utf8Value() : "");
}

/** Queue `call` for the JS thread; false when no handler is installed (or it is shutting down). */
bool Post(const std::shared_ptr<Call>& call) {
  std::lock_guard<std::mutex> lk(bridge.mu);
  if (!bridge.active) return false;
  napi_status st = bridge.tsfn.NonBlockingCall([call](Napi::Env env, Napi::Function) { RunCall(env, call); });
  if (st != napi_ok) return false;
  bridge.pending.insert(call);
  return true;
}

TRITONSERVER_Error* Unavailable() {
  return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_UNAVAILABLE,
                               "in-process inference is not available: the server is not running");
}

/** Backend thread: wait for the JS thread's answer. */
TRITONSERVER_Error* Wait(const std::shared_ptr<Call>& call, std::string* result) {
  std::unique_lock<std::mutex> lk(call->mu);
  if (!call->cv.wait_for(lk, kMaxWait, [&] { return call->done; })) {
    call->abandoned = true;
    return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_UNAVAILABLE,
                                 "the server did not answer an in-process call within 600 s");
  }
  if (result != nullptr) *result = std::move(call->result);
  TRITONSERVER_Error* e = call->error;
  call->error = nullptr;
  return e;
}

TRITONSERVER_Error* HookInfer(void*, uint64_t owner, const WARDEN_InferRequestView* request, uint64_t token) {
  auto call = std::make_shared<Call>();
  call->kind = kInfer;
  call->owner = owner;
  call->token = token;
  call->view = request;
  if (!Post(call)) return Unavailable();
  return Wait(call, nullptr);
}

void HookCancel(void*, uint64_t token) {
  auto call = std::make_shared<Call>();
  call->kind = kCancel;
  call->token = token;
  Post(call);  // fire and forget
}

TRITONSERVER_Error* HookQuery(void*, uint64_t owner, WARDEN_ServerQuery query, const char* model, int64_t version,
                              const char* params_json, char** result_json) {
  auto call = std::make_shared<Call>();
  call->kind = kQueryBase + int(query);
  call->owner = owner;
  call->model = model;
  call->version = version;
  call->has_params = params_json != nullptr;
  if (params_json != nullptr) call->params_json = params_json;
  if (!Post(call)) return Unavailable();
  std::string result;
  TRITONSERVER_Error* e = Wait(call, &result);
  if (e == nullptr && result_json != nullptr) {
    *result_json = static_cast<char*>(std::malloc(result.size() + 1));
    if (*result_json != nullptr) std::memcpy(*result_json, result.c_str(), result.size() + 1);
  }
  return e;
}

}  // namespace

/** setServerHandler(fn(kind, owner, payload) -> string | undefined | Promise) */
Napi::Value SetServerHandler(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!info[0].IsFunction()) throw Napi::TypeError::New(env, "setServerHandler(fn)");
  {
    std::lock_guard<std::mutex> lk(bridge.mu);
    if (!bridge.active) {
      bridge.tsfn = Napi::ThreadSafeFunction::New(env, Napi::Function(), "warden-native-server", 0, 1);
      bridge.tsfn.Unref(env);  // the bridge never keeps the process alive by itself
      bridge.active = true;
    }
  }
  bridge.handler = Napi::Persistent(info[0].As<Napi::Function>());
  WARDEN_ServerHooks hooks{&HookInfer, &HookCancel, &HookQuery, nullptr};
  WARDEN_SetServerHooks(&hooks);
  return env.Undefined();
}

/** closeServerBridge(): later calls fail with UNAVAILABLE; waiting backend threads are answered. */
Napi::Value CloseServerBridge(const Napi::CallbackInfo& info) {
  WARDEN_SetServerHooks(nullptr);
  std::set<std::shared_ptr<Call>> pending;
  {
    std::lock_guard<std::mutex> lk(bridge.mu);
    if (bridge.active) {
      bridge.active = false;
      bridge.tsfn.Release();
    }
    pending.swap(bridge.pending);
  }
  for (const auto& call : pending) {
    Complete(call, TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_UNAVAILABLE, "the server is shutting down"), "");
  }
  bridge.handler.Reset();
  return info.Env().Undefined();
}

/** serverRespond(token, response | null, final) -> boolean (false: the request is unknown/over). */
Napi::Value ServerRespond(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  uint64_t token = uint64_t(info[0].ToNumber().Int64Value());
  bool final = info[2].ToBoolean();
  uint32_t flags = final ? TRITONSERVER_RESPONSE_COMPLETE_FINAL : 0;
  if (!info[1].IsObject()) {
    TRITONSERVER_Error* e = WARDEN_InferenceRequestRespond(token, nullptr, flags);
    if (e == nullptr) return Napi::Boolean::New(env, true);
    TRITONSERVER_ErrorDelete(e);
    return Napi::Boolean::New(env, false);
  }
  Napi::Object r = info[1].As<Napi::Object>();
  std::deque<std::string> strings;
  auto str = [&strings](std::string s) {
    strings.push_back(std::move(s));
    return strings.back().c_str();
  };
  WARDEN_InferResponseDesc d{};
  d.model_name = str(r.Get("model").ToString().Utf8Value());
  d.model_version = r.Get("version").ToNumber().Int64Value();
  std::vector<WARDEN_OutputDesc> outs;
  std::deque<std::vector<int64_t>> shapes;
  std::vector<WARDEN_ParamDesc> params;
  Napi::Value err = r.Get("error");
  if (err.IsObject()) {
    d.error_code = TRITONSERVER_Error_Code(err.As<Napi::Object>().Get("code").ToNumber().Int32Value());
    d.error_message = str(err.As<Napi::Object>().Get("message").ToString().Utf8Value());
  } else {
    Napi::Value ov = r.Get("outputs");
    if (ov.IsArray()) {
      Napi::Array arr = ov.As<Napi::Array>();
      outs.resize(arr.Length());
      for (uint32_t i = 0; i < arr.Length(); ++i) {
        Napi::Object t = arr.Get(i).As<Napi::Object>();
        WARDEN_OutputDesc& o = outs[i];
        o.name = str(t.Get("name").ToString().Utf8Value());
        std::string dt = t.Get("datatype").ToString().Utf8Value();
        o.datatype = TRITONSERVER_StringToDataType(dt.c_str());
        Napi::Array shape = t.Get("shape").As<Napi::Array>();
        shapes.emplace_back(shape.Length());
        for (uint32_t k = 0; k < shape.Length(); ++k) shapes.back()[k] = shape.Get(k).ToNumber().Int64Value();
        o.shape = shapes.back().data();
        o.dims_count = uint32_t(shapes.back().size());
        Napi::Value data = t.Get("data");
        if (!data.IsTypedArray()) throw Napi::TypeError::New(env, "output data must be a Uint8Array");
        Napi::TypedArray ta = data.As<Napi::TypedArray>();
        o.data = static_cast<const uint8_t*>(ta.ArrayBuffer().Data()) + ta.ByteOffset();
        o.byte_size = ta.ByteLength();
      }
    }
    Napi::Value pv = r.Get("params");
    if (pv.IsArray()) {
      Napi::Array flat = pv.As<Napi::Array>();
      for (uint32_t k = 0; k + 1 < flat.Length(); k += 2) {
        WARDEN_ParamDesc p{};
        p.key = str(flat.Get(k).ToString().Utf8Value());
        Napi::Value v = flat.Get(k + 1);
        if (!ScalarParamFromJs(v, p, str)) {
          p.type = TRITONSERVER_PARAMETER_STRING;
          p.string_value = str(v.ToString().Utf8Value());
        }
        params.push_back(p);
      }
    }
    d.outputs = outs.data();
    d.output_count = uint32_t(outs.size());
    d.parameters = params.data();
    d.parameter_count = uint32_t(params.size());
  }
  TRITONSERVER_Error* e = WARDEN_InferenceRequestRespond(token, &d, flags);
  if (e == nullptr) return Napi::Boolean::New(env, true);
  if (TRITONSERVER_ErrorCode(e) == TRITONSERVER_ERROR_NOT_FOUND) {
    TRITONSERVER_ErrorDelete(e);
    return Napi::Boolean::New(env, false);
  }
  throw TritonError(env, e);
}

/** In-process requests submitted by backends and not yet answered FINAL. */
Napi::Value InflightInferenceRequests(const Napi::CallbackInfo& info) {
  return Napi::Number::New(info.Env(), double(WARDEN_InflightInferenceRequests()));
}

}  // namespace warden_addon
