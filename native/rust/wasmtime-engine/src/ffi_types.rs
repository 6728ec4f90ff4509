//! Messages from an engine's native threads to the JS thread (what the addon's wake-up path
//! carries), and the replies coming back. Payloads are JSON plus owned byte buffers (tensor data,
//! file contents), moved without copies.
use std::ffi::c_void;
use std::sync::Arc;

/// Message kinds (mirrored by host/src/backends/wasm/wasmtime/native.ts).
pub mod kind {
    /// The sandbox started (`{startMs, respawn}`).
    pub const READY: u32 = 1;
    /// A guest `create` returned an error (`{code, message}`); the sandbox is gone.
    pub const CREATE_ERROR: u32 = 2;
    /// The guest trapped or hit its deadline (`{message, during, reason}`); the store was dropped.
    pub const TRAP: u32 = 3;
    /// `host.log` (`{level, message}`), within the log budget pre-filter.
    pub const LOG: u32 = 4;
    /// A write to stdout / stderr (`{stream}` + the bytes).
    pub const OUTPUT: u32 = 5;
    /// A host call that waits for `ww_instance_reply` (`{fn, ...}` + buffers).
    pub const CALL: u32 = 6;
    /// `execute` returned: no JSON; output buffers, then the results descriptor (descriptor.rs) as the last buffer.
    pub const DONE: u32 = 7;
    /// A respawn after a trap failed (`{message}`); the next execute tries again.
    pub const RESPAWN_FAILED: u32 = 8;
    /// The instance's thread ended (after `ww_instance_free`).
    pub const EXITED: u32 = 9;
    /// Log output dropped by the budget pre-filter during this call (`{bytes, messages}`).
    pub const LOG_DROPPED: u32 = 10;
    /// A direct execute (direct.rs) that posted anything (logs, output, host calls) ended: the
    /// host ends its call there as it does at `DONE` (flushes output, renews the log budget).
    pub const END_CALL: u32 = 11;
}

/// One message for the JS thread (C: `WwMessage`).
pub struct WwMessage {
    pub instance: u64,
    pub kind: u32,
    pub json: String,
    pub bufs: Vec<Option<WwBuffer>>,
}

/// An owned byte buffer handed to C (C: `WwBuffer`, freed with `ww_buffer_free`): a message's
/// payload or a serialized component. Its bytes stay where they are until it is freed.
pub struct WwBuffer(pub Vec<u8>);

/// Called from any thread with a message the callee now owns (`ww_message_free`).
pub type NotifyFn = unsafe extern "C" fn(ctx: *mut c_void, msg: Box<WwMessage>);

/// Where an engine's messages go (the addon's thread-safe function).
pub struct Notifier {
    f: NotifyFn,
    ctx: usize,
}

impl Notifier {
    pub fn new(f: NotifyFn, ctx: *mut c_void) -> Arc<Notifier> {
        Arc::new(Notifier { f, ctx: ctx as usize })
    }

    pub fn post(&self, instance: u64, kind: u32, json: String, bufs: Vec<Vec<u8>>) {
        let msg =
            Box::new(WwMessage { instance, kind, json, bufs: bufs.into_iter().map(|b| Some(WwBuffer(b))).collect() });
        // SAFETY: `f` and `ctx` are what the addon gave `ww_engine_new`; it keeps `ctx` alive
        // until the engine is freed, which is after every thread that posts has ended.
        unsafe { (self.f)(self.ctx as *mut c_void, msg) }
    }
}

/// A reply of the JS thread to a `CALL`.
pub struct Reply {
    pub json: serde_json::Value,
    pub bufs: Vec<Vec<u8>>,
}
