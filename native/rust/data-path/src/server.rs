//! The public HTTP port when the native data path is on: a tokio runtime of `threads` workers
//! accepts connections (applying the connection caps), speaks HTTP/1.1 with hyper, serves the
//! inference requests of published routes on these threads (decode, submit to the native instance,
//! encode) and forwards everything else to the control plane (proxy.rs).
use crate::decode::decode;
use crate::encode::{encode, OutputView};
use crate::exec::{monotonic_ns, submit, Outcome};
use crate::host::{HostApi, HostError, MEMORY_CPU};
use crate::moving::{EndSignal, MovableIo, MoveState};
use crate::proxy::{Body, Fallback};
use crate::route::{Route, Routes};
use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::header::{HeaderValue, CONTENT_LENGTH, CONTENT_TYPE};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use std::collections::HashMap;
use std::convert::Infallible;
use std::ffi::{c_char, c_void, CStr};
use std::future::Future;
use std::net::IpAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::watch;

/// The header that asks the internal listener to render a backend error (frontend/http/internal-listener.ts).
pub const NATIVE_ERROR: &str = "x-warden-native-error";

/// Settings of the public port (`WdServerOptions` in warden/data_path.h).
#[derive(Clone, Debug)]
pub struct Options {
    pub threads: usize,
    pub max_connections: u64,
    /// 0 = no per-address cap.
    pub max_connections_per_address: u64,
    /// Bodies the data path reads itself (bytes); longer ones stream to the control plane.
    pub max_body_bytes: u64,
    pub header_timeout: Duration,
    pub body_timeout: Duration,
    /// Bound of the JSON text of a response's tensors (bytes): an answer that could print more is
    /// refused before any of it is printed (infer-response.ts checkJsonOutputSize).
    pub max_json_output_bytes: u64,
    /// `--http-restricted-api`'s `inference` restriction (header name in lower case, value):
    /// requests without it are not claimed (the control plane refuses them with its 403).
    pub infer_restriction: Option<(String, Vec<u8>)>,
}

/// Counters the control plane reads (`wd_server_counters`).
#[derive(Default)]
pub struct Counters {
    pub served: AtomicU64,
    pub forwarded: AtomicU64,
    /// Requests for a published route the data path handed to the control plane after reading them.
    pub replayed: AtomicU64,
    pub refused_connections: AtomicU64,
    /// gRPC `ModelInfer` calls served here (grpc.rs).
    pub grpc_served: AtomicU64,
    /// gRPC calls forwarded to the control plane's gRPC server (grpc_proxy.rs).
    pub grpc_forwarded: AtomicU64,
    /// `/infer` requests read here and handed to the control plane in-process (js_infer.rs).
    pub handed_over: AtomicU64,
    /// Connections moved to the control plane's HTTP server (moving.rs).
    pub moved_connections: AtomicU64,
}

pub struct Shared {
    pub api: HostApi,
    pub routes: Routes,
    pub fallback: Arc<Fallback>,
    /// The control plane's gRPC server, once the gRPC port is served too ([`Server::listen_grpc`]).
    pub grpc_fallback: std::sync::OnceLock<Arc<crate::grpc_proxy::GrpcFallback>>,
    /// Where `/infer` requests of models without a route are handed over, once the control plane
    /// asked for them (js_infer.rs).
    pub js: std::sync::OnceLock<crate::js_infer::JsInfer>,
    /// Where connections that sent a handed-over request move to, once the control plane asked
    /// for them (moving.rs).
    pub mover: std::sync::OnceLock<crate::moving::Mover>,
    pub options: Options,
    pub counters: Counters,
    open: Mutex<HashMap<IpAddr, u64>>,
    open_total: AtomicU64,
    closing: AtomicBool,
    /** While set, every request goes to the control plane (e.g. while a trace setting is on). */
    pub paused: AtomicBool,
}

/// The running server.
pub struct Server {
    pub shared: Arc<Shared>,
    runtime: Option<tokio::runtime::Runtime>,
    stop: watch::Sender<bool>,
}

fn text_response(status: StatusCode, body: &'static str) -> Response<Body> {
    let mut r = Response::new(Full::new(Bytes::from_static(body.as_bytes())).map_err(|never| match never {}).boxed());
    *r.status_mut() = status;
    r.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    r
}

/// The route a request is for, when the data path may serve it (the claim rules of the `/infer`
/// fast paths, frontend/http/claim.ts: POST, a plain infer URL, no query, `Content-Length` within
/// the limit, no content or transfer encoding, JSON or octet-stream, identity accept-encoding).
fn claim(shared: &Shared, req: &Request<Incoming>) -> Option<Arc<Route>> {
    if req.method() != Method::POST || req.uri().query().is_some() || shared.paused.load(Ordering::Relaxed) {
        return None;
    }
    let rest = req.uri().path().strip_prefix("/v2/models/")?.strip_suffix("/infer")?;
    let (name, version) = match rest.split_once("/versions/") {
        Some((n, v)) => (n, Some(v)),
        None => (rest, None),
    };
    if name.contains('/') {
        return None;
    }
    let route = shared.routes.get(name)?;
    if version.is_some_and(|v| v != route.version_text) {
        return None;
    }
    if let Some((header, value)) = &shared.options.infer_restriction {
        // the first of repeated headers counts, as the control plane reads it (frontend/http/restricted.ts)
        if !req.headers().get(header.as_str()).is_some_and(|v| constant_time_eq(v.as_bytes(), value)) {
            return None;
        }
    }
    plain(req.headers(), shared.options.max_body_bytes).then_some(route)
}

/// Byte equality whose time does not depend on where the bytes differ (a restriction's value is a secret).
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |d, (x, y)| d | (x ^ y)) == 0
}

/// The header rules of the fast paths' claim (frontend/http/claim.ts plainRequest): a
/// `Content-Length` below `max_body`, no content or transfer encoding, JSON or octet-stream (or no
/// type), identity accept-encoding.
fn plain(h: &hyper::HeaderMap, max_body: u64) -> bool {
    if h.contains_key("content-encoding") || h.contains_key("transfer-encoding") {
        return false;
    }
    let len: Option<u64> = h.get(CONTENT_LENGTH).and_then(|v| v.to_str().ok()).and_then(|v| v.parse().ok());
    if !len.is_some_and(|n| n < max_body) {
        return false;
    }
    if h.get(CONTENT_TYPE).is_some_and(|t| t != "application/json" && t != "application/octet-stream") {
        return false;
    }
    h.get("accept-encoding").is_none_or(|a| a == "identity")
}

/// The model and version of a request to hand to the control plane (js_infer.rs): a plain `/infer`
/// request the data path has no route for, under the fast path's claim rules, once the control plane
/// asked for them and while the data path is not paused.
fn claim_js<'r>(shared: &Shared, js: &crate::js_infer::JsInfer, req: &'r Request<Incoming>) -> Option<(&'r str, i64)> {
    if req.method() != Method::POST || req.uri().query().is_some() || shared.paused.load(Ordering::Relaxed) {
        return None;
    }
    let target = crate::js_infer::infer_target(req.uri().path())?;
    let h = req.headers();
    // header values the control plane reads must be text (it would see them otherwise)
    let text = |k: &str| h.get(k).is_none_or(|v| v.to_str().is_ok());
    (plain(h, js.max_body_bytes) && text("inference-header-content-length") && text("authorization")).then_some(target)
}

async fn handle(
    shared: Arc<Shared>,
    req: Request<Incoming>,
    client: Arc<str>,
    moves: Arc<MoveState>,
) -> Result<Response<Body>, Infallible> {
    let Some(route) = claim(&shared, &req) else {
        if let Some(js) = shared.js.get() {
            if let Some((model, version)) = claim_js(&shared, js, &req) {
                let model = model.to_string();
                // the requests that follow on this connection are likely the same model's: the
                // connection moves to the control plane once this one is answered (moving.rs)
                if shared.mover.get().is_some() {
                    moves.ask();
                }
                return Ok(hand_over(&shared, js, req, model, version, &client).await);
            }
        }
        shared.counters.forwarded.fetch_add(1, Ordering::Relaxed);
        let (parts, body) = req.into_parts();
        return Ok(forward(&shared, parts, Fallback::stream(body), &client).await);
    };
    let start = monotonic_ns();
    let header_len = match req.headers().get("inference-header-content-length") {
        None => None,
        Some(v) => {
            v.to_str().ok().and_then(|s| s.parse::<u32>().ok()).filter(|&n| n <= i32::MAX as u32).map(|n| n as usize)
        }
    };
    let bad_header = req.headers().contains_key("inference-header-content-length") && header_len.is_none();
    let (parts, body) = req.into_parts();
    let limit = shared.options.max_body_bytes as usize;
    let collected = match tokio::time::timeout(shared.options.body_timeout, Limited::new(body, limit).collect()).await {
        Ok(Ok(c)) => c.to_bytes(),
        _ => return Ok(text_response(StatusCode::BAD_REQUEST, "{\"error\":\"failed to read the request body\"}")),
    };
    let decoded = if bad_header { None } else { decode(&route, &collected, header_len) };
    let Some(decoded) = decoded else {
        shared.counters.replayed.fetch_add(1, Ordering::Relaxed);
        let body = Full::new(collected).map_err(|never| match never {}).boxed();
        return Ok(forward(&shared, parts, body, &client).await);
    };
    let batch = decoded.batch;
    let formats = decoded.formats.requested.clone();
    let default_binary = decoded.formats.default_binary;
    let id = decoded.id.clone();
    // An answer that cannot be printed (past the JSON bound) is still a successful inference, as
    // the TypeScript path counts it: the model's statistics see a success, the client an error.
    let max_json = shared.options.max_json_output_bytes;
    let mut inferred = false;
    let mut print = |views: &[OutputView<'_>], parameters: Option<&[u8]>| {
        inferred = true;
        render_views(&route, &id, parameters, views, max_json)
    };
    let answer = if route.ort.is_some() {
        let r = crate::ort_exec::run(&route, decoded, collected.clone()).await;
        r.and_then(|a| print(&a.views(&route, &formats, default_binary, batch)?, None))
    } else if route.wasm.is_some() {
        let r = crate::wasm_exec::run(&route, decoded, collected.clone()).await;
        r.and_then(|a| {
            let views = a.views(&route, &formats, default_binary, batch)?;
            print(&views, crate::wasm_exec::parameters_json(a.parameters()).as_deref())
        })
    } else {
        let rx = match submit(&shared.api, &route, decoded, collected.clone()) {
            Ok(rx) => rx,
            Err(_) => {
                // The instance refused the submit (finalizing): the control plane answers as it would.
                shared.counters.replayed.fetch_add(1, Ordering::Relaxed);
                let body = Full::new(collected).map_err(|never| match never {}).boxed();
                return Ok(forward(&shared, parts, body, &client).await);
            }
        };
        match rx.await {
            Ok(Outcome::Response(r)) => output_views(&shared.api, &route, r.ptr(), &formats, default_binary, batch)
                .and_then(|v| print(&v, None)),
            Ok(Outcome::Error(e)) => Err(e),
            Err(_) => Err(internal("backend dropped the request".to_string())),
        }
    };
    let now_ms =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0);
    let end = monotonic_ns();
    shared.counters.served.fetch_add(1, Ordering::Relaxed);
    match answer {
        Ok(resp) => {
            route.stats.success(end.saturating_sub(start), batch, now_ms);
            Ok(resp)
        }
        Err(e) => {
            if inferred {
                route.stats.success(end.saturating_sub(start), batch, now_ms);
            } else {
                route.stats.failure(end.saturating_sub(start));
            }
            // The control plane renders every error answer (status, redaction, wording).
            Ok(render_error(&shared, parts, e, &client).await)
        }
    }
}

/// Reads a claimed request and hands it to the control plane (js_infer.rs); writes its answer, or
/// forwards the request with the body read when it declines.
async fn hand_over(
    shared: &Arc<Shared>,
    js: &crate::js_infer::JsInfer,
    req: Request<Incoming>,
    model: String,
    version: i64,
    client: &str,
) -> Response<Body> {
    let (parts, body) = req.into_parts();
    let limit = js.max_body_bytes as usize;
    let collected = match tokio::time::timeout(shared.options.body_timeout, Limited::new(body, limit).collect()).await {
        Ok(Ok(c)) => c.to_bytes(),
        _ => return text_response(StatusCode::BAD_REQUEST, "{\"error\":\"failed to read the request body\"}"),
    };
    let text = |k: &str| parts.headers.get(k).and_then(|v| v.to_str().ok()).map(str::to_string);
    let (token, rx) =
        js.submit(model, version, collected.clone(), text("inference-header-content-length"), text("authorization"));
    let mut guard = crate::js_infer::CancelOnDrop { js, token, armed: true };
    let answer = rx.await;
    guard.armed = false;
    match answer {
        Ok(crate::js_infer::JsAnswer::Answer { status, headers, body }) => {
            shared.counters.handed_over.fetch_add(1, Ordering::Relaxed);
            let mut r = Response::new(Full::new(Bytes::from(body)).map_err(|never| match never {}).boxed());
            *r.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            let h = r.headers_mut();
            for (k, v) in headers {
                if let (Ok(k), Ok(v)) = (hyper::header::HeaderName::from_bytes(k.as_bytes()), HeaderValue::from_str(&v))
                {
                    h.append(k, v);
                }
            }
            r
        }
        _ => {
            shared.counters.replayed.fetch_add(1, Ordering::Relaxed);
            forward(shared, parts, Full::new(collected).map_err(|never| match never {}).boxed(), client).await
        }
    }
}

/// The answer to a request that failed in the backend, as the control plane writes it: a request
/// to the internal listener carrying the error's code ([`NATIVE_ERROR`]) and its message as body.
async fn render_error(
    shared: &Arc<Shared>,
    mut parts: hyper::http::request::Parts,
    e: HostError,
    client: &str,
) -> Response<Body> {
    let host = parts.headers.get(hyper::header::HOST).cloned();
    parts.headers.clear();
    parts.headers.insert(hyper::header::HOST, host.unwrap_or(HeaderValue::from_static("localhost")));
    parts.headers.insert(NATIVE_ERROR, HeaderValue::from(e.code));
    parts.headers.insert(CONTENT_TYPE, HeaderValue::from_static("text/plain; charset=utf-8"));
    let body = Bytes::from(e.message.into_bytes());
    parts.headers.insert(CONTENT_LENGTH, HeaderValue::from(body.len()));
    forward_as(shared, parts, Full::new(body).map_err(|never| match never {}).boxed(), client, true).await
}

pub(crate) fn internal(message: String) -> HostError {
    HostError { code: 1, message }
}

fn shape_text(s: &[i64]) -> String {
    let parts: Vec<String> = s.iter().map(|d| d.to_string()).collect();
    format!("[{}]", parts.join(","))
}

/// The checks the TypeScript data plane makes of a backend's output (lifecycle/validate.ts
/// compileResponseValidator), with its texts: declared in the config, a shape matching
/// `[batch] + dims`, no negative dimension, bytes matching the shape.
/// @returns the output's index in the route
pub(crate) fn check_output(
    route: &Route,
    name: &str,
    shape: &[i64],
    datatype: u32,
    bytes: usize,
    batch: u64,
) -> Result<usize, HostError> {
    let m = &route.name;
    let Some(index) = route.outputs.iter().position(|o| o == name) else {
        return Err(internal(format!("backend produced unexpected output '{name}' for model '{m}'")));
    };
    let declared = &route.output_dims[index];
    let batched = route.max_batch_size > 0;
    let body = if batched { shape.get(1..).unwrap_or(&[]) } else { shape };
    let dims_ok = body.len() == declared.len() && declared.iter().zip(body).all(|(&d, &s)| d == -1 || d == s);
    if (batched && shape.first().copied() != Some(batch as i64)) || !dims_ok {
        let mut expected = Vec::new();
        if batched {
            expected.push(batch as i64);
        }
        expected.extend_from_slice(declared);
        return Err(internal(format!(
            "backend produced output '{name}' of shape {} for model '{m}', expected {}",
            shape_text(shape),
            shape_text(&expected)
        )));
    }
    if shape.iter().any(|&d| d < 0 || d > (1i64 << 53)) {
        return Err(internal(format!("backend produced output '{name}' with invalid shape {}", shape_text(shape))));
    }
    let size = crate::route::element_size(datatype) as u128;
    if size > 0 {
        let expected = shape.iter().fold(1u128, |n, &d| n.saturating_mul(d as u128)) * size;
        if expected != bytes as u128 {
            return Err(internal(format!("backend produced output '{name}' whose data does not match its shape: Expected {expected}, got {bytes}")));
        }
    }
    Ok(index)
}

/// The outputs of a backend's response the request asked for (all when `requested` is empty), in
/// the response's order, each checked against the route ([`check_output`]); or the error when the
/// response is an error or breaks the route's contract. The views borrow from `resp`, which the
/// caller keeps alive (and does not delete) while it uses them.
pub(crate) fn output_views<'a>(
    api: &HostApi,
    route: &Route,
    resp: *mut c_void,
    requested: &[(usize, bool)],
    default_binary: bool,
    batch: u64,
) -> Result<Vec<OutputView<'a>>, HostError> {
    if let Some(e) = api.read_error((api.response_error)(resp)) {
        return Err(e);
    }
    let mut count = 0u32;
    if let Some(e) = api.take_error((api.response_output_count)(resp, &mut count)) {
        return Err(e);
    }
    let mut views = Vec::with_capacity(count as usize);
    for i in 0..count {
        let mut name: *const c_char = std::ptr::null();
        let mut datatype = 0u32;
        let mut shape: *const i64 = std::ptr::null();
        let mut dims = 0u64;
        let mut base: *const c_void = std::ptr::null();
        let mut size = 0usize;
        let mut mem = 0u32;
        let mut mem_id = 0i64;
        let mut userp: *mut c_void = std::ptr::null_mut();
        let err = (api.response_output)(
            resp,
            i,
            &mut name,
            &mut datatype,
            &mut shape,
            &mut dims,
            &mut base,
            &mut size,
            &mut mem,
            &mut mem_id,
            &mut userp,
        );
        if let Some(e) = api.take_error(err) {
            return Err(e);
        }
        if mem != MEMORY_CPU || name.is_null() {
            return Err(internal("backend produced an output outside CPU memory".into()));
        }
        // SAFETY: the response owns its outputs' names, shapes and buffers until it is deleted,
        // which happens after this function returns (the caller holds the Response).
        let (name, shape, data) = unsafe {
            (
                CStr::from_ptr(name)
                    .to_str()
                    .map_err(|_| internal("backend produced an output whose name is not UTF-8".into()))?,
                warden_ffi::slice(shape, dims as usize),
                warden_ffi::slice(base as *const u8, size),
            )
        };
        let index = check_output(route, name, shape, datatype, data.len(), batch)?;
        let wanted = requested.is_empty() || requested.iter().any(|(k, _)| *k == index);
        if !wanted {
            continue;
        }
        let binary = crate::decode::binary_of(requested, default_binary, index);
        views.push(OutputView { name, datatype, shape, data, binary });
    }
    Ok(views)
}

/// The 200 answer carrying `views` (and the response's `parameters`, JSON text, when it has any),
/// or the INVALID_ARG of infer-response.ts checkJsonOutputSize when the outputs printed as JSON could
/// be longer than `max_json` bytes.
fn render_views(
    route: &Route,
    id: &str,
    parameters: Option<&[u8]>,
    views: &[OutputView<'_>],
    max_json: u64,
) -> Result<Response<Body>, HostError> {
    if let Some((bytes, largest)) = crate::encode::json_text_bound(views).filter(|(b, _)| *b > max_json as u128) {
        return Err(HostError {
            code: 3,
            message: format!(
                "JSON response of model '{}' could be up to {bytes} bytes, more than the server's limit of {max_json} bytes \
                 (--http-max-json-output-bytes; largest output '{largest}'). Request the outputs in binary: \
                 \"parameters\": {{\"binary_data\": true}} on each output, or \"binary_data_output\": true on the request \
                 (binary tensor data extension).",
                route.name
            ),
        });
    }
    let enc = encode(&route.name, &route.version_text, id, parameters, views)
        .ok_or_else(|| internal("backend produced an output the native data path cannot print".into()))?;
    let len = enc.body.len();
    let mut r = Response::new(Full::new(Bytes::from(enc.body)).map_err(|never| match never {}).boxed());
    let h = r.headers_mut();
    match enc.header_len {
        Some(n) => {
            h.insert(CONTENT_TYPE, HeaderValue::from_static("application/octet-stream"));
            h.insert("inference-header-content-length", HeaderValue::from(n));
        }
        None => {
            h.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        }
    }
    h.insert("vary", HeaderValue::from_static("Accept-Encoding"));
    h.insert(CONTENT_LENGTH, HeaderValue::from(len));
    Ok(r)
}

async fn forward(shared: &Arc<Shared>, parts: hyper::http::request::Parts, body: Body, client: &str) -> Response<Body> {
    forward_as(shared, parts, body, client, false).await
}

async fn forward_as(
    shared: &Arc<Shared>,
    parts: hyper::http::request::Parts,
    body: Body,
    client: &str,
    internal: bool,
) -> Response<Body> {
    match shared.fallback.forward(parts, body, client, internal).await {
        Ok(r) => r,
        Err(_) => text_response(StatusCode::SERVICE_UNAVAILABLE, "{\"error\":\"Server is not ready\"}"),
    }
}

impl Server {
    /// Starts serving `listener` (a listening TCP socket, owned from here on).
    pub fn start(
        api: HostApi,
        listener: std::net::TcpListener,
        fallback: std::path::PathBuf,
        options: Options,
    ) -> std::io::Result<Server> {
        listener.set_nonblocking(true)?;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(options.threads.max(1))
            .thread_name("warden-http")
            .enable_all()
            .build()?;
        let shared = Arc::new(Shared {
            api,
            routes: Routes::default(),
            fallback: Arc::new(Fallback::new(fallback)),
            grpc_fallback: std::sync::OnceLock::new(),
            js: std::sync::OnceLock::new(),
            mover: std::sync::OnceLock::new(),
            options,
            counters: Counters::default(),
            open: Mutex::new(HashMap::new()),
            open_total: AtomicU64::new(0),
            closing: AtomicBool::new(false),
            paused: AtomicBool::new(false),
        });
        let (stop, stopped) = watch::channel(false);
        let listener = {
            let _g = runtime.enter();
            tokio::net::TcpListener::from_std(listener)?
        };
        runtime.spawn(accept_loop(shared.clone(), listener, stopped, Protocol::Http1));
        Ok(Server { shared, runtime: Some(runtime), stop })
    }

    /// Serves the gRPC port too (`listener`, a listening TCP socket, owned from here on): HTTP/2
    /// connections under the same caps, `ModelInfer` calls of published routes served here
    /// (grpc.rs), every other call forwarded to the control plane's gRPC server on the unix
    /// socket `grpc_socket`.
    /// @returns Err when the socket cannot be registered, or when the gRPC port is served already
    pub fn listen_grpc(&self, listener: std::net::TcpListener, grpc_socket: std::path::PathBuf) -> std::io::Result<()> {
        listener.set_nonblocking(true)?;
        let Some(runtime) = self.runtime.as_ref() else {
            return Err(std::io::Error::other("the data path is closed"));
        };
        if self.shared.grpc_fallback.set(Arc::new(crate::grpc_proxy::GrpcFallback::new(grpc_socket))).is_err() {
            return Err(std::io::Error::other("the gRPC port is served already"));
        }
        let listener = {
            let _g = runtime.enter();
            tokio::net::TcpListener::from_std(listener)?
        };
        runtime.spawn(accept_loop(self.shared.clone(), listener, self.stop.subscribe(), Protocol::Grpc));
        Ok(())
    }

    /// Connections open now.
    pub fn open_connections(&self) -> u64 {
        self.shared.open_total.load(Ordering::Acquire)
    }

    /// Stops accepting and asks every connection to close after its request in flight; returns at once.
    pub fn begin_close(&self) {
        self.shared.closing.store(true, Ordering::Release);
        let _ = self.stop.send(true);
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.begin_close();
        if let Some(rt) = self.runtime.take() {
            rt.shutdown_timeout(Duration::from_secs(1));
        }
    }
}

/// What a listening socket speaks.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Protocol {
    /// The HTTP port: HTTP/1.1 ([`handle`]).
    Http1,
    /// The gRPC port: HTTP/2 (grpc.rs `handle`).
    Grpc,
}

async fn accept_loop(
    shared: Arc<Shared>,
    listener: tokio::net::TcpListener,
    mut stopped: watch::Receiver<bool>,
    protocol: Protocol,
) {
    loop {
        let accepted = tokio::select! {
            a = listener.accept() => a,
            _ = stopped.changed() => return,
        };
        let Ok((stream, peer)) = accepted else {
            // EMFILE and the like: back off a little rather than spin.
            tokio::time::sleep(Duration::from_millis(10)).await;
            continue;
        };
        let ip = peer.ip();
        if !admit(&shared, ip) {
            shared.counters.refused_connections.fetch_add(1, Ordering::Relaxed);
            reset(stream);
            continue;
        }
        let _ = stream.set_nodelay(true);
        let shared2 = shared.clone();
        let mut stop = stopped.clone();
        tokio::spawn(async move {
            if protocol == Protocol::Grpc {
                serve_grpc(&shared2, stream, &mut stop).await;
                release(&shared2, ip);
                return;
            }
            let client: Arc<str> = Arc::from(ip.to_string());
            if serve_http1(&shared2, stream, client, &mut stop)
                .await
                .is_ok_and(|tcp| move_connection(&shared2, tcp, ip))
            {
                return; // the control plane holds the connection (and its slot) now
            }
            release(&shared2, ip);
        });
    }
}

/// Serves one HTTP/1.1 connection until it ends or the server closes (then: the request in
/// flight is answered, and the connection closes).
/// @returns the socket when the connection is to move to the control plane (moving.rs), else Err
async fn serve_http1(
    shared: &Arc<Shared>,
    stream: tokio::net::TcpStream,
    client: Arc<str>,
    stop: &mut watch::Receiver<bool>,
) -> Result<tokio::net::TcpStream, ()> {
    let moves = Arc::new(MoveState::default());
    let mut io = MovableIo::new(stream, moves.clone());
    loop {
        let (svc_shared, client, moves2) = (shared.clone(), client.clone(), moves.clone());
        let svc = hyper::service::service_fn(move |req| {
            // a request read ahead while the connection moves holds the move until it is answered
            if moves2.moving() {
                moves2.ask();
            }
            let (shared, client, moves) = (svc_shared.clone(), client.clone(), moves2.clone());
            Box::pin(async move {
                let r = handle(shared, req, client, moves.clone()).await?;
                Ok::<_, Infallible>(if moves.moving() { r.map(|b| EndSignal::new(b, moves).boxed()) } else { r })
            }) as Pin<Box<dyn Future<Output = Result<Response<Body>, Infallible>> + Send>>
        });
        let mut builder = hyper::server::conn::http1::Builder::new();
        builder.timer(TokioTimer::new()).header_read_timeout(shared.options.header_timeout).keep_alive(true);
        let mut conn = builder.serve_connection(TokioIo::new(io), svc);
        tokio::select! {
            _ = std::future::poll_fn(|cx| conn.poll_without_shutdown(cx)) => {}
            _ = stop.changed() => {
                Pin::new(&mut conn).graceful_shutdown();
                let _ = std::future::poll_fn(|cx| conn.poll_without_shutdown(cx)).await;
                return Err(());
            }
        }
        if !moves.ended_for_move() {
            return Err(());
        }
        let parts = conn.into_parts();
        let back = parts.io.into_inner();
        if parts.read_buf.is_empty() {
            return Ok(back.into_inner());
        }
        // bytes read ahead (a pipelined request): served here, and the connection stays
        moves.never();
        io = back.with_prefix(parts.read_buf);
    }
}

/// Gives `tcp` to the control plane's HTTP server; its slot is released when the control plane
/// closes it (`wd_server_release_connection`). @returns false when it could not be given (closed).
fn move_connection(shared: &Shared, tcp: tokio::net::TcpStream, ip: IpAddr) -> bool {
    let Some(mover) = shared.mover.get() else { return false };
    if shared.closing.load(Ordering::Acquire) {
        return false;
    }
    let Ok(std) = tcp.into_std() else { return false };
    shared.counters.moved_connections.fetch_add(1, Ordering::Relaxed);
    mover.give(std, ip);
    true
}

/// Releases the slot of a connection the control plane closed (`token` from [`Mover::give`]).
pub fn release_moved(shared: &Shared, token: u64) {
    if let Some(ip) = shared.mover.get().and_then(|m| m.take(token)) {
        release(shared, ip);
    }
}

/// Serves one gRPC connection (HTTP/2, its calls multiplexed) until it ends or the server closes
/// (then: GOAWAY, and the calls in flight finish).
async fn serve_grpc(shared: &Arc<Shared>, stream: tokio::net::TcpStream, stop: &mut watch::Receiver<bool>) {
    let svc_shared = shared.clone();
    let svc = hyper::service::service_fn(move |req| crate::grpc::handle(svc_shared.clone(), req));
    let mut builder = hyper::server::conn::http2::Builder::new(TokioExecutor::new());
    builder.timer(TokioTimer::new());
    let conn = builder.serve_connection(TokioIo::new(stream), svc);
    tokio::pin!(conn);
    tokio::select! {
        _ = conn.as_mut() => {}
        _ = stop.changed() => {
            conn.as_mut().graceful_shutdown();
            let _ = conn.as_mut().await;
        }
    }
}

/// Closes a refused connection with a reset (SO_LINGER 0), as the native acceptor does: the
/// client learns at once, and no TIME_WAIT is left on this side.
fn reset(stream: tokio::net::TcpStream) {
    if let Ok(std) = stream.into_std() {
        let l = libc::linger { l_onoff: 1, l_linger: 0 };
        // SAFETY: setsockopt reads one `linger` from the valid local above; the descriptor is open.
        unsafe {
            libc::setsockopt(
                std::os::fd::AsRawFd::as_raw_fd(&std),
                libc::SOL_SOCKET,
                libc::SO_LINGER,
                &l as *const libc::linger as *const c_void,
                std::mem::size_of::<libc::linger>() as libc::socklen_t,
            )
        };
    }
}

fn admit(shared: &Shared, ip: IpAddr) -> bool {
    let o = &shared.options;
    let mut open = shared.open.lock().unwrap_or_else(|e| e.into_inner());
    let total = shared.open_total.load(Ordering::Acquire);
    if total >= o.max_connections {
        return false;
    }
    let n = open.entry(ip).or_insert(0);
    if o.max_connections_per_address > 0 && *n >= o.max_connections_per_address {
        return false;
    }
    *n += 1;
    shared.open_total.fetch_add(1, Ordering::AcqRel);
    true
}

fn release(shared: &Shared, ip: IpAddr) {
    let mut open = shared.open.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(n) = open.get_mut(&ip) {
        *n -= 1;
        if *n == 0 {
            open.remove(&ip);
        }
    }
    shared.open_total.fetch_sub(1, Ordering::AcqRel);
}
