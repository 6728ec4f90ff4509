// Wake affinity: a thread that hands work to a sleeping native thread first moves that thread onto
// its own CPU when nothing else in the process is running work.
//
// Why: on virtual machines whose idle vCPUs halt (Firecracker with haltpoll polling off, as on
// Warden's CI machines), the kernel wakes a sleeping thread on its previous, idle vCPU, and the
// hypervisor takes ~35–45 µs to resume a halted vCPU. A request that crosses to an instance thread
// and back pays that twice: a JS → native → JS execute round trip measured ~90 µs median there,
// against ~14 µs with both threads on one CPU (docs/benchmarks.md, "Wake-ups across vCPUs").
// Placed on the poster's CPU, the woken thread runs as soon as the poster blocks (the JS thread
// going back to epoll), and its completion wakes the poster on the same CPU: ~3 µs per round trip.
// The return wake-up needs the poster pinned too: the woken thread wakes it while still running on
// that CPU, and the kernel then prefers the other, idle vCPU, so without a pin the JS thread
// bounced between the two vCPUs on every request (0.4–0.6 migrations per request measured over
// HTTP, slower than no placement at all). So an event-loop thread that places a thread stays on
// that CPU until the answer's callback runs on it (WARDEN_WakeAffinityUnpinSelf in the addon's
// event callbacks); if the answer never comes (a hung execute) it stays there until the next one,
// which costs it nothing but the freedom to move.
//
// Why only when idle, and only for short work: a moved thread starts on the poster's CPU and, if
// the poster has more to do (the JS thread under load), time-shares that CPU until the scheduler's
// next balancing pass moves one of them (up to a tick, ~4 ms). That is free when the work is a few
// µs and the poster is about to sleep anyway, and costly when the work is long, where a ~40 µs
// wake-up is small beside it and running on the other core is what matters. So a thread is moved
// only when no native work runs anywhere in the process (the busy count below is 0) and its recent
// jobs were short (the caller's moving average, under WARDEN_WAKE_AFFINITY_MAX_WORK_NS); and the
// moved thread restores the process's CPU mask as soon as it starts running.
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <mutex>

#include "objects.h"
#include "warden/host.h"

namespace warden {
namespace {
std::atomic<bool> enabled{true};
std::atomic<int> busy{0};
std::atomic<uint64_t> placements{0};
/** This thread pinned itself beside a thread it placed, until its answer comes back. */
thread_local bool poster_pinned = false;
/** This thread runs a Node event loop that receives answers (WARDEN_WakeAffinityMarkLoopThread). */
thread_local bool loop_thread = false;
std::once_flag home_once;
cpu_set_t home;
bool home_ok = false;

/** The process's CPU mask (its main thread's), what a moved thread goes back to. */
const cpu_set_t* Home() {
  std::call_once(home_once, [] {
    CPU_ZERO(&home);
    home_ok = sched_getaffinity(getpid(), sizeof(home), &home) == 0;
  });
  return home_ok ? &home : nullptr;
}
}  // namespace

int CurrentThreadId() { return int(syscall(SYS_gettid)); }
}  // namespace warden

extern "C" {

void WARDEN_SetWakeAffinity(bool on) { warden::enabled.store(on, std::memory_order_relaxed); }

bool WARDEN_WakeAffinityPlace(int32_t tid, uint64_t recent_work_ns) {
  if (tid <= 0 || !warden::enabled.load(std::memory_order_relaxed)) return false;
  if (recent_work_ns > WARDEN_WAKE_AFFINITY_MAX_WORK_NS) return false;
  if (warden::busy.load(std::memory_order_acquire) != 0) return false;
  if (warden::Home() == nullptr) return false;
  const int cpu = sched_getcpu();
  if (cpu < 0) return false;
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(cpu, &one);
  if (sched_setaffinity(tid, sizeof(one), &one) != 0) return false;
  // The poster stays on this CPU too until the answer is back (WARDEN_WakeAffinityUnpinSelf): the
  // woken thread wakes it while still running here, and the kernel would otherwise move the
  // poster to the other, idle vCPU — a halted one — and bounce it between CPUs every request.
  // Only an event-loop thread is pinned: it unpins itself when the answer's callback runs there.
  if (warden::loop_thread && !warden::poster_pinned && sched_setaffinity(0, sizeof(one), &one) == 0) {
    warden::poster_pinned = true;
  }
  warden::placements.fetch_add(1, std::memory_order_relaxed);
  return true;
}

void WARDEN_WakeAffinityMarkLoopThread(void) { warden::loop_thread = true; }

void WARDEN_WakeAffinityUnpinSelf(void) {
  if (!warden::poster_pinned) return;
  warden::poster_pinned = false;
  WARDEN_WakeAffinityRestore();
}

uint64_t WARDEN_WakeAffinityPlacements(void) { return warden::placements.load(std::memory_order_relaxed); }

void WARDEN_WakeAffinityBegin(bool moved) {
  warden::busy.fetch_add(1, std::memory_order_acq_rel);
  if (moved) WARDEN_WakeAffinityRestore();
}

void WARDEN_WakeAffinityEnd(void) { warden::busy.fetch_sub(1, std::memory_order_acq_rel); }

void WARDEN_WakeAffinityRestore(void) {
  const cpu_set_t* h = warden::Home();
  if (h != nullptr) sched_setaffinity(0, sizeof(*h), h);
}

}  // extern "C"
