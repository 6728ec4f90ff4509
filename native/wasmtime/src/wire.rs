//! Responses and errors between the JSON of host calls and the bindgen types of
//! `warden:backend/types` (the same shapes the V8 engine's jco glue uses: lower-case datatype and
//! error-code case names, 64-bit integers as decimal strings, tensor data as buffer indexes).
use crate::bindings::warden::backend::types::{
    CorrelationId, DataType, Error, ErrorCode, ParameterParam, ParameterResult, ParameterValueResult, Request, RequestFlags, Response,
    TensorParam,
};
use serde_json::{json, Value};

pub fn datatype_name(d: DataType) -> &'static str {
    match d {
        DataType::Bool => "bool",
        DataType::Uint8 => "uint8",
        DataType::Uint16 => "uint16",
        DataType::Uint32 => "uint32",
        DataType::Uint64 => "uint64",
        DataType::Int8 => "int8",
        DataType::Int16 => "int16",
        DataType::Int32 => "int32",
        DataType::Int64 => "int64",
        DataType::Fp16 => "fp16",
        DataType::Fp32 => "fp32",
        DataType::Fp64 => "fp64",
        DataType::Bytes => "bytes",
        DataType::Bf16 => "bf16",
    }
}

pub fn error_code_name(c: ErrorCode) -> &'static str {
    match c {
        ErrorCode::Unknown => "unknown",
        ErrorCode::Internal => "internal",
        ErrorCode::NotFound => "not-found",
        ErrorCode::InvalidArg => "invalid-arg",
        ErrorCode::Unavailable => "unavailable",
        ErrorCode::Unsupported => "unsupported",
        ErrorCode::AlreadyExists => "already-exists",
        ErrorCode::Cancelled => "cancelled",
    }
}

pub fn error_code_of(s: &str) -> ErrorCode {
    match s {
        "unknown" => ErrorCode::Unknown,
        "not-found" => ErrorCode::NotFound,
        "invalid-arg" => ErrorCode::InvalidArg,
        "unavailable" => ErrorCode::Unavailable,
        "unsupported" => ErrorCode::Unsupported,
        "already-exists" => ErrorCode::AlreadyExists,
        "cancelled" => ErrorCode::Cancelled,
        _ => ErrorCode::Internal,
    }
}

pub fn error_json(e: &Error) -> Value {
    json!({ "code": error_code_name(e.code), "message": e.message })
}

/// A WIT `error` from `{code, message}` (unknown codes become `internal`).
pub fn error_from(v: &Value) -> Error {
    Error {
        code: error_code_of(v.get("code").and_then(Value::as_str).unwrap_or("internal")),
        message: v.get("message").and_then(Value::as_str).unwrap_or("").to_string(),
    }
}

fn parameters_json(ps: &[ParameterResult]) -> Value {
    Value::Array(
        ps.iter()
            .map(|p| {
                let value = match &p.value {
                    ParameterValueResult::String(s) => json!({ "tag": "string", "val": s }),
                    ParameterValueResult::Int(i) => json!({ "tag": "int", "val": i.to_string() }),
                    ParameterValueResult::Bool(b) => json!({ "tag": "bool", "val": b }),
                    ParameterValueResult::Double(d) => json!({ "tag": "double", "val": if d.is_finite() { json!(d) } else { json!(d.to_string()) } }),
                };
                json!({ "key": p.key, "value": value })
            })
            .collect(),
    )
}

/// A guest response as JSON; tensor data moves into `bufs` (no copy).
pub fn response_json(r: Response, bufs: &mut Vec<Vec<u8>>) -> Value {
    let params = parameters_json(&r.parameters);
    let outputs: Vec<Value> = r
        .outputs
        .into_iter()
        .map(|t| {
            let idx = bufs.len();
            let v = json!({
                "name": t.name,
                "datatype": datatype_name(t.datatype),
                "shape": t.shape.iter().map(|d| d.to_string()).collect::<Vec<_>>(),
                "data": idx,
            });
            bufs.push(t.data);
            v
        })
        .collect();
    json!({ "outputs": outputs, "parameters": params })
}

/// `result<response, error>` as `{tag: "ok", val}` / `{tag: "err", val}` (jco's shape).
pub fn result_json(r: Result<Response, Error>, bufs: &mut Vec<Vec<u8>>) -> Value {
    match r {
        Ok(resp) => json!({ "tag": "ok", "val": response_json(resp, bufs) }),
        Err(e) => json!({ "tag": "err", "val": error_json(&e) }),
    }
}

/// One request's parts, borrowing the host's JSON and input buffers; [`requests`] makes the
/// WIT `request`s pointing into them (nothing is copied until wasmtime lowers them into the guest).
pub struct RequestParts<'a> {
    pub handle: u32,
    pub id: &'a str,
    pub correlation_id: CorrelationId<'a>,
    pub flags: RequestFlags,
    pub priority: u32,
    pub timeout_us: u64,
    pub batch_size: u32,
    pub inputs: Vec<InputPart<'a>>,
    pub requested_outputs: Vec<&'a str>,
    pub parameters: Vec<ParameterParam<'a>>,
}

/// One input tensor of a request, borrowing its data.
pub struct InputPart<'a> {
    pub name: &'a str,
    pub datatype: DataType,
    pub shape: Vec<i64>,
    pub data: &'a [u8],
}

/// The WIT `tensor`s of each request of `parts`.
pub fn tensors<'a>(parts: &'a [RequestParts<'a>]) -> Vec<Vec<TensorParam<'a>>> {
    parts.iter().map(|p| p.inputs.iter().map(|t| TensorParam { name: t.name, datatype: t.datatype, shape: &t.shape, data: t.data }).collect()).collect()
}

/// The WIT `request`s over `parts` and their [`tensors`].
pub fn requests<'a>(parts: &'a [RequestParts<'a>], tensors: &'a [Vec<TensorParam<'a>>]) -> Vec<Request<'a>> {
    parts
        .iter()
        .zip(tensors)
        .map(|(p, inputs)| Request {
            handle: p.handle,
            id: p.id,
            correlation_id: p.correlation_id.clone(),
            flags: p.flags,
            priority: p.priority,
            timeout_us: p.timeout_us,
            batch_size: p.batch_size,
            inputs,
            requested_outputs: &p.requested_outputs,
            parameters: &p.parameters,
        })
        .collect()
}
