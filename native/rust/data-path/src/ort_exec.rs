//! Running one decoded request on an ONNX Runtime session of Warden's in-process engine
//! (native/rust/ort-engine), the session the ONNX Runtime backend opened for a model instance
//! (host/src/backends/onnxruntime/: OnnxInstance's inline session), on tokio's blocking pool.
//!
//! What the TypeScript path does for the same request, and so does this (DESIGN "The native data
//! path"): one run per instance at a time (the instance's lock, held until the run's outputs are
//! read; OnnxInstance executes one batch at a time); the outputs the request asks for (all of the
//! configuration's, in its order, when it names none), in that order, each with the datatype the
//! configuration declares, refused when ONNX Runtime's element type differs; a failed run as
//! `onnxruntime execute failure: <ONNX Runtime's message>` (INTERNAL); queue and compute times
//! reported per request and per execution (of the request's batch size).
use crate::decode::{Data, Decoded};
use crate::encode::OutputView;
use crate::exec::monotonic_ns;
use crate::host::HostError;
use crate::route::{Route, RouteSpec};
use crate::server::{check_output, internal};
use bytes::Bytes;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use warden_ort_engine::{EngineInput, EngineOutput, WoSession};

/// A session lent by the control plane until the route is unpublished and drained.
#[derive(Clone, Copy)]
pub struct SessionPtr(pub *const WoSession);
// SAFETY: an ONNX Runtime session's Run may be called from any thread, concurrently (ONNX
// Runtime's documented thread safety); the session's names and types are read-only after the open.
// The control plane keeps the session open while the route is published and until its in-flight
// count drains to zero.
unsafe impl Send for SessionPtr {}
// SAFETY: as above.
unsafe impl Sync for SessionPtr {}

/// One instance: its session and the lock that keeps its runs one at a time.
struct OrtInstance {
    session: SessionPtr,
    lock: Arc<tokio::sync::Mutex<()>>,
}

/// How a route's tensors map onto its sessions.
pub struct OrtRoute {
    instances: Vec<OrtInstance>,
    /// Session input index of each route input.
    input_index: Vec<u32>,
    /// Session output index of each route output.
    output_index: Vec<usize>,
    /// `TRITONSERVER_DataType` of each route output (the configuration's).
    output_types: Vec<u32>,
}

/// ONNX element type code (TensorProto.DataType) of a `TRITONSERVER_DataType`, as
/// host/src/backends/onnxruntime/native-engine.ts maps them; 0 for the others.
pub fn onnx_type(t: u32) -> i32 {
    match t {
        1 => 9,   // BOOL
        2 => 2,   // UINT8
        3 => 4,   // UINT16
        4 => 12,  // UINT32
        5 => 13,  // UINT64
        6 => 3,   // INT8
        7 => 5,   // INT16
        8 => 6,   // INT32
        9 => 7,   // INT64
        10 => 10, // FP16
        11 => 1,  // FP32
        12 => 11, // FP64
        _ => 0,
    }
}

impl OrtRoute {
    /// Maps `spec`'s tensors onto `sessions` (all opened from the same model file).
    /// @returns Err(message) for no session, a tensor the session lacks, or an output without a
    ///   datatype the engine passes
    pub fn new(spec: &RouteSpec, sessions: Vec<SessionPtr>) -> Result<OrtRoute, String> {
        let Some(&first) = sessions.first() else {
            return Err("a route needs at least one instance".into());
        };
        if sessions.iter().any(|s| s.0.is_null()) {
            return Err("an ONNX Runtime session is null".into());
        }
        // SAFETY: non-null, open while the route is published (SessionPtr).
        let s = unsafe { &*first.0 };
        let find = |names: &[std::ffi::CString], name: &str| names.iter().position(|n| n.as_bytes() == name.as_bytes());
        let mut input_index = Vec::with_capacity(spec.inputs.len());
        for i in &spec.inputs {
            let k = find(&s.input_names, &i.name).ok_or_else(|| format!("the session has no input '{}'", i.name))?;
            input_index.push(k as u32);
        }
        let mut output_index = Vec::with_capacity(spec.outputs.len());
        let mut output_types = Vec::with_capacity(spec.outputs.len());
        for o in &spec.outputs {
            output_index
                .push(find(&s.output_names, &o.name).ok_or_else(|| format!("the session has no output '{}'", o.name))?);
            let t = o
                .datatype
                .as_deref()
                .and_then(crate::route::datatype_of)
                .filter(|&t| onnx_type(t) != 0)
                .ok_or_else(|| format!("output '{}': no datatype the engine passes", o.name))?;
            output_types.push(t);
        }
        let instances = sessions
            .into_iter()
            .map(|session| OrtInstance { session, lock: Arc::new(tokio::sync::Mutex::new(())) })
            .collect();
        Ok(OrtRoute { instances, input_index, output_index, output_types })
    }
}

/// A run's outputs, in the order computed (`wanted`), owned until dropped.
pub struct OrtAnswer {
    outputs: Vec<EngineOutput>,
    /// Route output index of each of `outputs`.
    wanted: Vec<usize>,
}

// SAFETY: the outputs are OrtValues ONNX Runtime allocated for this run and handed over whole;
// nothing else refers to them, and releasing one is valid on any thread (ort_engine.h).
unsafe impl Send for OrtAnswer {}

impl OrtAnswer {
    /// The outputs as the response prints them, each checked against the route
    /// (server.rs `check_output`), with the binary flag the request asked for.
    pub fn views<'a>(
        &'a self,
        route: &'a Route,
        requested: &[(usize, bool)],
        default_binary: bool,
        batch: u64,
    ) -> Result<Vec<OutputView<'a>>, HostError> {
        let Some(ort) = &route.ort else {
            return Err(internal("the route has no ONNX Runtime sessions".into()));
        };
        let mut views = Vec::with_capacity(self.outputs.len());
        for (o, &index) in self.outputs.iter().zip(&self.wanted) {
            let name = route.outputs[index].as_str();
            let datatype = ort.output_types[index];
            let data: &[u8] = if o.bytes == 0 || o.data.is_null() {
                &[]
            } else {
                // SAFETY: ONNX Runtime's output buffer of `bytes` bytes, alive while `o.value` is
                // (until self drops).
                unsafe { std::slice::from_raw_parts(o.data, o.bytes) }
            };
            check_output(route, name, &o.shape, datatype, data.len(), batch)?;
            let binary = crate::decode::binary_of(requested, default_binary, index);
            views.push(OutputView { name, datatype, shape: &o.shape, data, binary });
        }
        Ok(views)
    }
}

/// Counts a request in flight on the route until dropped (the control plane closes the sessions
/// only after the count drains).
struct Inflight(Arc<Route>);

impl Drop for Inflight {
    fn drop(&mut self) {
        self.0.inflight.fetch_sub(1, Ordering::AcqRel);
    }
}

fn execute_failed(detail: &str) -> HostError {
    internal(format!("onnxruntime execute failure: {detail}"))
}

/// Runs `req` (decoded from `body`) on one of the route's sessions, one run per instance at a time.
/// The run goes on even if the caller stops waiting (the request's lock and in-flight count are
/// held by the run itself).
/// @returns the outputs, or the error the TypeScript path reports for the run (INTERNAL)
pub async fn run(route: &Arc<Route>, req: Decoded, body: Bytes) -> Result<OrtAnswer, HostError> {
    let Some(ort) = &route.ort else {
        return Err(internal("the route has no ONNX Runtime sessions".into()));
    };
    route.inflight.fetch_add(1, Ordering::AcqRel);
    let inflight = Inflight(route.clone());
    let enqueued_ns = monotonic_ns();
    let batch = req.batch;
    let instance = &ort.instances[route.next_index(ort.instances.len())];
    let session = instance.session;
    let guard = instance.lock.clone().lock_owned().await;
    let task = tokio::task::spawn_blocking(move || {
        let _guard = guard;
        // the whole SessionPtr moves in (a closure would capture only its raw pointer field)
        let session: SessionPtr = session;
        let route = &inflight.0;
        let Some(ort) = &route.ort else {
            return Err(internal("the route has no ONNX Runtime sessions".into()));
        };
        let exec_start = monotonic_ns();
        let mut inputs = Vec::with_capacity(req.inputs.len());
        for t in &req.inputs {
            let data: &[u8] = match &t.data {
                Data::Owned(v) => v,
                Data::Body(r) => &body[r.clone()],
            };
            inputs.push(EngineInput {
                index: ort.input_index[t.index] as usize,
                elem_type: onnx_type(route.inputs[t.index].datatype),
                shape: &t.shape,
                data,
            });
        }
        let mut wanted: Vec<usize> = Vec::with_capacity(route.outputs.len());
        if req.formats.requested.is_empty() {
            wanted.extend(0..route.outputs.len());
        } else {
            for (k, _) in &req.formats.requested {
                if !wanted.contains(k) {
                    wanted.push(*k);
                }
            }
        }
        let session_outputs: Vec<usize> = wanted.iter().map(|&k| ort.output_index[k]).collect();
        // SAFETY: the session stays open while the route is published and its in-flight count,
        // held by this closure (`inflight`), is above zero (SessionPtr).
        let s = unsafe { &*session.0 };
        let compute_start = monotonic_ns();
        let result = s.run(&inputs, &session_outputs);
        let compute_end = monotonic_ns();
        let checked = result.map_err(|e| execute_failed(&e)).and_then(|outputs| {
            if outputs.len() != wanted.len() {
                return Err(execute_failed("ONNX Runtime returned another number of outputs than asked for"));
            }
            for (o, &k) in outputs.iter().zip(&wanted) {
                if o.elem_type != onnx_type(ort.output_types[k]) {
                    let dt = crate::route::DATATYPES[ort.output_types[k] as usize];
                    return Err(internal(format!(
                        "onnxruntime output '{}' has ONNX element type {}, not the {dt} of the model configuration",
                        route.outputs[k], o.elem_type
                    )));
                }
            }
            Ok(outputs)
        });
        let exec_end = monotonic_ns();
        let queue = exec_start.saturating_sub(enqueued_ns);
        match checked {
            Ok(outputs) => {
                let (input, infer, output) = (
                    compute_start.saturating_sub(exec_start),
                    compute_end.saturating_sub(compute_start),
                    exec_end.saturating_sub(compute_end),
                );
                route.stats.request_times(queue, input, infer, output);
                route.stats.execution(batch, input, infer, output);
                Ok(OrtAnswer { outputs, wanted })
            }
            Err(e) => {
                // as the TypeScript path times a failed execute (lifecycle/model-version.ts
                // recordExecution): all of it compute, no execution statistic
                route.stats.request_times(queue, 0, exec_end.saturating_sub(exec_start), 0);
                Err(e)
            }
        }
    });
    match task.await {
        Ok(r) => r,
        Err(_) => Err(internal("the ONNX Runtime run panicked".into())),
    }
}
