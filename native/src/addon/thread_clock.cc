// threadCpuNs(): the calling thread's CPU time (CLOCK_THREAD_CPUTIME_ID), ns, as a double (exact
// up to 2^53 ns, ~104 days). The ONNX Runtime backend times inline runs with it
// (host/src/backends/onnxruntime/placement.ts): a run preempted on a busy machine takes long on the
// wall clock but not in CPU time, and must not send the model's runs to a worker thread.
#include <time.h>

#include "addon.h"

namespace warden_addon {

Napi::Value ThreadCpuNs(const Napi::CallbackInfo& info) {
  timespec ts{};
  if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0) return info.Env().Undefined();
  return Napi::Number::New(info.Env(), static_cast<double>(ts.tv_sec) * 1e9 + static_cast<double>(ts.tv_nsec));
}

}  // namespace warden_addon
