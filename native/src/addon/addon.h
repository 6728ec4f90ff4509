// Warden's Node addon over libtritonserver.so (warden/host.h): a thin layer that turns JS requests
// into native ones, runs backend calls off the JS thread, and brings responses back through one
// JsWake wake-up per batch of events (js_wake.h).
#pragma once

#include <napi.h>

#include "js_wake.h"

#include <atomic>
#include <cmath>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "warden/engine_error.h"
#include "warden/host.h"
#include "warden/ort_engine.h"

/** Whether a JS number is a whole value that converts to int64 without undefined behaviour
 *  (finite, integral, |x| < 2^63); others travel as TRITONSERVER_PARAMETER_DOUBLE. */
inline bool IsInt64Number(double x) { return std::isfinite(x) && x == std::floor(x) && std::fabs(x) < 9.2e18; }

/**
 * One request/response parameter value from JS into `p` (key untouched): string → STRING (its
 * UTF-8 kept alive by `store(std::string) -> const char*`), boolean → BOOL, bigint → INT (int64),
 * number → INT when {@link IsInt64Number}, else DOUBLE.
 * @return false, leaving `p` as it was, for any other JS type (the caller decides: refuse or stringify)
 */
template <typename Store>
bool ScalarParamFromJs(const Napi::Value& v, WARDEN_ParamDesc& p, Store&& store) {
  if (v.IsString()) {
    p.type = TRITONSERVER_PARAMETER_STRING;
    p.string_value = store(v.As<Napi::String>().Utf8Value());
  } else if (v.IsBoolean()) {
    p.type = TRITONSERVER_PARAMETER_BOOL;
    p.bool_value = v.As<Napi::Boolean>().Value();
  } else if (v.IsBigInt()) {
    bool lossless = true;
    p.type = TRITONSERVER_PARAMETER_INT;
    p.int_value = v.As<Napi::BigInt>().Int64Value(&lossless);
  } else if (v.IsNumber()) {
    double x = v.As<Napi::Number>().DoubleValue();
    if (IsInt64Number(x)) {
      p.type = TRITONSERVER_PARAMETER_INT;
      p.int_value = int64_t(x);
    } else {
      p.type = TRITONSERVER_PARAMETER_DOUBLE;
      p.double_value = x;
    }
  } else {
    return false;
  }
  return true;
}

namespace warden_addon {

/** A JS Error carrying `tritonCode` (TRITONSERVER_Error_Code); takes ownership of `err`. */
Napi::Error TritonError(Napi::Env env, TRITONSERVER_Error* err);
Napi::Error TritonError(Napi::Env env, TRITONSERVER_Error_Code code, const std::string& message);
/** The same for an error of a Rust engine (warden/engine_error.h); takes ownership of `err`. */
Napi::Error TritonError(Napi::Env env, WardenError* err);

/** Runs `work` on the libuv pool and settles a promise with `resolve(env)` or the error. */
Napi::Promise RunAsync(Napi::Env env, const char* name, std::function<TRITONSERVER_Error*()> work,
                       std::function<Napi::Value(Napi::Env)> resolve);

// ---------------------------------------------------------------- instance events

/** Something a native thread reports to JS. */
struct Event {
  enum Kind { kResponse, kReleased, kJobDone } kind;
  uint32_t token = 0;                                  // request token (responses, releases) or job id (jobs)
  TRITONSERVER_InferenceResponse* response = nullptr;  // owned until converted
  uint32_t flags = 0;
  TRITONSERVER_Error* error = nullptr;  // job error, owned
  bool has_request_stats = false;
  WARDEN_RequestStats request_stats{};
  bool has_exec_stats = false;
  WARDEN_ExecStats exec_stats{};
  /** A release with TRITONSERVER_REQUEST_RELEASE_RESCHEDULE (WARDEN_RequestStats.rescheduled). */
  bool rescheduled = false;
  /** This FINAL or release was the second of the two: the request is done on the native side. */
  bool completes_request = false;
};

class InstanceHandle;

/** Multi-producer (native threads) / single-consumer (JS thread) event queue of one instance. */
class EventQueue : public std::enable_shared_from_this<EventQueue> {
 public:
  explicit EventQueue(InstanceHandle* owner) : owner_(owner) {}
  /** Discards what was never drained (any thread: the last owner may be a backend thread). */
  ~EventQueue();
  /** JS thread, once, right after construction: creates the JS-thread wake-up (js_wake.h). */
  void Start(Napi::Env env);
  /** Any thread. The JS thread is woken after the lock is released (js_wake.h says why). */
  void Push(Event&& e);
  /** JS thread: take everything queued so far. */
  std::vector<Event> Drain();
  /** JS thread: stop accepting events (late ones are dropped), discard what is queued, close the wake-up. */
  void Close();
  void Ref() { wake_->Ref(); }
  void Unref() { wake_->Unref(); }

 private:
  std::mutex mu_;
  std::vector<Event> events_;
  bool scheduled_ = false;
  bool closed_ = false;
  std::shared_ptr<warden::JsWake> wake_;
  InstanceHandle* owner_;  // JS thread only
};

void DiscardEvent(Event& e);

// ---------------------------------------------------------------- handles

class BackendHandle : public Napi::ObjectWrap<BackendHandle> {
 public:
  static Napi::Function Init(Napi::Env env);
  static Napi::FunctionReference constructor;
  explicit BackendHandle(const Napi::CallbackInfo& info);
  TRITONBACKEND_Backend* backend = nullptr;

 private:
  Napi::Value Attributes(const Napi::CallbackInfo& info);
  Napi::Value LoadModel(const Napi::CallbackInfo& info);
  Napi::Value Unload(const Napi::CallbackInfo& info);
};

class ModelHandle : public Napi::ObjectWrap<ModelHandle> {
 public:
  static Napi::Function Init(Napi::Env env);
  static Napi::FunctionReference constructor;
  explicit ModelHandle(const Napi::CallbackInfo& info);
  TRITONBACKEND_Model* model = nullptr;

 private:
  Napi::Value SetConfigJson(const Napi::CallbackInfo& info);
  Napi::Value UpdateConfig(const Napi::CallbackInfo& info);
  Napi::Value CreateInstance(const Napi::CallbackInfo& info);
  Napi::Value LiveObjects(const Napi::CallbackInfo& info);
  Napi::Value Unload(const Napi::CallbackInfo& info);
};

class InstanceHandle : public Napi::ObjectWrap<InstanceHandle> {
 public:
  static Napi::Function Init(Napi::Env env);
  static Napi::FunctionReference constructor;
  explicit InstanceHandle(const Napi::CallbackInfo& info);
  /** JS thread: called by the queue's TSFN with everything that happened since the last call. */
  void OnEvents(Napi::Env env, std::vector<Event> events);

  TRITONBACKEND_ModelInstance* instance = nullptr;

 private:
  Napi::Value Initialize(const Napi::CallbackInfo& info);
  Napi::Value Execute(const Napi::CallbackInfo& info);
  Napi::Value Finalize(const Napi::CallbackInfo& info);
  Napi::Value IsReady(const Napi::CallbackInfo& info);
  Napi::Value CheckReady(const Napi::CallbackInfo& info);
  Napi::Value Outstanding(const Napi::CallbackInfo& info);
  Napi::Value Abandon(const Napi::CallbackInfo& info);

  uint32_t NewJob(Napi::Env env, Napi::Promise::Deferred deferred, bool delete_after);
  void AddInflight(Napi::Env env, int64_t delta);

  std::shared_ptr<EventQueue> queue_;
  Napi::FunctionReference on_events_;
  std::map<uint32_t, Napi::Promise::Deferred> jobs_;
  uint32_t next_job_ = 1;
  uint32_t delete_job_ = 0;  // the finalize job: delete the instance when it is done
  int64_t inflight_ = 0;     // jobs + requests not yet final-and-released
  int64_t requests_ = 0;     // requests not yet final-and-released
};

// ---------------------------------------------------------------- isolation ring (iso_server.cc)

class IsoServerCore;

/**
 * The backend-host process's side of the isolation ring: a native thread serves
 * Execute records from the parent for the instances added to it (iso_ring.h).
 */
class IsoServer : public Napi::ObjectWrap<IsoServer> {
 public:
  static Napi::Function Init(Napi::Env env);
  static Napi::FunctionReference constructor;
  explicit IsoServer(const Napi::CallbackInfo& info);
  ~IsoServer() override;

 private:
  Napi::Value AddInstance(const Napi::CallbackInfo& info);
  Napi::Value RemoveInstance(const Napi::CallbackInfo& info);
  Napi::Value Outstanding(const Napi::CallbackInfo& info);
  Napi::Value Close(const Napi::CallbackInfo& info);
  Napi::Value ReaderTid(const Napi::CallbackInfo& info);
  std::unique_ptr<IsoServerCore> core_;
  Napi::Reference<Napi::ArrayBuffer> keep_in_, keep_out_;
};

class AcceptorCore;

/**
 * The HTTP port's connection admission on a native thread (acceptor.cc): accepts, closes what is
 * over the per-address or total cap, and hands the admitted descriptors to JS in batches.
 */
class Acceptor : public Napi::ObjectWrap<Acceptor> {
 public:
  static Napi::Function Init(Napi::Env env);
  static Napi::FunctionReference constructor;
  explicit Acceptor(const Napi::CallbackInfo& info);
  ~Acceptor() override;

 private:
  Napi::Value Release(const Napi::CallbackInfo& info);
  Napi::Value Close(const Napi::CallbackInfo& info);
  void Shutdown();
  std::unique_ptr<AcceptorCore> core_;
  std::shared_ptr<warden::JsWake> wake_;
  Napi::FunctionReference on_connections_;
};

// ---------------------------------------------------------------- conversions (convert.cc)

/** Holds everything a WARDEN_RequestDesc batch points into while it is being submitted. */
struct RequestBatch {
  std::deque<std::string> strings;  // deque: element addresses stay stable while appending
  std::deque<std::vector<int64_t>> shapes;
  std::vector<std::vector<WARDEN_InputDesc>> inputs;
  std::vector<std::vector<const char*>> outputs;
  std::vector<std::vector<WARDEN_ParamDesc>> params;
  std::vector<WARDEN_RequestDesc> descs;
};

/** Per-request context for the WARDEN callbacks; freed after both FINAL and release. */
struct RequestContext {
  std::shared_ptr<EventQueue> queue;
  uint32_t token;
  std::atomic<int> remaining{2};
};

/** Point a request's callbacks at the instance callbacks with `ctx` (instance.cc). */
void ParseRequestsCallbacks(WARDEN_RequestDesc* d, RequestContext* ctx);
/** Parse JS requests into `batch` (throws Napi::Error on malformed input). */
void ParseRequests(Napi::Env env, Napi::Array requests, const std::shared_ptr<EventQueue>& queue, RequestBatch* batch,
                   std::vector<RequestContext*>* contexts);
/** Build the JS event object for a response (and free the response). */
Napi::Object ResponseEvent(Napi::Env env, Event& e);
Napi::Object ReleasedEvent(Napi::Env env, const Event& e);
Napi::Value ExecStatsValue(Napi::Env env, const WARDEN_ExecStats& s);

// ---------------------------------------------------------------- server bridge (server.cc)

Napi::Value SetServerHandler(const Napi::CallbackInfo& info);
Napi::Value CloseServerBridge(const Napi::CallbackInfo& info);
Napi::Value ServerRespond(const Napi::CallbackInfo& info);
Napi::Value InflightInferenceRequests(const Napi::CallbackInfo& info);

// ---------------------------------------------------------------- shared memory (shm.cc)

Napi::Value ShmCreate(const Napi::CallbackInfo& info);
Napi::Value ShmOpen(const Napi::CallbackInfo& info);
Napi::Value ShmUnlink(const Napi::CallbackInfo& info);

// ---------------------------------------------------------------- listening sockets (net.cc)

Napi::Value ReusePortListen(const Napi::CallbackInfo& info);
Napi::Value CloseFd(const Napi::CallbackInfo& info);

// ---------------------------------------------------------------- clocks (thread_clock.cc)

Napi::Value ThreadCpuNs(const Napi::CallbackInfo& info);

/** Extract an array of strings (throws on a non-string element). */
std::vector<std::string> StringArray(Napi::Env env, Napi::Value v, const char* what);

}  // namespace warden_addon

namespace warden_ort {
/** The engine session of an `ort.open` session external (ort/binding.cc).
 * @throws Napi::Error when `v` is not one, or is closed */
WoSession* SessionOf(const Napi::Value& v);
}  // namespace warden_ort
