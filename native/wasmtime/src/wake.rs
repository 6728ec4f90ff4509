//! Wake affinity for instance threads: the placement policy lives in libtritonserver.so
//! (native/src/core/wake.cc explains why a hand-off to a sleeping thread on these VMs costs
//! ~40 µs, and when a sleeper is moved onto the poster's CPU); this is the instance thread's side.
//! The addon links this static library against libtritonserver.so, which exports the three calls.

use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};

extern "C" {
    fn WARDEN_WakeAffinityPlace(tid: i32) -> bool;
    fn WARDEN_WakeAffinityBegin(moved: bool);
    fn WARDEN_WakeAffinityEnd();
}

/// Shared between an instance thread and its poster (the JS thread, the only sender of commands).
#[derive(Default)]
pub struct WakeSlot {
    tid: AtomicI32,
    /// The thread is blocked waiting for a command with none queued.
    waiting: AtomicBool,
    /// The poster moved the sleeping thread onto its CPU; the thread restores its mask.
    moved: AtomicBool,
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
            if unsafe { WARDEN_WakeAffinityPlace(self.tid.load(Ordering::Relaxed)) } {
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
        let r = f();
        unsafe { WARDEN_WakeAffinityEnd() };
        r
    }
}
