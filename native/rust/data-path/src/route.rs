//! What the control plane publishes for one model (`wd_route_publish`): the serving version, its
//! inputs and outputs as the normalised config declares them, and its native instances. The data
//! path serves a request for a published model only when everything about it is within what this
//! table describes; anything else goes to the TypeScript data plane (DESIGN "The native
//! data path").
use crate::host::Opaque;
use crate::stats::RouteStats;
use serde::Deserialize;
use std::collections::HashMap;
use std::ffi::CString;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, RwLock};

/// Protocol datatype names in `TRITONSERVER_DataType` order (index = enum value).
pub const DATATYPES: [&str; 15] = [
    "INVALID", "BOOL", "UINT8", "UINT16", "UINT32", "UINT64", "INT8", "INT16", "INT32", "INT64", "FP16", "FP32",
    "FP64", "BYTES", "BF16",
];

/// `TRITONSERVER_DataType` of a protocol name, for the fixed-size types the data path decodes.
pub fn datatype_of(name: &str) -> Option<u32> {
    DATATYPES.iter().position(|d| *d == name).map(|i| i as u32).filter(|&t| element_size(t) > 0)
}

/// Bytes per element of a fixed-size datatype; 0 for INVALID and BYTES.
pub fn element_size(t: u32) -> usize {
    match t {
        1 | 2 | 6 => 1,
        3 | 7 | 10 | 14 => 2,
        4 | 8 | 11 => 4,
        5 | 9 | 12 => 8,
        _ => 0,
    }
}

/// An input as published: name, datatype, dims (-1 = any) without the batch dimension.
#[derive(Deserialize, Debug, Clone)]
#[serde(deny_unknown_fields)]
pub struct InputSpec {
    pub name: String,
    pub datatype: String,
    pub dims: Vec<i64>,
}

/// An output as published: name, dims (-1 = any) without the batch dimension, and the datatype the
/// configuration declares (a Triton C-API backend names its outputs' datatypes itself; an ONNX
/// Runtime route's answers carry this one).
#[derive(Deserialize, Debug, Clone)]
#[serde(deny_unknown_fields)]
pub struct OutputSpec {
    pub name: String,
    pub dims: Vec<i64>,
    #[serde(default)]
    pub datatype: Option<String>,
}

/// The JSON the control plane publishes.
#[derive(Deserialize, Debug, Clone)]
#[serde(deny_unknown_fields)]
pub struct RouteSpec {
    pub name: String,
    pub version: i64,
    pub max_batch_size: i64,
    pub inputs: Vec<InputSpec>,
    pub outputs: Vec<OutputSpec>,
}

/// A published input with its datatype resolved.
#[derive(Debug)]
pub struct Input {
    pub name: String,
    /// `name` as the C string a request descriptor points at (made once, at publish).
    pub c_name: CString,
    pub datatype: u32,
    pub dims: Vec<i64>,
}

/// A tensor name as a C string; a name holding a NUL is refused (a config cannot name one).
fn c_string(name: &str) -> Result<CString, String> {
    CString::new(name).map_err(|_| format!("tensor name '{}' holds a NUL", name.replace('\0', "\\0")))
}

/// A native model instance (`TRITONBACKEND_ModelInstance*`) lent by the control plane until unpublish drains.
#[derive(Clone, Copy)]
pub struct Instance(pub *mut Opaque);
// SAFETY: the host's instance object is thread-safe for WARDEN_InstanceExecute (it queues work on
// the instance's own worker thread); the control plane keeps it alive while the route is published
// and until its in-flight count drains to zero.
unsafe impl Send for Instance {}
// SAFETY: as above; the pointer itself is never written through by the data path.
unsafe impl Sync for Instance {}

/// One published model.
pub struct Route {
    pub name: String,
    pub version: i64,
    /// The version as the response prints it and a versioned URL names it.
    pub version_text: String,
    pub max_batch_size: i64,
    pub inputs: Vec<Input>,
    pub outputs: Vec<String>,
    /// `outputs` as the C strings a request's requested outputs point at (made once, at publish).
    pub output_c_names: Vec<CString>,
    /// Each output's dims (same order as `outputs`).
    pub output_dims: Vec<Vec<i64>>,
    pub instances: Vec<Instance>,
    /// The ONNX Runtime sessions that serve the route instead of `instances` (ort_exec.rs).
    pub ort: Option<crate::ort_exec::OrtRoute>,
    /// The wasmtime sandboxes that serve the route instead of `instances` (wasm_exec.rs).
    pub wasm: Option<crate::wasm_exec::WasmRoute>,
    next: AtomicUsize,
    /// Requests submitted and not yet both answered and released.
    pub inflight: AtomicU64,
    pub stats: RouteStats,
}

impl Route {
    /// Builds a route from its published JSON and instances.
    /// @returns Err(message) when the spec is malformed or names a datatype the data path does not decode
    pub fn new(spec: RouteSpec, instances: Vec<Instance>) -> Result<Route, String> {
        if instances.is_empty() {
            return Err("a route needs at least one instance".into());
        }
        Route::build(spec, instances, None, None)
    }

    /// Builds a route served by ONNX Runtime sessions of Warden's in-process engine (ort_exec.rs).
    /// @returns Err(message) as [`Route::new`], or when a session lacks a published tensor or an
    ///   output's datatype is missing
    pub fn new_ort(spec: RouteSpec, sessions: Vec<crate::ort_exec::SessionPtr>) -> Result<Route, String> {
        let ort = crate::ort_exec::OrtRoute::new(&spec, sessions)?;
        Route::build(spec, Vec::new(), Some(ort), None)
    }

    /// Builds a route served by wasmtime sandboxes (wasm_exec.rs): their instance threads, whose
    /// execute deadline is `execute_ms`.
    /// @returns Err(message) as [`Route::new`], or when an output's datatype is missing
    pub fn new_wasm(
        spec: RouteSpec,
        threads: Vec<warden_wasmtime_engine::direct::DirectHandle>,
        execute_ms: u64,
    ) -> Result<Route, String> {
        let wasm = crate::wasm_exec::WasmRoute::new(&spec, threads, execute_ms)?;
        Route::build(spec, Vec::new(), None, Some(wasm))
    }

    fn build(
        spec: RouteSpec,
        instances: Vec<Instance>,
        ort: Option<crate::ort_exec::OrtRoute>,
        wasm: Option<crate::wasm_exec::WasmRoute>,
    ) -> Result<Route, String> {
        let mut inputs = Vec::with_capacity(spec.inputs.len());
        for i in spec.inputs {
            let datatype = datatype_of(&i.datatype)
                .ok_or_else(|| format!("input '{}': datatype {} is not served natively", i.name, i.datatype))?;
            let c_name = c_string(&i.name)?;
            inputs.push(Input { name: i.name, c_name, datatype, dims: i.dims });
        }
        let output_c_names = spec.outputs.iter().map(|o| c_string(&o.name)).collect::<Result<_, _>>()?;
        Ok(Route {
            version_text: spec.version.to_string(),
            name: spec.name,
            version: spec.version,
            max_batch_size: spec.max_batch_size,
            inputs,
            output_dims: spec.outputs.iter().map(|o| o.dims.clone()).collect(),
            outputs: spec.outputs.into_iter().map(|o| o.name).collect(),
            output_c_names,
            instances,
            ort,
            wasm,
            next: AtomicUsize::new(0),
            inflight: AtomicU64::new(0),
            stats: RouteStats::default(),
        })
    }

    /// The instance the next request goes to (round robin; each instance's worker queues its executes).
    pub fn pick(&self) -> Instance {
        self.instances[self.next_index(self.instances.len())]
    }

    /// The next index of a round robin over `n` (> 0) instances.
    pub fn next_index(&self, n: usize) -> usize {
        self.next.fetch_add(1, Ordering::Relaxed) % n
    }
}

/// The published models by name.
#[derive(Default)]
pub struct Routes {
    map: RwLock<HashMap<String, Arc<Route>>>,
}

impl Routes {
    pub fn get(&self, name: &str) -> Option<Arc<Route>> {
        self.map.read().ok()?.get(name).cloned()
    }

    /// Publishes (or replaces) a route under its name.
    pub fn publish_arc(&self, route: Arc<Route>) {
        let mut m = self.map.write().unwrap_or_else(|p| p.into_inner());
        m.insert(route.name.clone(), route);
    }

    /// Removes `route` if it is still the one published under its name; new requests for the name
    /// go to the TypeScript data plane from here on.
    pub fn unpublish_if(&self, route: &Arc<Route>) {
        let mut m = self.map.write().unwrap_or_else(|p| p.into_inner());
        if m.get(&route.name).is_some_and(|r| Arc::ptr_eq(r, route)) {
            m.remove(&route.name);
        }
    }
}
