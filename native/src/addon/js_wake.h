// JsWake: wakes the JS thread from any native thread to drain a queue, without the lock hand-off
// that Napi::ThreadSafeFunction costs on every wake-up.
//
// Why not a ThreadSafeFunction: Node's TSFN calls uv_async_send while it holds its own mutex, and
// its async callback takes that mutex first thing. When the woken JS thread runs on the poster's
// CPU (always, with wake affinity: core/wake.cc), it preempts the poster inside that critical
// section, blocks on the mutex, and the two threads ping-pong through the scheduler two or three
// times per wake-up. Measured with `perf record -e sched:sched_switch -g` on the wasmtime C guest
// at c=1: the JS thread blocked in `ThreadSafeFunction::AsyncCb` → `__lll_lock_wait` on most
// requests (docs/benchmarks.md, "Wake-ups across vCPUs"). Here the poster holds no lock the JS thread takes
// when it calls uv_async_send: `send_mu_` only orders a send against Close(), which the drain
// never takes.
//
// The callback runs on the JS thread inside a handle scope and a callback scope (async hooks,
// then process.nextTick and microtasks run when it returns, as for a TSFN call).
#pragma once

#include <napi.h>
#include <uv.h>

#include <functional>
#include <memory>
#include <mutex>

namespace warden {

class JsWake : public std::enable_shared_from_this<JsWake> {
 public:
  using Callback = std::function<void(Napi::Env)>;

  /** Creates the wake-up on `env`'s loop (JS thread), unref'd: it keeps no loop alive until Ref(). */
  static std::shared_ptr<JsWake> Create(Napi::Env env, const char* name, Callback callback);

  /**
   * Asks for one run of the callback on the JS thread (any thread; wake-ups coalesce, so the
   * callback must drain everything queued). Returns false once Close() has run.
   */
  bool Send();

  /** Keeps the event loop alive (JS thread). Counted: each Ref() needs one Unref(). */
  void Ref();
  void Unref();

  /**
   * Closes the handle (JS thread, idempotent). After it, Send() returns false and the callback
   * never runs again. Environment teardown closes it too.
   */
  void Close();

 private:
  JsWake(Napi::Env env, Callback callback) : env_(env), callback_(std::move(callback)) {}
  static void OnAsync(uv_async_t* handle);
  static void OnCleanup(void* arg);

  napi_env env_;
  Callback callback_;
  uv_async_t* async_ = nullptr;  // freed by its close callback
  napi_ref resource_ = nullptr;
  napi_async_context context_ = nullptr;
  std::mutex send_mu_;
  bool closed_ = false;  // under send_mu_
  int refs_ = 0;         // JS thread only
  bool cleanup_hook_ = false;
  std::shared_ptr<JsWake> self_;  // kept until Close(): the handle's data points here
};

}  // namespace warden
