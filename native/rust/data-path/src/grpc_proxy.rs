//! The way to the control plane's gRPC server: every gRPC call the data path does not serve goes,
//! as it came (path, metadata, message stream), over HTTP/2 to the grpc-js server's unix socket
//! in a private 0700 directory, and its answer (headers, message stream, trailers) comes back as
//! grpc-js wrote it; streams flow both ways while the call lasts (DESIGN "The native data
//! path"). One HTTP/2 connection carries every forwarded call, made again when it closes.
//!
//! No client address travels with the call: the data path serves gRPC only in single-tenant mode,
//! where the gRPC frontend uses the peer address for nothing (it names the source of failed
//! authentications, and single-tenant mode authenticates nobody).
use crate::proxy::Body;
use http_body_util::BodyExt;
use hyper::client::conn::http2::SendRequest;
use hyper::header::HeaderValue;
use hyper::{Request, Response};
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use std::path::PathBuf;
use tokio::net::UnixStream;

/// Request headers not forwarded: hop-by-hop (RFC 9113 §8.2.2 forbids them on HTTP/2 anyway) and
/// the ones the HTTP/2 client writes itself. `te: trailers` is kept (gRPC requires it).
const DROP_REQUEST: [&str; 6] =
    ["connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade", "host"];

/// The HTTP/2 connection to the control plane's gRPC server.
pub struct GrpcFallback {
    path: PathBuf,
    conn: tokio::sync::Mutex<Option<SendRequest<Body>>>,
}

/// Why a forward failed (the caller answers UNAVAILABLE).
#[derive(Debug)]
pub struct GrpcForwardError(pub String);

impl GrpcFallback {
    pub fn new(path: PathBuf) -> GrpcFallback {
        GrpcFallback { path, conn: tokio::sync::Mutex::new(None) }
    }

    /// The shared connection, made (again) when there is none or it closed.
    async fn connection(&self) -> Result<SendRequest<Body>, GrpcForwardError> {
        let mut held = self.conn.lock().await;
        if let Some(s) = held.as_ref() {
            if !s.is_closed() {
                return Ok(s.clone());
            }
        }
        let stream =
            UnixStream::connect(&self.path).await.map_err(|e| GrpcForwardError(format!("gRPC server socket: {e}")))?;
        let mut builder = hyper::client::conn::http2::Builder::new(TokioExecutor::new());
        builder.timer(TokioTimer::new()).adaptive_window(true);
        let (send, conn) =
            builder.handshake(TokioIo::new(stream)).await.map_err(|e| GrpcForwardError(e.to_string()))?;
        tokio::spawn(async move {
            let _ = conn.await;
        });
        *held = Some(send.clone());
        Ok(send)
    }

    /// Forwards a call (its body replaced by `body`) and returns the gRPC server's answer, whose
    /// body streams the messages and ends with the trailers.
    pub async fn forward(
        &self,
        parts: hyper::http::request::Parts,
        body: Body,
    ) -> Result<Response<Body>, GrpcForwardError> {
        let path = parts.uri.path_and_query().map(|p| p.as_str()).unwrap_or("/");
        let mut b = Request::builder().method(parts.method).uri(format!("http://localhost{path}"));
        for (k, v) in parts.headers.iter() {
            if !DROP_REQUEST.contains(&k.as_str()) && k.as_str() != crate::server::NATIVE_ERROR {
                b = b.header(k, v);
            }
        }
        let req = b.body(body).map_err(|e| GrpcForwardError(e.to_string()))?;
        let mut send = self.connection().await?;
        send.ready().await.map_err(|e| GrpcForwardError(e.to_string()))?;
        let res = send.send_request(req).await.map_err(|e| GrpcForwardError(e.to_string()))?;
        let (mut parts, body) = res.into_parts();
        parts.headers.remove(hyper::header::DATE);
        Ok(Response::from_parts(parts, body.boxed()))
    }
}

/// The gRPC answer `UNAVAILABLE` when the control plane's gRPC server cannot be reached.
pub fn unavailable() -> Response<Body> {
    crate::grpc::status_response(14, "Server is not ready")
}

/// Whether `v` is a gRPC content type (`application/grpc`, `application/grpc+proto`, ...).
pub fn is_grpc(v: Option<&HeaderValue>) -> bool {
    v.is_some_and(|t| {
        let b = t.as_bytes();
        b == b"application/grpc" || b.starts_with(b"application/grpc+") || b.starts_with(b"application/grpc;")
    })
}
