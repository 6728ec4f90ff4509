// The addon's binding of the native data path (native/rust/data-path, C ABI in
// warden/data_path.h): `dataPath.start(fd, socketPath, options)` → a server external, and
// `listenGrpc` / `publish` / `publishOrt` / `publishWasm` / `setJsInfer` / `answerJs` / `declineJs` /
// `releaseConnection` / `unpublish` / `inflight` / `takeStats` / `counters` / `beginClose` / `close` over it. The host
// API table points the data path at this process's libtritonserver.so.
#include <napi.h>
#include <unistd.h>

#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "../addon.h"
#include "../js_wake.h"
#include "warden/data_path.h"
#include "warden/ort_engine.h"

namespace warden_data_path {
namespace {

using warden_addon::InstanceHandle;
using warden_addon::TritonError;

// The hand-over's queue (wd_server_set_js_infer): requests and cancellations from the data path's
// threads, and the connections moving to JS (wd_server_move_connections), drained on the JS thread
// by one wake-up per batch (js_wake.h).
struct HandOver {
  std::mutex mu;
  std::vector<std::pair<WdJsRequest*, uint64_t>> queue;  // (request, 0) or (NULL, cancelled token)
  std::vector<std::pair<int, uint64_t>> moves;           // (socket, token)
  bool scheduled = false;
  bool closed = false;
  std::shared_ptr<warden::JsWake> wake;
  Napi::FunctionReference on_request;  // JS thread only
  Napi::FunctionReference on_cancel;
  Napi::FunctionReference on_connection;  // empty: connections do not move
};

struct ServerRef {
  WdServer* server = nullptr;
  HandOver* hand_over = nullptr;
};

// A handed-over request as JS holds it until it answers; one JS dropped unanswered is declined.
struct JsRequestRef {
  WdJsRequest* request = nullptr;
};

// Stops the hand-over (JS thread, after the server's threads stopped): what is queued is declined.
void CloseHandOver(ServerRef* ref) {
  HandOver* h = ref->hand_over;
  if (h == nullptr) return;
  ref->hand_over = nullptr;
  std::vector<std::pair<WdJsRequest*, uint64_t>> left;
  std::vector<std::pair<int, uint64_t>> moves;
  {
    std::lock_guard<std::mutex> lock(h->mu);
    h->closed = true;
    left.swap(h->queue);
    moves.swap(h->moves);
  }
  for (auto& [r, _] : left)
    if (r != nullptr) wd_js_decline(r);
  for (auto& [fd, _] : moves) close(fd);
  h->wake->Close();
  delete h;
}

// Frees the server: its threads stop first, then the hand-over closes.
void FreeServer(ServerRef* ref) {
  wd_server_free(ref->server);
  ref->server = nullptr;
  CloseHandOver(ref);
}

struct RouteRef {
  WdRoute* route = nullptr;
};

WdServer* ServerOf(const Napi::Value& v) {
  if (!v.IsExternal()) throw Napi::TypeError::New(v.Env(), "expected a data path server");
  ServerRef* ref = v.As<Napi::External<ServerRef>>().Data();
  if (ref->server == nullptr) throw Napi::Error::New(v.Env(), "the data path server is closed");
  return ref->server;
}

WdRoute* RouteOf(const Napi::Value& v) {
  if (!v.IsExternal()) throw Napi::TypeError::New(v.Env(), "expected a data path route");
  return v.As<Napi::External<RouteRef>>().Data()->route;
}

const WdHostApi kHostApi = {
    WARDEN_InstanceExecute,
    TRITONSERVER_InferenceResponseError,
    TRITONSERVER_InferenceResponseOutputCount,
    TRITONSERVER_InferenceResponseOutput,
    TRITONSERVER_InferenceResponseDelete,
    TRITONSERVER_ErrorCode,
    TRITONSERVER_ErrorMessage,
    TRITONSERVER_ErrorDelete,
};

uint64_t U64(const Napi::Object& o, const char* key, uint64_t fallback) {
  Napi::Value v = o.Get(key);
  if (!v.IsNumber()) return fallback;
  double d = v.As<Napi::Number>().DoubleValue();
  return d < 0 ? 0 : uint64_t(d);
}

// start(fd, socketPath, {threads, maxConnections, maxConnectionsPerAddress, maxBodyBytes, headerTimeoutMs,
// bodyTimeoutMs, maxJsonOutputBytes, inferRestriction?: {header, value}})
Napi::Value Start(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  int fd = info[0].As<Napi::Number>().Int32Value();
  std::string path = info[1].As<Napi::String>().Utf8Value();
  Napi::Object o = info[2].As<Napi::Object>();
  WdServerOptions opts{};
  opts.threads = uint32_t(U64(o, "threads", 1));
  opts.max_connections = U64(o, "maxConnections", 1024);
  opts.max_connections_per_address = U64(o, "maxConnectionsPerAddress", 0);
  opts.max_body_bytes = U64(o, "maxBodyBytes", 1 << 20);
  opts.header_timeout_ms = U64(o, "headerTimeoutMs", 60000);
  opts.body_timeout_ms = U64(o, "bodyTimeoutMs", 300000);
  opts.max_json_output_bytes = U64(o, "maxJsonOutputBytes", 64 << 20);
  std::string restrict_header, restrict_value;
  if (o.Get("inferRestriction").IsObject()) {
    Napi::Object r = o.Get("inferRestriction").As<Napi::Object>();
    restrict_header = r.Get("header").As<Napi::String>().Utf8Value();
    restrict_value = r.Get("value").As<Napi::String>().Utf8Value();
    opts.infer_restriction_header = restrict_header.c_str();
    opts.infer_restriction_value = reinterpret_cast<const uint8_t*>(restrict_value.data());
    opts.infer_restriction_value_len = restrict_value.size();
  }
  WdServer* server = nullptr;
  if (WardenError* err = wd_server_start(&kHostApi, fd, path.c_str(), &opts, &server)) throw TritonError(env, err);
  return Napi::External<ServerRef>::New(env, new ServerRef{server}, [](Napi::Env, ServerRef* ref) {
    FreeServer(ref);
    delete ref;
  });
}

// listenGrpc(server, fd, grpcSocketPath): serves the gRPC port too.
Napi::Value ListenGrpc(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  WdServer* server = ServerOf(info[0]);
  int fd = info[1].As<Napi::Number>().Int32Value();
  std::string path = info[2].As<Napi::String>().Utf8Value();
  if (WardenError* err = wd_server_listen_grpc(server, fd, path.c_str())) throw TritonError(env, err);
  return env.Undefined();
}

// publish(server, specJson, instances: InstanceHandle[]) → route
Napi::Value Publish(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  WdServer* server = ServerOf(info[0]);
  std::string spec = info[1].As<Napi::String>().Utf8Value();
  Napi::Array list = info[2].As<Napi::Array>();
  std::vector<TRITONBACKEND_ModelInstance*> instances;
  for (uint32_t i = 0; i < list.Length(); i++) {
    Napi::Value v = list.Get(i);
    if (!v.IsObject() || !v.As<Napi::Object>().InstanceOf(InstanceHandle::constructor.Value()))
      throw Napi::TypeError::New(env, "expected instance handles");
    InstanceHandle* h = Napi::ObjectWrap<InstanceHandle>::Unwrap(v.As<Napi::Object>());
    if (h->instance == nullptr) throw Napi::Error::New(env, "the instance is finalized");
    instances.push_back(h->instance);
  }
  WdRoute* route = nullptr;
  if (WardenError* err = wd_server_publish(server, reinterpret_cast<const uint8_t*>(spec.data()), spec.size(),
                                           instances.data(), instances.size(), &route))
    throw TritonError(env, err);
  return Napi::External<RouteRef>::New(env, new RouteRef{route}, [](Napi::Env, RouteRef* ref) {
    wd_route_free(ref->route);
    delete ref;
  });
}

// publishOrt(server, specJson, sessions: ORT session externals (the `ort` binding's)) → route
Napi::Value PublishOrt(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  WdServer* server = ServerOf(info[0]);
  std::string spec = info[1].As<Napi::String>().Utf8Value();
  Napi::Array list = info[2].As<Napi::Array>();
  std::vector<const WoSession*> sessions;
  for (uint32_t i = 0; i < list.Length(); i++) sessions.push_back(warden_ort::SessionOf(list.Get(i)));
  WdRoute* route = nullptr;
  if (WardenError* err = wd_server_publish_ort(server, reinterpret_cast<const uint8_t*>(spec.data()), spec.size(),
                                               sessions.data(), sessions.size(), &route))
    throw TritonError(env, err);
  return Napi::External<RouteRef>::New(env, new RouteRef{route}, [](Napi::Env, RouteRef* ref) {
    wd_route_free(ref->route);
    delete ref;
  });
}

// publishWasm(server, specJson, instances: wasmtime instance externals (the `wasmtime` binding's),
// executeMs) → route
Napi::Value PublishWasm(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  WdServer* server = ServerOf(info[0]);
  std::string spec = info[1].As<Napi::String>().Utf8Value();
  Napi::Array list = info[2].As<Napi::Array>();
  uint64_t execute_ms = uint64_t(info[3].As<Napi::Number>().Int64Value());
  std::vector<const WwInstance*> instances;
  for (uint32_t i = 0; i < list.Length(); i++) {
    Napi::Value v = list.Get(i);
    if (!v.IsExternal()) throw Napi::TypeError::New(env, "expected wasmtime instance handles");
    instances.push_back(v.As<Napi::External<WwInstance>>().Data());
  }
  WdRoute* route = nullptr;
  if (WardenError* err = wd_server_publish_wasm(server, reinterpret_cast<const uint8_t*>(spec.data()), spec.size(),
                                                instances.data(), instances.size(), execute_ms, &route))
    throw TritonError(env, err);
  return Napi::External<RouteRef>::New(env, new RouteRef{route}, [](Napi::Env, RouteRef* ref) {
    wd_route_free(ref->route);
    delete ref;
  });
}

// Any data path thread: queues the request (or cancellation) and wakes the JS thread once per batch.
void NotifyJs(void* p, WdJsRequest* request, uint64_t cancelled) {
  auto* h = static_cast<HandOver*>(p);
  {
    std::lock_guard<std::mutex> lock(h->mu);
    if (h->closed) {
      if (request != nullptr) wd_js_decline(request);
      return;
    }
    h->queue.emplace_back(request, cancelled);
    if (h->scheduled) return;
    h->scheduled = true;
  }
  h->wake->Send();
}

// Any data path thread: queues a moving connection and wakes the JS thread once per batch.
void MoveToJs(void* p, int fd, uint64_t token) {
  auto* h = static_cast<HandOver*>(p);
  {
    std::lock_guard<std::mutex> lock(h->mu);
    if (h->closed) {
      close(fd);
      return;
    }
    h->moves.emplace_back(fd, token);
    if (h->scheduled) return;
    h->scheduled = true;
  }
  h->wake->Send();
}

Napi::Value OptionalString(Napi::Env env, const uint8_t* p, int64_t len) {
  if (len < 0) return env.Undefined();
  return Napi::String::New(env, reinterpret_cast<const char*>(p), size_t(len));
}

void DrainHandOver(Napi::Env env, HandOver* h) {
  std::vector<std::pair<WdJsRequest*, uint64_t>> batch;
  std::vector<std::pair<int, uint64_t>> moves;
  {
    std::lock_guard<std::mutex> lock(h->mu);
    batch.swap(h->queue);
    moves.swap(h->moves);
    h->scheduled = false;
  }
  Napi::HandleScope scope(env);
  for (auto& [fd, token] : moves) {
    try {
      h->on_connection.Call({Napi::Number::New(env, fd), Napi::Number::New(env, double(token))});
    } catch (const Napi::Error& e) {
      fprintf(stderr, "[warden data path] connection handler threw: %s\n", e.Message().c_str());
    }
  }
  for (auto& [r, cancelled] : batch) {
    try {
      if (r == nullptr) {
        h->on_cancel.Call({Napi::Number::New(env, double(cancelled))});
        continue;
      }
      WdJsRequestParts p{};
      wd_js_request_parts(r, &p);
      auto handle = Napi::External<JsRequestRef>::New(env, new JsRequestRef{r}, [](Napi::Env, JsRequestRef* ref) {
        if (ref->request != nullptr) wd_js_decline(ref->request);
        delete ref;
      });
      h->on_request.Call({handle, Napi::Number::New(env, double(p.token)),
                          Napi::String::New(env, reinterpret_cast<const char*>(p.model), p.model_len),
                          Napi::Number::New(env, double(p.version)),
                          Napi::Buffer<uint8_t>::Copy(env, p.body, p.body_len),
                          OptionalString(env, p.header_length, p.header_length_len),
                          OptionalString(env, p.authorization, p.authorization_len)});
    } catch (const Napi::Error& e) {
      // a throwing handler is a host bug: keep delivering the rest (an unanswered request is
      // declined when its handle is collected)
      fprintf(stderr, "[warden data path] hand-over handler threw: %s\n", e.Message().c_str());
    }
  }
}

// setJsInfer(server, maxBodyBytes, onRequest(handle, token, model, version, body, headerLength?, authorization?),
//            onCancel(token), onConnection?(fd, token)): hands plain /infer requests of models without a route
// to JS; with onConnection, the keep-alive connections they came on move to JS after their answer
// (JS owns `fd` and calls releaseConnection(server, token) once it is closed).
Napi::Value SetJsInfer(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  WdServer* server = ServerOf(info[0]);
  ServerRef* ref = info[0].As<Napi::External<ServerRef>>().Data();
  if (ref->hand_over != nullptr) throw Napi::Error::New(env, "the hand-over is set already");
  uint64_t max_body = uint64_t(info[1].As<Napi::Number>().Int64Value());
  if (!info[2].IsFunction() || !info[3].IsFunction()) throw Napi::TypeError::New(env, "expected two callbacks");
  auto* h = new HandOver;
  h->on_request = Napi::Persistent(info[2].As<Napi::Function>());
  h->on_cancel = Napi::Persistent(info[3].As<Napi::Function>());
  bool moves = info[4].IsFunction();
  if (moves) h->on_connection = Napi::Persistent(info[4].As<Napi::Function>());
  h->wake = warden::JsWake::Create(env, "warden-data-path", [h](Napi::Env e) { DrainHandOver(e, h); });
  WardenError* err = wd_server_set_js_infer(server, NotifyJs, h, max_body);
  if (err == nullptr && moves) err = wd_server_move_connections(server, MoveToJs, h);
  if (err != nullptr) {
    h->wake->Close();
    delete h;
    throw TritonError(env, err);
  }
  ref->hand_over = h;
  return env.Undefined();
}

WdJsRequest* TakeRequest(const Napi::Value& v) {
  if (!v.IsExternal()) throw Napi::TypeError::New(v.Env(), "expected a handed-over request");
  JsRequestRef* ref = v.As<Napi::External<JsRequestRef>>().Data();
  if (ref->request == nullptr) throw Napi::Error::New(v.Env(), "the request was answered already");
  WdJsRequest* r = ref->request;
  ref->request = nullptr;
  return r;
}

// answerJs(handle, status, headers: string[] (name, value, name, value, ...), body: Buffer | string)
Napi::Value AnswerJs(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!info[1].IsNumber() || !info[2].IsArray() || !(info[3].IsBuffer() || info[3].IsString()))
    throw Napi::TypeError::New(env, "expected (handle, status, headers, body)");
  Napi::Array list = info[2].As<Napi::Array>();
  std::vector<std::string> texts;
  for (uint32_t i = 0; i + 1 < list.Length(); i += 2) {
    texts.push_back(list.Get(i).ToString().Utf8Value());
    texts.push_back(list.Get(i + 1).ToString().Utf8Value());
  }
  std::vector<const uint8_t*> names, values;
  std::vector<size_t> name_lens, value_lens;
  for (size_t i = 0; i + 1 < texts.size(); i += 2) {
    names.push_back(reinterpret_cast<const uint8_t*>(texts[i].data()));
    name_lens.push_back(texts[i].size());
    values.push_back(reinterpret_cast<const uint8_t*>(texts[i + 1].data()));
    value_lens.push_back(texts[i + 1].size());
  }
  std::string text_body;
  const uint8_t* body = nullptr;
  size_t body_len = 0;
  if (info[3].IsBuffer()) {
    auto b = info[3].As<Napi::Buffer<uint8_t>>();
    body = b.Data();
    body_len = b.Length();
  } else {
    text_body = info[3].As<Napi::String>().Utf8Value();
    body = reinterpret_cast<const uint8_t*>(text_body.data());
    body_len = text_body.size();
  }
  uint16_t status = uint16_t(info[1].As<Napi::Number>().Uint32Value());
  wd_js_answer(TakeRequest(info[0]), status, names.data(), name_lens.data(), values.data(), value_lens.data(),
               names.size(), body, body_len);
  return env.Undefined();
}

// declineJs(handle): the data path forwards the request to the internal listener.
Napi::Value DeclineJs(const Napi::CallbackInfo& info) {
  wd_js_decline(TakeRequest(info[0]));
  return info.Env().Undefined();
}

// releaseConnection(server, token): a moved connection closed (nothing once the server is closed).
Napi::Value ReleaseConnection(const Napi::CallbackInfo& info) {
  if (!info[0].IsExternal()) throw Napi::TypeError::New(info.Env(), "expected a data path server");
  ServerRef* ref = info[0].As<Napi::External<ServerRef>>().Data();
  if (ref->server != nullptr)
    wd_server_release_connection(ref->server, uint64_t(info[1].As<Napi::Number>().Int64Value()));
  return info.Env().Undefined();
}

Napi::Value Unpublish(const Napi::CallbackInfo& info) {
  wd_server_unpublish(ServerOf(info[0]), RouteOf(info[1]));
  return info.Env().Undefined();
}

Napi::Value Inflight(const Napi::CallbackInfo& info) {
  return Napi::Number::New(info.Env(), double(wd_route_inflight(RouteOf(info[0]))));
}

// takeStats(route) → Float64Array: WdRouteStats's fields in order, then WdBatchStats rows (5 fields each)
Napi::Value TakeStats(const Napi::CallbackInfo& info) {
  const WdRoute* route = RouteOf(info[0]);
  WdRouteStats s{};
  wd_route_take_stats(route, &s);
  std::vector<WdBatchStats> rows;
  constexpr size_t kChunk = 32;
  for (;;) {
    size_t at = rows.size();
    rows.resize(at + kChunk);
    size_t got = wd_route_take_batch_stats(route, rows.data() + at, kChunk);
    rows.resize(at + got);
    if (got < kChunk) break;
  }
  const uint64_t* fields = reinterpret_cast<const uint64_t*>(&s);
  constexpr size_t n = sizeof(WdRouteStats) / sizeof(uint64_t);
  constexpr size_t per_row = sizeof(WdBatchStats) / sizeof(uint64_t);
  Napi::Float64Array out = Napi::Float64Array::New(info.Env(), n + rows.size() * per_row);
  for (size_t i = 0; i < n; i++) out[i] = double(fields[i]);
  const uint64_t* row_fields = reinterpret_cast<const uint64_t*>(rows.data());
  for (size_t i = 0; i < rows.size() * per_row; i++) out[n + i] = double(row_fields[i]);
  return out;
}

// takeRecent(route, queue: boolean) → Uint32Array: the latest request (or queue) durations in µs since
// the last take, oldest first (at most WD_RECENT)
Napi::Value TakeRecent(const Napi::CallbackInfo& info) {
  uint32_t buf[WD_RECENT];
  size_t n = wd_route_take_recent(RouteOf(info[0]), info[1].ToBoolean().Value(), buf);
  Napi::Uint32Array out = Napi::Uint32Array::New(info.Env(), n);
  for (size_t i = 0; i < n; i++) out[i] = buf[i];
  return out;
}

Napi::Value Counters(const Napi::CallbackInfo& info) {
  WdCounters c{};
  wd_server_counters(ServerOf(info[0]), &c);
  Napi::Object o = Napi::Object::New(info.Env());
  o.Set("served", double(c.served));
  o.Set("forwarded", double(c.forwarded));
  o.Set("replayed", double(c.replayed));
  o.Set("refusedConnections", double(c.refused_connections));
  o.Set("openConnections", double(c.open_connections));
  o.Set("grpcServed", double(c.grpc_served));
  o.Set("grpcForwarded", double(c.grpc_forwarded));
  o.Set("handedOver", double(c.handed_over));
  o.Set("movedConnections", double(c.moved_connections));
  return o;
}

Napi::Value SetPaused(const Napi::CallbackInfo& info) {
  wd_server_set_paused(ServerOf(info[0]), info[1].ToBoolean().Value());
  return info.Env().Undefined();
}

Napi::Value BeginClose(const Napi::CallbackInfo& info) {
  wd_server_begin_close(ServerOf(info[0]));
  return info.Env().Undefined();
}

// close(server): stops the threads and frees the server now (the external's finalizer then does nothing).
Napi::Value Close(const Napi::CallbackInfo& info) {
  if (!info[0].IsExternal()) throw Napi::TypeError::New(info.Env(), "expected a data path server");
  ServerRef* ref = info[0].As<Napi::External<ServerRef>>().Data();
  FreeServer(ref);
  return info.Env().Undefined();
}

}  // namespace

Napi::Object InitBinding(Napi::Env env) {
  Napi::Object o = Napi::Object::New(env);
  o.Set("start", Napi::Function::New(env, Start, "start"));
  o.Set("listenGrpc", Napi::Function::New(env, ListenGrpc, "listenGrpc"));
  o.Set("publish", Napi::Function::New(env, Publish, "publish"));
  o.Set("publishOrt", Napi::Function::New(env, PublishOrt, "publishOrt"));
  o.Set("publishWasm", Napi::Function::New(env, PublishWasm, "publishWasm"));
  o.Set("setJsInfer", Napi::Function::New(env, SetJsInfer, "setJsInfer"));
  o.Set("answerJs", Napi::Function::New(env, AnswerJs, "answerJs"));
  o.Set("declineJs", Napi::Function::New(env, DeclineJs, "declineJs"));
  o.Set("releaseConnection", Napi::Function::New(env, ReleaseConnection, "releaseConnection"));
  o.Set("unpublish", Napi::Function::New(env, Unpublish, "unpublish"));
  o.Set("inflight", Napi::Function::New(env, Inflight, "inflight"));
  o.Set("takeStats", Napi::Function::New(env, TakeStats, "takeStats"));
  o.Set("takeRecent", Napi::Function::New(env, TakeRecent, "takeRecent"));
  o.Set("counters", Napi::Function::New(env, Counters, "counters"));
  o.Set("setPaused", Napi::Function::New(env, SetPaused, "setPaused"));
  o.Set("beginClose", Napi::Function::New(env, BeginClose, "beginClose"));
  o.Set("close", Napi::Function::New(env, Close, "close"));
  return o;
}

}  // namespace warden_data_path
