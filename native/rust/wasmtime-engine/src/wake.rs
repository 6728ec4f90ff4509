//! Wake affinity for instance threads: the placement policy lives in libtritonserver.so
//! (native/src/core/wake.cc explains why a hand-off to a sleeping thread on these VMs costs
//! ~40 µs, and when a sleeper is moved onto the poster's CPU); this is the instance thread's side.
//! The addon links this static library against libtritonserver.so, which exports the three calls.

use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering};
use std::time::Instant;

/// host.h's WARDEN_WAKE_AFFINITY_MAX_WORK_NS.
const MAX_WORK_NS: u64 = 100_000;

/// The moving average of job durations, as host.h's WARDEN_WakeAffinityAverage (samples capped
/// at 4× the limit).
fn average(avg: u64, sample_ns: u64) -> u64 {
    let s = sample_ns.min(4 * MAX_WORK_NS);
    if s >= avg {
        avg + (s - avg) / 8
    } else {
        avg - (avg - s) / 8
    }
}

extern "C" {
    fn WARDEN_WakeAffinityPlace(tid: i32, recent_work_ns: u64) -> bool;
    fn WARDEN_WakeAffinityBegin(moved: bool);
    fn WARDEN_WakeAffinityEnd();
    fn WARDEN_WakeAffinityRestore();
}

/// Gives the calling thread the process's CPU mask back. A new thread inherits its creator's mask,
/// and a thread created while the JS thread is pinned beside a thread it placed (wake.cc) would
/// otherwise stay on that one CPU for good: every thread the engine spawns calls this first.
pub fn restore_home_mask() {
    // SAFETY: a plain call into libtritonserver.so, which the addon links (module docs).
    unsafe { WARDEN_WakeAffinityRestore() }
}

/// Shared between an instance thread and its poster (the JS thread, the only sender of commands).
#[derive(Default)]
pub struct WakeSlot {
    tid: AtomicI32,
    /// The thread is blocked waiting for a command with none queued.
    waiting: AtomicBool,
    /// The poster moved the sleeping thread onto its CPU; the thread restores its mask.
    moved: AtomicBool,
    /// Moving average of the thread's command durations, ns (only short work is placed).
    work_ns: AtomicU64,
}

impl WakeSlot {
    /// On the instance thread, once, before its first wait.
    pub fn register(&self) {
        // SAFETY: gettid has no preconditions.
        self.tid.store(unsafe { libc::gettid() }, Ordering::Relaxed);
    }

    /// On the poster, just before sending a command.
    pub fn before_post(&self) {
        if self.waiting.load(Ordering::Acquire) && !self.moved.load(Ordering::Relaxed) {
            // SAFETY: plain C call; a stale or zero tid only makes it return false.
            if unsafe {
                WARDEN_WakeAffinityPlace(self.tid.load(Ordering::Relaxed), self.work_ns.load(Ordering::Relaxed))
            } {
                self.moved.store(true, Ordering::Release);
            }
        }
    }

    /// On the instance thread, around a blocking wait for the next command.
    pub fn wait<T>(&self, recv: impl FnOnce() -> T) -> T {
        self.waiting.store(true, Ordering::Release);
        let r = recv();
        self.waiting.store(false, Ordering::Release);
        r
    }

    /// On the instance thread: runs one command's work, counted busy (and back on the process's
    /// CPU mask first if the poster moved it).
    pub fn work<T>(&self, f: impl FnOnce() -> T) -> T {
        let moved = self.moved.swap(false, Ordering::AcqRel);
        // SAFETY: plain C calls, paired.
        unsafe { WARDEN_WakeAffinityBegin(moved) };
        let t0 = Instant::now();
        let r = f();
        let took = t0.elapsed().as_nanos().min(u64::MAX as u128) as u64;
        self.work_ns.store(average(self.work_ns.load(Ordering::Relaxed), took), Ordering::Relaxed);
        // SAFETY: plain C call, pairing the Begin above.
        unsafe { WARDEN_WakeAffinityEnd() };
        r
    }
}
