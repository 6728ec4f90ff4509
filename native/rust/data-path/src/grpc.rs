//! The gRPC port on the native data path (DESIGN "The native data path"): unary
//! `inference.GRPCInferenceService/ModelInfer` calls for a published route, within the same rules
//! as the HTTP decoder (decode.rs: inputs exactly as the route declares them, data of exactly the
//! shape's size), are decoded, submitted to the instance and answered here with the
//! `ModelInferResponse` the TypeScript path builds (host/src/frontend/grpc/infer.ts
//! encodeModelInferResponse). Every other call — other methods, streams, compressed messages,
//! parameters, typed `contents`, anything the rules leave out — goes unchanged to the control
//! plane's gRPC server (grpc_proxy.rs), which owns every error text. A backend error is rendered
//! by the control plane too (the internal listener's native error request, with the gRPC marker):
//! one mapping of Triton codes to gRPC statuses, one redaction.
//!
//! The messages are hand-written mirrors of grpc_service.proto (third_party/triton-grpc-protos):
//! the fields and tags of ModelInferRequest / ModelInferResponse and the messages they hold.
use crate::decode::{Data, Decoded, InputTensor, OutputFormats, MAX_ELEMENTS};
use crate::exec::{monotonic_ns, submit, Outcome};
use crate::grpc_proxy::{is_grpc, unavailable};
use crate::host::HostError;
use crate::proxy::Body;
use crate::route::{element_size, Route, DATATYPES};
use crate::server::{internal, output_views, Shared, NATIVE_ERROR};
use bytes::{Bytes, BytesMut};
use http_body_util::{BodyExt, Full};
use hyper::body::{Frame, Incoming, SizeHint};
use hyper::header::{HeaderMap, HeaderValue, CONTENT_LENGTH, CONTENT_TYPE};
use hyper::{Method, Request, Response};
use std::collections::HashMap;
use std::convert::Infallible;
use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::task::{Context, Poll};

/// The path of the one method served here.
pub const MODEL_INFER: &str = "/inference.GRPCInferenceService/ModelInfer";
/// The marker of a native error request for a gRPC call (frontend/http/internal-listener.ts): the
/// answer is `{"code": <gRPC status>, "message": ...}`.
pub const NATIVE_ERROR_PROTOCOL: &str = "x-warden-native-error-protocol";

/// `inference.InferParameter`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct InferParameter {
    #[prost(oneof = "infer_parameter::ParameterChoice", tags = "1, 2, 3, 4, 5")]
    pub parameter_choice: Option<infer_parameter::ParameterChoice>,
}

pub mod infer_parameter {
    /// `InferParameter.parameter_choice`.
    #[derive(Clone, PartialEq, prost::Oneof)]
    pub enum ParameterChoice {
        #[prost(bool, tag = "1")]
        BoolParam(bool),
        #[prost(int64, tag = "2")]
        Int64Param(i64),
        #[prost(string, tag = "3")]
        StringParam(String),
        #[prost(double, tag = "4")]
        DoubleParam(f64),
        #[prost(uint64, tag = "5")]
        Uint64Param(u64),
    }
}

/// `inference.InferTensorContents`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct InferTensorContents {
    #[prost(bool, repeated, tag = "1")]
    pub bool_contents: Vec<bool>,
    #[prost(int32, repeated, tag = "2")]
    pub int_contents: Vec<i32>,
    #[prost(int64, repeated, tag = "3")]
    pub int64_contents: Vec<i64>,
    #[prost(uint32, repeated, tag = "4")]
    pub uint_contents: Vec<u32>,
    #[prost(uint64, repeated, tag = "5")]
    pub uint64_contents: Vec<u64>,
    #[prost(float, repeated, tag = "6")]
    pub fp32_contents: Vec<f32>,
    #[prost(double, repeated, tag = "7")]
    pub fp64_contents: Vec<f64>,
    #[prost(bytes = "vec", repeated, tag = "8")]
    pub bytes_contents: Vec<Vec<u8>>,
}

/// `inference.ModelInferRequest.InferInputTensor`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct InferInputTensor {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(string, tag = "2")]
    pub datatype: String,
    #[prost(int64, repeated, tag = "3")]
    pub shape: Vec<i64>,
    #[prost(map = "string, message", tag = "4")]
    pub parameters: HashMap<String, InferParameter>,
    #[prost(message, optional, tag = "5")]
    pub contents: Option<InferTensorContents>,
}

/// `inference.ModelInferRequest.InferRequestedOutputTensor`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct InferRequestedOutputTensor {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(map = "string, message", tag = "2")]
    pub parameters: HashMap<String, InferParameter>,
}

/// `inference.ModelInferRequest`; the raw contents are slices of the received message.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ModelInferRequest {
    #[prost(string, tag = "1")]
    pub model_name: String,
    #[prost(string, tag = "2")]
    pub model_version: String,
    #[prost(string, tag = "3")]
    pub id: String,
    #[prost(map = "string, message", tag = "4")]
    pub parameters: HashMap<String, InferParameter>,
    #[prost(message, repeated, tag = "5")]
    pub inputs: Vec<InferInputTensor>,
    #[prost(message, repeated, tag = "6")]
    pub outputs: Vec<InferRequestedOutputTensor>,
    #[prost(bytes = "bytes", repeated, tag = "7")]
    pub raw_input_contents: Vec<Bytes>,
}

/// `inference.ModelInferResponse.InferOutputTensor`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct InferOutputTensor {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(string, tag = "2")]
    pub datatype: String,
    #[prost(int64, repeated, tag = "3")]
    pub shape: Vec<i64>,
    #[prost(map = "string, message", tag = "4")]
    pub parameters: HashMap<String, InferParameter>,
    #[prost(message, optional, tag = "5")]
    pub contents: Option<InferTensorContents>,
}

/// `inference.ModelInferResponse`. `raw_output_contents` (tag 6) is written after the encoded
/// message by [`encode_response`], straight from the backend's buffers.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ModelInferResponse {
    #[prost(string, tag = "1")]
    pub model_name: String,
    #[prost(string, tag = "2")]
    pub model_version: String,
    #[prost(string, tag = "3")]
    pub id: String,
    #[prost(map = "string, message", tag = "4")]
    pub parameters: HashMap<String, InferParameter>,
    #[prost(message, repeated, tag = "5")]
    pub outputs: Vec<InferOutputTensor>,
    #[prost(bytes = "vec", repeated, tag = "6")]
    pub raw_output_contents: Vec<Vec<u8>>,
}

/// A response body of one message (or none) and the trailers.
struct GrpcBody {
    data: Option<Bytes>,
    trailers: Option<HeaderMap>,
}

impl hyper::body::Body for GrpcBody {
    type Data = Bytes;
    type Error = hyper::Error;

    fn poll_frame(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, hyper::Error>>> {
        if let Some(d) = self.data.take() {
            return Poll::Ready(Some(Ok(Frame::data(d))));
        }
        Poll::Ready(self.trailers.take().map(|t| Ok(Frame::trailers(t))))
    }

    fn is_end_stream(&self) -> bool {
        self.data.is_none() && self.trailers.is_none()
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::with_exact(self.data.as_ref().map_or(0, |d| d.len() as u64))
    }
}

/// A request body whose first bytes were read already: `prefix`, then the rest of `rest`.
struct Prefixed {
    prefix: Option<Bytes>,
    rest: Incoming,
}

impl hyper::body::Body for Prefixed {
    type Data = Bytes;
    type Error = hyper::Error;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, hyper::Error>>> {
        if let Some(p) = self.prefix.take() {
            return Poll::Ready(Some(Ok(Frame::data(p))));
        }
        Pin::new(&mut self.rest).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.prefix.is_none() && self.rest.is_end_stream()
    }
}

/// `grpc-message`'s percent-encoding (gRPC over HTTP/2, "Responses"): bytes outside printable
/// ASCII, and `%`, as `%XX`.
fn percent_encode(message: &str) -> String {
    let mut out = String::with_capacity(message.len());
    for &b in message.as_bytes() {
        if (0x20..=0x7e).contains(&b) && b != b'%' {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

fn grpc_headers(h: &mut HeaderMap) {
    h.insert(CONTENT_TYPE, HeaderValue::from_static("application/grpc+proto"));
    h.insert("grpc-accept-encoding", HeaderValue::from_static("identity"));
}

/// A Trailers-Only answer: status `code` with `message`.
pub fn status_response(code: u32, message: &str) -> Response<Body> {
    let mut r = Response::new(GrpcBody { data: None, trailers: None }.boxed());
    let h = r.headers_mut();
    grpc_headers(h);
    h.insert("grpc-status", HeaderValue::from(code));
    if let Ok(v) = HeaderValue::from_str(&percent_encode(message)) {
        h.insert("grpc-message", v);
    }
    r
}

/// The answer carrying `message` (one length-prefixed uncompressed message) and status OK.
fn ok_response(message: Vec<u8>) -> Response<Body> {
    let mut trailers = HeaderMap::new();
    trailers.insert("grpc-status", HeaderValue::from_static("0"));
    trailers.insert("grpc-message", HeaderValue::from_static("OK"));
    let mut r = Response::new(GrpcBody { data: Some(Bytes::from(message)), trailers: Some(trailers) }.boxed());
    grpc_headers(r.headers_mut());
    r
}

/// The request of a call the data path may serve: exactly the rules of the HTTP decoder
/// (decode.rs) in gRPC's terms: no request parameters; each of the route's inputs once, with its
/// datatype, a shape the route accepts, no parameters, no typed contents, and its raw contents
/// (one entry per input) of exactly the shape's size; outputs named by the route, once each,
/// without parameters.
/// @returns None when the control plane must answer the call
pub fn decode_request(route: &Route, m: &ModelInferRequest, body: &Bytes) -> Option<Decoded> {
    if !m.parameters.is_empty() || m.inputs.len() != route.inputs.len() || m.raw_input_contents.len() != m.inputs.len()
    {
        return None;
    }
    let mut seen = vec![false; route.inputs.len()];
    let mut inputs = Vec::with_capacity(m.inputs.len());
    let mut batch: Option<u64> = None;
    for (k, i) in m.inputs.iter().enumerate() {
        let index = route.inputs.iter().position(|r| r.name == i.name)?;
        if std::mem::replace(&mut seen[index], true) || !i.parameters.is_empty() || i.contents.is_some() {
            return None;
        }
        let spec = &route.inputs[index];
        if DATATYPES[spec.datatype as usize] != i.datatype || i.shape.iter().any(|&d| d < 0) {
            return None;
        }
        let shape: Vec<u64> = i.shape.iter().map(|&d| d as u64).collect();
        let dims = if route.max_batch_size > 0 {
            let (&b, rest) = shape.split_first()?;
            if b < 1 || b > route.max_batch_size as u64 || batch.is_some_and(|x| x != b) {
                return None;
            }
            batch = Some(b);
            rest
        } else {
            &shape[..]
        };
        if dims.len() != spec.dims.len()
            || dims.iter().zip(&spec.dims).any(|(&d, &s)| d == 0 || (s != -1 && d != s as u64))
        {
            return None;
        }
        let mut n: u64 = 1;
        for &d in &shape {
            n = n.checked_mul(d).filter(|&x| x <= MAX_ELEMENTS)?;
        }
        let raw = &m.raw_input_contents[k];
        if raw.len() as u64 != n * element_size(spec.datatype) as u64 {
            return None;
        }
        // The raw contents are slices of the message (prost decodes `Bytes` without copying).
        let start = (raw.as_ptr() as usize).wrapping_sub(body.as_ptr() as usize);
        let data = if start <= body.len() && raw.len() <= body.len() - start {
            Data::Body(start..start + raw.len())
        } else {
            Data::Owned(raw.to_vec())
        };
        inputs.push(InputTensor { index, shape: i.shape.clone(), data });
    }
    let mut formats = OutputFormats { default_binary: false, requested: Vec::new() };
    for o in &m.outputs {
        let index = route.outputs.iter().position(|n| *n == o.name)?;
        if !o.parameters.is_empty() || formats.requested.iter().any(|(i, _)| *i == index) {
            return None;
        }
        formats.requested.push((index, false));
    }
    Some(Decoded { id: m.id.clone(), inputs, formats, batch: batch.unwrap_or(1) })
}

/// The `ModelInferResponse` message (without the length prefix) for outputs in the backend's
/// order, as encodeModelInferResponse builds it: model name, version text, id, each output's name,
/// datatype and shape, and its bytes as `raw_output_contents`.
fn encode_response(route: &Route, id: &str, views: &[crate::encode::OutputView<'_>]) -> Vec<u8> {
    encode_response_with(route, id, HashMap::new(), views)
}

/// [`encode_response`] with the response's `parameters`.
fn encode_response_with(
    route: &Route,
    id: &str,
    parameters: HashMap<String, InferParameter>,
    views: &[crate::encode::OutputView<'_>],
) -> Vec<u8> {
    let head = ModelInferResponse {
        model_name: route.name.clone(),
        model_version: route.version_text.clone(),
        id: id.to_string(),
        parameters,
        outputs: views
            .iter()
            .map(|v| InferOutputTensor {
                name: v.name.to_string(),
                datatype: DATATYPES[v.datatype as usize].to_string(),
                shape: v.shape.to_vec(),
                parameters: HashMap::new(),
                contents: None,
            })
            .collect(),
        raw_output_contents: Vec::new(),
    };
    let data: usize = views.iter().map(|v| v.data.len() + 11).sum();
    let mut out = Vec::with_capacity(5 + prost::Message::encoded_len(&head) + data);
    out.extend_from_slice(&[0; 5]);
    prost::Message::encode_raw(&head, &mut out);
    if id.is_empty() {
        // protobufjs writes a field that is set even when it is the default: `id` is always on
        // the wire of the TypeScript path's answer (a client decoding without defaults sees it).
        prost::encoding::encode_key(3, prost::encoding::WireType::LengthDelimited, &mut out);
        out.push(0);
    }
    for v in views {
        // field 6, wire type 2 (length-delimited)
        prost::encoding::encode_key(6, prost::encoding::WireType::LengthDelimited, &mut out);
        prost::encoding::encode_varint(v.data.len() as u64, &mut out);
        out.extend_from_slice(v.data);
    }
    let len = (out.len() - 5) as u32;
    out[1..5].copy_from_slice(&len.to_be_bytes());
    out
}

/// Whether a call may be served here before its message is read: `ModelInfer` over POST, a gRPC
/// content type, no compression named, the data path not paused.
fn claim(shared: &Shared, req: &Request<Incoming>) -> bool {
    if req.method() != Method::POST || req.uri().path() != MODEL_INFER || shared.paused.load(Ordering::Relaxed) {
        return false;
    }
    let h = req.headers();
    is_grpc(h.get(CONTENT_TYPE)) && h.get("grpc-encoding").is_none_or(|v| v == "identity")
}

/// One call on the gRPC port.
pub async fn handle(shared: Arc<Shared>, req: Request<Incoming>) -> Result<Response<Body>, Infallible> {
    let Some(fallback) = shared.grpc_fallback.get().cloned() else {
        return Ok(unavailable());
    };
    let forward = |parts, body: Body| {
        let fallback = fallback.clone();
        let shared = shared.clone();
        async move {
            shared.counters.grpc_forwarded.fetch_add(1, Ordering::Relaxed);
            Ok(fallback.forward(parts, body).await.unwrap_or_else(|_| unavailable()))
        }
    };
    if !claim(&shared, &req) {
        let (parts, body) = req.into_parts();
        return forward(parts, body.boxed()).await;
    }
    let start = monotonic_ns();
    let (parts, mut body) = req.into_parts();
    // One message of at most the input limit, plus its 5-byte prefix; a longer body streams on.
    let limit = shared.options.max_body_bytes as usize + 5;
    let mut buf = BytesMut::new();
    let read = tokio::time::timeout(shared.options.body_timeout, async {
        while let Some(frame) = body.frame().await {
            if let Ok(d) = frame?.into_data() {
                buf.extend_from_slice(&d);
                if buf.len() > limit {
                    return Ok(false);
                }
            }
        }
        Ok::<bool, hyper::Error>(true)
    })
    .await;
    let whole = match read {
        Ok(Ok(true)) => buf.freeze(),
        Ok(Ok(false)) | Err(_) => {
            let body = Prefixed { prefix: Some(buf.freeze()), rest: body };
            return forward(parts, body.boxed()).await;
        }
        Ok(Err(_)) => return Ok(status_response(1, "the request stream failed")),
    };
    let replay = |whole: Bytes| Full::new(whole).map_err(|never| match never {}).boxed();
    let message = match whole.get(..5) {
        Some(p) if p[0] == 0 && u32::from_be_bytes([p[1], p[2], p[3], p[4]]) as usize == whole.len() - 5 => {
            whole.slice(5..)
        }
        _ => return forward(parts, replay(whole)).await,
    };
    let decoded = <ModelInferRequest as prost::Message>::decode(message.clone()).ok().and_then(|m| {
        let route = shared.routes.get(&m.model_name)?;
        if !m.model_version.is_empty() && m.model_version != route.version_text {
            return None;
        }
        decode_request(&route, &m, &message).map(|d| (route, d))
    });
    let Some((route, decoded)) = decoded else {
        return forward(parts, replay(whole)).await;
    };
    let batch = decoded.batch;
    let formats = decoded.formats.requested.clone();
    let id = decoded.id.clone();
    let answer = if route.ort.is_some() {
        let r = crate::ort_exec::run(&route, decoded, message).await;
        r.and_then(|a| a.views(&route, &formats, false, batch).map(|v| encode_response(&route, &id, &v)))
    } else if route.wasm.is_some() {
        let r = crate::wasm_exec::run(&route, decoded, message).await;
        r.and_then(|a| {
            a.views(&route, &formats, false, batch)
                .map(|v| encode_response_with(&route, &id, crate::wasm_exec::parameters_grpc(a.parameters()), &v))
        })
    } else {
        let Ok(rx) = submit(&shared.api, &route, decoded, message) else {
            // The instance refused the submit (finalizing): the control plane answers as it would.
            return forward(parts, replay(whole)).await;
        };
        match rx.await {
            Ok(Outcome::Response(r)) => output_views(&shared.api, &route, r.ptr(), &formats, false, batch)
                .map(|v| encode_response(&route, &id, &v)),
            Ok(Outcome::Error(e)) => Err(e),
            Err(_) => Err(internal("backend dropped the request".to_string())),
        }
    };
    let now_ms =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0);
    let end = monotonic_ns();
    shared.counters.grpc_served.fetch_add(1, Ordering::Relaxed);
    match answer {
        Ok(message) => {
            route.stats.success(end.saturating_sub(start), batch, now_ms);
            Ok(ok_response(message))
        }
        Err(e) => {
            route.stats.failure(end.saturating_sub(start));
            Ok(render_error(&shared, e).await)
        }
    }
}

/// The control plane's rendering of a backend error for gRPC ([`NATIVE_ERROR_PROTOCOL`]).
#[derive(serde::Deserialize)]
struct Rendered {
    code: u32,
    message: String,
}

/// The answer to a call that failed in the backend, as the gRPC frontend writes it: the status
/// and (made public) message the control plane renders for the error's code and message.
async fn render_error(shared: &Arc<Shared>, e: HostError) -> Response<Body> {
    let body = Bytes::from(e.message.into_bytes());
    let req = Request::builder()
        .method(Method::POST)
        .uri("/")
        .header(hyper::header::HOST, "localhost")
        .header(NATIVE_ERROR, e.code)
        .header(NATIVE_ERROR_PROTOCOL, "grpc")
        .header(CONTENT_TYPE, "text/plain; charset=utf-8")
        .header(CONTENT_LENGTH, body.len())
        .body(());
    let Ok(req) = req else { return unavailable() };
    let (parts, ()) = req.into_parts();
    let full = Full::new(body).map_err(|never| match never {}).boxed();
    let Ok(res) = shared.fallback.forward(parts, full, "", true).await else {
        return unavailable();
    };
    let Ok(collected) = res.into_body().collect().await else {
        return unavailable();
    };
    match serde_json::from_slice::<Rendered>(&collected.to_bytes()) {
        Ok(r) => status_response(r.code, &r.message),
        Err(_) => unavailable(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percent_encoding_keeps_printable_ascii() {
        assert_eq!(percent_encode("a b%c\n\u{e9}"), "a b%25c%0A%C3%A9");
    }

    #[test]
    fn response_prefix_names_the_message_length() {
        let route = Route::new(
            serde_json::from_str(r#"{"name":"m","version":1,"max_batch_size":0,"inputs":[],"outputs":[]}"#).unwrap(),
            vec![crate::route::Instance(std::ptr::null_mut())],
        )
        .unwrap();
        let data = [1u8, 2, 3, 4];
        let v = crate::encode::OutputView { name: "o", datatype: 11, shape: &[1], data: &data, binary: false };
        let out = encode_response(&route, "x", &[v]);
        assert_eq!(out[0], 0);
        assert_eq!(u32::from_be_bytes([out[1], out[2], out[3], out[4]]) as usize, out.len() - 5);
        let m = <ModelInferResponse as prost::Message>::decode(&out[5..]).unwrap();
        assert_eq!((m.model_name.as_str(), m.model_version.as_str(), m.id.as_str()), ("m", "1", "x"));
        assert_eq!(m.outputs[0].datatype, "FP32");
        assert_eq!(m.raw_output_contents, vec![data.to_vec()]);
    }

    #[test]
    fn an_empty_id_is_on_the_wire() {
        let route = Route::new(
            serde_json::from_str(r#"{"name":"m","version":1,"max_batch_size":0,"inputs":[],"outputs":[]}"#).unwrap(),
            vec![crate::route::Instance(std::ptr::null_mut())],
        )
        .unwrap();
        let out = encode_response(&route, "", &[]);
        assert!(out[5..].windows(2).any(|w| w == [0x1a, 0x00]));
    }
}
