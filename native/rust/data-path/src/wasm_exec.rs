//! Running one decoded request in a wasmtime sandbox (native/rust/wasmtime-engine, direct.rs): the
//! request is queued on one of the model's instance threads with a sink that answers the guest's
//! `send-response` / `send-final` / `is-cancelled` and receives what `execute` returned. No
//! JavaScript runs for it; the host side of the sandbox (host/src/backends/wasm/wasmtime/) still
//! hears of its logs, file reads and traps.
//!
//! What the TypeScript path does for the same request (host/src/backends/wasm/host/responses.ts,
//! convert.ts, sandbox.errors.ts), and so does this, with the same texts (DESIGN "The native data
//! path"): a model that is not decoupled gets one final response per request, sent or returned;
//! every response leaving the sandbox is checked against the configuration (names, datatypes,
//! shapes with the batch dimension, data sizes, reserved parameter keys) — a sent one that fails
//! is refused to the guest (`invalid-arg`), a returned one becomes the request's INTERNAL error;
//! outputs not requested are dropped; a guest error keeps its code (message capped at 4,096
//! UTF-16 units); a trap, a deadline, a sandbox that cannot start or one that is gone give the
//! engine's errors. Queue and compute times are reported per request and per execution.
use crate::decode::{Data, Decoded};
use crate::encode::OutputView;
use crate::exec::monotonic_ns;
use crate::host::HostError;
use crate::route::{Route, RouteSpec, DATATYPES};
use crate::server::{check_output, internal};
use bytes::Bytes;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use tokio::sync::oneshot;
use warden_wasmtime_engine::direct::{
    triton_error_code, wit_datatype, DataType, DirectExecute, DirectHandle, DirectOutcome, DirectRequest, DirectSink,
    DirectTensor, ErrorCode, ParameterResult, ParameterValueResult, WitError, WitResponse,
};

/// `TRITONSERVER_Error_Code`s (host.h) of the errors made here.
const INTERNAL: u32 = 1;
const UNAVAILABLE: u32 = 4;

/// Largest element count of one output, and largest dimension (convert.ts MAX_ELEMENTS, 2^40).
const MAX_ELEMENTS: u128 = 1 << 40;
/// Largest guest error message kept, in UTF-16 units (convert.ts fromWitError).
const MAX_MESSAGE_UNITS: usize = 4096;
/// Largest integer a response parameter may carry (Number.MAX_SAFE_INTEGER).
const MAX_SAFE_INTEGER: i64 = (1 << 53) - 1;

/// One instance: its thread's handle and its request handles (1, 2, … wrapping, never 0, as
/// host/src/backends/wasm/wire.ts WireHandles).
struct WasmInstance {
    thread: DirectHandle,
    next_handle: AtomicU32,
}

impl WasmInstance {
    fn take_handle(&self) -> u32 {
        loop {
            let h = self.next_handle.fetch_add(1, Ordering::Relaxed);
            if h != 0 {
                return h;
            }
        }
    }
}

/// How a route's requests reach its sandboxes.
pub struct WasmRoute {
    instances: Vec<WasmInstance>,
    /// The execute deadline the instances run under (ms), for its error text.
    execute_ms: u64,
    /// The WIT datatype of each route input.
    input_types: Vec<DataType>,
    /// The protocol datatype name of each route output (the configuration's).
    output_types: Vec<&'static str>,
    input_names: Vec<Arc<str>>,
    output_names: Vec<Arc<str>>,
}

/// The protocol name of a WIT `data-type` (convert.ts fromWitDataType).
fn protocol_name(d: DataType) -> &'static str {
    (1..DATATYPES.len() as u32)
        .find(|&t| wit_datatype(t) == Some(d))
        .map(|t| DATATYPES[t as usize])
        .unwrap_or("INVALID")
}

impl WasmRoute {
    /// Maps `spec` onto the instance threads `threads`, whose execute deadline is `execute_ms`.
    /// @returns Err(message) for no instance, or an output without a datatype
    pub fn new(spec: &RouteSpec, threads: Vec<DirectHandle>, execute_ms: u64) -> Result<WasmRoute, String> {
        if threads.is_empty() {
            return Err("a route needs at least one instance".into());
        }
        let mut input_types = Vec::with_capacity(spec.inputs.len());
        for i in &spec.inputs {
            let t = crate::route::datatype_of(&i.datatype)
                .and_then(wit_datatype)
                .ok_or_else(|| format!("input '{}': datatype {} is not served natively", i.name, i.datatype))?;
            input_types.push(t);
        }
        let mut output_types = Vec::with_capacity(spec.outputs.len());
        for o in &spec.outputs {
            let t = o
                .datatype
                .as_deref()
                .and_then(crate::route::datatype_of)
                .ok_or_else(|| format!("output '{}': no datatype the data path prints", o.name))?;
            output_types.push(DATATYPES[t as usize]);
        }
        Ok(WasmRoute {
            instances: threads
                .into_iter()
                .map(|thread| WasmInstance { thread, next_handle: AtomicU32::new(1) })
                .collect(),
            execute_ms,
            input_types,
            output_types,
            input_names: spec.inputs.iter().map(|i| Arc::from(i.name.as_str())).collect(),
            output_names: spec.outputs.iter().map(|o| Arc::from(o.name.as_str())).collect(),
        })
    }
}

/// A guest's response, checked and with only the requested outputs, owned until dropped.
pub struct WasmAnswer {
    response: WitResponse,
}

impl WasmAnswer {
    /// The outputs as the response prints them, each checked against the route (server.rs
    /// `check_output`), with the binary flag the request asked for.
    pub fn views<'a>(
        &'a self,
        route: &'a Route,
        requested: &[(usize, bool)],
        default_binary: bool,
        batch: u64,
    ) -> Result<Vec<OutputView<'a>>, HostError> {
        let mut views = Vec::with_capacity(self.response.outputs.len());
        for t in &self.response.outputs {
            let datatype = crate::route::datatype_of(protocol_name(t.datatype)).unwrap_or(0);
            let index = check_output(route, &t.name, &t.shape, datatype, t.data.len(), batch)?;
            let binary = crate::decode::binary_of(requested, default_binary, index);
            views.push(OutputView { name: &t.name, datatype, shape: &t.shape, data: &t.data, binary });
        }
        Ok(views)
    }

    /// The response's parameters, in the guest's order.
    pub fn parameters(&self) -> &[ParameterResult] {
        &self.response.parameters
    }
}

/// A guest error as the request's error (convert.ts fromWitError): its code, its message capped.
fn guest_error(e: &WitError) -> HostError {
    let code = triton_error_code(e.code);
    let mut units = 0;
    let mut cut = None;
    for (i, c) in e.message.char_indices() {
        if units + c.len_utf16() > MAX_MESSAGE_UNITS {
            cut = Some(i);
            break;
        }
        units += c.len_utf16();
    }
    let message = match cut {
        Some(i) => format!("{}... (truncated)", &e.message[..i]),
        None => e.message.clone(),
    };
    HostError { code, message }
}

fn shape_text(s: &[i64]) -> String {
    let parts: Vec<String> = s.iter().map(|d| d.to_string()).collect();
    parts.join(",")
}

/// The checks of convert.ts fromWitResponse, with its texts; keeps only the requested outputs.
/// @returns Err(the check's message)
fn check_response(
    route: &Route,
    wasm: &WasmRoute,
    mut r: WitResponse,
    batch: u64,
    requested: &[bool],
) -> Result<WitResponse, String> {
    let mut seen = vec![false; route.outputs.len()];
    for t in &r.outputs {
        let name = &t.name;
        let Some(k) = route.outputs.iter().position(|o| o == name) else {
            return Err(format!("unexpected output '{name}': not an output of the model configuration"));
        };
        if std::mem::replace(&mut seen[k], true) {
            return Err(format!("output '{name}' appears twice in one response"));
        }
        let datatype = protocol_name(t.datatype);
        if datatype != wasm.output_types[k] {
            return Err(format!(
                "output '{name}' has datatype {datatype}, the model configuration says {}",
                wasm.output_types[k]
            ));
        }
        if let Some(d) = t.shape.iter().find(|&&d| d < 0 || d as u128 > MAX_ELEMENTS) {
            return Err(format!("output '{name}' has an invalid dimension {d}"));
        }
        let mut expected = Vec::with_capacity(route.output_dims[k].len() + 1);
        if route.max_batch_size > 0 {
            expected.push(batch as i64);
        }
        expected.extend_from_slice(&route.output_dims[k]);
        let shape_ok =
            t.shape.len() == expected.len() && expected.iter().zip(&t.shape).all(|(&e, &d)| e == -1 || e == d);
        if !shape_ok {
            return Err(format!(
                "output '{name}' has shape [{}], the model configuration expects [{}]",
                shape_text(&t.shape),
                shape_text(&expected)
            ));
        }
        let mut count: u128 = 1;
        for &d in &t.shape {
            count *= d as u128;
            if count > MAX_ELEMENTS {
                return Err(format!("output '{name}' has too many elements"));
            }
        }
        let needs = count * crate::route::element_size(crate::route::datatype_of(datatype).unwrap_or(0)) as u128;
        if t.data.len() as u128 != needs {
            return Err(format!(
                "output '{name}' has {} bytes of data, its shape [{}] of {datatype} needs {needs}",
                t.data.len(),
                shape_text(&t.shape)
            ));
        }
    }
    for p in &r.parameters {
        if p.key.starts_with("triton_") {
            return Err(format!("response parameter '{}': keys starting with 'triton_' are reserved", p.key));
        }
        if let ParameterValueResult::Int(v) = p.value {
            if !(-MAX_SAFE_INTEGER..=MAX_SAFE_INTEGER).contains(&v) {
                return Err(format!(
                    "response parameter '{}': integer {v} is outside the range this server carries",
                    p.key
                ));
            }
        }
    }
    r.outputs.retain(|t| route.outputs.iter().position(|o| *o == t.name).is_some_and(|k| requested[k]));
    Ok(r)
}

/// What a request's execute produced: its one response, or its error.
type Answer = Result<WasmAnswer, HostError>;

/// The sink of one request's direct execute (responses.ts, for a model that is not decoupled).
struct Sink {
    route: Arc<Route>,
    handle: u32,
    batch: u64,
    /// Whether each route output was requested.
    requested: Vec<bool>,
    /// The final answer sent during the execute (`None` inside: a flags-only final).
    sent: Option<Result<Option<WitResponse>, HostError>>,
    tx: Option<oneshot::Sender<(Answer, Option<(u64, u64)>)>>,
}

impl Sink {
    fn wasm(&self) -> &WasmRoute {
        self.route.wasm.as_ref().expect("a wasm route's sink")
    }

    /// responses.ts `lookup`.
    fn lookup(&self, handle: u32) -> Result<(), WitError> {
        if handle != self.handle {
            return Err(WitError {
                code: ErrorCode::NotFound,
                message: format!("request handle {handle} is not an in-flight request of this instance"),
            });
        }
        if self.sent.is_some() {
            return Err(WitError {
                code: ErrorCode::InvalidArg,
                message: format!("request handle {handle} already got its final response"),
            });
        }
        Ok(())
    }

    fn model(&self) -> &str {
        &self.route.name
    }
}

impl DirectSink for Sink {
    fn send_response(
        &mut self,
        handle: u32,
        response: Result<WitResponse, WitError>,
        final_: bool,
    ) -> Result<(), WitError> {
        self.lookup(handle)?;
        if !final_ {
            return Err(WitError {
                code: ErrorCode::Unsupported,
                message: format!(
                    "model '{}' is not decoupled: it may send only one response per request, and it must be final",
                    self.model()
                ),
            });
        }
        match response {
            Err(e) => self.sent = Some(Err(guest_error(&e))),
            Ok(r) => {
                let checked = check_response(&self.route, self.wasm(), r, self.batch, &self.requested)
                    .map_err(|message| WitError { code: ErrorCode::InvalidArg, message })?;
                self.sent = Some(Ok(Some(checked)));
            }
        }
        Ok(())
    }

    fn send_final(&mut self, handle: u32) -> Result<(), WitError> {
        self.lookup(handle)?;
        self.sent = Some(Ok(None));
        Ok(())
    }

    /// A request whose client went away is cancelled: hyper dropped its future, and with it the
    /// receiver of this sink's answer.
    fn is_cancelled(&mut self, handle: u32) -> bool {
        handle == self.handle && self.tx.as_ref().is_none_or(|tx| tx.is_closed())
    }

    fn finish(mut self: Box<Self>, outcome: DirectOutcome) {
        let model = self.route.name.clone();
        let sent = self.sent.take();
        let wasm = self.wasm();
        let (answer, times) = match outcome {
            DirectOutcome::Returned { results, compute_start_ns, compute_end_ns } => {
                let count = results.len();
                let answer = match sent {
                    Some(Ok(Some(r))) => Ok(WasmAnswer { response: r }),
                    Some(Ok(None)) => Err(HostError { code: INTERNAL, message: "expected a single response, got 0".into() }),
                    Some(Err(e)) => Err(e),
                    None => match results.into_iter().next() {
                        None => Err(HostError {
                            code: INTERNAL,
                            message: format!("backend of model '{model}' returned {count} responses for 1 requests"),
                        }),
                        Some(Err(e)) => Err(guest_error(&e)),
                        Some(Ok(r)) => check_response(&self.route, wasm, r, self.batch, &self.requested)
                            .map(|response| WasmAnswer { response })
                            .map_err(|m| HostError {
                                code: INTERNAL,
                                message: format!("backend of model '{model}' produced an invalid response: {m}"),
                            }),
                    },
                };
                (answer, Some((compute_start_ns, compute_end_ns)))
            }
            DirectOutcome::Trapped(m) => (
                Err(HostError {
                    code: INTERNAL,
                    message: format!("sandboxed backend of model '{model}' trapped: {m}; the instance was restarted"),
                }),
                None,
            ),
            DirectOutcome::Deadline => (
                Err(HostError {
                    code: UNAVAILABLE,
                    message: format!(
                        "sandboxed backend of model '{model}' exceeded its execute deadline of {} ms; the instance was restarted",
                        wasm.execute_ms
                    ),
                }),
                None,
            ),
            DirectOutcome::RespawnFailed(m) => (
                Err(HostError {
                    code: UNAVAILABLE,
                    message: format!("sandboxed backend of model '{model}' is unavailable: {m}"),
                }),
                None,
            ),
            DirectOutcome::Gone => (Err(gone(&model)), None),
        };
        if let Some(tx) = self.tx.take() {
            let _ = tx.send((answer, times));
        }
    }
}

/// The sandbox's thread has ended (sandbox.errors.ts sandboxGone).
fn gone(model: &str) -> HostError {
    HostError { code: UNAVAILABLE, message: format!("sandbox of model '{model}' is gone") }
}

/// Counts a request in flight on the route until dropped.
struct Inflight(Arc<Route>);

impl Drop for Inflight {
    fn drop(&mut self) {
        self.0.inflight.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Runs `req` (decoded from `body`) in one of the route's sandboxes (round robin; each instance
/// thread runs its executes one at a time, in order).
/// @returns the checked response, or the request's error as the TypeScript path words it
pub async fn run(route: &Arc<Route>, req: Decoded, body: Bytes) -> Answer {
    let Some(wasm) = &route.wasm else {
        return Err(internal("the route has no wasmtime instances".into()));
    };
    route.inflight.fetch_add(1, Ordering::AcqRel);
    let _inflight = Inflight(route.clone());
    let req_batch = req.batch;
    let instance = &wasm.instances[route.next_index(wasm.instances.len())];
    let handle = instance.take_handle();
    let mut requested = vec![req.formats.requested.is_empty(); route.outputs.len()];
    let mut requested_outputs = Vec::with_capacity(route.outputs.len());
    if req.formats.requested.is_empty() {
        requested_outputs.extend(wasm.output_names.iter().cloned());
    } else {
        for &(k, _) in &req.formats.requested {
            if !std::mem::replace(&mut requested[k], true) {
                requested_outputs.push(wasm.output_names[k].clone());
            }
        }
    }
    let inputs = req
        .inputs
        .into_iter()
        .map(|t| DirectTensor {
            name: wasm.input_names[t.index].clone(),
            datatype: wasm.input_types[t.index],
            shape: t.shape,
            data: match t.data {
                Data::Owned(v) => Box::new(v),
                Data::Body(r) => Box::new(body.slice(r)),
            },
        })
        .collect();
    let (tx, rx) = oneshot::channel();
    let sink = Sink { route: route.clone(), handle, batch: req.batch, requested, sent: None, tx: Some(tx) };
    let job = DirectExecute {
        requests: vec![DirectRequest { handle, id: req.id, batch_size: req.batch as u32, inputs, requested_outputs }],
        sink: Box::new(sink),
    };
    let submitted = monotonic_ns();
    if instance.thread.execute(job).is_err() {
        return Err(gone(&route.name));
    }
    let (answer, times) = match rx.await {
        Ok(r) => r,
        // the thread ended with the execute still queued
        Err(_) => return Err(gone(&route.name)),
    };
    let end = monotonic_ns();
    match times {
        Some((compute_start, compute_end)) => {
            let (input, infer, output) = (
                compute_start.saturating_sub(submitted),
                compute_end.saturating_sub(compute_start),
                end.saturating_sub(compute_end),
            );
            route.stats.request_times(0, input, infer, output);
            route.stats.execution(req_batch, input, infer, output);
        }
        // as the TypeScript path times a failed execute: all of it compute, no execution statistic
        None => route.stats.request_times(0, 0, end.saturating_sub(submitted), 0),
    }
    answer
}

/// The parameters as the TypeScript path holds them (convert.ts: assigned to an object in the
/// guest's order): a repeated key keeps its first place and takes its last value, and keys that
/// are array indexes come first, in ascending order (ECMAScript's own-property order).
fn ordered(params: &[ParameterResult]) -> Vec<(&str, &ParameterValueResult)> {
    let mut out: Vec<(&str, &ParameterValueResult)> = Vec::with_capacity(params.len());
    for p in params {
        match out.iter_mut().find(|(k, _)| *k == p.key) {
            Some(slot) => slot.1 = &p.value,
            None => out.push((&p.key, &p.value)),
        }
    }
    let index = |k: &str| -> Option<u32> {
        let canonical = !k.is_empty() && (k == "0" || !k.starts_with('0')) && k.bytes().all(|b| b.is_ascii_digit());
        k.parse::<u32>().ok().filter(|&n| canonical && n != u32::MAX)
    };
    let (mut indexes, names): (Vec<_>, Vec<_>) = out.into_iter().partition(|(k, _)| index(k).is_some());
    indexes.sort_by_key(|(k, _)| index(k));
    indexes.extend(names);
    indexes
}

/// The response's `parameters` as the TypeScript encoder prints them (infer-response.ts
/// parametersText: JSON.stringify of each value; a double that is not finite prints `null`), or
/// None when it has none.
pub fn parameters_json(params: &[ParameterResult]) -> Option<Vec<u8>> {
    if params.is_empty() {
        return None;
    }
    let mut out = vec![b'{'];
    let mut buf = ryu_js::Buffer::new();
    for (i, (k, v)) in ordered(params).into_iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        crate::encode::json_string(&mut out, k);
        out.push(b':');
        match v {
            ParameterValueResult::String(s) => crate::encode::json_string(&mut out, s),
            ParameterValueResult::Bool(b) => out.extend_from_slice(if *b { b"true" } else { b"false" }),
            ParameterValueResult::Int(n) => out.extend_from_slice(n.to_string().as_bytes()),
            ParameterValueResult::Double(d) if d.is_finite() => crate::encode::number(&mut out, &mut buf, *d),
            ParameterValueResult::Double(_) => out.extend_from_slice(b"null"),
        }
    }
    out.push(b'}');
    Some(out)
}

/// The response's parameters as gRPC's `InferParameter`s (frontend/grpc/infer.ts
/// toInferParameter: integers, and doubles that are integers, as int64; other numbers double).
pub fn parameters_grpc(params: &[ParameterResult]) -> std::collections::HashMap<String, crate::grpc::InferParameter> {
    use crate::grpc::infer_parameter::ParameterChoice as C;
    ordered(params)
        .into_iter()
        .map(|(k, v)| {
            let choice = match v {
                ParameterValueResult::String(s) => C::StringParam(s.clone()),
                ParameterValueResult::Bool(b) => C::BoolParam(*b),
                ParameterValueResult::Int(n) => C::Int64Param(*n),
                ParameterValueResult::Double(d) if d.is_finite() && d.fract() == 0.0 && d.abs() < 9.3e18 => {
                    C::Int64Param(*d as i64)
                }
                ParameterValueResult::Double(d) => C::DoubleParam(*d),
            };
            (k.to_string(), crate::grpc::InferParameter { parameter_choice: Some(choice) })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(key: &str, value: ParameterValueResult) -> ParameterResult {
        ParameterResult { key: key.into(), value }
    }

    #[test]
    fn parameters_print_in_ecmascript_property_order() {
        let params = vec![
            p("b", ParameterValueResult::Int(1)),
            p("10", ParameterValueResult::Bool(true)),
            p("a", ParameterValueResult::String("x\"y".into())),
            p("2", ParameterValueResult::Double(0.5)),
            p("b", ParameterValueResult::Double(f64::NAN)),
            p("01", ParameterValueResult::Double(-0.0)),
        ];
        let text = String::from_utf8(parameters_json(&params).expect("some")).expect("utf-8");
        // what JSON.stringify of the object the TypeScript path builds prints
        assert_eq!(text, r#"{"2":0.5,"10":true,"b":null,"a":"x\"y","01":0}"#);
        assert!(parameters_json(&[]).is_none());
    }

    #[test]
    fn guest_messages_are_capped_in_utf16_units() {
        let long = WitError { code: ErrorCode::InvalidArg, message: "é".repeat(5000) };
        let e = guest_error(&long);
        assert_eq!(e.code, 3);
        assert_eq!(e.message, format!("{}... (truncated)", "é".repeat(4096)));
        let astral = WitError { code: ErrorCode::Unknown, message: "😀".repeat(2049) };
        assert_eq!(guest_error(&astral).message, format!("{}... (truncated)", "😀".repeat(2048)));
    }
}
