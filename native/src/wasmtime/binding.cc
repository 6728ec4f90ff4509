// The addon's binding of Warden's wasmtime engine (native/wasmtime, C ABI in warden_wasmtime.h):
// `wasmtime.*` functions over opaque externals, and the wake-up path that brings the engine's
// messages (instance ready, trap, log, host call, execute done) from its native threads to one JS
// callback: a queue drained by one JS-thread wake-up (addon/js_wake.h) per batch of messages. Output buffers
// become external ArrayBuffers (no copy) freed by the Rust side's ww_buffer_free.
#include <napi.h>

#include <mutex>
#include <string>
#include <vector>

#include "../addon/js_wake.h"
#include "warden/host.h"
#include "warden_wasmtime.h"

namespace warden_wasmtime {
namespace {

struct EngineCtx {
  std::mutex mu;
  std::vector<WwMessage*> queue;
  bool scheduled = false;
  bool closed = false;
  std::shared_ptr<warden::JsWake> wake;
  Napi::FunctionReference on_message;  // JS thread only
  WwEngine* engine = nullptr;
};

std::string TakeError(char* err, const char* fallback) {
  std::string s = err ? err : fallback;
  if (err) ww_string_free(err);
  return s;
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
      uint8_t* data = nullptr;
      size_t len = 0;
      void* owner = ww_message_take_buffer(m, i, &data, &len);
      if (!owner) {
        bufs.Set(i, Napi::Uint8Array::New(env, 0));
        continue;
      }
      if (len == 0) {
        ww_buffer_free(owner);
        bufs.Set(i, Napi::Uint8Array::New(env, 0));
        continue;
      }
      Napi::ArrayBuffer ab = Napi::ArrayBuffer::New(env, data, len, [](Napi::Env, void*, void* hint) { ww_buffer_free(hint); }, owner);
      bufs.Set(i, Napi::Uint8Array::New(env, len, ab, 0));
    }
    Napi::Value args[] = {Napi::Number::New(env, double(ww_message_instance(m))), Napi::Number::New(env, ww_message_kind(m)),
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

template <typename T>
T* Ptr(const Napi::Value& v, const char* what) {
  if (!v.IsExternal()) throw Napi::TypeError::New(v.Env(), std::string("expected a wasmtime ") + what + " handle");
  return v.As<Napi::External<T>>().Data();
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
  char* err = nullptr;
  ctx->engine = ww_engine_new(reinterpret_cast<const uint8_t*>(json.data()), json.size(), Notify, ctx, &err);
  if (!ctx->engine) {
    ctx->wake->Close();
    delete ctx;
    throw Napi::Error::New(env, TakeError(err, "cannot create the wasmtime engine"));
  }
  return Napi::External<EngineCtx>::New(env, ctx);
}

/** Keeps the event loop alive while the host waits for messages (on = true) or not. */
Napi::Value EngineRef(const Napi::CallbackInfo& info) {
  auto* ctx = Ptr<EngineCtx>(info[0], "engine");
  bool on = info[1].ToBoolean();
  if (on) ctx->wake->Ref();
  else ctx->wake->Unref();
  return info.Env().Undefined();
}

Napi::Value EngineConfigKey(const Napi::CallbackInfo& info) {
  auto* ctx = Ptr<EngineCtx>(info[0], "engine");
  uint8_t buf[128];
  size_t n = ww_engine_config_key(ctx->engine, buf, sizeof buf);
  return Napi::String::New(info.Env(), reinterpret_cast<const char*>(buf), n);
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
      : Napi::AsyncWorker(env, "warden-wasmtime-compile"), deferred_(Napi::Promise::Deferred::New(env)), engine_(e), bytes_(std::move(bytes)) {}
  Napi::Promise Promise() { return deferred_.Promise(); }
  void Execute() override {
    char* err = nullptr;
    out_ = ww_component_compile(engine_, bytes_.data(), bytes_.size(), &err);
    if (!out_) error_ = TakeError(err, "wasmtime failed");
    std::vector<uint8_t>().swap(bytes_);
  }
  void OnOK() override {
    Napi::Env env = Env();
    if (!out_) deferred_.Reject(Napi::Error::New(env, error_).Value());
    else deferred_.Resolve(Napi::External<WwComponent>::New(env, out_));
  }

 private:
  Napi::Promise::Deferred deferred_;
  WwEngine* engine_;
  std::vector<uint8_t> bytes_;
  WwComponent* out_ = nullptr;
  std::string error_;
};

Napi::Value Compile(const Napi::CallbackInfo& info) {
  auto* ctx = Ptr<EngineCtx>(info[0], "engine");
  if (!info[1].IsTypedArray()) throw Napi::TypeError::New(info.Env(), "expected a Uint8Array");
  Napi::Uint8Array u = info[1].As<Napi::Uint8Array>();
  auto* w = new ComponentWorker(info.Env(), ctx->engine, std::vector<uint8_t>(u.Data(), u.Data() + u.ByteLength()));
  Napi::Promise p = w->Promise();
  w->Queue();
  return p;
}


/** Loads a compile-cache entry off the JS thread after checking its MAC (ww_component_load_cached). */
class CachedWorker : public Napi::AsyncWorker {
 public:
  CachedWorker(Napi::Env env, WwEngine* e, std::string path, std::string key, std::string hash, std::string mac, uint64_t max_bytes, uint64_t settle_ms)
      : Napi::AsyncWorker(env, "warden-wasmtime-load-cached"), deferred_(Napi::Promise::Deferred::New(env)), engine_(e), path_(std::move(path)),
        key_(std::move(key)), hash_(std::move(hash)), mac_(std::move(mac)), max_bytes_(max_bytes), settle_ms_(settle_ms) {}
  Napi::Promise Promise() { return deferred_.Promise(); }
  void Execute() override {
    char* err = nullptr;
    out_ = ww_component_load_cached(engine_, reinterpret_cast<const uint8_t*>(path_.data()), path_.size(), reinterpret_cast<const uint8_t*>(key_.data()),
                                    reinterpret_cast<const uint8_t*>(hash_.data()), hash_.size(), reinterpret_cast<const uint8_t*>(mac_.data()), max_bytes_, settle_ms_, &check_, &miss_, &err);
    if (!out_) error_ = TakeError(err, "wasmtime failed");
  }
  void OnOK() override {
    Napi::Env env = Env();
    if (out_) {
      Napi::Object r = Napi::Object::New(env);
      r.Set("component", Napi::External<WwComponent>::New(env, out_));
      r.Set("check", Napi::Number::New(env, check_));
      deferred_.Resolve(r);
      return;
    }
    Napi::Error e = Napi::Error::New(env, error_);
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
  std::string error_;
};

/** Bytes of a Uint8Array argument that must be exactly `n` long. */
std::string Exact(const Napi::Value& v, size_t n, const char* what) {
  if (!v.IsTypedArray() || v.As<Napi::Uint8Array>().ByteLength() != n) throw Napi::TypeError::New(v.Env(), std::string("expected ") + what);
  Napi::Uint8Array u = v.As<Napi::Uint8Array>();
  return std::string(reinterpret_cast<const char*>(u.Data()), n);
}

/** loadCached(engine, path, key[32], hash, mac[32], maxBytes, settleMs) → Promise<{component, check}>; rejects with `.miss`. */
Napi::Value LoadCached(const Napi::CallbackInfo& info) {
  auto* ctx = Ptr<EngineCtx>(info[0], "engine");
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
  auto* w = new CachedWorker(info.Env(), ctx->engine, std::move(path), std::move(key), std::move(hash), std::move(mac), max > 0 ? uint64_t(max) : 0, settle_ms);
  Napi::Promise p = w->Promise();
  w->Queue();
  return p;
}

/** cwasmMac(engine, key[32], hash, payload) → Uint8Array(32). */
Napi::Value CwasmMac(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  auto* ctx = Ptr<EngineCtx>(info[0], "engine");
  std::string key = Exact(info[1], 32, "a 32-byte cache key");
  std::string hash = Str(info[2]);
  if (!info[3].IsTypedArray()) throw Napi::TypeError::New(env, "expected a Uint8Array");
  Napi::Uint8Array u = info[3].As<Napi::Uint8Array>();
  Napi::Uint8Array out = Napi::Uint8Array::New(env, 32);
  if (!ww_cwasm_mac(ctx->engine, reinterpret_cast<const uint8_t*>(key.data()), reinterpret_cast<const uint8_t*>(hash.data()), hash.size(), u.Data(), u.ByteLength(), out.Data()))
    throw Napi::Error::New(env, "cannot compute the cache MAC");
  return out;
}

Napi::Value Serialize(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  auto* c = Ptr<WwComponent>(info[0], "component");
  char* err = nullptr;
  WwMessage* m = ww_component_serialize(c, &err);
  if (!m) throw Napi::Error::New(env, TakeError(err, "serialize failed"));
  uint8_t* data = nullptr;
  size_t len = 0;
  void* owner = ww_message_take_buffer(m, 0, &data, &len);
  ww_message_free(m);
  if (!owner || len == 0) {
    if (owner) ww_buffer_free(owner);
    throw Napi::Error::New(env, "serialize produced nothing");
  }
  Napi::ArrayBuffer ab = Napi::ArrayBuffer::New(env, data, len, [](Napi::Env, void*, void* hint) { ww_buffer_free(hint); }, owner);
  return Napi::Uint8Array::New(env, len, ab, 0);
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
  auto* ctx = Ptr<EngineCtx>(info[0], "engine");
  auto* c = Ptr<WwComponent>(info[1], "component");
  uint64_t id = uint64_t(info[2].As<Napi::Number>().Int64Value());
  std::string json = Str(info[3]);
  char* err = nullptr;
  WwInstance* i = ww_instance_new(ctx->engine, c, id, reinterpret_cast<const uint8_t*>(json.data()), json.size(), &err);
  if (!i) throw Napi::Error::New(env, TakeError(err, "cannot start the instance"));
  return Napi::External<WwInstance>::New(env, i);
}

Napi::Value InstanceReply(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  auto* i = Ptr<WwInstance>(info[0], "instance");
  std::string json = Str(info[1]);
  std::vector<const uint8_t*> ptrs;
  std::vector<size_t> lens;
  Views(info[2], ptrs, lens);
  char* err = nullptr;
  bool ok = ww_instance_reply(i, reinterpret_cast<const uint8_t*>(json.data()), json.size(), ptrs.data(), lens.data(), ptrs.size(), &err);
  if (err) throw Napi::Error::New(env, TakeError(err, "wasmtime call failed"));
  return Napi::Boolean::New(env, ok);
}

/** instanceExecute(instance, descriptor: Uint8Array, buffers): the descriptor is copied, the buffers are read in place later. */
Napi::Value InstanceExecute(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  auto* i = Ptr<WwInstance>(info[0], "instance");
  if (!info[1].IsTypedArray()) throw Napi::TypeError::New(env, "expected a requests descriptor (Uint8Array)");
  Napi::Uint8Array d = info[1].As<Napi::Uint8Array>();
  std::vector<const uint8_t*> ptrs;
  std::vector<size_t> lens;
  Views(info[2], ptrs, lens);
  char* err = nullptr;
  bool ok = ww_instance_execute(i, d.Data(), d.ByteLength(), ptrs.data(), lens.data(), ptrs.size(), &err);
  if (err) throw Napi::Error::New(env, TakeError(err, "wasmtime call failed"));
  return Napi::Boolean::New(env, ok);
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
