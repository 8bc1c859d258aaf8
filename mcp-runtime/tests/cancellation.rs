//! Cancellation reaches the handler: a tool that never answers is cancelled over stdio
//! (`notifications/cancelled`, sent by the client on its deadline or when the call is dropped),
//! over Streamable HTTP (the client closes the connection) and in process; the handler's future
//! is dropped and the work it spawned sees the request's token cancelled.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code fails loudly by design

use std::sync::Arc;
use std::time::Duration;

use mcp_runtime::client::{Client, ClientError, HttpTransport, InProcess, StdioTransport};
use mcp_runtime::prelude::*;
use mcp_runtime::service::McpService;
use mcp_runtime::transport::stdio::{StdioConfig, serve};
use mcp_runtime::transport::{BearerTokens, HttpConfig, HttpServer};
use tokio::sync::mpsc;

/// The client's deadline in the timeout tests: long enough for the tool to start on a busy
/// machine (the test waits for its `Started` report), short enough to keep the test quick.
const PATIENCE: Duration = Duration::from_secs(2);

/// What the stalling tool reports to the test.
#[derive(Debug, PartialEq, Eq)]
enum Event {
    /// The handler started and spawned its worker.
    Started,
    /// The spawned worker saw the request's token cancelled.
    WorkerSawCancel,
    /// The handler stopped (its future was dropped, or it returned).
    HandlerStopped,
}

#[derive(Clone)]
struct Probe(mpsc::UnboundedSender<Event>);

/// Sends `HandlerStopped` when the handler's future ends, however it ends.
struct OnDrop(mpsc::UnboundedSender<Event>);

impl Drop for OnDrop {
    fn drop(&mut self) {
        let _ = self.0.send(Event::HandlerStopped);
    }
}

/// Never answers: spawns a worker that waits for the request's cancellation, then waits
/// forever itself.
#[tool]
async fn stall(ctx: &mut RequestContext) -> ToolResult<String> {
    let Probe(tx) = ctx.state::<Probe>()?;
    let _dropped = OnDrop(tx.clone());
    let token = ctx.cancellation_token();
    let worker = tx.clone();
    tokio::spawn(async move {
        token.cancelled().await;
        let _ = worker.send(Event::WorkerSawCancel);
    });
    let _ = tx.send(Event::Started);
    // Stands for long work: only the transport's cancellation ends it.
    ctx.cancelled().await;
    Ok("cancelled before the answer; never sent".into())
}

/// Answers at once (the connection still works after a cancellation).
#[tool]
async fn quick() -> ToolResult<String> {
    Ok("quick".into())
}

fn server() -> (Server, mpsc::UnboundedReceiver<Event>) {
    let (tx, rx) = mpsc::unbounded_channel();
    let server = Server::builder(Implementation::new("cancel-test", "0.0.0"))
        .tools(tools![stall, quick])
        .state(Probe(tx))
        .build()
        .unwrap();
    (server, rx)
}

/// The next event, failing the test after a generous deadline.
async fn next(rx: &mut mpsc::UnboundedReceiver<Event>) -> Event {
    tokio::time::timeout(Duration::from_secs(10), rx.recv())
        .await
        .expect("the server reported nothing within 10 s")
        .expect("the probe channel closed")
}

/// After `Started`: both the worker and the handler report, in either order.
async fn assert_cancelled(rx: &mut mpsc::UnboundedReceiver<Event>) {
    let mut seen = [next(rx).await, next(rx).await];
    seen.sort_by_key(|e| format!("{e:?}"));
    assert_eq!(seen, [Event::HandlerStopped, Event::WorkerSawCancel]);
}

/// A stdio server in this process, joined to a client by a pipe pair; the server runs until
/// the client's writer closes.
fn stdio_client(server: Server, timeout: Duration) -> (Client, Arc<StdioTransport>) {
    let (client_end, server_end) = tokio::io::duplex(64 * 1024);
    let (server_read, server_write) = tokio::io::split(server_end);
    let (client_read, client_write) = tokio::io::split(client_end);
    let service: Arc<dyn McpService> = Arc::new(server);
    // Longer than every wait below: a cancellation seen here came from the notification,
    // not from the end-of-input sweep.
    let config = StdioConfig::default().with_shutdown_grace(Duration::from_secs(60));
    tokio::spawn(serve(
        service,
        Principal::new("me"),
        server_read,
        server_write,
        config,
    ));
    let transport = Arc::new(StdioTransport::connect(client_read, client_write));
    let client = Client::builder(transport.clone()).timeout(timeout).build();
    (client, transport)
}

#[tokio::test]
async fn stdio_timeout_sends_notifications_cancelled_and_the_handler_and_its_work_stop() {
    let (server, mut rx) = server();
    let (client, transport) = stdio_client(server, PATIENCE);
    let err = client.call_tool("stall", ()).await.unwrap_err();
    assert!(
        matches!(&err, ClientError::Timeout { method, .. } if method == "tools/call"),
        "{err}"
    );
    assert_eq!(next(&mut rx).await, Event::Started);
    assert_cancelled(&mut rx).await;
    // The stream is intact: the next request is answered (and no stray line for the cancelled
    // request confused the reader).
    assert_eq!(client.call_tool("quick", ()).await.unwrap().text(), "quick");
    transport.close(Duration::from_secs(5)).await.unwrap();
}

#[tokio::test]
async fn stdio_call_dropped_by_its_caller_is_cancelled_too() {
    let (server, mut rx) = server();
    let (client, _transport) = stdio_client(server, Duration::from_secs(60));
    // The caller stops waiting as soon as the tool runs: the call's future is dropped.
    tokio::select! {
        r = client.call_tool("stall", ()) => panic!("the stalling call completed: {r:?}"),
        started = next(&mut rx) => assert_eq!(started, Event::Started),
    }
    assert_cancelled(&mut rx).await;
}

#[tokio::test]
async fn http_client_closing_the_connection_cancels_the_handler_and_its_work() {
    let (server, mut rx) = server();
    let token = "cancel-token-0123456789abcdefghijklmnopq";
    let tokens = BearerTokens::parse(&format!("alice {token}\n")).unwrap();
    let service: Arc<dyn McpService> = Arc::new(server);
    let config = HttpConfig::default().with_bind("127.0.0.1:0".parse().unwrap());
    let bound = HttpServer::new(service, Arc::new(tokens))
        .with_config(config)
        .bind()
        .await
        .unwrap();
    let url = format!("http://{}/mcp", bound.local_addr().unwrap());
    let stop = tokio_util::sync::CancellationToken::new();
    let stopped = stop.clone();
    let serving = tokio::spawn(bound.serve_with_shutdown(async move { stopped.cancelled().await }));

    let client = Client::builder(HttpTransport::new(&url).unwrap().bearer(token))
        .timeout(PATIENCE)
        .build();
    let err = client.call_tool("stall", ()).await.unwrap_err();
    assert!(matches!(err, ClientError::Timeout { .. }), "{err}");
    assert_eq!(next(&mut rx).await, Event::Started);
    assert_cancelled(&mut rx).await;
    assert_eq!(client.call_tool("quick", ()).await.unwrap().text(), "quick");

    stop.cancel();
    serving.await.unwrap().unwrap();
}

#[tokio::test]
async fn in_process_timeout_cancels_the_handler_and_its_work() {
    let (server, mut rx) = server();
    let client = Client::builder(InProcess::new(server, Principal::new("me")))
        .timeout(PATIENCE)
        .build();
    let err = client.call_tool("stall", ()).await.unwrap_err();
    assert!(matches!(err, ClientError::Timeout { .. }), "{err}");
    assert_eq!(next(&mut rx).await, Event::Started);
    assert_cancelled(&mut rx).await;
}
