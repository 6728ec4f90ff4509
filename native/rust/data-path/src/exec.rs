//! Submitting one decoded request to a native instance (`WARDEN_InstanceExecute`, host.h) and
//! waiting for its one response. The request's input bytes stay alive until the backend releases
//! it; the response comes back from whatever thread the backend answers on, through a oneshot.
use crate::decode::{Data, Decoded};
use crate::host::{
    ExecStats, HostApi, HostError, InputDesc, Opaque, RequestDesc, RequestStats, RESPONSE_CLOSED, RESPONSE_FINAL,
};
use crate::route::{Instance, Route};
use bytes::Bytes;
use std::ffi::{c_void, CString};
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex};
use tokio::sync::oneshot;

/// A backend's response, owned until dropped (`TRITONSERVER_InferenceResponseDelete`).
pub struct Response {
    api: HostApi,
    ptr: *mut Opaque,
}

// SAFETY: a TRITONSERVER_InferenceResponse is a plain heap object owned by whoever holds it; the
// backend hands it over with the response callback and never touches it again.
unsafe impl Send for Response {}

impl Response {
    pub fn ptr(&self) -> *mut Opaque {
        self.ptr
    }
}

impl Drop for Response {
    fn drop(&mut self) {
        let e = (self.api.response_delete)(self.ptr);
        let _ = self.api.take_error(e);
    }
}

/// What the request's one answer is.
pub enum Outcome {
    Response(Response),
    /// The backend sent FINAL without a response, or an Execute error (delivered as such).
    Error(HostError),
}

/// Per-request state shared by the callbacks: the body (inputs borrow it), the sender, the stats.
struct Pending {
    api: HostApi,
    route: Arc<Route>,
    /// Kept alive until release: the request body (binary inputs point into it) and decoded inputs.
    _body: Bytes,
    _owned: Vec<Vec<u8>>,
    _shapes: Vec<Vec<i64>>,
    answer: Mutex<Option<oneshot::Sender<Outcome>>>,
    first: Mutex<Option<Response>>,
    remaining: AtomicU8,
    enqueued_ns: u64,
}

/// CLOCK_MONOTONIC in ns (the clock of the backend's statistics, host.h).
pub fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes one timespec into the valid local above.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

fn finish(p: *mut Pending) {
    // SAFETY: `p` came from Arc::into_raw in `submit`; each of the two callbacks (FINAL, release)
    // calls this once, and the second one drops the Arc.
    let pending = unsafe { &*p };
    if pending.remaining.fetch_sub(1, Ordering::AcqRel) == 1 {
        // SAFETY: the last of the two references the callbacks held; nothing touches `p` after this.
        let arc = unsafe { Arc::from_raw(p) };
        arc.route.inflight.fetch_sub(1, Ordering::AcqRel);
    }
}

extern "C" fn on_response(userp: *mut c_void, response: *mut Opaque, flags: u32) {
    let p = userp as *mut Pending;
    // SAFETY: `userp` is the Pending of this request, alive until both callbacks ran (finish).
    let pending = unsafe { &*p };
    if !response.is_null() {
        let r = Response { api: pending.api, ptr: response };
        let mut first = pending.first.lock().unwrap_or_else(|e| e.into_inner());
        if first.is_none() {
            *first = Some(r);
        } // a second response of a non-decoupled request is dropped (the data plane counts only one)
    }
    if flags & (RESPONSE_FINAL | RESPONSE_CLOSED) != 0 {
        let first = pending.first.lock().unwrap_or_else(|e| e.into_inner()).take();
        let outcome = match first {
            Some(r) => Outcome::Response(r),
            None => Outcome::Error(HostError { code: 1, message: "backend sent no response".into() }),
        };
        if let Some(tx) = pending.answer.lock().unwrap_or_else(|e| e.into_inner()).take() {
            let _ = tx.send(outcome);
        }
        finish(p);
    }
}

extern "C" fn on_release(userp: *mut c_void, stats: *const RequestStats) {
    let p = userp as *mut Pending;
    // SAFETY: as in on_response.
    let pending = unsafe { &*p };
    if !stats.is_null() {
        // SAFETY: the host passes a valid WARDEN_RequestStats for the duration of the call.
        let s = unsafe { *stats };
        if s.reported {
            let st = &pending.route.stats;
            st.request_times(
                s.exec_start_ns.saturating_sub(pending.enqueued_ns),
                s.compute_start_ns.saturating_sub(s.exec_start_ns),
                s.compute_end_ns.saturating_sub(s.compute_start_ns),
                s.exec_end_ns.saturating_sub(s.compute_end_ns),
            );
        }
    }
    finish(p);
}

/// What an Execute's completion callback needs.
struct ExecCtx {
    api: HostApi,
    route: Arc<Route>,
}

extern "C" fn on_exec_done(userp: *mut c_void, error: *mut Opaque, stats: *const ExecStats) {
    // SAFETY: `userp` is the ExecCtx boxed for this execute in `submit`; reclaimed here, once.
    let ctx = unsafe { Box::from_raw(userp as *mut ExecCtx) };
    let route = &ctx.route;
    // An Execute error was already delivered to every request as its final response (host.h);
    // this is a copy the callee owns.
    let _ = ctx.api.take_error(error);
    if !stats.is_null() {
        // SAFETY: valid for the duration of the call (host.h).
        let s = unsafe { *stats };
        if s.reported {
            route.stats.execution(
                s.batch_size,
                s.compute_start_ns.saturating_sub(s.exec_start_ns),
                s.compute_end_ns.saturating_sub(s.compute_start_ns),
                s.exec_end_ns.saturating_sub(s.compute_end_ns),
            );
        }
    }
}

/// Submits `req` (decoded from `body`) to one of the route's instances.
/// @returns the receiver of its one outcome, or the host's error when the submit itself failed
pub fn submit(
    api: &HostApi,
    route: &Arc<Route>,
    mut req: Decoded,
    body: Bytes,
) -> Result<oneshot::Receiver<Outcome>, HostError> {
    let (tx, rx) = oneshot::channel();
    let mut owned = Vec::new();
    let mut shapes = Vec::new();
    let mut ranges = Vec::new();
    for t in req.inputs.iter_mut() {
        match std::mem::replace(&mut t.data, Data::Owned(Vec::new())) {
            Data::Owned(v) => {
                ranges.push((owned.len(), None));
                owned.push(v);
            }
            Data::Body(r) => ranges.push((usize::MAX, Some(r))),
        }
        shapes.push(std::mem::take(&mut t.shape));
    }
    let mut descs = Vec::with_capacity(req.inputs.len());
    for (k, t) in req.inputs.iter().enumerate() {
        let (ptr, len) = match &ranges[k] {
            (i, None) => (owned[*i].as_ptr(), owned[*i].len()),
            (_, Some(r)) => (body[r.clone()].as_ptr(), r.len()),
        };
        descs.push(InputDesc {
            name: route.inputs[t.index].c_name.as_ptr(),
            datatype: route.inputs[t.index].datatype,
            shape: shapes[k].as_ptr(),
            dims_count: shapes[k].len() as u32,
            data: ptr as *const c_void,
            byte_size: len as u64,
        });
    }
    let requested_ptrs: Vec<*const std::ffi::c_char> = if req.formats.requested.is_empty() {
        route.output_c_names.iter().map(|c| c.as_ptr()).collect()
    } else {
        req.formats.requested.iter().map(|(i, _)| route.output_c_names[*i].as_ptr()).collect()
    };
    let id = CString::new(req.id.as_str()).unwrap_or_default();
    let pending = Arc::new(Pending {
        api: *api,
        route: route.clone(),
        _body: body,
        _owned: owned,
        _shapes: shapes,
        answer: Mutex::new(Some(tx)),
        first: Mutex::new(None),
        remaining: AtomicU8::new(2),
        enqueued_ns: monotonic_ns(),
    });
    let userp = Arc::into_raw(pending) as *mut c_void;
    let desc = RequestDesc {
        id: id.as_ptr(),
        correlation_id: 0,
        correlation_id_string: std::ptr::null(),
        flags: 0,
        timeout_us: 0,
        priority: 0,
        cancelled: false,
        inputs: descs.as_ptr(),
        input_count: descs.len() as u32,
        requested_outputs: requested_ptrs.as_ptr(),
        requested_output_count: requested_ptrs.len() as u32,
        parameters: std::ptr::null(),
        parameter_count: 0,
        response_fn: on_response,
        release_fn: on_release,
        userp,
        reschedulable: false,
    };
    route.inflight.fetch_add(1, Ordering::AcqRel);
    let Instance(instance) = route.pick();
    let route_userp = Box::into_raw(Box::new(ExecCtx { api: *api, route: route.clone() })) as *mut c_void;
    let err = (api.instance_execute)(instance, &desc, 1, on_exec_done, route_userp);
    if let Some(e) = api.take_error(err) {
        // Nothing was queued: neither callback will run; reclaim both references.
        // SAFETY: the references leaked above, never handed to the host.
        unsafe {
            drop(Arc::from_raw(userp as *const Pending));
            drop(Box::from_raw(route_userp as *mut ExecCtx));
        }
        route.inflight.fetch_sub(1, Ordering::AcqRel);
        return Err(e);
    }
    Ok(rx)
}
