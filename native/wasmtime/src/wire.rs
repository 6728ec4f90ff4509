//! Requests, responses and errors between the JSON the host sends and the bindgen types of
//! `warden:backend/types` (the same shapes the V8 engine's jco glue uses: lower-case datatype and
//! error-code case names, 64-bit integers as decimal strings, tensor data as buffer indexes).
use crate::bindings::warden::backend::types::{
    CorrelationId, DataType, Error, ErrorCode, ParameterParam, ParameterResult, ParameterValueParam, ParameterValueResult, Request, RequestFlags, Response,
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

fn datatype_of(s: &str) -> Result<DataType, String> {
    Ok(match s {
        "bool" => DataType::Bool,
        "uint8" => DataType::Uint8,
        "uint16" => DataType::Uint16,
        "uint32" => DataType::Uint32,
        "uint64" => DataType::Uint64,
        "int8" => DataType::Int8,
        "int16" => DataType::Int16,
        "int32" => DataType::Int32,
        "int64" => DataType::Int64,
        "fp16" => DataType::Fp16,
        "fp32" => DataType::Fp32,
        "fp64" => DataType::Fp64,
        "bytes" => DataType::Bytes,
        "bf16" => DataType::Bf16,
        _ => return Err(format!("unknown datatype '{s}'")),
    })
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

fn u64_of(v: &Value) -> Result<u64, String> {
    match v {
        Value::Number(n) => n.as_u64().ok_or_else(|| format!("bad integer {n}")),
        Value::String(s) => s.parse::<u64>().map_err(|_| format!("bad integer '{s}'")),
        _ => Err("expected an integer".into()),
    }
}

fn i64_of(v: &Value) -> Result<i64, String> {
    match v {
        Value::Number(n) => n.as_i64().ok_or_else(|| format!("bad integer {n}")),
        Value::String(s) => s.parse::<i64>().map_err(|_| format!("bad integer '{s}'")),
        _ => Err("expected an integer".into()),
    }
}

fn str_of<'a>(v: &'a Value, key: &str) -> Result<&'a str, String> {
    v.get(key).and_then(Value::as_str).ok_or_else(|| format!("missing string '{key}'"))
}

fn buf_at<'a>(bufs: &[&'a [u8]], v: &Value) -> Result<&'a [u8], String> {
    let i = u64_of(v)? as usize;
    bufs.get(i).copied().ok_or_else(|| format!("buffer {i} missing"))
}

fn parameters_of<'a>(v: &'a Value) -> Result<Vec<ParameterParam<'a>>, String> {
    let Some(list) = v.as_array() else { return Ok(vec![]) };
    list.iter()
        .map(|p| {
            let val = p.get("value").ok_or("parameter without value")?;
            let raw = val.get("val").unwrap_or(&Value::Null);
            let value = match str_of(val, "tag")? {
                "string" => ParameterValueParam::String(raw.as_str().unwrap_or("")),
                "int" => ParameterValueParam::Int(i64_of(raw)?),
                "bool" => ParameterValueParam::Bool(raw.as_bool().unwrap_or(false)),
                "double" => ParameterValueParam::Double(raw.as_f64().unwrap_or(f64::NAN)),
                t => return Err(format!("unknown parameter tag '{t}'")),
            };
            Ok(ParameterParam { key: str_of(p, "key")?, value })
        })
        .collect()
}

/// One request's parts, borrowing the host's JSON and input buffers; [`requests`] makes the
/// WIT `request`s pointing into them (nothing is copied until wasmtime lowers them into the guest).
pub struct RequestParts<'a> {
    handle: u32,
    id: &'a str,
    correlation_id: CorrelationId<'a>,
    flags: RequestFlags,
    priority: u32,
    timeout_us: u64,
    batch_size: u32,
    inputs: Vec<InputPart<'a>>,
    requested_outputs: Vec<&'a str>,
    parameters: Vec<ParameterParam<'a>>,
}

/// One input tensor of a request, borrowing its data.
pub struct InputPart<'a> {
    name: &'a str,
    datatype: DataType,
    shape: Vec<i64>,
    data: &'a [u8],
}

/// Request parts from the host's JSON; input data is `bufs[index]`.
pub fn request_parts<'a>(v: &'a Value, bufs: &[&'a [u8]]) -> Result<Vec<RequestParts<'a>>, String> {
    let list = v.as_array().ok_or("requests must be a list")?;
    list.iter()
        .map(|r| {
            let corr = r.get("correlationId").ok_or("missing correlationId")?;
            let correlation_id = match str_of(corr, "tag")? {
                "none" => CorrelationId::None,
                "int" => CorrelationId::Int(u64_of(corr.get("val").unwrap_or(&Value::Null))?),
                "string" => CorrelationId::String(str_of(corr, "val")?),
                t => return Err(format!("unknown correlation id tag '{t}'")),
            };
            let bits = u64_of(r.get("flags").unwrap_or(&Value::Null))?;
            let mut flags = RequestFlags::empty();
            if bits & 1 != 0 {
                flags |= RequestFlags::SEQUENCE_START;
            }
            if bits & 2 != 0 {
                flags |= RequestFlags::SEQUENCE_END;
            }
            let inputs = r
                .get("inputs")
                .and_then(Value::as_array)
                .ok_or("missing inputs")?
                .iter()
                .map(|t| {
                    Ok(InputPart {
                        name: str_of(t, "name")?,
                        datatype: datatype_of(str_of(t, "datatype")?)?,
                        shape: t.get("shape").and_then(Value::as_array).ok_or("missing shape")?.iter().map(i64_of).collect::<Result<_, _>>()?,
                        data: buf_at(bufs, t.get("data").unwrap_or(&Value::Null))?,
                    })
                })
                .collect::<Result<Vec<_>, String>>()?;
            Ok(RequestParts {
                handle: u64_of(r.get("handle").unwrap_or(&Value::Null))? as u32,
                id: str_of(r, "id")?,
                correlation_id,
                flags,
                priority: u64_of(r.get("priority").unwrap_or(&Value::Null))?.min(u32::MAX as u64) as u32,
                timeout_us: u64_of(r.get("timeoutUs").unwrap_or(&Value::Null))?,
                batch_size: u64_of(r.get("batchSize").unwrap_or(&Value::Null))?.min(u32::MAX as u64) as u32,
                inputs,
                requested_outputs: r
                    .get("requestedOutputs")
                    .and_then(Value::as_array)
                    .ok_or("missing requestedOutputs")?
                    .iter()
                    .map(|s| s.as_str().ok_or_else(|| "requested output must be a string".to_string()))
                    .collect::<Result<_, _>>()?,
                parameters: parameters_of(r.get("parameters").unwrap_or(&Value::Null))?,
            })
        })
        .collect()
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
