//! The store data of one sandbox and `warden:backend/host`. The host capabilities themselves
//! (log budget, response checks, read-only model files, cancellation) live in TypeScript
//! (host/src/backends/wasm/host/), shared with the V8 engine: a host function here forwards the
//! call to the JS thread — without waiting where nothing comes back (`log`, stdout / stderr), and
//! waiting for the reply, within the execute deadline, where something does.
use crate::bindings::warden::backend::host::{Host, LogLevel};
use crate::bindings::warden::backend::types::{Error, Response};
use crate::direct::DirectSink;
use crate::ffi_types::{kind, Notifier, Reply};
use crate::{descriptor, wire};
use serde_json::{json, Value};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::sync::Arc;
use std::time::{Duration, Instant};
use wasmtime::component::ResourceTable;
use wasmtime::StoreLimits;

/// The execute (or start-up) deadline passed while the guest waited in a host call.
#[derive(Debug)]
pub struct DeadlineExceeded;
impl std::fmt::Display for DeadlineExceeded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("execute deadline exceeded")
    }
}
impl std::error::Error for DeadlineExceeded {}

/// The host let go of the instance while the guest waited in a host call: end, do not respawn.
#[derive(Debug)]
pub struct Finalized;
impl std::fmt::Display for Finalized {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the instance was finalized during a host call")
    }
}
impl std::error::Error for Finalized {}

/// The guest called WASI `exit`: ends the sandbox like a trap.
#[derive(Debug)]
pub struct GuestExit(pub String);
impl std::fmt::Display for GuestExit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}
impl std::error::Error for GuestExit {}

/// Pre-filter of the per-call log budget (the same arithmetic as host/wasm/host/log.ts, which stays
/// authoritative): once the budget is gone, output is counted here and not sent, so a guest that
/// logs in a loop cannot flood the JS thread.
pub struct LogFilter {
    pub bytes: u64,
    pub messages: u64,
    bytes_left: u64,
    messages_left: u64,
    exhausted: bool,
    dropped_bytes: u64,
    dropped_messages: u64,
}

impl LogFilter {
    pub fn new(bytes: u64, messages: u64) -> Self {
        LogFilter {
            bytes,
            messages,
            bytes_left: bytes,
            messages_left: messages,
            exhausted: false,
            dropped_bytes: 0,
            dropped_messages: 0,
        }
    }
    /// True if the output may be sent: everything that fits, and the first output that does not
    /// (the host's budget then runs out on the same output, for the same reason); later output
    /// is only counted, and reported by `end_call`.
    pub fn charge(&mut self, bytes: u64, messages: u64) -> bool {
        if !self.exhausted && bytes <= self.bytes_left && messages <= self.messages_left {
            self.bytes_left -= bytes;
            self.messages_left -= messages;
            return true;
        }
        if !self.exhausted {
            self.exhausted = true;
            self.bytes_left = 0;
            self.messages_left = 0;
            return true;
        }
        self.bytes_left = 0;
        self.messages_left = 0;
        self.dropped_bytes += bytes;
        self.dropped_messages += messages;
        false
    }
    /// End of a call: what was dropped (if anything), and a full budget again.
    pub fn end_call(&mut self) -> Option<(u64, u64)> {
        let dropped = (self.dropped_bytes > 0 || self.dropped_messages > 0)
            .then_some((self.dropped_bytes, self.dropped_messages));
        *self = LogFilter::new(self.bytes, self.messages);
        dropped
    }
}

/// Everything a sandbox's host functions reach: the way to the JS thread and the deadline.
pub struct Io {
    pub id: u64,
    pub notifier: Arc<Notifier>,
    pub replies: Receiver<Reply>,
    /// When the current call into the guest must end.
    pub deadline: Option<Instant>,
    pub log: LogFilter,
    /// The sink of the direct execute in progress (direct.rs): its requests' `send-response`,
    /// `send-final` and `is-cancelled` are answered there, not by the JS thread.
    pub direct: Option<Box<dyn DirectSink>>,
    /// Something was posted to the JS thread since the direct execute in progress began.
    pub posted: bool,
    /// Number of the last `CALL`: its reply carries it back (`seq`), so that a reply that comes
    /// late — its call ended at a deadline, answered after the sandbox was replaced — is dropped
    /// instead of answering a later call.
    pub call_seq: u64,
}

impl Io {
    pub fn post(&mut self, kind: u32, json: Value, bufs: Vec<Vec<u8>>) {
        self.posted = true;
        self.notifier.post(self.id, kind, json.to_string(), bufs);
    }

    /// Time left before the deadline (an error if it passed).
    pub fn remaining(&self) -> wasmtime::Result<Option<Duration>> {
        match self.deadline {
            None => Ok(None),
            Some(d) => {
                let now = Instant::now();
                if now >= d {
                    Err(wasmtime::Error::new(DeadlineExceeded))
                } else {
                    Ok(Some(d - now))
                }
            }
        }
    }

    /// Sends a `CALL` (numbered: `seq`) and waits for the JS thread's reply to it, at most until
    /// the deadline; replies to earlier calls are dropped.
    pub fn call(&mut self, mut json: Value, bufs: Vec<Vec<u8>>) -> wasmtime::Result<Reply> {
        self.remaining()?;
        self.call_seq += 1;
        let seq = self.call_seq;
        if let Value::Object(m) = &mut json {
            m.insert("seq".to_string(), json!(seq));
        }
        self.post(kind::CALL, json, bufs);
        loop {
            let r = match self.remaining()? {
                Some(t) => self.replies.recv_timeout(t),
                None => self.replies.recv().map_err(|_| RecvTimeoutError::Disconnected),
            };
            match r {
                Ok(reply) if reply.json.get("seq").and_then(Value::as_u64) == Some(seq) => return Ok(reply),
                Ok(_) => continue, // a late reply to an earlier call
                Err(RecvTimeoutError::Timeout) => return Err(wasmtime::Error::new(DeadlineExceeded)),
                Err(RecvTimeoutError::Disconnected) => return Err(wasmtime::Error::new(Finalized)),
            }
        }
    }

    /// Ends a call into the guest: reports what the log pre-filter dropped.
    pub fn end_call(&mut self) {
        if let Some((bytes, messages)) = self.log.end_call() {
            self.post(kind::LOG_DROPPED, json!({ "bytes": bytes, "messages": messages }), vec![]);
        }
    }
}

/// Store data of one sandbox.
pub struct Guest {
    pub table: ResourceTable,
    pub limits: StoreLimits,
    pub io: Io,
    /// WASI resources in `table` now (bounded).
    pub resources: usize,
}

/// `result<_, error>` of a reply: `{ok: ...}` or `{err: {code, message}}`.
fn reply_unit(r: &Reply) -> Result<(), Error> {
    match r.json.get("err") {
        Some(e) => Err(wire::error_from(e)),
        None => Ok(()),
    }
}

fn level_name(l: LogLevel) -> &'static str {
    match l {
        LogLevel::Info => "info",
        LogLevel::Warn => "warn",
        LogLevel::Error => "error",
        LogLevel::Verbose => "verbose",
    }
}

impl Host for Guest {
    fn log(&mut self, level: LogLevel, message: String) -> wasmtime::Result<()> {
        if self.io.log.charge(message.len() as u64, 1) {
            self.io.post(kind::LOG, json!({ "level": level_name(level), "message": message }), vec![]);
        }
        Ok(())
    }

    fn send_response(
        &mut self,
        request: u32,
        response: Result<Response, Error>,
        final_: bool,
    ) -> wasmtime::Result<Result<(), Error>> {
        if let Some(sink) = self.io.direct.as_mut() {
            return Ok(sink.send_response(request, response, final_));
        }
        // The response as a results descriptor (descriptor.rs), the last buffer, as execute results travel.
        let mut bufs = Vec::new();
        let desc = descriptor::result(response, &mut bufs);
        bufs.push(desc);
        let r = self.io.call(json!({ "fn": "send-response", "handle": request, "final": final_ }), bufs)?;
        Ok(reply_unit(&r))
    }

    fn send_final(&mut self, request: u32) -> wasmtime::Result<Result<(), Error>> {
        if let Some(sink) = self.io.direct.as_mut() {
            return Ok(sink.send_final(request));
        }
        let r = self.io.call(json!({ "fn": "send-final", "handle": request }), vec![])?;
        Ok(reply_unit(&r))
    }

    fn is_cancelled(&mut self, request: u32) -> wasmtime::Result<bool> {
        if let Some(sink) = self.io.direct.as_mut() {
            return Ok(sink.is_cancelled(request));
        }
        let r = self.io.call(json!({ "fn": "is-cancelled", "handle": request }), vec![])?;
        Ok(r.json.get("ok").and_then(Value::as_bool).unwrap_or(false))
    }

    fn read_file(&mut self, path: String) -> wasmtime::Result<Result<Vec<u8>, Error>> {
        let mut r = self.io.call(json!({ "fn": "read-file", "path": path }), vec![])?;
        if let Some(e) = r.json.get("err") {
            return Ok(Err(wire::error_from(e)));
        }
        Ok(Ok(if r.bufs.is_empty() { Vec::new() } else { r.bufs.swap_remove(0) }))
    }

    fn list_files(&mut self) -> wasmtime::Result<Result<Vec<String>, Error>> {
        let r = self.io.call(json!({ "fn": "list-files" }), vec![])?;
        if let Some(e) = r.json.get("err") {
            return Ok(Err(wire::error_from(e)));
        }
        let list = r
            .json
            .get("ok")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(|s| s.as_str().map(str::to_string)).collect())
            .unwrap_or_default();
        Ok(Ok(list))
    }
}

impl crate::bindings::warden::backend::types::Host for Guest {}
