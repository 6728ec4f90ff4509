// The addon's binding of Warden's wasmtime engine (native/rust/wasmtime-engine, C ABI in
// warden/wasmtime_engine.h): `wasmtime.*` functions over opaque externals, and the wake-up path
// that brings the engine's messages (instance ready, trap, log, host call, execute done) from its
// native threads to one JS callback: a queue drained by one JS-thread wake-up (addon/js_wake.h) per
// batch of messages. Output buffers become external ArrayBuffers (no copy) freed by the Rust side's
// ww_buffer_free. The engine's errors (WardenError) become the addon's TritonError.
#include <napi.h>

#include <mutex>
#include <string>
#include <vector>

#include "../addon.h"
#include "warden/wasmtime_engine.h"

namespace warden_wasmtime {
namespace {

using warden_addon::TritonError;

struct EngineCtx {
  std::mutex mu;
  std::vector<WwMessage*> queue;
  bool scheduled = false;
  bool closed = false;
  std::shared_ptr<warden::JsWake> wake;
  Napi::FunctionReference on_message;  // JS thread only
  WwEngine* engine = nullptr;
};

/** A buffer of the engine as a Uint8Array over its bytes (no copy), freed when collected. */
Napi::Uint8Array BufferArray(Napi::Env env, WwBuffer* b) {
  size_t len = 0;
  uint8_t* data = ww_buffer_data(b, &len);
  if (len == 0) {
    ww_buffer_free(b);
    return Napi::Uint8Array::New(env, 0);
  }
  Napi::ArrayBuffer ab = Napi::ArrayBuffer::New(
      env, data, len, [](Napi::Env, void*, WwBuffer* hint) { ww_buffer_free(hint); }, b);
  return Napi::Uint8Array::New(env, len, ab, 0);
}

void Drain(Napi::Env env, EngineCtx* ctx) {
  WARDEN_WakeAffinityUnpinSelf();  // the answer is back on the JS thread (core/wake.cc)
  std::vector<WwMessage*> batch;
  {
    std::lock_guard<std::mutex> lock(ctx->mu);
    batch.swap(ctx->queue);
    ctx->scheduled = false;
  }
  Napi::HandleScope scope(env);
  for (WwMessage* m : batch) {
    size_t jlen = 0;
    const uint8_t* j = ww_message_json(m, &jlen);
    size_t n = ww_message_buffer_count(m);
    Napi::Array bufs = Napi::Array::New(env, n);
    for (size_t i = 0; i < n; i++) {
      WwBuffer* b = ww_message_take_buffer(m, i);
      bufs.Set(i, b ? BufferArray(env, b) : Napi::Uint8Array::New(env, 0));
    }
    Napi::Value args[] = {Napi::Number::New(env, double(ww_message_instance(m))),
                          Napi::Number::New(env, ww_message_kind(m)),
                          Napi::String::New(env, reinterpret_cast<const char*>(j), jlen), bufs};
    ww_message_free(m);
    if (ctx->on_message.IsEmpty()) continue;
    try {
      ctx->on_message.Call({args[0], args[1], args[2], args[3]});
    } catch (const Napi::Error& e) {
      // a throwing handler is a host bug: keep delivering the rest
      fprintf(stderr, "[warden wasmtime] message handler threw: %s\n", e.Message().c_str());
    }
  }
}

// Any engine thread. The JS thread is woken after `mu` is released, so a drain that starts at once
// (on the poster's CPU, preempting it) never blocks on a lock the poster still holds.
void Notify(void* p, WwMessage* m) {
  auto* ctx = static_cast<EngineCtx*>(p);
  {
    std::lock_guard<std::mutex> lock(ctx->mu);
    if (ctx->closed) {
      ww_message_free(m);
      return;
    }
    ctx->queue.push_back(m);
    if (ctx->scheduled) return;
    ctx->scheduled = true;
  }
  ctx->wake->Send();  // false only after EngineFree, which frees what is queued
}

/** A string's bytes as the engine's C ABI takes them. */
const uint8_t* Bytes(const std::string& s) { return reinterpret_cast<const uint8_t*>(s.data()); }

template <typename T>
T* Ptr(const Napi::Value& v, const char* what) {
  if (!v.IsExternal()) throw Napi::TypeError::New(v.Env(), std::string("expected a wasmtime ") + what + " handle");
  return v.As<Napi::External<T>>().Data();
}

/** The live engine of an engine handle (UNAVAILABLE once engineFree ran). */
WwEngine* EngineOf(const Napi::Value& v) {
  WwEngine* e = Ptr<EngineCtx>(v, "engine")->engine;
  if (e == nullptr) throw TritonError(v.Env(), TRITONSERVER_ERROR_UNAVAILABLE, "the wasmtime engine was freed");
  return e;
}

std::string Str(const Napi::Value& v) {
  if (!v.IsString()) throw Napi::TypeError::New(v.Env(), "expected a string");
  return v.As<Napi::String>().Utf8Value();
}

/** Views of an array of Uint8Arrays (valid during the synchronous call). */
void Views(const Napi::Value& v, std::vector<const uint8_t*>& ptrs, std::vector<size_t>& lens) {
  if (!v.IsArray()) throw Napi::TypeError::New(v.Env(), "expected an array of Uint8Arrays");
  Napi::Array a = v.As<Napi::Array>();
  for (uint32_t i = 0; i < a.Length(); i++) {
    Napi::Value e = a.Get(i);
    if (!e.IsTypedArray()) throw Napi::TypeError::New(v.Env(), "expected an array of Uint8Arrays");
    Napi::Uint8Array u = e.As<Napi::Uint8Array>();
    ptrs.push_back(u.Data());
    lens.push_back(u.ByteLength());
  }
}

Napi::Value EngineNew(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  std::string json = Str(info[0]);
  if (!info[1].IsFunction()) throw Napi::TypeError::New(env, "expected a message callback");
  auto* ctx = new EngineCtx;  // freed by engineFree
  ctx->on_message = Napi::Persistent(info[1].As<Napi::Function>());
  ctx->wake = warden::JsWake::Create(env, "warden-wasmtime", [ctx](Napi::Env e) { Drain(e, ctx); });
  if (WardenError* err = ww_engine_new(Bytes(json), json.size(), Notify, ctx, &ctx->engine)) {
    ctx->wake->Close();
    delete ctx;
    throw TritonError(env, err);
  }
  return Napi::External<EngineCtx>::New(env, ctx);
}

/** Keeps the event loop alive while the host waits for messages (on = true) or not. */
Napi::Value EngineRef(const Napi::CallbackInfo& info) {
  auto* ctx = Ptr<EngineCtx>(info[0], "engine");
  bool on = info[1].ToBoolean();
  if (on)
    ctx->wake->Ref();
  else
    ctx->wake->Unref();
  return info.Env().Undefined();
}

Napi::Value EngineConfigKey(const Napi::CallbackInfo& info) {
  WwEngine* engine = EngineOf(info[0]);
  size_t n = 0;
  const uint8_t* key = ww_engine_config_key(engine, &n);
  return Napi::String::New(info.Env(), reinterpret_cast<const char*>(key), n);
}

/** Frees the engine; every instance must have reported EXITED and every component been freed. */
Napi::Value EngineFree(const Napi::CallbackInfo& info) {
  auto* ctx = Ptr<EngineCtx>(info[0], "engine");
  if (ctx->engine) {
    ww_engine_free(ctx->engine);
    ctx->engine = nullptr;
    {
      std::lock_guard<std::mutex> lock(ctx->mu);
      ctx->closed = true;
      for (WwMessage* m : ctx->queue) ww_message_free(m);
      ctx->queue.clear();
    }
    ctx->on_message.Reset();
    ctx->wake->Close();  // no drain runs after this
    // ctx stays allocated: JS may still hold the engine's external
  }
  return info.Env().Undefined();
}

/** Compiles off the JS thread; resolves with a component handle. */
class ComponentWorker : public Napi::AsyncWorker {
 public:
  ComponentWorker(Napi::Env env, WwEngine* e, std::vector<uint8_t> bytes)
      : Napi::AsyncWorker(env, "warden-wasmtime-compile"),
        deferred_(Napi::Promise::Deferred::New(env)),
        engine_(e),
        bytes_(std::move(bytes)) {}
  ~ComponentWorker() override { warden_error_delete(error_); }
  Napi::Promise Promise() { return deferred_.Promise(); }
  void Execute() override {
    error_ = ww_component_compile(engine_, bytes_.data(), bytes_.size(), &out_);
    std::vector<uint8_t>().swap(bytes_);
  }
  void OnOK() override {
    Napi::Env env = Env();
    if (error_ != nullptr) {
      WardenError* e = error_;
      error_ = nullptr;
      deferred_.Reject(TritonError(env, e).Value());
    } else {
      deferred_.Resolve(Napi::External<WwComponent>::New(env, out_));
    }
  }

 private:
  Napi::Promise::Deferred deferred_;
  WwEngine* engine_;
  std::vector<uint8_t> bytes_;
  WwComponent* out_ = nullptr;
  WardenError* error_ = nullptr;
};

Napi::Value Compile(const Napi::CallbackInfo& info) {
  WwEngine* engine = EngineOf(info[0]);
  if (!info[1].IsTypedArray()) throw Napi::TypeError::New(info.Env(), "expected a Uint8Array");
  Napi::Uint8Array u = info[1].As<Napi::Uint8Array>();
  auto* w = new ComponentWorker(info.Env(), engine, std::vector<uint8_t>(u.Data(), u.Data() + u.ByteLength()));
  Napi::Promise p = w->Promise();
  w->Queue();
  return p;
}

/** Loads a compile-cache entry off the JS thread after checking its MAC (ww_component_load_cached). */
class CachedWorker : public Napi::AsyncWorker {
 public:
  CachedWorker(Napi::Env env, WwEngine* e, std::string path, std::string key, std::string hash, std::string mac,
               uint64_t max_bytes, uint64_t settle_ms)
      : Napi::AsyncWorker(env, "warden-wasmtime-load-cached"),
        deferred_(Napi::Promise::Deferred::New(env)),
        engine_(e),
        path_(std::move(path)),
        key_(std::move(key)),
        hash_(std::move(hash)),
        mac_(std::move(mac)),
        max_bytes_(max_bytes),
        settle_ms_(settle_ms) {}
  ~CachedWorker() override { warden_error_delete(error_); }
  Napi::Promise Promise() { return deferred_.Promise(); }
  void Execute() override {
    error_ = ww_component_load_cached(engine_, Bytes(path_), path_.size(), Bytes(key_), Bytes(hash_), hash_.size(),
                                      Bytes(mac_), max_bytes_, settle_ms_, &check_, &miss_, &out_);
  }
  void OnOK() override {
    Napi::Env env = Env();
    if (error_ == nullptr) {
      Napi::Object r = Napi::Object::New(env);
      r.Set("component", Napi::External<WwComponent>::New(env, out_));
      r.Set("check", Napi::Number::New(env, check_));
      deferred_.Resolve(r);
      return;
    }
    WardenError* err = error_;
    error_ = nullptr;
    Napi::Error e = TritonError(env, err);
    e.Set("miss", Napi::Number::New(env, miss_));
    deferred_.Reject(e.Value());
  }

 private:
  Napi::Promise::Deferred deferred_;
  WwEngine* engine_;
  std::string path_, key_, hash_, mac_;
  uint64_t max_bytes_, settle_ms_;
  int32_t check_ = 0, miss_ = 2;
  WwComponent* out_ = nullptr;
  WardenError* error_ = nullptr;
};

/** Bytes of a Uint8Array argument that must be exactly `n` long. */
std::string Exact(const Napi::Value& v, size_t n, const char* what) {
  if (!v.IsTypedArray() || v.As<Napi::Uint8Array>().ByteLength() != n)
    throw Napi::TypeError::New(v.Env(), std::string("expected ") + what);
  Napi::Uint8Array u = v.As<Napi::Uint8Array>();
  return std::string(reinterpret_cast<const char*>(u.Data()), n);
}

/** loadCached(engine, path, key[32], hash, mac[32], maxBytes, settleMs) → Promise<{component, check}>; rejects with
 * `.miss`. */
Napi::Value LoadCached(const Napi::CallbackInfo& info) {
  WwEngine* engine = EngineOf(info[0]);
  std::string path = Str(info[1]);
  std::string key = Exact(info[2], 32, "a 32-byte cache key");
  std::string hash = Str(info[3]);
  std::string mac = Exact(info[4], 32, "a 32-byte MAC");
  if (!info[5].IsNumber()) throw Napi::TypeError::New(info.Env(), "expected a size bound");
  double max = info[5].As<Napi::Number>().DoubleValue();
  if (!info[6].IsNumber()) throw Napi::TypeError::New(info.Env(), "expected a settle time (ms)");
  double settle = info[6].As<Napi::Number>().DoubleValue();
  // a NaN or negative settle time is the safe extreme: never record a stamp
  uint64_t settle_ms = settle >= 0 && settle < 1e15 ? uint64_t(settle) : UINT64_C(1) << 50;
  auto* w = new CachedWorker(info.Env(), engine, std::move(path), std::move(key), std::move(hash), std::move(mac),
                             max > 0 ? uint64_t(max) : 0, settle_ms);
  Napi::Promise p = w->Promise();
  w->Queue();
  return p;
}

/** cwasmMac(engine, key[32], hash, payload) → Uint8Array(32). */
Napi::Value CwasmMac(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  WwEngine* engine = EngineOf(info[0]);
  std::string key = Exact(info[1], 32, "a 32-byte cache key");
  std::string hash = Str(info[2]);
  if (!info[3].IsTypedArray()) throw Napi::TypeError::New(env, "expected a Uint8Array");
  Napi::Uint8Array u = info[3].As<Napi::Uint8Array>();
  Napi::Uint8Array out = Napi::Uint8Array::New(env, 32);
  if (WardenError* err =
          ww_cwasm_mac(engine, Bytes(key), Bytes(hash), hash.size(), u.Data(), u.ByteLength(), out.Data())) {
    throw TritonError(env, err);
  }
  return out;
}

Napi::Value Serialize(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  auto* c = Ptr<WwComponent>(info[0], "component");
  WwBuffer* b = nullptr;
  if (WardenError* err = ww_component_serialize(c, &b)) throw TritonError(env, err);
  Napi::Uint8Array bytes = BufferArray(env, b);
  if (bytes.ByteLength() == 0) throw TritonError(env, TRITONSERVER_ERROR_INTERNAL, "serialize produced nothing");
  return bytes;
}

Napi::Value ComponentFree(const Napi::CallbackInfo& info) {
  ww_component_free(Ptr<WwComponent>(info[0], "component"));
  return info.Env().Undefined();
}

Napi::Value CountMemories(const Napi::CallbackInfo& info) {
  if (!info[0].IsTypedArray()) throw Napi::TypeError::New(info.Env(), "expected a Uint8Array");
  Napi::Uint8Array u = info[0].As<Napi::Uint8Array>();
  return Napi::Number::New(info.Env(), double(ww_count_memories(u.Data(), u.ByteLength())));
}

Napi::Value InstanceNew(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  WwEngine* engine = EngineOf(info[0]);
  auto* c = Ptr<WwComponent>(info[1], "component");
  uint64_t id = uint64_t(info[2].As<Napi::Number>().Int64Value());
  std::string json = Str(info[3]);
  WwInstance* i = nullptr;
  if (WardenError* err = ww_instance_new(engine, c, id, Bytes(json), json.size(), &i)) throw TritonError(env, err);
  return Napi::External<WwInstance>::New(env, i);
}

Napi::Value InstanceReply(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  auto* i = Ptr<WwInstance>(info[0], "instance");
  std::string json = Str(info[1]);
  std::vector<const uint8_t*> ptrs;
  std::vector<size_t> lens;
  Views(info[2], ptrs, lens);
  bool delivered = false;
  if (WardenError* err =
          ww_instance_reply(i, Bytes(json), json.size(), ptrs.data(), lens.data(), ptrs.size(), &delivered)) {
    throw TritonError(env, err);
  }
  return Napi::Boolean::New(env, delivered);
}

/** instanceExecute(instance, descriptor: Uint8Array, buffers): the descriptor is copied, the buffers are read in place
 * later. */
Napi::Value InstanceExecute(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  auto* i = Ptr<WwInstance>(info[0], "instance");
  if (!info[1].IsTypedArray()) throw Napi::TypeError::New(env, "expected a requests descriptor (Uint8Array)");
  Napi::Uint8Array d = info[1].As<Napi::Uint8Array>();
  std::vector<const uint8_t*> ptrs;
  std::vector<size_t> lens;
  Views(info[2], ptrs, lens);
  bool queued = false;
  if (WardenError* err =
          ww_instance_execute(i, d.Data(), d.ByteLength(), ptrs.data(), lens.data(), ptrs.size(), &queued)) {
    throw TritonError(env, err);
  }
  return Napi::Boolean::New(env, queued);
}

Napi::Value InstanceFree(const Napi::CallbackInfo& info) {
  ww_instance_free(Ptr<WwInstance>(info[0], "instance"));
  return info.Env().Undefined();
}

}  // namespace

/** `exports.wasmtime` of the addon. */
Napi::Object Init(Napi::Env env) {
  Napi::Object o = Napi::Object::New(env);
  o.Set("engineNew", Napi::Function::New(env, EngineNew, "engineNew"));
  o.Set("engineRef", Napi::Function::New(env, EngineRef, "engineRef"));
  o.Set("engineConfigKey", Napi::Function::New(env, EngineConfigKey, "engineConfigKey"));
  o.Set("engineFree", Napi::Function::New(env, EngineFree, "engineFree"));
  o.Set("compile", Napi::Function::New(env, Compile, "compile"));
  o.Set("loadCached", Napi::Function::New(env, LoadCached, "loadCached"));
  o.Set("cwasmMac", Napi::Function::New(env, CwasmMac, "cwasmMac"));
  o.Set("serialize", Napi::Function::New(env, Serialize, "serialize"));
  o.Set("componentFree", Napi::Function::New(env, ComponentFree, "componentFree"));
  o.Set("countMemories", Napi::Function::New(env, CountMemories, "countMemories"));
  o.Set("instanceNew", Napi::Function::New(env, InstanceNew, "instanceNew"));
  o.Set("instanceExecute", Napi::Function::New(env, InstanceExecute, "instanceExecute"));
  o.Set("instanceReply", Napi::Function::New(env, InstanceReply, "instanceReply"));
  o.Set("instanceFree", Napi::Function::New(env, InstanceFree, "instanceFree"));
  return o;
}

}  // namespace warden_wasmtime
