//! The HTTP connection edge: accepts TCP connections and serves any axum [`Router`] over
//! HTTP/1.1 with every wait bounded and every buffer capped.
//! [`serve_router`] documents its limits.

use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicU8, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Body;
use bytes::Bytes;
use futures::future::BoxFuture;
use futures::task::AtomicWaker;
use http::header::{AUTHORIZATION, CONTENT_TYPE, HOST};
use http::{HeaderValue, Request, Response, StatusCode};
use hyper::body::{Body as HttpBody, Frame, Incoming, SizeHint};
use hyper::server::conn::http1;
use hyper_util::rt::TokioIo;
use mcp_types::ErrorCode;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tower::ServiceExt as _;

use super::allowlist::HostAllowlist;
pub use super::body::{BodyError, read_body};
use super::body::{BodyTimedOut, BudgetSpent};
use super::http_config::HttpConfig;
use crate::service::envelope;

const LOG_TARGET: &str = "mcp_runtime::transport::edge";
const APPLICATION_JSON: HeaderValue = HeaderValue::from_static("application/json");
/// hyper's smallest read buffer; `max_header_bytes` below it still gets this much buffer.
const MIN_BUF: usize = 8192;
/// How long the accept loop sleeps after a resource error before trying again.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(100);

fn json(status: StatusCode, body: Bytes) -> axum::response::Response {
    let mut response = Response::new(Body::from(body));
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(CONTENT_TYPE, APPLICATION_JSON);
    response
}

/// Where a connection is: the phase decides its deadline and whether it may be closed for room.
const HEAD: u8 = 0;
const IDLE: u8 = 1;
const BODY: u8 = 2;
const BUSY: u8 = 3;

/// State shared by every connection of one [`serve_router`] call.
struct Edge {
    epoch: Instant,
    header_timeout: Duration,
    idle_timeout: Duration,
    body_timeout: Duration,
    /// Bytes of request bodies currently charged, and the cap.
    buffered: AtomicUsize,
    max_buffered: usize,
    hosts: HostAllowlist,
    conns: Mutex<Vec<Arc<Slot>>>,
}

impl Edge {
    fn millis(&self, at: Instant) -> u64 {
        u64::try_from(at.saturating_duration_since(self.epoch).as_millis()).unwrap_or(u64::MAX)
    }

    fn register(self: &Arc<Self>) -> Arc<Slot> {
        let slot = Arc::new(Slot {
            edge: Arc::clone(self),
            phase: AtomicU8::new(HEAD),
            since: AtomicU64::new(self.millis(Instant::now())),
            charged: AtomicUsize::new(0),
            control: AtomicU8::new(RUN),
            waker: AtomicWaker::new(),
        });
        self.conns
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(Arc::clone(&slot));
        slot
    }

    /// Closes the connection that has waited on its client the longest; `false` when every
    /// connection is busy being served.
    fn evict_one(&self) -> bool {
        let conns = self.conns.lock().unwrap_or_else(PoisonError::into_inner);
        let victim = conns
            .iter()
            .filter(|s| {
                s.control.load(Ordering::Relaxed) != EVICT
                    && s.phase.load(Ordering::Acquire) != BUSY
            })
            .min_by_key(|s| s.since.load(Ordering::Relaxed));
        match victim {
            Some(slot) => {
                slot.signal(EVICT);
                true
            }
            None => false,
        }
    }

    /// Asks every connection to finish its current request and close.
    fn drain_all(&self) {
        for slot in self
            .conns
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
        {
            slot.signal(DRAIN);
        }
    }
}

/// What the accept loop asks of a connection; a higher value overrides a lower one.
const RUN: u8 = 0;
const DRAIN: u8 = 1;
const EVICT: u8 = 2;

/// One connection's bookkeeping.
struct Slot {
    edge: Arc<Edge>,
    phase: AtomicU8,
    /// When the phase began, in ms since `edge.epoch`.
    since: AtomicU64,
    /// Body bytes charged to the edge's budget by the current request.
    charged: AtomicUsize,
    /// `RUN`, `DRAIN` or `EVICT`, read by the connection's task (woken through `waker`).
    /// Atomics rather than a `Notify`: the task polls this on every wake, and a `Notify` takes a
    /// lock on each poll.
    control: AtomicU8,
    waker: AtomicWaker,
}

/// What the connection's watchdog should do next.
enum Check {
    Close,
    Wait(Duration),
}

impl Slot {
    fn signal(&self, what: u8) {
        self.control.fetch_max(what, Ordering::AcqRel);
        self.waker.wake();
    }

    fn enter(&self, phase: u8, at: Instant) {
        self.since.store(self.edge.millis(at), Ordering::Relaxed);
        self.phase.store(phase, Ordering::Release);
    }

    fn charge(&self, bytes: usize) -> bool {
        let edge = &self.edge;
        let before = edge.buffered.fetch_add(bytes, Ordering::AcqRel);
        if before.saturating_add(bytes) > edge.max_buffered {
            edge.buffered.fetch_sub(bytes, Ordering::AcqRel);
            return false;
        }
        self.charged.fetch_add(bytes, Ordering::AcqRel);
        true
    }

    fn release(&self) {
        let bytes = self.charged.swap(0, Ordering::AcqRel);
        if bytes > 0 {
            self.edge.buffered.fetch_sub(bytes, Ordering::AcqRel);
        }
    }

    /// Phases change without waking the watchdog, so it never sleeps longer than the shorter
    /// of the two timeouts: a phase entered meanwhile is still caught before its deadline.
    fn check(&self) -> Check {
        let edge = &self.edge;
        let step = edge.header_timeout.min(edge.idle_timeout);
        let limit = match self.phase.load(Ordering::Acquire) {
            HEAD => edge.header_timeout,
            IDLE => edge.idle_timeout,
            // Bodies are bounded where they are read; handlers by their own timeouts.
            _ => return Check::Wait(step),
        };
        let since = Duration::from_millis(self.since.load(Ordering::Relaxed));
        let waited = edge.epoch.elapsed().saturating_sub(since);
        match limit.checked_sub(waited) {
            Some(left) if !left.is_zero() => Check::Wait(left.min(step)),
            _ => Check::Close,
        }
    }
}

/// Completes when the accept loop asks more of the connection than `seen`.
struct Control<'a> {
    slot: &'a Slot,
    seen: u8,
}

impl Future for Control<'_> {
    type Output = u8;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<u8> {
        self.slot.waker.register(cx.waker());
        let asked = self.slot.control.load(Ordering::Acquire);
        if asked > self.seen {
            Poll::Ready(asked)
        } else {
            Poll::Pending
        }
    }
}

/// Unregisters a connection (and returns its charged bytes) however its task ends.
struct Registered(Arc<Slot>);

impl Drop for Registered {
    fn drop(&mut self) {
        self.0.release();
        let mut conns = self
            .0
            .edge
            .conns
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(pos) = conns.iter().position(|s| Arc::ptr_eq(s, &self.0)) {
            conns.swap_remove(pos);
        }
    }
}

/// The socket, noticing the first byte of the next request on an idle connection (which
/// starts the header-read clock).
struct Watched {
    io: TcpStream,
    slot: Arc<Slot>,
}

impl AsyncRead for Watched {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        let polled = Pin::new(&mut this.io).poll_read(cx, buf);
        if buf.filled().len() > before && this.slot.phase.load(Ordering::Relaxed) == IDLE {
            this.slot.enter(HEAD, Instant::now());
        }
        polled
    }
}

impl AsyncWrite for Watched {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().io).poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().io).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }
}

/// A request body: charged to the budget frame by frame, failing once its deadline passes.
struct Metered {
    inner: Incoming,
    slot: Arc<Slot>,
    deadline: tokio::time::Instant,
    /// Created only if the body ever has to be waited for.
    sleep: Option<Pin<Box<tokio::time::Sleep>>>,
    done: bool,
}

impl Metered {
    fn finish(&mut self) {
        if !self.done {
            self.done = true;
            // BUSY has no deadline, so no clock read: `since` keeps the request's start.
            let _ =
                self.slot
                    .phase
                    .compare_exchange(BODY, BUSY, Ordering::AcqRel, Ordering::Relaxed);
        }
    }
}

type BoxError = Box<dyn std::error::Error + Send + Sync>;

impl HttpBody for Metered {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let this = self.get_mut();
        match Pin::new(&mut this.inner).poll_frame(cx) {
            Poll::Ready(Some(Ok(frame))) => {
                if let Some(data) = frame.data_ref()
                    && !this.slot.charge(data.len())
                {
                    return Poll::Ready(Some(Err(Box::new(BudgetSpent))));
                }
                if this.inner.is_end_stream() {
                    this.finish();
                }
                Poll::Ready(Some(Ok(frame)))
            }
            Poll::Ready(Some(Err(err))) => Poll::Ready(Some(Err(Box::new(err)))),
            Poll::Ready(None) => {
                this.finish();
                Poll::Ready(None)
            }
            Poll::Pending => {
                let deadline = this.deadline;
                let sleep = this
                    .sleep
                    .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(deadline)));
                if sleep.as_mut().poll(cx).is_ready() {
                    let timeout = this.slot.edge.body_timeout;
                    return Poll::Ready(Some(Err(Box::new(BodyTimedOut(timeout)))));
                }
                Poll::Pending
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// A response body; once hyper drops it (sent, or connection gone) the request's charge is
/// returned and the connection counts as idle.
struct Guarded {
    inner: Body,
    slot: Arc<Slot>,
}

impl HttpBody for Guarded {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        Pin::new(&mut self.get_mut().inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

impl Drop for Guarded {
    fn drop(&mut self) {
        self.slot.release();
        self.slot.enter(IDLE, Instant::now());
    }
}

/// Refuses what no route should see: an ambiguous `Authorization`, a `Host` not served here.
fn gate(hosts: &HostAllowlist, request: &Request<Incoming>) -> Option<axum::response::Response> {
    let headers = request.headers();
    let mut auth = headers.get_all(AUTHORIZATION).iter();
    if auth.next().is_some() && auth.next().is_some() {
        return Some(refusal(
            StatusCode::BAD_REQUEST,
            "Bad Request: more than one Authorization header; send exactly one",
        ));
    }
    if hosts.is_any() {
        return None;
    }
    let mut values = headers.get_all(HOST).iter();
    let (first, second) = (values.next(), values.next());
    if second.is_some() {
        return Some(refusal(
            StatusCode::BAD_REQUEST,
            "Bad Request: more than one Host header",
        ));
    }
    // An absolute-form target names the authority; it wins over Host (RFC 9112 §3.2.2).
    let host = match (request.uri().authority(), first) {
        (Some(authority), _) => Some(authority.as_str()),
        (None, Some(value)) => value.to_str().ok(),
        (None, None) => {
            return Some(refusal(
                StatusCode::BAD_REQUEST,
                "Bad Request: Host header required",
            ));
        }
    };
    if host.is_some_and(|h| hosts.allows(h)) {
        return None;
    }
    Some(refusal(
        StatusCode::MISDIRECTED_REQUEST,
        "Misdirected Request: this server does not answer for that Host; use an allowed host name",
    ))
}

fn refusal(status: StatusCode, message: &str) -> axum::response::Response {
    tracing::info!(target: LOG_TARGET, status = status.as_u16(), reason = message, "request refused at the edge");
    json(
        status,
        envelope::error_body(None, ErrorCode::InvalidRequest, message),
    )
}

/// An endpoint the edge calls directly, without the router: the MCP endpoint, whose path is
/// fixed. Matching the path and axum's per-request layers (extensions, response mapping) cost
/// about as much as a small JSON-RPC request's own checks, and that endpoint takes nearly
/// every request.
pub(super) trait Endpoint: Send + Sync + 'static {
    /// Answers one request for the endpoint's path.
    fn serve(
        self: Arc<Self>,
        request: Request<Body>,
    ) -> BoxFuture<'static, axum::response::Response>;
}

/// What a [`serve_routes`] call serves: one endpoint called directly (if any) and the router
/// for every other path.
#[derive(Clone)]
pub(super) struct Routes {
    direct: Option<(Arc<str>, Arc<dyn Endpoint>)>,
    router: Router,
}

impl Routes {
    /// `endpoint` answers requests for exactly `path`; `router` answers the rest.
    pub(super) fn direct(path: &str, endpoint: Arc<dyn Endpoint>, router: Router) -> Self {
        Self {
            direct: Some((Arc::from(path), endpoint)),
            router,
        }
    }
}

impl From<Router> for Routes {
    fn from(router: Router) -> Self {
        Self {
            direct: None,
            router,
        }
    }
}

/// hyper's view of one connection's routes.
#[derive(Clone)]
struct ConnService {
    routes: Routes,
    slot: Arc<Slot>,
}

impl hyper::service::Service<Request<Incoming>> for ConnService {
    type Response = Response<Guarded>;
    type Error = Infallible;
    type Future = Respond;

    fn call(&self, request: Request<Incoming>) -> Respond {
        let slot = &self.slot;
        let now = Instant::now();
        if let Some(refused) = gate(&slot.edge.hosts, &request) {
            slot.enter(BUSY, now);
            return Respond::Ready {
                response: Some(refused),
                slot: Some(Arc::clone(slot)),
            };
        }
        let done = request.body().is_end_stream();
        slot.enter(if done { BUSY } else { BODY }, now);
        let deadline = tokio::time::Instant::from_std(now + slot.edge.body_timeout);
        let request = request.map(|inner| {
            Body::new(Metered {
                inner,
                slot: Arc::clone(slot),
                deadline,
                sleep: None,
                done,
            })
        });
        let slot = Some(Arc::clone(slot));
        match &self.routes.direct {
            Some((path, endpoint)) if request.uri().path() == &**path => Respond::Direct {
                future: Arc::clone(endpoint).serve(request),
                slot,
            },
            _ => Respond::Routing {
                future: self.routes.router.clone().oneshot(request),
                slot,
            },
        }
    }
}

pin_project_lite::pin_project! {
    /// The response future of [`ConnService`].
    #[project = RespondProj]
    enum Respond {
        Ready { response: Option<axum::response::Response>, slot: Option<Arc<Slot>> },
        Direct {
            future: BoxFuture<'static, axum::response::Response>,
            slot: Option<Arc<Slot>>,
        },
        Routing {
            #[pin]
            future: tower::util::Oneshot<Router, Request<Body>>,
            slot: Option<Arc<Slot>>,
        },
    }
}

impl Future for Respond {
    type Output = Result<Response<Guarded>, Infallible>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let (response, slot) = match self.project() {
            RespondProj::Ready { response, slot } => (response.take(), slot.take()),
            RespondProj::Direct { future, slot } => match future.as_mut().poll(cx) {
                Poll::Ready(response) => (Some(response), slot.take()),
                Poll::Pending => return Poll::Pending,
            },
            RespondProj::Routing { future, slot } => match future.poll(cx) {
                Poll::Ready(Ok(response)) => (Some(response), slot.take()),
                Poll::Ready(Err(never)) => match never {},
                Poll::Pending => return Poll::Pending,
            },
        };
        match (response, slot) {
            (Some(response), Some(slot)) => {
                Poll::Ready(Ok(response.map(|inner| Guarded { inner, slot })))
            }
            // Polled after completion: a hyper bug; there is nothing sensible to return.
            _ => Poll::Pending,
        }
    }
}

/// Serves `router` on `listener` until `shutdown` completes, with the limits of `config` (below),
/// then stops accepting, lets in-flight requests finish (each bounded by its own timeouts) and
/// returns.
///
/// `axum::serve` has no header-read or idle timeout, no connection cap, and retries a failing
/// `accept` (out of file descriptors) in a logging loop. [`serve_router`] replaces it; it is what
/// [`BoundHttpServer`](super::BoundHttpServer) runs, and serves routers that merge other
/// routes or wrap the MCP router (the 2025-11-25 adapter) just as well.
///
/// | Limit | [`HttpConfig`] setting | Default | When it is reached |
/// |---|---|---|---|
/// | request headers must arrive within | `header_read_timeout` | 10 s | connection closed |
/// | an idle keep-alive connection is kept | `idle_timeout` | 60 s | connection closed |
/// | a request body must arrive within | `body_timeout` | 30 s | reading fails: `/mcp` answers 408 |
/// | request header bytes | `max_header_bytes` | 64 KiB | 431, connection closed |
/// | concurrent connections | `max_connections` | 1024 | the longest-stalled connection is closed (see below) |
/// | new connections queued until accepted | `listen_backlog` (used by [`listen`](super::listen), which binds such a listener) | 1024 | the kernel drops the handshake; the client retries a second later |
/// | request body bytes buffered, all connections together | `max_buffered_body_bytes` | 64 MiB | reading fails: `/mcp` answers 503 with `Retry-After` |
/// | `Host` | `allowed_hosts` | loopback names on a loopback bind, else any | 421 with a JSON-RPC error |
/// | `Authorization` headers | — | one | 400 with a JSON-RPC error |
/// | an SSE response may stay quiet for | `sse_keep_alive` | 15 s | a `: keep-alive` comment is sent (between events, never inside one) |
///
/// A connection is *stalled* while the server waits on the client: for request headers, for the
/// next request of a keep-alive connection, or for a request body. When a new connection
/// arrives with all `max_connections` slots taken, the connection stalled the longest is closed
/// to make room, so slow or idle clients can never lock out a client that talks at normal
/// speed. Connections whose request is being handled are never closed for room; when every
/// slot is busy that way, new connections wait in the kernel's accept queue.
///
/// When `accept` fails for lack of resources (`EMFILE`, `ENFILE`, `ENOBUFS`, `ENOMEM`), the
/// loop closes the longest-stalled connection, logs once, and retries every 100 ms instead of
/// spinning. Memory held by the edge is thus bounded by about `max_connections ×
/// max_header_bytes` (headers) plus `max_buffered_body_bytes` (bodies).
///
/// `config`'s `bind` and `path` are not used here: the listener is already bound, and `router`
/// decides the routes. When `allowed_hosts` is `None`, the listener's address decides: loopback
/// names on a loopback address, any host otherwise.
///
/// # Errors
/// `InvalidInput` for an unusable configuration (a zero limit), or the listener's error.
pub async fn serve_router(
    listener: TcpListener,
    router: Router,
    config: &HttpConfig,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> io::Result<()> {
    serve_routes(listener, Routes::from(router), config, shutdown).await
}

/// [`serve_router`] for [`Routes`]: the same edge, with one endpoint called directly.
pub(super) async fn serve_routes(
    listener: TcpListener,
    routes: Routes,
    config: &HttpConfig,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> io::Result<()> {
    config
        .check_limits()
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
    let local = listener.local_addr()?;
    let hosts = match &config.allowed_hosts {
        Some(hosts) => hosts.clone(),
        None if local.ip().is_loopback() => match config.public_host() {
            Some(public) => HostAllowlist::loopback().with_name(&public),
            None => HostAllowlist::loopback(),
        },
        None => HostAllowlist::any(),
    };
    let edge = Arc::new(Edge {
        epoch: Instant::now(),
        header_timeout: config.header_read_timeout,
        idle_timeout: config.idle_timeout,
        body_timeout: config.body_timeout,
        buffered: AtomicUsize::new(0),
        max_buffered: config.max_buffered_body_bytes,
        hosts,
        conns: Mutex::new(Vec::new()),
    });
    let mut builder = http1::Builder::new();
    builder
        // The watchdog below times headers, so hyper's own timer (which also ends idle
        // keep-alive connections at the header deadline) stays off.
        .header_read_timeout(None)
        .max_buf_size(config.max_header_bytes.max(MIN_BUF))
        .max_header_size(config.max_header_bytes)
        .keep_alive(true);
    let builder = Arc::new(builder);
    let slots = u32::try_from(config.max_connections)
        .unwrap_or(u32::MAX)
        .min(u32::try_from(Semaphore::MAX_PERMITS).unwrap_or(u32::MAX));
    let permits = Arc::new(Semaphore::new(slots as usize));
    tracing::info!(target: LOG_TARGET, addr = %local, max_connections = slots, "HTTP server listening");

    tokio::pin!(shutdown);
    let mut backing_off = false;
    loop {
        let accepted = tokio::select! {
            biased;
            () = &mut shutdown => break,
            accepted = listener.accept() => accepted,
        };
        let stream = match accepted {
            Ok((stream, _)) => {
                backing_off = false;
                stream
            }
            Err(err) if is_connection_error(&err) => continue,
            Err(err) => {
                // Out of descriptors or memory: free what a stalled client holds, then wait
                // instead of spinning on the same error.
                if !backing_off {
                    tracing::warn!(target: LOG_TARGET, error = %err, "accept failed; closing the longest-stalled connection and retrying every 100 ms");
                    backing_off = true;
                }
                edge.evict_one();
                tokio::select! {
                    biased;
                    () = &mut shutdown => break,
                    () = tokio::time::sleep(ACCEPT_BACKOFF) => continue,
                }
            }
        };
        // Small JSON-RPC responses must not wait on Nagle's algorithm.
        let _ = stream.set_nodelay(true);
        let permit = match Arc::clone(&permits).try_acquire_owned() {
            Ok(permit) => permit,
            Err(_) => {
                if !edge.evict_one() {
                    tracing::debug!(target: LOG_TARGET, "every connection is busy; waiting for one to finish");
                }
                tokio::select! {
                    biased;
                    () = &mut shutdown => break,
                    permit = Arc::clone(&permits).acquire_owned() => match permit {
                        Ok(permit) => permit,
                        Err(_) => break,
                    },
                }
            }
        };
        let slot = edge.register();
        tokio::spawn(connection(
            stream,
            slot,
            routes.clone(),
            Arc::clone(&builder),
            permit,
        ));
    }
    drop(listener);
    edge.drain_all();
    // Every connection holds a permit until it ends.
    let _all = permits.acquire_many(slots).await;
    Ok(())
}

fn is_connection_error(err: &io::Error) -> bool {
    matches!(
        err.kind(),
        io::ErrorKind::ConnectionRefused
            | io::ErrorKind::ConnectionAborted
            | io::ErrorKind::ConnectionReset
            | io::ErrorKind::Interrupted
            | io::ErrorKind::WouldBlock
    )
}

/// Serves one connection until it ends, is closed for room, or its watchdog finds it stalled
/// past its deadline.
async fn connection(
    stream: TcpStream,
    slot: Arc<Slot>,
    routes: Routes,
    builder: Arc<http1::Builder>,
    _permit: OwnedSemaphorePermit,
) {
    let _registered = Registered(Arc::clone(&slot));
    let _open = crate::observe::OpenConnection::new();
    let io = TokioIo::new(Watched {
        io: stream,
        slot: Arc::clone(&slot),
    });
    let service = ConnService {
        routes,
        slot: Arc::clone(&slot),
    };
    let conn = builder.serve_connection(io, service);
    tokio::pin!(conn);
    let check = tokio::time::sleep(slot.edge.header_timeout.min(slot.edge.idle_timeout));
    tokio::pin!(check);
    let mut seen = RUN;
    loop {
        tokio::select! {
            biased;
            served = conn.as_mut() => {
                if let Err(err) = served {
                    tracing::debug!(target: LOG_TARGET, error = %err, "connection ended with an error");
                }
                return;
            }
            asked = Control { slot: &slot, seen } => {
                if asked == EVICT {
                    tracing::debug!(target: LOG_TARGET, "stalled connection closed to make room");
                    return;
                }
                seen = asked;
                conn.as_mut().graceful_shutdown();
            }
            () = check.as_mut() => match slot.check() {
                Check::Close => {
                    tracing::debug!(target: LOG_TARGET, "connection closed: headers or next request not received in time");
                    return;
                }
                Check::Wait(left) => check.as_mut().reset(tokio::time::Instant::now() + left),
            },
        }
    }
}
