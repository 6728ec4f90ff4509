//! `warden:backend/inference` (wit/inference.wit): a guest's calls to other models. The capability
//! itself — grants, the owner's principal, the deadline and in-flight limits, the memory held for
//! the guest — lives in TypeScript (host/src/backends/wasm/host/inference.ts), shared with the V8
//! engine: each function here is one host call to the JS thread (`infer-call`, `infer-start`,
//! `infer-next`, `infer-cancel`), waiting for its answer within the execute deadline.
//!
//! A request travels as JSON (`model`, `version`, `id`, `requestedOutputs`, `timeoutUs`, 64-bit
//! integers as decimal strings) plus its tensors and parameters as a results descriptor
//! (descriptor.rs) in the last buffer, the tensor data before it. A response comes back as JSON
//! `{ok: {outputs: [{name, datatype, shape}], parameters: [{key, string|int|bool|double}]}}` (a
//! datatype is its WIT case index, an int a decimal string) with one buffer per output, in order.
use crate::bindings::warden::backend::inference::{Host, InferenceRequest, Tensor};
use crate::bindings::warden::backend::types::{Error, ErrorCode, ParameterResult, ParameterValueResult, Response};
use crate::descriptor::{self, DATATYPES};
use crate::ffi_types::Reply;
use crate::host::Guest;
use crate::wire;
use serde_json::{json, Value};

fn invalid(message: &str) -> Error {
    Error { code: ErrorCode::Internal, message: format!("malformed answer from the host: {message}") }
}

/// One output tensor of an answer's JSON, its data taken from `bufs` in order.
fn tensor_of(v: &Value, data: Vec<u8>) -> Result<Tensor, Error> {
    let name = v.get("name").and_then(Value::as_str).ok_or_else(|| invalid("output name"))?.to_string();
    let code = v.get("datatype").and_then(Value::as_u64).ok_or_else(|| invalid("output datatype"))?;
    let datatype = *DATATYPES.get(code as usize).ok_or_else(|| invalid("output datatype"))?;
    let shape = v
        .get("shape")
        .and_then(Value::as_array)
        .ok_or_else(|| invalid("output shape"))?
        .iter()
        .map(|d| d.as_i64().ok_or_else(|| invalid("output dimension")))
        .collect::<Result<Vec<i64>, Error>>()?;
    Ok(Tensor { name, datatype, shape, data })
}

fn parameter_of(v: &Value) -> Result<ParameterResult, Error> {
    let key = v.get("key").and_then(Value::as_str).ok_or_else(|| invalid("parameter key"))?.to_string();
    let value = if let Some(s) = v.get("string").and_then(Value::as_str) {
        ParameterValueResult::String(s.to_string())
    } else if let Some(i) = v.get("int").and_then(Value::as_str) {
        ParameterValueResult::Int(i.parse().map_err(|_| invalid("parameter int"))?)
    } else if let Some(b) = v.get("bool").and_then(Value::as_bool) {
        ParameterValueResult::Bool(b)
    } else if let Some(d) = v.get("double").and_then(Value::as_f64) {
        ParameterValueResult::Double(d)
    } else {
        return Err(invalid("parameter value"));
    };
    Ok(ParameterResult { key, value })
}

/// A response from the answer's `ok` object and its buffers.
fn response_of(v: &Value, bufs: Vec<Vec<u8>>) -> Result<Response, Error> {
    let outs = v.get("outputs").and_then(Value::as_array).ok_or_else(|| invalid("outputs"))?;
    if outs.len() != bufs.len() {
        return Err(invalid("output buffers"));
    }
    let outputs = outs.iter().zip(bufs).map(|(o, b)| tensor_of(o, b)).collect::<Result<Vec<_>, Error>>()?;
    let parameters = match v.get("parameters").and_then(Value::as_array) {
        Some(ps) => ps.iter().map(parameter_of).collect::<Result<Vec<_>, Error>>()?,
        None => Vec::new(),
    };
    Ok(Response { outputs, parameters })
}

/// A request's JSON and buffers (module docs): its tensors and parameters as a results descriptor.
fn request_parts(request: InferenceRequest) -> (Value, Vec<Vec<u8>>) {
    let meta = json!({
        "model": request.model_name,
        "version": request.model_version.to_string(),
        "id": request.id,
        "requestedOutputs": request.requested_outputs,
        "timeoutUs": request.timeout_us.to_string(),
    });
    let mut bufs = Vec::new();
    let desc = descriptor::result(Ok(Response { outputs: request.inputs, parameters: request.parameters }), &mut bufs);
    bufs.push(desc);
    (meta, bufs)
}

/// A reply whose `ok` is a response (null: none) or whose `err` is the call's error.
fn outcome_of(r: Reply) -> Result<Option<Response>, Error> {
    if let Some(e) = r.json.get("err") {
        return Err(wire::error_from(e));
    }
    match r.json.get("ok") {
        None | Some(Value::Null) => Ok(None),
        Some(v) => response_of(v, r.bufs).map(Some),
    }
}

impl Host for Guest {
    fn infer(&mut self, request: InferenceRequest) -> wasmtime::Result<Result<Response, Error>> {
        // one host call: the JS thread answers with the response itself
        let (meta, bufs) = request_parts(request);
        let r = self.io.call(json!({ "fn": "infer-call", "request": meta }), bufs)?;
        Ok(outcome_of(r).and_then(|o| o.ok_or_else(|| invalid("no response"))))
    }

    fn start(&mut self, request: InferenceRequest) -> wasmtime::Result<Result<u32, Error>> {
        let (meta, bufs) = request_parts(request);
        let r = self.io.call(json!({ "fn": "infer-start", "request": meta }), bufs)?;
        if let Some(e) = r.json.get("err") {
            return Ok(Err(wire::error_from(e)));
        }
        match r.json.get("ok").and_then(Value::as_u64) {
            Some(h) if h <= u32::MAX as u64 => Ok(Ok(h as u32)),
            _ => Ok(Err(invalid("call handle"))),
        }
    }

    fn next(&mut self, call: u32) -> wasmtime::Result<Result<Option<Response>, Error>> {
        let r = self.io.call(json!({ "fn": "infer-next", "handle": call }), vec![])?;
        Ok(outcome_of(r))
    }

    fn cancel(&mut self, call: u32) -> wasmtime::Result<()> {
        self.io.call(json!({ "fn": "infer-cancel", "handle": call }), vec![])?;
        Ok(())
    }
}
