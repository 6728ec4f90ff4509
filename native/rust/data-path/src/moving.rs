//! Connections that move to the control plane (DESIGN "The native data path", its "Moving a
//! connection"): once a keep-alive HTTP/1.1 connection has sent an `/infer` request the data path
//! hands over (a model without a route), the connection itself goes to the control plane's HTTP
//! server after that request's answer is written, so the requests that follow on it reach the
//! JavaScript thread straight from the socket, as on the default path, instead of paying two
//! cross-thread hand-overs each.
//!
//! The move is invisible to the client: hyper serves the connection over [`MovableIo`], which, once
//! a move is asked for, reads nothing more from the socket until the answer is written and flushed,
//! then reports end-of-stream to hyper, which ends the connection without shutting the socket down
//! (`poll_without_shutdown`). Bytes hyper read ahead (a pipelined request) stay with the data path:
//! the connection is served on, without moving.
use bytes::{Buf, Bytes, BytesMut};
use hyper::body::{Body, Frame, SizeHint};
use std::collections::HashMap;
use std::ffi::{c_int, c_void};
use std::io;
use std::net::IpAddr;
use std::os::fd::IntoRawFd;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// No move asked for: the socket is read and written as it is.
const SERVING: u8 = 0;
/// A move was asked for while a request is being answered: nothing more is read.
const ASKED: u8 = 1;
/// The answer's body has ended; the next completed flush has written all of it.
const BODY_DONE: u8 = 2;
/// The answer is written: reads report end-of-stream, which ends hyper's connection.
const WRITTEN: u8 = 3;
/// This connection does not move (it had bytes read ahead).
const NEVER: u8 = 4;

/// Where a connection stands on its way to the control plane, shared by the request handler, the
/// answer's body and the connection's I/O.
#[derive(Default)]
pub struct MoveState {
    state: AtomicU8,
    reader: Mutex<Option<Waker>>,
    /// hyper was told end-of-stream for the move (it may end a connection for its own reasons too:
    /// a `Connection: close` request, an HTTP/1.0 client).
    ended: std::sync::atomic::AtomicBool,
}

impl MoveState {
    /// Asks for the move after the request being answered (a request that arrives while moving,
    /// read ahead by hyper, puts it off until its own answer is written).
    pub fn ask(&self) {
        let _ = self.state.fetch_update(Ordering::AcqRel, Ordering::Acquire, |s| (s != NEVER).then_some(ASKED));
    }

    /// Whether a move is under way (a request arriving now must hold it off: [`MoveState::ask`]).
    pub fn moving(&self) -> bool {
        !matches!(self.state.load(Ordering::Acquire), SERVING | NEVER)
    }

    /// Whether hyper's connection ended at the end-of-stream reported for the move.
    pub fn ended_for_move(&self) -> bool {
        self.state.load(Ordering::Acquire) == WRITTEN && self.ended.load(Ordering::Acquire)
    }

    fn end(&self) -> Poll<io::Result<()>> {
        self.ended.store(true, Ordering::Release);
        Poll::Ready(Ok(()))
    }

    /// The connection stays here for good.
    pub fn never(&self) {
        self.state.store(NEVER, Ordering::Release);
    }

    fn body_done(&self) {
        let _ = self.state.compare_exchange(ASKED, BODY_DONE, Ordering::AcqRel, Ordering::Acquire);
    }

    fn flushed(&self) {
        if self.state.compare_exchange(BODY_DONE, WRITTEN, Ordering::AcqRel, Ordering::Acquire).is_ok() {
            if let Some(w) = self.reader.lock().unwrap_or_else(|e| e.into_inner()).take() {
                w.wake();
            }
        }
    }
}

/// A connection's socket as hyper reads and writes it, with the reads a move needs ([`MoveState`])
/// and the bytes of an earlier hyper connection's read-ahead served first.
pub struct MovableIo<T> {
    inner: T,
    state: Arc<MoveState>,
    /// Bytes read from the socket and not yet given to hyper.
    prefix: BytesMut,
}

impl<T> MovableIo<T> {
    pub fn new(inner: T, state: Arc<MoveState>) -> MovableIo<T> {
        MovableIo { inner, state, prefix: BytesMut::new() }
    }

    /// Serves `prefix` (bytes already read from the socket) before reading the socket again.
    pub fn with_prefix(mut self, prefix: Bytes) -> MovableIo<T> {
        self.prefix.extend_from_slice(&prefix);
        self
    }

    pub fn into_inner(self) -> T {
        self.inner
    }
}

/// The most bytes kept from a client while its connection waits to move (a pipelined request);
/// past it, the socket is not read until the answer is written.
const HELD_MAX: usize = 64 * 1024;

impl<T: AsyncRead + Unpin> AsyncRead for MovableIo<T> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let this = &mut *self;
        match this.state.state.load(Ordering::Acquire) {
            ASKED | BODY_DONE => {
                *this.state.reader.lock().unwrap_or_else(|e| e.into_inner()) = Some(cx.waker().clone());
                // The socket is still watched: a client that goes away ends the connection (and
                // cancels its request) at once; what it sends meanwhile is held for hyper, and the
                // connection then stays here.
                if this.prefix.len() < HELD_MAX {
                    let mut chunk = [0u8; 8192];
                    let mut rb = ReadBuf::new(&mut chunk);
                    match Pin::new(&mut this.inner).poll_read(cx, &mut rb) {
                        Poll::Ready(Ok(())) if rb.filled().is_empty() => return Poll::Ready(Ok(())),
                        Poll::Ready(Ok(())) => {
                            this.prefix.extend_from_slice(rb.filled());
                            // read again (until the socket has nothing more, which registers for its next bytes)
                            cx.waker().wake_by_ref();
                            return Poll::Pending;
                        }
                        Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                        Poll::Pending => {}
                    }
                }
                // written meanwhile: the waker may have been taken before it was stored
                if this.state.state.load(Ordering::Acquire) != WRITTEN {
                    return Poll::Pending;
                }
                this.after_write(buf)
            }
            WRITTEN => this.after_write(buf),
            _ if !this.prefix.is_empty() => {
                this.give_prefix(buf);
                Poll::Ready(Ok(()))
            }
            _ => Pin::new(&mut this.inner).poll_read(cx, buf),
        }
    }
}

impl<T> MovableIo<T> {
    /// Once the answer is written: end-of-stream for the move, or, when the client sent more
    /// meanwhile, those bytes (and the connection stays).
    fn after_write(&mut self, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        if self.prefix.is_empty() {
            return self.state.end();
        }
        self.state.never();
        self.give_prefix(buf);
        Poll::Ready(Ok(()))
    }

    fn give_prefix(&mut self, buf: &mut ReadBuf<'_>) {
        let n = self.prefix.len().min(buf.remaining());
        buf.put_slice(&self.prefix[..n]);
        self.prefix.advance(n);
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for MovableIo<T> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    /// hyper flushes once everything it queued is written: after the answer's body ended, that
    /// completes the move's write.
    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let r = Pin::new(&mut self.inner).poll_flush(cx);
        if matches!(r, Poll::Ready(Ok(()))) {
            self.state.flushed();
        }
        r
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// An answer's body that tells the connection's [`MoveState`] when it has ended.
pub struct EndSignal<B> {
    inner: B,
    state: Arc<MoveState>,
}

impl<B> EndSignal<B> {
    pub fn new(inner: B, state: Arc<MoveState>) -> EndSignal<B> {
        EndSignal { inner, state }
    }
}

impl<B: Body + Unpin> Body for EndSignal<B> {
    type Data = B::Data;
    type Error = B::Error;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<B::Data>, B::Error>>> {
        let r = Pin::new(&mut self.inner).poll_frame(cx);
        match &r {
            Poll::Ready(None) => self.state.body_done(),
            Poll::Ready(Some(Ok(_))) if self.inner.is_end_stream() => self.state.body_done(),
            _ => {}
        }
        r
    }

    fn is_end_stream(&self) -> bool {
        let end = self.inner.is_end_stream();
        if end {
            self.state.body_done();
        }
        end
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// Called on a data path thread with a connection's socket (`fd`, owned by the callee from here
/// on) and the token that releases its slot (`wd_server_release_connection`) once it is closed.
pub type MoveFn = unsafe extern "C" fn(ctx: *mut c_void, fd: c_int, token: u64);

/// Where moving connections go, and the client addresses of those moved and still open (their
/// slots under the connection caps stay taken until the control plane closes them).
pub struct Mover {
    give: MoveFn,
    ctx: usize,
    next_token: AtomicU64,
    open: Mutex<HashMap<u64, IpAddr>>,
}

impl Mover {
    /// # Safety
    /// `give` may be called with `ctx` from any thread until the server is freed.
    pub unsafe fn new(give: MoveFn, ctx: *mut c_void) -> Mover {
        Mover { give, ctx: ctx as usize, next_token: AtomicU64::new(1), open: Mutex::new(HashMap::new()) }
    }

    /// Gives `socket` (of a client at `ip`) to the control plane.
    pub fn give(&self, socket: std::net::TcpStream, ip: IpAddr) {
        let token = self.next_token.fetch_add(1, Ordering::Relaxed);
        self.open.lock().unwrap_or_else(|e| e.into_inner()).insert(token, ip);
        // SAFETY: the binding's contract (Mover::new); the callee owns the descriptor from here on.
        unsafe { (self.give)(self.ctx as *mut c_void, socket.into_raw_fd(), token) };
    }

    /// The address of the moved connection `token`, once (None for an unknown or released token).
    pub fn take(&self, token: u64) -> Option<IpAddr> {
        self.open.lock().unwrap_or_else(|e| e.into_inner()).remove(&token)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    #[tokio::test]
    async fn reads_end_only_once_the_answer_is_written() {
        let (a, mut b) = tokio::io::duplex(64);
        let state = Arc::new(MoveState::default());
        let mut io = MovableIo::new(a, state.clone()).with_prefix(Bytes::from_static(b"ab"));
        let mut buf = [0u8; 8];
        assert_eq!(io.read(&mut buf).await.unwrap(), 2, "the prefix first");
        b.write_all(b"xyz").await.unwrap();
        assert_eq!(io.read(&mut buf).await.unwrap(), 3, "then the socket");
        state.ask();
        let pending = tokio::time::timeout(std::time::Duration::from_millis(20), io.read(&mut buf)).await;
        assert!(pending.is_err(), "nothing is given to hyper once a move is asked for");
        io.flush().await.unwrap();
        assert!(!state.ended_for_move(), "a flush before the body ended does not count");
        let mut body = EndSignal::new(http_body_util::Full::new(Bytes::from_static(b"ok")), state.clone());
        let _ = http_body_util::BodyExt::frame(&mut body).await;
        io.flush().await.unwrap();
        assert!(!state.ended_for_move(), "written, but hyper was not told end-of-stream yet");
        assert_eq!(io.read(&mut buf).await.unwrap(), 0, "end-of-stream for hyper");
        assert!(state.ended_for_move());
        b.write_all(b"next").await.unwrap();
        let mut left = [0u8; 8];
        let n = io.into_inner().read(&mut left).await.unwrap();
        assert_eq!(&left[..n], b"next", "what follows is the control plane's to read");
    }

    #[tokio::test]
    async fn bytes_sent_while_waiting_are_held_and_keep_the_connection() {
        let (a, mut b) = tokio::io::duplex(64);
        let state = Arc::new(MoveState::default());
        let mut io = MovableIo::new(a, state.clone());
        state.ask();
        b.write_all(b"GET /").await.unwrap();
        let mut buf = [0u8; 8];
        let pending = tokio::time::timeout(std::time::Duration::from_millis(20), io.read(&mut buf)).await;
        assert!(pending.is_err(), "held until the answer is written");
        let mut body = EndSignal::new(http_body_util::Full::new(Bytes::from_static(b"ok")), state.clone());
        let _ = http_body_util::BodyExt::frame(&mut body).await;
        io.flush().await.unwrap();
        assert_eq!(io.read(&mut buf).await.unwrap(), 5);
        assert_eq!(&buf[..5], b"GET /");
        assert!(!state.ended_for_move() && !state.moving(), "the connection stays");
    }

    #[tokio::test]
    async fn a_client_that_goes_away_while_waiting_ends_the_connection() {
        let (a, b) = tokio::io::duplex(64);
        let state = Arc::new(MoveState::default());
        let mut io = MovableIo::new(a, state.clone());
        state.ask();
        drop(b);
        let mut buf = [0u8; 8];
        assert_eq!(io.read(&mut buf).await.unwrap(), 0, "hyper sees the end at once (and cancels the request)");
        assert!(!state.ended_for_move());
    }

    #[test]
    fn never_is_final() {
        let state = MoveState::default();
        state.never();
        state.ask();
        assert!(!state.moving());
    }
}
