//! `/infer` requests for models the data path does not run itself (V8 sandboxes, the Python
//! backend, models with a scheduler, ...), read on the native threads and handed to the control
//! plane in-process (DESIGN "The native data path"): the control plane answers them with the very
//! entry point its front-end threads use (frontend/http/app.ts `serveRing`: the TypeScript
//! decode, data plane, encode and error answers), and the answer's status, headers and body go
//! back here to be written. One semantics, no socket hop, and no HTTP parsing on the JavaScript
//! thread. A request the control plane declines (closing, a caller it must audit) is forwarded to
//! its internal listener with the body read, as a request the data path cannot decode is.
use bytes::Bytes;
use std::ffi::c_void;
use std::sync::atomic::{AtomicU64, Ordering};
use tokio::sync::oneshot;

/// One request handed to the control plane (C: `WdJsRequest`, opaque), owned by the callee until
/// [`wd_js_answer`] or [`wd_js_decline`].
pub struct WdJsRequest {
    pub token: u64,
    pub model: String,
    /// The version the URL names; -1 for the model's policy.
    pub version: i64,
    pub body: Bytes,
    /// `Inference-Header-Content-Length` as sent, if any.
    pub header_length: Option<String>,
    pub authorization: Option<String>,
    tx: Option<oneshot::Sender<JsAnswer>>,
}

/// The control plane's answer: written as it is, or declined (forwarded to its internal listener).
pub enum JsAnswer {
    Answer { status: u16, headers: Vec<(String, String)>, body: Vec<u8> },
    Declined,
}

/// Called on a data path thread: a new request (`request` non-null, the callee owns it), or the
/// client of request `cancelled` went away before its answer (`request` null).
pub type JsNotifyFn = unsafe extern "C" fn(ctx: *mut c_void, request: *mut WdJsRequest, cancelled: u64);

/// Where handed-over requests go, and which ones qualify.
pub struct JsInfer {
    notify: JsNotifyFn,
    ctx: usize,
    /// Bodies handed over are shorter than this (bytes; the fast path's bound: longer bodies are
    /// decoded off the event loop by the control plane's codec workers, behind its listener).
    pub max_body_bytes: u64,
    next_token: AtomicU64,
}

impl JsInfer {
    /// # Safety
    /// `notify` may be called with `ctx` from any thread until the server is freed.
    pub unsafe fn new(notify: JsNotifyFn, ctx: *mut c_void, max_body_bytes: u64) -> JsInfer {
        JsInfer { notify, ctx: ctx as usize, max_body_bytes, next_token: AtomicU64::new(1) }
    }

    /// Hands a request over.
    /// @returns the receiver of its answer (an error when the control plane dropped it unanswered)
    pub fn submit(
        &self,
        model: String,
        version: i64,
        body: Bytes,
        header_length: Option<String>,
        authorization: Option<String>,
    ) -> (u64, oneshot::Receiver<JsAnswer>) {
        let (tx, rx) = oneshot::channel();
        let token = self.next_token.fetch_add(1, Ordering::Relaxed);
        let req = Box::new(WdJsRequest { token, model, version, body, header_length, authorization, tx: Some(tx) });
        // SAFETY: the binding's contract (JsInfer::new); the callee owns the request from here.
        unsafe { (self.notify)(self.ctx as *mut c_void, Box::into_raw(req), 0) };
        (token, rx)
    }

    /// Tells the control plane the client of `token` went away.
    pub fn cancel(&self, token: u64) {
        // SAFETY: as in submit.
        unsafe { (self.notify)(self.ctx as *mut c_void, std::ptr::null_mut(), token) };
    }
}

/// Cancels the handed-over request when dropped armed (the client went away: hyper drops the
/// request's future).
pub struct CancelOnDrop<'a> {
    pub js: &'a JsInfer,
    pub token: u64,
    pub armed: bool,
}

impl Drop for CancelOnDrop<'_> {
    fn drop(&mut self) {
        if self.armed {
            self.js.cancel(self.token);
        }
    }
}

/// Whether `name` is a model name the fast path claims (frontend/http/claim.ts INFER_URL).
fn claimable_name(name: &str) -> bool {
    let b = name.as_bytes();
    !b.is_empty()
        && b.len() <= 255
        && (b[0].is_ascii_alphanumeric() || b[0] == b'_')
        && b.iter().all(|&c| c.is_ascii_alphanumeric() || c == b'_' || c == b'.' || c == b'-')
}

/// The model and version of an `/infer` URL path the fast path claims (claim.ts matchInferUrl:
/// the version -1 when the URL names none), or None.
pub fn infer_target(path: &str) -> Option<(&str, i64)> {
    if path.len() > 320 {
        return None;
    }
    let rest = path.strip_prefix("/v2/models/")?.strip_suffix("/infer")?;
    let (name, version) = match rest.split_once("/versions/") {
        Some((n, v)) => {
            if v.is_empty() || v.len() > 15 || !v.bytes().all(|c| c.is_ascii_digit()) {
                return None;
            }
            (n, v.parse().ok()?)
        }
        None => (rest, -1),
    };
    claimable_name(name).then_some((name, version))
}

/// The request's parts (C: `wd_js_request_parts`); strings are not NUL-terminated.
///
/// # Safety
/// `r` is a live request; the out pointers are valid; what they point at lives as long as `r`.
#[no_mangle]
pub unsafe extern "C" fn wd_js_request_parts(r: &WdJsRequest, out: &mut WdJsRequestParts) {
    let s = |v: &Option<String>| v.as_deref().map(|x| (x.as_ptr(), x.len() as i64)).unwrap_or((std::ptr::null(), -1));
    let (header_length, header_length_len) = s(&r.header_length);
    let (authorization, authorization_len) = s(&r.authorization);
    *out = WdJsRequestParts {
        token: r.token,
        model: r.model.as_ptr(),
        model_len: r.model.len(),
        version: r.version,
        body: r.body.as_ptr(),
        body_len: r.body.len(),
        header_length,
        header_length_len,
        authorization,
        authorization_len,
    };
}

/// `WdJsRequestParts` (warden/data_path.h); an absent string has length -1.
#[repr(C)]
pub struct WdJsRequestParts {
    pub token: u64,
    pub model: *const u8,
    pub model_len: usize,
    pub version: i64,
    pub body: *const u8,
    pub body_len: usize,
    pub header_length: *const u8,
    pub header_length_len: i64,
    pub authorization: *const u8,
    pub authorization_len: i64,
}

/// Answers the request and frees it: status, `n` headers (names and values, not NUL-terminated)
/// and body, all copied. A request whose client went away is freed all the same.
///
/// # Safety
/// `r` came from the notify function and is not used again; `names`/`name_lens`/`values`/
/// `value_lens` point at `n` values each; `body` at `body_len` bytes (or `body_len` is 0).
#[no_mangle]
pub unsafe extern "C" fn wd_js_answer(
    r: Option<Box<WdJsRequest>>,
    status: u16,
    names: *const *const u8,
    name_lens: *const usize,
    values: *const *const u8,
    value_lens: *const usize,
    n: usize,
    body: *const u8,
    body_len: usize,
) {
    let Some(mut r) = r else { return };
    // SAFETY: the caller's contract.
    let (names, name_lens, values, value_lens) = unsafe {
        (
            warden_ffi::slice(names, n),
            warden_ffi::slice(name_lens, n),
            warden_ffi::slice(values, n),
            warden_ffi::slice(value_lens, n),
        )
    };
    let text = |p: *const u8, len: usize| {
        // SAFETY: the caller's contract: `len` readable bytes at `p`.
        String::from_utf8_lossy(unsafe { warden_ffi::slice(p, len) }).into_owned()
    };
    let headers = (0..n).map(|k| (text(names[k], name_lens[k]), text(values[k], value_lens[k]))).collect();
    // SAFETY: the caller's contract.
    let body = unsafe { warden_ffi::slice(body, body_len) }.to_vec();
    if let Some(tx) = r.tx.take() {
        let _ = tx.send(JsAnswer::Answer { status, headers, body });
    }
}

/// Declines the request (the data path forwards it to the control plane's internal listener) and
/// frees it.
#[no_mangle]
pub extern "C" fn wd_js_decline(r: Option<Box<WdJsRequest>>) {
    if let Some(mut r) = r {
        if let Some(tx) = r.tx.take() {
            let _ = tx.send(JsAnswer::Declined);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn infer_urls_are_claimed_as_the_fast_path_claims_them() {
        assert_eq!(infer_target("/v2/models/simple/infer"), Some(("simple", -1)));
        assert_eq!(infer_target("/v2/models/a.b-c_d/versions/12/infer"), Some(("a.b-c_d", 12)));
        assert_eq!(infer_target("/v2/models/.hidden/infer"), None);
        assert_eq!(infer_target("/v2/models/a%20b/infer"), None);
        assert_eq!(infer_target("/v2/models/a/b/infer"), None);
        assert_eq!(infer_target("/v2/models/m/versions//infer"), None);
        assert_eq!(infer_target("/v2/models/m/versions/-1/infer"), None);
        assert_eq!(infer_target("/v2/models/m/versions/1234567890123456/infer"), None);
        assert_eq!(infer_target(&format!("/v2/models/{}/infer", "m".repeat(256))), None);
        assert_eq!(infer_target("/v2/models//infer"), None);
    }
}
