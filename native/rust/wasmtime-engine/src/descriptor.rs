//! The binary descriptors of an execute across the C ABI (mirrored by
//! host/src/backends/wasm/wasmtime/descriptor.ts): the requests going in and the results coming
//! back, instead of JSON strings parsed into trees on both sides. Little-endian; a string is a
//! u32 byte length and UTF-8; tensor data is an index into the buffers that travel beside the
//! descriptor (input buffers are read in place, output buffers move without a copy).
//!
//! Requests: `u32 count`, then per request `u32 handle, str id, u8 correlation tag (0 none, 1 int,
//! 2 string) + u64 | str, u32 flags, u32 priority, u64 timeout_us, u32 batch_size, u32 inputs
//! {str name, u8 datatype, u32 rank, i64 dims[rank], u32 buffer}, u32 requested {str},
//! u32 parameters {str key, u8 tag (0 string, 1 int, 2 bool, 3 double) + str | i64 | u8 | f64}`.
//! Results: `u64 compute_start_ns, u64 compute_end_ns, u8 has_fuel, u64 fuel, u32 count`, then per
//! result `u8 0 + u32 outputs {str name, u8 datatype, u32 rank, i64 dims, u32 buffer} + u32
//! parameters {...}` or `u8 1 + u8 error code + str message`.
//! Data types and error codes are their WIT case indexes.
use crate::bindings::warden::backend::types::{
    CorrelationId, DataType, Error, ErrorCode, ParameterParam, ParameterResult, ParameterValueParam,
    ParameterValueResult, RequestFlags, Response,
};
use crate::wire::{InputPart, RequestParts};

/// The WIT `data-type` cases in their order (= `TRITONSERVER_DataType` − 1, BOOL first).
pub const DATATYPES: [DataType; 14] = [
    DataType::Bool,
    DataType::Uint8,
    DataType::Uint16,
    DataType::Uint32,
    DataType::Uint64,
    DataType::Int8,
    DataType::Int16,
    DataType::Int32,
    DataType::Int64,
    DataType::Fp16,
    DataType::Fp32,
    DataType::Fp64,
    DataType::Bytes,
    DataType::Bf16,
];

fn datatype_code(d: DataType) -> u8 {
    DATATYPES.iter().position(|x| *x == d).unwrap_or(0) as u8
}

/// The `TRITONSERVER_Error_Code` of a WIT `error-code` (the WIT cases are in its order).
pub fn error_code(c: ErrorCode) -> u8 {
    match c {
        ErrorCode::Unknown => 0,
        ErrorCode::Internal => 1,
        ErrorCode::NotFound => 2,
        ErrorCode::InvalidArg => 3,
        ErrorCode::Unavailable => 4,
        ErrorCode::Unsupported => 5,
        ErrorCode::AlreadyExists => 6,
        ErrorCode::Cancelled => 7,
    }
}

/// A bounds-checked cursor over a descriptor.
struct Reader<'a> {
    b: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        let end = self.pos.checked_add(n).filter(|&e| e <= self.b.len()).ok_or("descriptor truncated")?;
        let s = &self.b[self.pos..end];
        self.pos = end;
        Ok(s)
    }
    fn u8(&mut self) -> Result<u8, String> {
        Ok(self.take(1)?[0])
    }
    fn u32(&mut self) -> Result<u32, String> {
        Ok(u32::from_le_bytes(self.take(4)?.try_into().unwrap()))
    }
    fn u64(&mut self) -> Result<u64, String> {
        Ok(u64::from_le_bytes(self.take(8)?.try_into().unwrap()))
    }
    fn i64(&mut self) -> Result<i64, String> {
        Ok(i64::from_le_bytes(self.take(8)?.try_into().unwrap()))
    }
    fn f64(&mut self) -> Result<f64, String> {
        Ok(f64::from_le_bytes(self.take(8)?.try_into().unwrap()))
    }
    fn str(&mut self) -> Result<&'a str, String> {
        let n = self.u32()? as usize;
        std::str::from_utf8(self.take(n)?).map_err(|_| "descriptor string is not UTF-8".to_string())
    }
    /// A count of items of at least `min` bytes each, bounded by what is left (before any allocation).
    fn count(&mut self, min: usize) -> Result<usize, String> {
        let n = self.u32()? as usize;
        if n.saturating_mul(min) > self.b.len() - self.pos {
            return Err(format!("descriptor count {n} exceeds its size"));
        }
        Ok(n)
    }
}

fn parameters<'a>(r: &mut Reader<'a>) -> Result<Vec<ParameterParam<'a>>, String> {
    let n = r.count(5)?;
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        let key = r.str()?;
        let value = match r.u8()? {
            0 => ParameterValueParam::String(r.str()?),
            1 => ParameterValueParam::Int(r.i64()?),
            2 => ParameterValueParam::Bool(r.u8()? != 0),
            3 => ParameterValueParam::Double(r.f64()?),
            t => return Err(format!("unknown parameter tag {t}")),
        };
        out.push(ParameterParam { key, value });
    }
    Ok(out)
}

/// Request parts from a requests descriptor; input data is `bufs[index]`.
/// Errors (a malformed descriptor) name what is wrong; nothing is allocated beyond the descriptor's own size.
pub fn request_parts<'a>(b: &'a [u8], bufs: &[&'a [u8]]) -> Result<Vec<RequestParts<'a>>, String> {
    let mut r = Reader { b, pos: 0 };
    let n = r.count(4)?;
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        let handle = r.u32()?;
        let id = r.str()?;
        let correlation_id = match r.u8()? {
            0 => CorrelationId::None,
            1 => CorrelationId::Int(r.u64()?),
            2 => CorrelationId::String(r.str()?),
            t => return Err(format!("unknown correlation id tag {t}")),
        };
        let bits = r.u32()?;
        let mut flags = RequestFlags::empty();
        if bits & 1 != 0 {
            flags |= RequestFlags::SEQUENCE_START;
        }
        if bits & 2 != 0 {
            flags |= RequestFlags::SEQUENCE_END;
        }
        let priority = r.u32()?;
        let timeout_us = r.u64()?;
        let batch_size = r.u32()?;
        let ni = r.count(13)?;
        let mut inputs = Vec::with_capacity(ni);
        for _ in 0..ni {
            let name = r.str()?;
            let datatype = *DATATYPES.get(r.u8()? as usize).ok_or("unknown datatype")?;
            let rank = r.count(8)?;
            let shape = (0..rank).map(|_| r.i64()).collect::<Result<Vec<_>, _>>()?;
            let k = r.u32()? as usize;
            let data = *bufs.get(k).ok_or_else(|| format!("buffer {k} missing"))?;
            inputs.push(InputPart { name, datatype, shape, data });
        }
        let nr = r.count(4)?;
        let requested_outputs = (0..nr).map(|_| r.str()).collect::<Result<Vec<_>, _>>()?;
        let parameters = parameters(&mut r)?;
        out.push(RequestParts {
            handle,
            id,
            correlation_id,
            flags,
            priority,
            timeout_us,
            batch_size,
            inputs,
            requested_outputs,
            parameters,
        });
    }
    if r.pos != b.len() {
        return Err("descriptor has trailing bytes".into());
    }
    Ok(out)
}

/// Appends little-endian values to a results descriptor.
struct Writer(Vec<u8>);

impl Writer {
    fn u8(&mut self, v: u8) {
        self.0.push(v);
    }
    fn u32(&mut self, v: usize) {
        self.0.extend_from_slice(&(v.min(u32::MAX as usize) as u32).to_le_bytes());
    }
    fn u64(&mut self, v: u64) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn str(&mut self, s: &str) {
        let s = &s.as_bytes()[..s.len().min(u32::MAX as usize)];
        self.u32(s.len());
        self.0.extend_from_slice(s);
    }
}

fn write_parameters(w: &mut Writer, ps: &[ParameterResult]) {
    w.u32(ps.len());
    for p in ps {
        w.str(&p.key);
        match &p.value {
            ParameterValueResult::String(s) => {
                w.u8(0);
                w.str(s);
            }
            ParameterValueResult::Int(i) => {
                w.u8(1);
                w.u64(*i as u64);
            }
            ParameterValueResult::Bool(b) => {
                w.u8(2);
                w.u8(*b as u8);
            }
            ParameterValueResult::Double(d) => {
                w.u8(3);
                w.0.extend_from_slice(&d.to_le_bytes());
            }
        }
    }
}

/// One `result<response, error>`: u8 0 + outputs (name, datatype, shape, buffer index) + parameters, or
/// u8 1 + error code + message. Output tensor data moves into `bufs` (no copy).
fn write_result(w: &mut Writer, r: Result<Response, Error>, bufs: &mut Vec<Vec<u8>>) {
    match r {
        Ok(resp) => {
            w.u8(0);
            w.u32(resp.outputs.len());
            for t in resp.outputs {
                w.str(&t.name);
                w.u8(datatype_code(t.datatype));
                w.u32(t.shape.len());
                for d in &t.shape {
                    w.u64(*d as u64);
                }
                w.u32(bufs.len());
                bufs.push(t.data);
            }
            write_parameters(w, &resp.parameters);
        }
        Err(e) => {
            w.u8(1);
            w.u8(error_code(e.code));
            w.str(&e.message);
        }
    }
}

/// The results descriptor of an execute; output tensor data moves into `bufs` (no copy).
pub fn results(
    results: Vec<Result<Response, Error>>,
    start_ns: u64,
    end_ns: u64,
    fuel: Option<u64>,
    bufs: &mut Vec<Vec<u8>>,
) -> Vec<u8> {
    let mut w = Writer(Vec::with_capacity(64 + results.len() * 64));
    w.u64(start_ns);
    w.u64(end_ns);
    w.u8(fuel.is_some() as u8);
    w.u64(fuel.unwrap_or(0));
    w.u32(results.len());
    for r in results {
        write_result(&mut w, r, bufs);
    }
    w.0
}

/// The descriptor of one response a decoupled guest sends (`host.send-response`): one result as in
/// [`results`]; output tensor data moves into `bufs` (no copy).
pub fn result(r: Result<Response, Error>, bufs: &mut Vec<Vec<u8>>) -> Vec<u8> {
    let mut w = Writer(Vec::with_capacity(64));
    write_result(&mut w, r, bufs);
    w.0
}
