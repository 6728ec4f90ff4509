// JsWake (js_wake.h): a uv_async_t wake-up of the JS thread with no lock hand-off.
#include "js_wake.h"

#include <cstdio>

namespace warden {

std::shared_ptr<JsWake> JsWake::Create(Napi::Env env, const char* name, Callback callback) {
  std::shared_ptr<JsWake> w(new JsWake(env, std::move(callback)));
  uv_loop_t* loop = nullptr;
  if (napi_get_uv_event_loop(env, &loop) != napi_ok || loop == nullptr)
    throw Napi::Error::New(env, "no event loop for a native wake-up");
  // The JS-side resources first: once the handle exists, nothing may fail before the cleanup hook
  // that closes it is registered (an open handle at a worker's teardown aborts the process).
  Napi::Object resource = Napi::Object::New(env);
  NAPI_THROW_IF_FAILED(env, napi_create_reference(env, resource, 1, &w->resource_), nullptr);
  NAPI_THROW_IF_FAILED(env, napi_async_init(env, resource, Napi::String::New(env, name), &w->context_), nullptr);
  auto* async = new uv_async_t;
  if (uv_async_init(loop, async, OnAsync) != 0) {
    delete async;
    throw Napi::Error::New(env, "cannot create a native wake-up (uv_async_init)");
  }
  async->data = w.get();
  uv_unref(reinterpret_cast<uv_handle_t*>(async));
  w->async_ = async;
  w->self_ = w;
  if (napi_add_env_cleanup_hook(env, OnCleanup, w.get()) != napi_ok) {
    w->Close();
    throw Napi::Error::New(env, "cannot register a native wake-up's cleanup");
  }
  w->cleanup_hook_ = true;
  return w;
}

bool JsWake::Send() {
  std::lock_guard<std::mutex> lock(send_mu_);
  if (closed_) return false;
  uv_async_send(async_);
  return true;
}

void JsWake::Ref() {
  if (async_ != nullptr && refs_++ == 0) uv_ref(reinterpret_cast<uv_handle_t*>(async_));
}

void JsWake::Unref() {
  if (async_ != nullptr && refs_ > 0 && --refs_ == 0) uv_unref(reinterpret_cast<uv_handle_t*>(async_));
}

void JsWake::OnAsync(uv_async_t* handle) {
  auto* w = static_cast<JsWake*>(handle->data);
  std::shared_ptr<JsWake> keep = w->shared_from_this();  // the callback may Close() it
  if (w->async_ == nullptr) return;
  Napi::Env env(w->env_);
  Napi::HandleScope handles(env);
  napi_value resource = nullptr;
  napi_callback_scope scope = nullptr;
  bool scoped = napi_get_reference_value(env, w->resource_, &resource) == napi_ok &&
                napi_open_callback_scope(env, resource, w->context_, &scope) == napi_ok;
  try {
    w->callback_(env);
  } catch (const Napi::Error& e) {
    fprintf(stderr, "[warden] native wake-up callback threw: %s\n", e.Message().c_str());
  }
  if (scoped) napi_close_callback_scope(env, scope);  // runs nextTicks and microtasks (outermost scope)
}

void JsWake::OnCleanup(void* arg) {
  auto* w = static_cast<JsWake*>(arg);
  w->cleanup_hook_ = false;  // running now: Close() must not remove it
  w->Close();
}

void JsWake::Close() {
  if (async_ == nullptr) return;
  {
    std::lock_guard<std::mutex> lock(send_mu_);
    closed_ = true;
  }
  if (cleanup_hook_) {
    napi_remove_env_cleanup_hook(env_, OnCleanup, this);
    cleanup_hook_ = false;
  }
  uv_close(reinterpret_cast<uv_handle_t*>(async_), [](uv_handle_t* h) { delete reinterpret_cast<uv_async_t*>(h); });
  async_ = nullptr;
  if (context_ != nullptr) napi_async_destroy(env_, context_);
  if (resource_ != nullptr) napi_delete_reference(env_, resource_);
  context_ = nullptr;
  resource_ = nullptr;
  std::shared_ptr<JsWake> last = std::move(self_);  // may free this when `last` goes
}

}  // namespace warden
