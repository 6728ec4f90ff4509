//! Errors between the JSON of host calls and the bindgen types of `warden:backend/types` (jco's
//! error-code case names, as the V8 engine uses them), and the WIT requests built from a requests
//! descriptor's parts. Responses travel as descriptors (descriptor.rs).
use crate::bindings::warden::backend::types::{
    CorrelationId, DataType, Error, ErrorCode, ParameterParam, Request, RequestFlags, TensorParam,
};
use serde_json::{json, Value};

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
    parts
        .iter()
        .map(|p| {
            p.inputs
                .iter()
                .map(|t| TensorParam { name: t.name, datatype: t.datatype, shape: &t.shape, data: t.data })
                .collect()
        })
        .collect()
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
