//! Executes submitted from Rust by the native data path (DESIGN "The native data path"), beside
//! the host's own (the C ABI's descriptors): the requests are handed over as Rust values and
//! lowered into the guest from where they lie, and what the guest answers — the results of
//! `execute`, and whatever it sends with `send-response` / `send-final` during it — goes to the
//! submitter's [`DirectSink`] on the instance thread, never to the JS thread. Everything else a
//! sandbox does during a direct execute reaches the JS thread as usual (logs, stdout / stderr,
//! `read-file` / `list-files` calls, the trap that ends it, marked `direct`), so the host keeps
//! its supervision, log budget and statistics of the sandbox whoever submitted the work.
use crate::bindings::warden::backend::types::{Error, Response};
use crate::instance::Cmd;
use crate::wake::WakeSlot;
use std::sync::mpsc::Sender;
use std::sync::Arc;

pub use crate::bindings::warden::backend::types::Error as WitError;

/// The `TRITONSERVER_Error_Code` of a WIT `error-code`.
pub fn triton_error_code(c: ErrorCode) -> u32 {
    u32::from(crate::descriptor::error_code(c))
}

/// The WIT `data-type` of a `TRITONSERVER_DataType` (BOOL = 1 … BF16 = 14); None for the others.
pub fn wit_datatype(t: u32) -> Option<DataType> {
    crate::descriptor::DATATYPES.get((t as usize).checked_sub(1)?).copied()
}
pub use crate::bindings::warden::backend::types::{
    DataType, ErrorCode, ParameterResult, ParameterValueResult, Response as WitResponse, TensorResult,
};

/// One input tensor of a direct request; its bytes stay where they are (a request body, a decoded
/// buffer) until the execute's outcome has been delivered.
pub struct DirectTensor {
    pub name: Arc<str>,
    pub datatype: DataType,
    /// Dimensions (all >= 0).
    pub shape: Vec<i64>,
    pub data: Box<dyn AsRef<[u8]> + Send>,
}

/// One request of a direct execute, as the guest's `request` record carries it (no correlation
/// id, flags, priority, timeout or parameters: the data path serves none of them).
pub struct DirectRequest {
    /// The handle the guest names the request by in `send-response` / `send-final` / `is-cancelled`.
    pub handle: u32,
    pub id: String,
    pub batch_size: u32,
    pub inputs: Vec<DirectTensor>,
    pub requested_outputs: Vec<Arc<str>>,
}

/// How a direct execute ended.
pub enum DirectOutcome {
    /// `execute` returned (`results`, in request order, as the guest returned them); compute
    /// times on CLOCK_MONOTONIC, ns.
    Returned { results: Vec<Result<Response, Error>>, compute_start_ns: u64, compute_end_ns: u64 },
    /// The guest trapped (`message`); the sandbox is being started again.
    Trapped(String),
    /// The execute deadline passed; the sandbox is being started again.
    Deadline,
    /// No sandbox could be started for the execute (`message`).
    RespawnFailed(String),
    /// The instance thread is ending (the host let the instance go).
    Gone,
}

/// The submitter's side of one direct execute, called on the instance thread while the guest
/// runs. Each `send`/`is_cancelled` answers a host call of the guest at once (no blocking).
pub trait DirectSink: Send {
    /// `host.send-response(request, response, final)`; the error goes back to the guest.
    fn send_response(&mut self, handle: u32, response: Result<Response, Error>, final_: bool) -> Result<(), Error>;
    /// `host.send-final(request)`; the error goes back to the guest.
    fn send_final(&mut self, handle: u32) -> Result<(), Error>;
    /// `host.is-cancelled(request)`.
    fn is_cancelled(&mut self, handle: u32) -> bool;
    /// The execute's outcome; called exactly once, unless the thread ended with the execute still
    /// queued (then the sink is dropped without it).
    fn finish(self: Box<Self>, outcome: DirectOutcome);
}

/// A batch of requests and where its answers go.
pub struct DirectExecute {
    pub requests: Vec<DirectRequest>,
    pub sink: Box<dyn DirectSink>,
}

/// A handle on an instance thread for direct executes. It does not keep the thread alive: once the
/// host frees the instance, [`DirectHandle::execute`] hands the work back (or the thread drops it,
/// and with it the sink, if it was queued behind the stop).
#[derive(Clone)]
pub struct DirectHandle {
    pub(crate) cmds: Sender<Cmd>,
    pub(crate) wake: Arc<WakeSlot>,
    pub(crate) thread: std::thread::Thread,
}

impl DirectHandle {
    /// Queues `job` on the instance thread, behind whatever is queued there.
    /// @returns the job back when the thread has ended
    pub fn execute(&self, job: DirectExecute) -> Result<(), DirectExecute> {
        self.wake.before_post();
        let sent = self.cmds.send(Cmd::Direct(job));
        self.thread.unpark();
        match sent {
            Ok(()) => Ok(()),
            Err(std::sync::mpsc::SendError(Cmd::Direct(job))) => Err(job),
            Err(_) => Ok(()), // only a direct execute is sent here
        }
    }
}
