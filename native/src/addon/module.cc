// Module entry: registers the addon's exports (loadBackend, the log bridge, custom metrics text,
// wake affinity, the in-process server bridge, shared memory, SO_REUSEPORT listeners, the thread
// CPU clock; the Backend / Model / Instance handles, IsoServer, Acceptor; the wasmtime and ort
// engine bindings), the async helper and errors.
#include <cstdlib>
#include <deque>

#include "addon.h"

namespace warden_wasmtime {
Napi::Object Init(Napi::Env env);  // native/src/addon/wasmtime/binding.cc
}
namespace warden_ort {
Napi::Object InitBinding(Napi::Env env);  // native/src/addon/ort/binding.cc
}
namespace warden_data_path {
Napi::Object InitBinding(Napi::Env env);  // native/src/addon/data_path/binding.cc
}

namespace warden_addon {

Napi::Error TritonError(Napi::Env env, TRITONSERVER_Error_Code code, const std::string& message) {
  Napi::Error e = Napi::Error::New(env, message);
  e.Set("tritonCode", Napi::Number::New(env, int(code)));
  return e;
}

Napi::Error TritonError(Napi::Env env, TRITONSERVER_Error* err) {
  TRITONSERVER_Error_Code code = TRITONSERVER_ErrorCode(err);
  std::string message = TRITONSERVER_ErrorMessage(err);
  TRITONSERVER_ErrorDelete(err);
  return TritonError(env, code, message);
}

Napi::Error TritonError(Napi::Env env, WardenError* err) {
  TRITONSERVER_Error_Code code = warden_error_code(err);
  std::string message = warden_error_message(err);
  warden_error_delete(err);
  return TritonError(env, code, message);
}

namespace {

class PromiseWorker : public Napi::AsyncWorker {
 public:
  PromiseWorker(Napi::Env env, const char* name, std::function<TRITONSERVER_Error*()> work,
                std::function<Napi::Value(Napi::Env)> resolve)
      : Napi::AsyncWorker(env, name),
        deferred_(Napi::Promise::Deferred::New(env)),
        work_(std::move(work)),
        resolve_(std::move(resolve)) {}
  ~PromiseWorker() override {
    if (error_ != nullptr) TRITONSERVER_ErrorDelete(error_);
  }
  Napi::Promise Promise() { return deferred_.Promise(); }
  void Execute() override { error_ = work_(); }
  void OnOK() override {
    Napi::Env env = Env();
    if (error_ != nullptr) {
      TRITONSERVER_Error* e = error_;
      error_ = nullptr;
      deferred_.Reject(TritonError(env, e).Value());
      return;
    }
    try {
      deferred_.Resolve(resolve_(env));
    } catch (const Napi::Error& e) {
      deferred_.Reject(e.Value());
    }
  }

 private:
  Napi::Promise::Deferred deferred_;
  std::function<TRITONSERVER_Error*()> work_;
  std::function<Napi::Value(Napi::Env)> resolve_;
  TRITONSERVER_Error* error_ = nullptr;
};

// ---------------------------------------------------------------- log bridge

struct LogLine {
  TRITONSERVER_LogLevel level;
  std::string file;
  int line;
  std::string message;
};

/** Backend log lines, queued from any thread, delivered to one JS callback per wakeup. */
struct LogBridge {
  std::mutex mu;
  std::deque<LogLine> lines;
  uint64_t dropped = 0;
  bool scheduled = false;
  bool active = false;
  Napi::ThreadSafeFunction tsfn;
  Napi::FunctionReference callback;  // JS thread only
};
LogBridge& log_bridge = *new LogBridge;  // never destroyed: backends may log during exit
constexpr size_t kMaxQueuedLogLines = 10000;

void OnNativeLog(void*, TRITONSERVER_LogLevel level, const char* file, int line, const char* msg) {
  LogBridge& b = log_bridge;
  std::unique_lock<std::mutex> lk(b.mu);
  if (!b.active) return;
  if (b.lines.size() >= kMaxQueuedLogLines) {
    b.dropped++;
    return;
  }
  b.lines.push_back(LogLine{level, file, line, msg});
  if (b.scheduled) return;
  b.scheduled = true;
  lk.unlock();
  b.tsfn.NonBlockingCall([](Napi::Env env, Napi::Function) {
    std::deque<LogLine> lines;
    uint64_t dropped;
    {
      std::lock_guard<std::mutex> lk2(log_bridge.mu);
      lines.swap(log_bridge.lines);
      dropped = log_bridge.dropped;
      log_bridge.dropped = 0;
      log_bridge.scheduled = false;
    }
    if (log_bridge.callback.IsEmpty()) return;
    Napi::HandleScope scope(env);
    for (const LogLine& l : lines) {
      log_bridge.callback.Call({Napi::Number::New(env, int(l.level)), Napi::String::New(env, l.file),
                                Napi::Number::New(env, l.line), Napi::String::New(env, l.message)});
    }
    if (dropped > 0) {
      log_bridge.callback.Call(
          {Napi::Number::New(env, int(TRITONSERVER_LOG_WARN)), Napi::String::New(env, "warden_native"),
           Napi::Number::New(env, 0),
           Napi::String::New(env, std::to_string(dropped) + " backend log lines dropped (queue full)")});
    }
  });
}

/** setLogger(fn(level, file, line, msg), {info, warn, error, verbose}) */
Napi::Value SetLogger(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!info[0].IsFunction() || !info[1].IsObject()) {
    throw Napi::TypeError::New(env, "setLogger(fn, levels)");
  }
  Napi::Object levels = info[1].As<Napi::Object>();
  auto flag = [&](const char* k) { return levels.Get(k).ToBoolean().Value(); };
  LogBridge& b = log_bridge;
  {
    std::lock_guard<std::mutex> lk(b.mu);
    if (!b.active) {
      b.tsfn = Napi::ThreadSafeFunction::New(env, Napi::Function(), "warden-native-log", 0, 1);
      b.tsfn.Unref(env);  // logging never keeps the process alive
      b.active = true;
    }
  }
  b.callback = Napi::Persistent(info[0].As<Napi::Function>());
  WARDEN_SetLogSink(&OnNativeLog, nullptr, flag("info"), flag("warn"), flag("error"), flag("verbose"));
  return env.Undefined();
}

/** loadBackend({name, libraryPath, artifactsDir, configJson}) -> Promise<BackendHandle> */
Napi::Value LoadBackend(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!info[0].IsObject()) throw Napi::TypeError::New(env, "loadBackend(options)");
  Napi::Object o = info[0].As<Napi::Object>();
  std::string name = o.Get("name").ToString();
  std::string lib = o.Get("libraryPath").ToString();
  std::string artifacts = o.Get("artifactsDir").ToString();
  std::string config = o.Get("configJson").ToString();
  auto out = std::make_shared<TRITONBACKEND_Backend*>(nullptr);
  return RunAsync(
      env, "warden-load-backend",
      [=] { return WARDEN_BackendLoad(name.c_str(), lib.c_str(), artifacts.c_str(), config.c_str(), out.get()); },
      [out](Napi::Env env) {
        Napi::Object h = BackendHandle::constructor.New({});
        BackendHandle::Unwrap(h)->backend = *out;
        return h;
      });
}

Napi::Value CustomMetricsText(const Napi::CallbackInfo& info) {
  char* text = WARDEN_CustomMetricsText();
  Napi::String s = Napi::String::New(info.Env(), text == nullptr ? "" : text);
  std::free(text);
  return s;
}

/** wakeAffinityPlace(tid) -> whether the sleeping thread `tid` was moved onto this CPU (wake.cc). */
Napi::Value WakeAffinityPlace(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() != 1 || !info[0].IsNumber()) throw Napi::TypeError::New(env, "wakeAffinityPlace(tid: number)");
  return Napi::Boolean::New(env, WARDEN_WakeAffinityPlace(info[0].As<Napi::Number>().Int32Value(), 0));
}

/** wakeAffinityUnpinSelf(): the answer of placed work is back on this (JS) thread (wake.cc). */
Napi::Value WakeAffinityUnpinSelf(const Napi::CallbackInfo& info) {
  WARDEN_WakeAffinityUnpinSelf();
  return info.Env().Undefined();
}

/** wakeAffinityPlacements() -> how many threads placement has moved in this process. */
Napi::Value WakeAffinityPlacements(const Napi::CallbackInfo& info) {
  return Napi::Number::New(info.Env(), double(WARDEN_WakeAffinityPlacements()));
}

/** setWakeAffinity(on): thread hand-off placement (WARDEN_SetWakeAffinity, src/core/wake.cc). */
Napi::Value SetWakeAffinity(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() != 1 || !info[0].IsBoolean()) {
    throw Napi::TypeError::New(env, "setWakeAffinity(on: boolean)");
  }
  WARDEN_SetWakeAffinity(info[0].As<Napi::Boolean>().Value());
  return env.Undefined();
}

Napi::Value ApiVersion(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  uint32_t bmaj = 0, bmin = 0, smaj = 0, smin = 0;
  TRITONSERVER_ErrorDelete(TRITONBACKEND_ApiVersion(&bmaj, &bmin));
  TRITONSERVER_ErrorDelete(TRITONSERVER_ApiVersion(&smaj, &smin));
  Napi::Object o = Napi::Object::New(env);
  o.Set("backend", std::to_string(bmaj) + "." + std::to_string(bmin));
  o.Set("server", std::to_string(smaj) + "." + std::to_string(smin));
  return o;
}

}  // namespace

Napi::Promise RunAsync(Napi::Env env, const char* name, std::function<TRITONSERVER_Error*()> work,
                       std::function<Napi::Value(Napi::Env)> resolve) {
  auto* w = new PromiseWorker(env, name, std::move(work), std::move(resolve));
  Napi::Promise p = w->Promise();
  w->Queue();  // deletes itself when done
  return p;
}

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  exports.Set("loadBackend", Napi::Function::New(env, LoadBackend, "loadBackend"));
  exports.Set("setLogger", Napi::Function::New(env, SetLogger, "setLogger"));
  exports.Set("customMetricsText", Napi::Function::New(env, CustomMetricsText, "customMetricsText"));
  exports.Set("apiVersion", Napi::Function::New(env, ApiVersion, "apiVersion"));
  WARDEN_WakeAffinityMarkLoopThread();  // this environment's JS thread (core/wake.cc)
  exports.Set("setWakeAffinity", Napi::Function::New(env, SetWakeAffinity, "setWakeAffinity"));
  exports.Set("wakeAffinityPlace", Napi::Function::New(env, WakeAffinityPlace, "wakeAffinityPlace"));
  exports.Set("wakeAffinityUnpinSelf", Napi::Function::New(env, WakeAffinityUnpinSelf, "wakeAffinityUnpinSelf"));
  exports.Set("wakeAffinityPlacements", Napi::Function::New(env, WakeAffinityPlacements, "wakeAffinityPlacements"));
  exports.Set("setServerHandler", Napi::Function::New(env, SetServerHandler, "setServerHandler"));
  exports.Set("closeServerBridge", Napi::Function::New(env, CloseServerBridge, "closeServerBridge"));
  exports.Set("serverRespond", Napi::Function::New(env, ServerRespond, "serverRespond"));
  exports.Set("inflightInferenceRequests",
              Napi::Function::New(env, InflightInferenceRequests, "inflightInferenceRequests"));
  exports.Set("shmCreate", Napi::Function::New(env, ShmCreate, "shmCreate"));
  exports.Set("shmOpen", Napi::Function::New(env, ShmOpen, "shmOpen"));
  exports.Set("shmUnlink", Napi::Function::New(env, ShmUnlink, "shmUnlink"));
  exports.Set("reusePortListen", Napi::Function::New(env, ReusePortListen, "reusePortListen"));
  exports.Set("closeFd", Napi::Function::New(env, CloseFd, "closeFd"));
  exports.Set("threadCpuNs", Napi::Function::New(env, ThreadCpuNs, "threadCpuNs"));
  exports.Set("BackendHandle", BackendHandle::Init(env));
  exports.Set("ModelHandle", ModelHandle::Init(env));
  exports.Set("InstanceHandle", InstanceHandle::Init(env));
  exports.Set("IsoServer", IsoServer::Init(env));
  exports.Set("Acceptor", Acceptor::Init(env));
  exports.Set("wasmtime", warden_wasmtime::Init(env));
  exports.Set("ort", warden_ort::InitBinding(env));
  exports.Set("dataPath", warden_data_path::InitBinding(env));
  return exports;
}

NODE_API_MODULE(warden_native, Init)

}  // namespace warden_addon
