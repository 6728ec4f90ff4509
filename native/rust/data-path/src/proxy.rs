//! The way to the TypeScript data plane: every request the data path does not serve goes, as it
//! came (method, URL, headers, body streamed), to the control plane's internal HTTP listener on a
//! unix socket, with the client's address in `x-warden-client-address` (trusted only there), and
//! its answer comes back as the control plane wrote it (DESIGN "The native data path").
use bytes::Bytes;
use http_body_util::combinators::BoxBody;
use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper::body::{Frame, SizeHint};
use hyper::client::conn::http1::SendRequest;
use hyper::header::{HeaderName, HeaderValue};
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use tokio::net::UnixStream;

pub type Body = BoxBody<Bytes, hyper::Error>;

/// The header naming the client's address to the internal listener (frontend/http/threads/proxy.ts).
pub const CLIENT_ADDRESS: &str = "x-warden-client-address";
/// The internal listener's rename of `connection: close` (threads/proxy.ts INTERNAL_CLOSE_HEADER).
pub const INTERNAL_CLOSE: &str = "x-warden-connection";

/// Request headers not forwarded: hop-by-hop (RFC 9110 §7.6.1) and a client's own address claim.
/// Request headers only the data path itself may send (a client's copy is dropped).
const INTERNAL_ONLY: &str = crate::server::NATIVE_ERROR;
const DROP_REQUEST: [&str; 8] =
    ["connection", "keep-alive", "proxy-connection", "te", "trailer", "upgrade", "expect", CLIENT_ADDRESS];
/// Response headers the public connection writes itself (`connection` is the internal hop's; an
/// answer that closes says so with [`INTERNAL_CLOSE`]).
const DROP_RESPONSE: [&str; 4] = ["date", "connection", "keep-alive", "transfer-encoding"];

/// A pool of HTTP/1.1 connections to the internal listener.
pub struct Fallback {
    path: PathBuf,
    idle: Mutex<Vec<SendRequest<Body>>>,
}

/// Why a forward failed (the caller answers 503).
#[derive(Debug)]
pub struct ForwardError(pub String);

impl Fallback {
    pub fn new(path: PathBuf) -> Fallback {
        Fallback { path, idle: Mutex::new(Vec::new()) }
    }

    async fn connection(&self) -> Result<SendRequest<Body>, ForwardError> {
        loop {
            let next = self.idle.lock().unwrap_or_else(|e| e.into_inner()).pop();
            match next {
                Some(mut s) => {
                    if s.ready().await.is_ok() {
                        return Ok(s);
                    }
                }
                None => break,
            }
        }
        let stream =
            UnixStream::connect(&self.path).await.map_err(|e| ForwardError(format!("internal listener: {e}")))?;
        let (send, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .map_err(|e| ForwardError(e.to_string()))?;
        tokio::spawn(async move {
            let _ = conn.await;
        });
        Ok(send)
    }

    /// Forwards `req` (its body replaced by `body`) and returns the control plane's answer; its
    /// internal connection goes back to the pool once the answer's body has been read to the end.
    /// `internal`: the request is the data path's own (its [`INTERNAL_ONLY`] header is kept).
    pub async fn forward(
        self: &Arc<Self>,
        parts: hyper::http::request::Parts,
        body: Body,
        client: &str,
        internal: bool,
    ) -> Result<Response<Body>, ForwardError> {
        let mut b =
            Request::builder().method(parts.method).uri(parts.uri.path_and_query().map(|p| p.as_str()).unwrap_or("/"));
        for (k, v) in parts.headers.iter() {
            if !DROP_REQUEST.contains(&k.as_str()) && (internal || k.as_str() != INTERNAL_ONLY) {
                b = b.header(k, v);
            }
        }
        b = b.header(CLIENT_ADDRESS, client);
        let req = b.body(body).map_err(|e| ForwardError(e.to_string()))?;
        let mut send = self.connection().await?;
        let mut res = send.send_request(req).await.map_err(|e| ForwardError(e.to_string()))?;
        let close = res.headers().get(INTERNAL_CLOSE).is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"close"));
        let h = res.headers_mut();
        for n in DROP_RESPONSE.iter().chain(std::iter::once(&INTERNAL_CLOSE)) {
            h.remove(*n);
        }
        if close {
            h.insert(HeaderName::from_static("connection"), HeaderValue::from_static("close"));
        }
        let (parts, inner) = res.into_parts();
        // A connection whose answer asked to close may still owe the rest of a request body the
        // control plane did not read: it is not used again.
        let body = PoolReturn { inner, send: (!close).then_some(send), pool: self.clone() };
        Ok(Response::from_parts(parts, body.boxed()))
    }

    /// An incoming body as the forward's body type.
    pub fn stream(body: Incoming) -> Body {
        body.boxed()
    }
}

/// An answer's body that hands its internal connection back to the pool at its end (a body
/// dropped before its end takes the connection with it: it holds an unread answer).
struct PoolReturn {
    inner: Incoming,
    send: Option<SendRequest<Body>>,
    pool: Arc<Fallback>,
}

impl PoolReturn {
    fn give_back(&mut self) {
        if let Some(s) = self.send.take() {
            self.pool.idle.lock().unwrap_or_else(|e| e.into_inner()).push(s);
        }
    }
}

impl hyper::body::Body for PoolReturn {
    type Data = Bytes;
    type Error = hyper::Error;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, hyper::Error>>> {
        let r = Pin::new(&mut self.inner).poll_frame(cx);
        match &r {
            Poll::Ready(None) => self.give_back(),
            Poll::Ready(Some(Ok(_))) if self.inner.is_end_stream() => self.give_back(),
            Poll::Ready(Some(Err(_))) => self.send = None,
            _ => {}
        }
        r
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}
