// InstanceHandle: initialize / execute / finalize on the instance's native worker thread, and the
// event queue that brings responses, releases and job completions back to the JS thread.
#include "addon.h"

namespace warden_addon {

Napi::FunctionReference InstanceHandle::constructor;

// ---------------------------------------------------------------- EventQueue

void EventQueue::Start(Napi::Env env) {
  std::weak_ptr<EventQueue> weak = weak_from_this();
  // unref'd: referenced only while work is in flight (InstanceHandle::AddInflight)
  wake_ = warden::JsWake::Create(env, "warden-native-instance", [weak](Napi::Env env) {
    WARDEN_WakeAffinityUnpinSelf();  // the answer is back on the JS thread (wake.cc)
    std::shared_ptr<EventQueue> self = weak.lock();
    if (!self) return;
    std::vector<Event> events = self->Drain();
    if (self->owner_ == nullptr) {
      for (Event& ev : events) DiscardEvent(ev);
      return;
    }
    self->owner_->OnEvents(env, std::move(events));
  });
}

EventQueue::~EventQueue() {
  for (Event& ev : events_) DiscardEvent(ev);
}

void DiscardEvent(Event& e) {
  if (e.response != nullptr) TRITONSERVER_InferenceResponseDelete(e.response);
  if (e.error != nullptr) TRITONSERVER_ErrorDelete(e.error);
  e.response = nullptr;
  e.error = nullptr;
}

void EventQueue::Push(Event&& e) {
  {
    std::unique_lock<std::mutex> lk(mu_);
    if (closed_) {
      lk.unlock();
      DiscardEvent(e);  // the instance is gone: nobody is waiting for this any more
      return;
    }
    events_.push_back(std::move(e));
    if (scheduled_) return;  // a wakeup is already pending: it will take this event too
    scheduled_ = true;
  }
  // false only once Close() ran, which discards what is queued (or the destructor does)
  wake_->Send();
}

std::vector<Event> EventQueue::Drain() {
  std::vector<Event> out;
  std::lock_guard<std::mutex> lk(mu_);
  out.swap(events_);
  scheduled_ = false;
  return out;
}

void EventQueue::Close() {
  std::vector<Event> dropped;
  {
    std::lock_guard<std::mutex> lk(mu_);
    if (closed_) return;
    closed_ = true;
    owner_ = nullptr;
    dropped.swap(events_);
  }
  wake_->Close();
  for (Event& ev : dropped) DiscardEvent(ev);
}

// ---------------------------------------------------------------- native callbacks

namespace {

struct JobContext {
  std::shared_ptr<EventQueue> queue;
  uint32_t job;
};

void OnJobDone(void* userp, TRITONSERVER_Error* error) {
  auto* ctx = static_cast<JobContext*>(userp);
  Event e;
  e.kind = Event::kJobDone;
  e.token = ctx->job;
  e.error = error;
  ctx->queue->Push(std::move(e));
  delete ctx;
}

void OnExecDone(void* userp, TRITONSERVER_Error* error, const WARDEN_ExecStats* stats) {
  auto* ctx = static_cast<JobContext*>(userp);
  Event e;
  e.kind = Event::kJobDone;
  e.token = ctx->job;
  e.error = error;
  e.has_exec_stats = stats != nullptr;  // returned_ns is always set; the rest if `reported`
  if (e.has_exec_stats) e.exec_stats = *stats;
  ctx->queue->Push(std::move(e));
  delete ctx;
}

/** Count down FINAL + release; true (and the context freed) for the second of the two. */
bool Settle(RequestContext* ctx) {
  if (ctx->remaining.fetch_sub(1) != 1) return false;
  delete ctx;
  return true;
}

void OnResponse(void* userp, TRITONSERVER_InferenceResponse* response, uint32_t flags) {
  auto* ctx = static_cast<RequestContext*>(userp);
  Event e;
  e.kind = Event::kResponse;
  e.token = ctx->token;
  e.response = response;
  e.flags = flags;
  // FINAL, or CLOSED for a rescheduled request: exactly once per request (host.h)
  bool final = (flags & (TRITONSERVER_RESPONSE_COMPLETE_FINAL | WARDEN_RESPONSE_CLOSED)) != 0;
  std::shared_ptr<EventQueue> q = ctx->queue;
  if (final) e.completes_request = Settle(ctx);
  q->Push(std::move(e));
}

void OnRelease(void* userp, const WARDEN_RequestStats* stats) {
  auto* ctx = static_cast<RequestContext*>(userp);
  Event e;
  e.kind = Event::kReleased;
  e.token = ctx->token;
  e.has_request_stats = stats != nullptr && stats->reported;
  if (e.has_request_stats) e.request_stats = *stats;
  e.rescheduled = stats != nullptr && stats->rescheduled;
  std::shared_ptr<EventQueue> q = ctx->queue;
  e.completes_request = Settle(ctx);  // exactly once per request
  q->Push(std::move(e));
}

}  // namespace

void ParseRequestsCallbacks(WARDEN_RequestDesc* d, RequestContext* ctx) {
  d->response_fn = &OnResponse;
  d->release_fn = &OnRelease;
  d->userp = ctx;
}

// ---------------------------------------------------------------- InstanceHandle

Napi::Function InstanceHandle::Init(Napi::Env env) {
  Napi::Function f = DefineClass(
      env, "InstanceHandle",
      {InstanceMethod("initialize", &InstanceHandle::Initialize), InstanceMethod("execute", &InstanceHandle::Execute),
       InstanceMethod("finalize", &InstanceHandle::Finalize), InstanceMethod("isReady", &InstanceHandle::IsReady),
       InstanceMethod("checkReady", &InstanceHandle::CheckReady),
       InstanceMethod("outstanding", &InstanceHandle::Outstanding),
       InstanceMethod("abandon", &InstanceHandle::Abandon)});
  constructor = Napi::Persistent(f);
  constructor.SuppressDestruct();
  return f;
}

InstanceHandle::InstanceHandle(const Napi::CallbackInfo& info) : Napi::ObjectWrap<InstanceHandle>(info) {
  on_events_ = Napi::Persistent(info[0].As<Napi::Function>());
  queue_ = std::make_shared<EventQueue>(this);
  queue_->Start(info.Env());
  Ref();  // stays alive until finalized, whatever JS does with the handle
}

void InstanceHandle::AddInflight(Napi::Env env, int64_t delta) {
  int64_t before = inflight_;
  inflight_ += delta;
  if (queue_ == nullptr) return;
  if (before == 0 && inflight_ > 0) queue_->Ref();
  if (before > 0 && inflight_ == 0) queue_->Unref();
}

uint32_t InstanceHandle::NewJob(Napi::Env env, Napi::Promise::Deferred deferred, bool delete_after) {
  uint32_t id = next_job_++;
  jobs_.emplace(id, deferred);
  if (delete_after) delete_job_ = id;
  AddInflight(env, 1);
  return id;
}

Napi::Value InstanceHandle::Initialize(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (instance == nullptr) throw TritonError(env, TRITONSERVER_ERROR_UNAVAILABLE, "instance was finalized");
  auto deferred = Napi::Promise::Deferred::New(env);
  uint32_t job = NewJob(env, deferred, false);
  WARDEN_InstanceInitialize(instance, &OnJobDone, new JobContext{queue_, job});
  return deferred.Promise();
}

Napi::Value InstanceHandle::Finalize(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (instance == nullptr || delete_job_ != 0) {
    throw TritonError(env, TRITONSERVER_ERROR_UNAVAILABLE, "instance was finalized");
  }
  auto deferred = Napi::Promise::Deferred::New(env);
  uint32_t job = NewJob(env, deferred, true);
  WARDEN_InstanceFinalize(instance, &OnJobDone, new JobContext{queue_, job});
  return deferred.Promise();
}

Napi::Value InstanceHandle::IsReady(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (instance == nullptr) return Napi::Boolean::New(env, false);
  TRITONSERVER_Error* e = WARDEN_InstanceReady(instance);
  if (e == nullptr) return Napi::Boolean::New(env, true);
  TRITONSERVER_ErrorDelete(e);
  return Napi::Boolean::New(env, false);
}

// TRITONBACKEND_ModelInstanceReady on a thread of its own: as Triton asks it from the readiness
// endpoint's thread, never behind the instance's Execute and never on the JS thread (Triton's
// python backend answers it with an IPC round trip to the stub and the model's is_ready()).
// Resolves when ready, rejects with the backend's error. The caller must not finalize the
// instance while a check is running (NativeModelInstance waits for it).
Napi::Value InstanceHandle::CheckReady(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (instance == nullptr || delete_job_ != 0) {
    throw TritonError(env, TRITONSERVER_ERROR_UNAVAILABLE, "instance was finalized");
  }
  auto deferred = Napi::Promise::Deferred::New(env);
  uint32_t job = NewJob(env, deferred, false);
  TRITONBACKEND_ModelInstance* inst = instance;
  auto* ctx = new JobContext{queue_, job};
  std::thread([inst, ctx] { OnJobDone(ctx, WARDEN_InstanceReady(inst)); }).detach();
  return deferred.Promise();
}

Napi::Value InstanceHandle::Outstanding(const Napi::CallbackInfo& info) {
  return Napi::Number::New(info.Env(), double(requests_));
}

/**
 * abandon(): give up on an instance whose native thread is stuck inside the backend (a native
 * thread cannot be stopped safely): pending jobs never settle, later events are dropped, and the
 * instance, its thread and its model stay allocated (the model then refuses to unload, so
 * TRITONBACKEND_ModelFinalize never runs under a thread still inside the backend).
 */
Napi::Value InstanceHandle::Abandon(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (instance == nullptr) return env.Undefined();
  instance = nullptr;  // leaked on purpose (see above)
  jobs_.clear();
  if (inflight_ > 0) queue_->Unref();
  inflight_ = 0;
  requests_ = 0;
  queue_->Close();
  Unref();
  return env.Undefined();
}

/** execute(requests) -> Promise<ExecStats | undefined>; responses and releases go to onEvents. */
Napi::Value InstanceHandle::Execute(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (instance == nullptr || delete_job_ != 0) {
    throw TritonError(env, TRITONSERVER_ERROR_UNAVAILABLE, "instance was finalized");
  }
  if (!info[0].IsArray()) throw Napi::TypeError::New(env, "execute(requests)");
  RequestBatch batch;
  std::vector<RequestContext*> contexts;
  try {
    ParseRequests(env, info[0].As<Napi::Array>(), queue_, &batch, &contexts);
  } catch (...) {
    for (auto* c : contexts) delete c;
    throw;
  }
  for (size_t i = 0; i < batch.descs.size(); ++i) ParseRequestsCallbacks(&batch.descs[i], contexts[i]);
  auto deferred = Napi::Promise::Deferred::New(env);
  uint32_t job = NewJob(env, deferred, false);
  auto* jctx = new JobContext{queue_, job};
  TRITONSERVER_Error* e =
      WARDEN_InstanceExecute(instance, batch.descs.data(), uint32_t(batch.descs.size()), &OnExecDone, jctx);
  if (e != nullptr) {  // nothing was submitted: no callbacks will come
    delete jctx;
    for (auto* c : contexts) delete c;
    jobs_.erase(job);
    AddInflight(env, -1);
    throw TritonError(env, e);
  }
  requests_ += int64_t(contexts.size());
  AddInflight(env, int64_t(contexts.size()));
  return deferred.Promise();
}

void InstanceHandle::OnEvents(Napi::Env env, std::vector<Event> events) {
  Napi::HandleScope scope(env);
  Napi::Array js = Napi::Array::New(env);
  uint32_t n = 0;
  std::vector<Event*> jobs;
  int64_t done_requests = 0;
  for (Event& e : events) {
    if (e.completes_request) done_requests++;
    switch (e.kind) {
      case Event::kResponse:
        js.Set(n++, ResponseEvent(env, e));
        break;
      case Event::kReleased:
        js.Set(n++, ReleasedEvent(env, e));
        break;
      case Event::kJobDone:
        jobs.push_back(&e);
        break;
    }
  }
  if (n > 0) {
    try {
      on_events_.Call({js});
    } catch (const Napi::Error& err) {
      // The JS dispatcher must not throw; report it without losing the job completions below.
      err.ThrowAsJavaScriptException();
      env.GetAndClearPendingException();
    }
  }
  requests_ -= done_requests;
  AddInflight(env, -done_requests);
  for (Event* e : jobs) {
    auto it = jobs_.find(e->token);
    if (it == jobs_.end()) {
      DiscardEvent(*e);
      continue;
    }
    Napi::Promise::Deferred d = it->second;
    jobs_.erase(it);
    bool deleting = e->token == delete_job_;
    if (e->error != nullptr) {
      TRITONSERVER_Error* err = e->error;
      e->error = nullptr;
      d.Reject(TritonError(env, err).Value());
    } else {
      d.Resolve(e->has_exec_stats ? ExecStatsValue(env, e->exec_stats) : env.Undefined());
    }
    AddInflight(env, -1);
    if (deleting) {
      // Finalize ran on the worker: now join/release it and free the instance. Late events of
      // decoupled backends that outlive their instance are dropped by the closed queue.
      WARDEN_InstanceDelete(instance);
      instance = nullptr;
      if (inflight_ > 0) queue_->Unref();
      inflight_ = 0;
      queue_->Close();
      Unref();
    }
  }
}

}  // namespace warden_addon
