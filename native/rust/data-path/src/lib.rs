//! The native data path (DESIGN "The native data path"): the public HTTP port served on
//! native threads. For the models the TypeScript control plane publishes (native instances, or
//! sessions of the in-process ONNX Runtime engine run on the data path's own threads (ort_exec.rs);
//! plain configurations), `/infer` requests are decoded, submitted to the instance and answered here,
//! without the JavaScript thread; every other request is forwarded to the control plane's internal
//! listener. The gRPC port can be served too (`wd_server_listen_grpc`): `ModelInfer` calls the same
//! way (grpc.rs), every other call forwarded to the control plane's gRPC server (grpc_proxy.rs).
//! C ABI in native/include/warden/data_path.h, in the engines' conventions (warden-ffi).
#![deny(unsafe_op_in_unsafe_fn, clippy::undocumented_unsafe_blocks)]

pub mod decode;
pub mod encode;
pub mod exec;
pub mod grpc;
pub mod grpc_proxy;
pub mod host;
pub mod js_infer;
pub mod moving;
pub mod ort_exec;
pub mod proxy;
pub mod route;
pub mod server;
pub mod stats;
pub mod wasm_exec;

use route::{Instance, Route, RouteSpec};
use server::{Options, Server};
use stats::StatsSnapshot;
use std::ffi::{c_char, c_int, c_void, CStr};
use std::os::fd::FromRawFd;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;
use warden_ffi::{guarded, WardenError};

/// `WdServerOptions` (warden/data_path.h).
#[repr(C)]
pub struct WdServerOptions {
    pub threads: u32,
    pub max_connections: u64,
    pub max_connections_per_address: u64,
    pub max_body_bytes: u64,
    pub header_timeout_ms: u64,
    pub body_timeout_ms: u64,
    pub max_json_output_bytes: u64,
    pub infer_restriction_header: *const c_char,
    pub infer_restriction_value: *const u8,
    pub infer_restriction_value_len: usize,
}

/// `WdCounters` (warden/data_path.h).
#[repr(C)]
#[derive(Default)]
pub struct WdCounters {
    pub served: u64,
    pub forwarded: u64,
    pub replayed: u64,
    pub refused_connections: u64,
    pub open_connections: u64,
    pub grpc_served: u64,
    pub grpc_forwarded: u64,
    pub handed_over: u64,
    pub moved_connections: u64,
}

/// A published route as the control plane holds it (statistics, drain).
pub struct WdRoute(Arc<Route>);

/// Starts the data path on the listening socket `fd` (owned from here on, also on failure).
///
/// # Safety
/// `socket_path` is a NUL-terminated path of the control plane's internal listener.
#[no_mangle]
pub unsafe extern "C" fn wd_server_start(
    api: &host::HostApi,
    fd: c_int,
    socket_path: *const c_char,
    options: &WdServerOptions,
    out: &mut Option<Box<Server>>,
) -> Option<Box<WardenError>> {
    // SAFETY: the caller hands over a listening socket it owns.
    let listener = unsafe { std::net::TcpListener::from_raw_fd(fd) };
    // SAFETY: the caller's contract.
    let path = unsafe { CStr::from_ptr(socket_path) }.to_string_lossy().into_owned();
    let infer_restriction = (!options.infer_restriction_header.is_null()).then(|| {
        // SAFETY: the caller's contract: a NUL-terminated name and `infer_restriction_value_len` bytes.
        let header = unsafe { CStr::from_ptr(options.infer_restriction_header) }.to_string_lossy().to_ascii_lowercase();
        let value = if options.infer_restriction_value.is_null() {
            Vec::new()
        } else {
            // SAFETY: as above.
            unsafe { std::slice::from_raw_parts(options.infer_restriction_value, options.infer_restriction_value_len) }
                .to_vec()
        };
        (header, value)
    });
    let o = Options {
        threads: options.threads as usize,
        max_connections: options.max_connections.max(1),
        max_connections_per_address: options.max_connections_per_address,
        max_body_bytes: options.max_body_bytes,
        header_timeout: Duration::from_millis(options.header_timeout_ms.max(1)),
        body_timeout: Duration::from_millis(options.body_timeout_ms.max(1)),
        max_json_output_bytes: options.max_json_output_bytes,
        infer_restriction,
    };
    let api = *api;
    guarded("the data path", || {
        let s = Server::start(api, listener, path.into(), o)
            .map_err(|e| WardenError::internal(format!("data path: {e}")))?;
        *out = Some(Box::new(s));
        Ok(())
    })
}

/// Serves the gRPC port too: the listening socket `fd` (owned from here on, also on failure);
/// `ModelInfer` calls of published routes are served natively, every other call goes to the
/// control plane's gRPC server on the unix socket `grpc_socket_path` (grpc.rs, grpc_proxy.rs).
///
/// # Safety
/// `grpc_socket_path` is a NUL-terminated path.
#[no_mangle]
pub unsafe extern "C" fn wd_server_listen_grpc(
    server: &Server,
    fd: c_int,
    grpc_socket_path: *const c_char,
) -> Option<Box<WardenError>> {
    // SAFETY: the caller hands over a listening socket it owns.
    let listener = unsafe { std::net::TcpListener::from_raw_fd(fd) };
    // SAFETY: the caller's contract.
    let path = unsafe { CStr::from_ptr(grpc_socket_path) }.to_string_lossy().into_owned();
    guarded("the data path", || {
        server.listen_grpc(listener, path.into()).map_err(|e| WardenError::internal(format!("data path: {e}")))
    })
}

/// Parses a route spec, builds the route with `build` and publishes it, writing its handle to `out`.
fn publish(
    server: &Server,
    text: Result<&str, WardenError>,
    out: &mut Option<Box<WdRoute>>,
    build: impl FnOnce(RouteSpec) -> Result<Route, String>,
) -> Option<Box<WardenError>> {
    guarded("the data path", || {
        let spec: RouteSpec =
            serde_json::from_str(text?).map_err(|e| WardenError::invalid_arg(format!("route spec: {e}")))?;
        let arc = Arc::new(build(spec).map_err(WardenError::invalid_arg)?);
        server.shared.routes.publish_arc(arc.clone());
        *out = Some(Box::new(WdRoute(arc)));
        Ok(())
    })
}

/// Publishes a route: `spec` is its JSON (route.rs RouteSpec), `instances` its native instances
/// (`TRITONBACKEND_ModelInstance*`), lent until the route is unpublished and drained. Replaces a
/// route of the same name. Writes the route's handle to `out`.
///
/// # Safety
/// `spec` points at `spec_len` bytes; `instances` at `count` instance pointers that stay valid
/// until the route is unpublished and `wd_route_inflight` reads 0.
#[no_mangle]
pub unsafe extern "C" fn wd_server_publish(
    server: &Server,
    spec: *const u8,
    spec_len: usize,
    instances: *const *mut c_void,
    count: usize,
    out: &mut Option<Box<WdRoute>>,
) -> Option<Box<WardenError>> {
    // SAFETY: the caller's contract.
    let text = unsafe { warden_ffi::utf8(spec, spec_len, "route spec") };
    // SAFETY: the caller's contract.
    let list = unsafe { warden_ffi::slice(instances, count) };
    publish(server, text, out, |spec| Route::new(spec, list.iter().map(|&p| Instance(p)).collect()))
}

/// Publishes a route served by ONNX Runtime sessions of Warden's in-process engine (ort_exec.rs):
/// `spec` as for [`wd_server_publish`] (every output naming its datatype), `sessions` the sessions
/// of the model's instances, lent until the route is unpublished and drained. Replaces a route of
/// the same name. Writes the route's handle to `out`.
///
/// # Safety
/// `spec` points at `spec_len` bytes; `sessions` at `count` session pointers that stay open until
/// the route is unpublished and `wd_route_inflight` reads 0.
#[no_mangle]
pub unsafe extern "C" fn wd_server_publish_ort(
    server: &Server,
    spec: *const u8,
    spec_len: usize,
    sessions: *const *const warden_ort_engine::WoSession,
    count: usize,
    out: &mut Option<Box<WdRoute>>,
) -> Option<Box<WardenError>> {
    // SAFETY: the caller's contract.
    let text = unsafe { warden_ffi::utf8(spec, spec_len, "route spec") };
    // SAFETY: the caller's contract.
    let list = unsafe { warden_ffi::slice(sessions, count) };
    publish(server, text, out, |spec| Route::new_ort(spec, list.iter().map(|&p| ort_exec::SessionPtr(p)).collect()))
}

/// Publishes a route served by wasmtime sandboxes (wasm_exec.rs): `count` instances of the
/// wasmtime engine (warden/wasmtime_engine.h), whose threads the route keeps handles on (a thread
/// that ends makes the route's requests fail as the sandbox's), and their execute deadline (ms).
///
/// # Safety
/// `spec` points at `spec_len` bytes; `instances` at `count` live instance pointers (read during
/// the call only).
#[no_mangle]
pub unsafe extern "C" fn wd_server_publish_wasm(
    server: &Server,
    spec: *const u8,
    spec_len: usize,
    instances: *const *const warden_wasmtime_engine::WwInstance,
    count: usize,
    execute_ms: u64,
    out: &mut Option<Box<WdRoute>>,
) -> Option<Box<WardenError>> {
    // SAFETY: the caller's contract.
    let text = unsafe { warden_ffi::utf8(spec, spec_len, "route spec") };
    // SAFETY: the caller's contract.
    let list = unsafe { warden_ffi::slice(instances, count) };
    publish(server, text, out, |spec| {
        let mut threads = Vec::with_capacity(list.len());
        for &p in list {
            if p.is_null() {
                return Err("a wasmtime instance is null".to_string());
            }
            // SAFETY: live for the call (the caller's contract); only a handle is kept.
            threads.push(unsafe { &*p }.direct_handle());
        }
        Route::new_wasm(spec, threads, execute_ms)
    })
}

/// Unpublishes the route named `name` if it is `route` (a newer publish of the name stays).
#[no_mangle]
pub extern "C" fn wd_server_unpublish(server: &Server, route: &WdRoute) {
    server.shared.routes.unpublish_if(&route.0);
}

/// Requests of the route submitted and not yet answered and released.
#[no_mangle]
pub extern "C" fn wd_route_inflight(route: &WdRoute) -> u64 {
    route.0.inflight.load(Ordering::Acquire)
}

/// Reads and resets the route's statistics.
#[no_mangle]
pub extern "C" fn wd_route_take_stats(route: &WdRoute, out: &mut StatsSnapshot) {
    *out = route.0.stats.take();
}

/// Frees a route handle (NULL is ignored).
#[no_mangle]
pub extern "C" fn wd_route_free(route: Option<Box<WdRoute>>) {
    warden_ffi::free(route);
}

/// Moves up to `cap` batch sizes' execution statistics (sizes other than 1, which
/// `wd_route_take_stats` carries) into `out`. @returns how many; fewer than `cap`: none are left.
///
/// # Safety
/// `out` points to `cap` writable `WdBatchStats`.
#[no_mangle]
pub unsafe extern "C" fn wd_route_take_batch_stats(route: &WdRoute, out: *mut stats::BatchStats, cap: usize) -> usize {
    if out.is_null() || cap == 0 {
        return 0;
    }
    // SAFETY: the caller's contract.
    let out = unsafe { std::slice::from_raw_parts_mut(out, cap) };
    route.0.stats.take_batches(out)
}

/// The latest end-to-end durations of successful requests (`queue` false) or queue times (`queue`
/// true) since the last take, in µs, oldest first: up to 512 into `out`. @returns how many
#[no_mangle]
pub extern "C" fn wd_route_take_recent(route: &WdRoute, queue: bool, out: &mut [u32; stats::RECENT]) -> usize {
    if queue {
        route.0.stats.take_recent_queues(out)
    } else {
        route.0.stats.take_recent_requests(out)
    }
}

/// The server's counters.
#[no_mangle]
pub extern "C" fn wd_server_counters(server: &Server, out: &mut WdCounters) {
    let c = &server.shared.counters;
    *out = WdCounters {
        served: c.served.load(Ordering::Relaxed),
        forwarded: c.forwarded.load(Ordering::Relaxed),
        replayed: c.replayed.load(Ordering::Relaxed),
        refused_connections: c.refused_connections.load(Ordering::Relaxed),
        open_connections: server.open_connections(),
        grpc_served: c.grpc_served.load(Ordering::Relaxed),
        grpc_forwarded: c.grpc_forwarded.load(Ordering::Relaxed),
        handed_over: c.handed_over.load(Ordering::Relaxed),
        moved_connections: c.moved_connections.load(Ordering::Relaxed),
    };
}

/// Hands the `/infer` requests of models without a route, with bodies shorter than
/// `max_body_bytes`, to the control plane through `notify` (js_infer.rs) instead of forwarding them.
/// INVALID_ARG when asked twice.
///
/// # Safety
/// `notify` may be called with `ctx` from any data path thread until the server is freed.
#[no_mangle]
pub unsafe extern "C" fn wd_server_set_js_infer(
    server: &Server,
    notify: js_infer::JsNotifyFn,
    ctx: *mut std::ffi::c_void,
    max_body_bytes: u64,
) -> Option<Box<WardenError>> {
    // SAFETY: the caller's contract.
    let js = unsafe { js_infer::JsInfer::new(notify, ctx, max_body_bytes) };
    guarded("the data path", || {
        server.shared.js.set(js).map_err(|_| WardenError::invalid_arg("the hand-over is set already".to_string()))
    })
}

/// Moves each keep-alive connection that sent a handed-over request to the control plane once that
/// request is answered (moving.rs): `give` receives its socket and a token for
/// [`wd_server_release_connection`]. INVALID_ARG when asked twice.
///
/// # Safety
/// `give` may be called with `ctx` from any data path thread until the server is freed.
#[no_mangle]
pub unsafe extern "C" fn wd_server_move_connections(
    server: &Server,
    give: moving::MoveFn,
    ctx: *mut std::ffi::c_void,
) -> Option<Box<WardenError>> {
    // SAFETY: the caller's contract.
    let mover = unsafe { moving::Mover::new(give, ctx) };
    guarded("the data path", || {
        server.shared.mover.set(mover).map_err(|_| WardenError::invalid_arg("connections move already".to_string()))
    })
}

/// The control plane closed the moved connection `token` (or could not take it): its slot under
/// the connection caps is free again. Unknown tokens are ignored.
#[no_mangle]
pub extern "C" fn wd_server_release_connection(server: &Server, token: u64) {
    server::release_moved(&server.shared, token);
}

/// While `paused`, every request goes to the control plane.
#[no_mangle]
pub extern "C" fn wd_server_set_paused(server: &Server, paused: bool) {
    server.shared.paused.store(paused, Ordering::Relaxed);
}

/// Stops accepting; open connections close after their request in flight.
#[no_mangle]
pub extern "C" fn wd_server_begin_close(server: &Server) {
    server.begin_close();
}

/// Frees the server (its threads are stopped; NULL is ignored).
#[no_mangle]
pub extern "C" fn wd_server_free(server: Option<Box<Server>>) {
    warden_ffi::free(server);
}
