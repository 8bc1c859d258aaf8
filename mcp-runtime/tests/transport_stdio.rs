//! The stream transport's request pipeline (in-flight requests, duplicate ids, cancellation,
//! line limits, shutdown) over two links: stdio's in-memory pipes, and a Unix domain socket
//! transport written for this test in a dozen lines (`transport_support::serve_unix`) that
//! re-implements none of it. Every case runs on both; so does the core's scope check.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers outside #[test] fns: panics are failures

mod transport_support;

use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant};

use mcp_runtime::Principal;
use mcp_runtime::service::{Grant, McpService};
use mcp_runtime::transport::stdio::{StdioConfig, serve};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader, Lines};
use tokio::task::JoinHandle;
use transport_support::{TestService, request};

/// How the test reaches the server.
#[derive(Debug, Clone, Copy)]
enum Link {
    /// `stdio::serve` over in-memory pipes, as a spawned server's stdin and stdout.
    Pipe,
    /// The Unix domain socket transport of `transport_support`.
    Unix,
}

type Input = Pin<Box<dyn AsyncWrite + Send>>;
type Output = Pin<Box<dyn AsyncRead + Send>>;

struct Session {
    input: Option<Input>,
    output: Lines<BufReader<Output>>,
    service: Arc<TestService>,
    /// The stdio server's task; a Unix connection's ends when its output closes.
    done: Option<JoinHandle<std::io::Result<()>>>,
    /// The socket's directory and the accept loop, kept for the session's life.
    _unix: Option<(tempfile::TempDir, JoinHandle<std::io::Result<()>>)>,
}

async fn start(link: Link, config: StdioConfig) -> Session {
    let service = TestService::new();
    let grant = Grant::from(Principal::new("local-user"));
    let (input, output, done, unix): (Input, Output, _, _) = connect(
        link,
        Arc::clone(&service) as Arc<dyn McpService>,
        grant,
        config,
    )
    .await;
    Session {
        input: Some(input),
        output: BufReader::new(output).lines(),
        service,
        done,
        _unix: unix,
    }
}

/// Opens a connection to `service` over `link`.
async fn connect(
    link: Link,
    service: Arc<dyn McpService>,
    grant: Grant,
    config: StdioConfig,
) -> (
    Input,
    Output,
    Option<JoinHandle<std::io::Result<()>>>,
    Option<(tempfile::TempDir, JoinHandle<std::io::Result<()>>)>,
) {
    match link {
        Link::Pipe => {
            let (input, server_in) = tokio::io::duplex(1 << 16);
            let (server_out, output) = tokio::io::duplex(1 << 16);
            let done = tokio::spawn(serve(service, grant, server_in, server_out, config));
            (Box::pin(input), Box::pin(output), Some(done), None)
        }
        Link::Unix => {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("mcp.sock");
            let listener = tokio::net::UnixListener::bind(&path).unwrap();
            let accepting = tokio::spawn(transport_support::serve_unix(
                listener, service, grant, config,
            ));
            let stream = tokio::net::UnixStream::connect(&path).await.unwrap();
            let (read, write) = stream.into_split();
            (
                Box::pin(write),
                Box::pin(read),
                None,
                Some((dir, accepting)),
            )
        }
    }
}

impl Session {
    async fn send_bytes(&mut self, bytes: &[u8]) {
        let input = self.input.as_mut().unwrap();
        input.write_all(bytes).await.unwrap();
        input.flush().await.unwrap();
    }

    async fn send(&mut self, message: &Value) {
        let mut line = serde_json::to_vec(message).unwrap();
        line.push(b'\n');
        self.send_bytes(&line).await;
    }

    async fn recv(&mut self) -> Value {
        let line = tokio::time::timeout(Duration::from_secs(5), self.output.next_line())
            .await
            .expect("a line within 5 s")
            .unwrap()
            .expect("output still open");
        serde_json::from_str(&line).unwrap()
    }

    /// Closes the input and returns every remaining output line; asserts the server ends
    /// the connection (and, on stdio, returns).
    async fn finish(mut self) -> Vec<Value> {
        if let Some(mut input) = self.input.take() {
            // A Unix socket's write half sends its end of stream on shutdown.
            let _ = input.shutdown().await;
        }
        let mut rest = Vec::new();
        while let Some(line) = tokio::time::timeout(Duration::from_secs(5), self.output.next_line())
            .await
            .expect("output closes within 5 s")
            .unwrap()
        {
            rest.push(serde_json::from_str(&line).unwrap());
        }
        if let Some(done) = self.done.take() {
            tokio::time::timeout(Duration::from_secs(5), done)
                .await
                .expect("serve returns on EOF")
                .unwrap()
                .unwrap();
        }
        rest
    }
}

async fn answers_requests_ignores_notifications_and_exits_on_eof(link: Link) {
    let mut session = start(link, StdioConfig::default()).await;
    session
        .send(&json!({"jsonrpc":"2.0","method":"notifications/whatever","params":{}}))
        .await;
    session
        .send(&request(json!(1), "echo", json!({"a": 1})))
        .await;
    let reply = session.recv().await;
    assert_eq!(reply["id"], 1);
    assert_eq!(reply["result"]["principal"], "local-user");
    let service = Arc::clone(&session.service);
    let rest = session.finish().await;
    assert!(
        rest.is_empty(),
        "nothing is written for a notification: {rest:?}"
    );
    assert_eq!(service.notifications.lock().unwrap().len(), 1);
}

async fn slow_request_does_not_block_fast_one(link: Link) {
    let mut session = start(link, StdioConfig::default()).await;
    session
        .send(&request(json!("slow"), "slow", json!({"ms": 300})))
        .await;
    session
        .send(&request(json!("fast"), "echo", Value::Null))
        .await;
    let started = Instant::now();
    assert_eq!(session.recv().await["id"], "fast");
    assert!(started.elapsed() < Duration::from_millis(250));
    assert_eq!(session.recv().await["id"], "slow");
    assert!(session.finish().await.is_empty());
}

async fn cancelled_request_sends_nothing_more(link: Link) {
    let mut session = start(link, StdioConfig::default()).await;
    session
        .send(&request(json!(7), "slow", json!({"ms": 5000})))
        .await;
    // Same number as a string: a different id, must not be cancelled.
    session
        .send(&request(json!("7"), "slow", json!({"ms": 100})))
        .await;
    tokio::time::sleep(Duration::from_millis(30)).await;
    session
        .send(&json!({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7,"reason":"user"}}))
        .await;
    // Unknown ids are ignored.
    session
        .send(
            &json!({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":99}}),
        )
        .await;
    session.send(&request(json!(8), "echo", Value::Null)).await;
    assert_eq!(session.recv().await["id"], 8);
    assert_eq!(session.recv().await["id"], "7");
    let service = Arc::clone(&session.service);
    let started = Instant::now();
    let rest = session.finish().await;
    assert!(rest.is_empty(), "cancelled request answered: {rest:?}");
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "cancelled work must not delay exit"
    );
    assert_eq!(service.cancelled(), 1);
}

async fn progress_notifications_precede_response(link: Link) {
    let mut session = start(link, StdioConfig::default()).await;
    session
        .send(&request(json!(3), "progress", json!({"count": 2})))
        .await;
    assert_eq!(session.recv().await["params"]["progress"], 1);
    assert_eq!(session.recv().await["params"]["progress"], 2);
    assert_eq!(session.recv().await["id"], 3);
    assert!(session.finish().await.is_empty());
}

async fn over_long_line_is_rejected_and_serving_continues(link: Link) {
    let config = StdioConfig::default().with_max_line_bytes(200).unwrap();
    let mut session = start(link, config).await;
    let huge = request(json!(1), "echo", json!({"pad": "x".repeat(10_000)}));
    session.send(&huge).await;
    let error = session.recv().await;
    assert_eq!(error["error"]["code"], -32600);
    assert!(error.get("id").is_none(), "{error}");
    session.send(&request(json!(2), "echo", Value::Null)).await;
    assert_eq!(session.recv().await["id"], 2);
    assert!(session.finish().await.is_empty());
}

async fn invalid_utf8_and_invalid_json_get_parse_errors(link: Link) {
    let mut session = start(link, StdioConfig::default()).await;
    session
        .send_bytes(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"\xff\xfe\"}\n")
        .await;
    let error = session.recv().await;
    assert_eq!(error["error"]["code"], -32700);
    assert!(error.get("id").is_none());
    session.send_bytes(b"{oops\n").await;
    assert_eq!(session.recv().await["error"]["code"], -32700);
    // Not a request: wrong jsonrpc version keeps a readable id.
    session
        .send(&json!({"jsonrpc":"1.0","id":5,"method":"echo"}))
        .await;
    let error = session.recv().await;
    assert_eq!(error["error"]["code"], -32600);
    assert_eq!(error["id"], 5);
    // Blank lines and CRLF framing are tolerated.
    session.send_bytes(b"\n\r\n").await;
    let mut crlf = serde_json::to_vec(&request(json!(6), "echo", Value::Null)).unwrap();
    crlf.extend_from_slice(b"\r\n");
    session.send_bytes(&crlf).await;
    assert_eq!(session.recv().await["id"], 6);
    assert!(session.finish().await.is_empty());
}

async fn eof_waits_for_in_flight_then_cancels_after_grace(link: Link) {
    let mut session = start(link, StdioConfig::default()).await;
    session
        .send(&request(json!(1), "slow", json!({"ms": 100})))
        .await;
    let rest = session.finish().await;
    assert_eq!(rest.len(), 1, "in-flight request finishes after EOF");
    assert_eq!(rest[0]["result"]["slept"], 100);

    let config = StdioConfig::default().with_shutdown_grace(Duration::from_millis(100));
    let mut session = start(link, config).await;
    session
        .send(&request(json!(2), "slow", json!({"ms": 60_000})))
        .await;
    tokio::time::sleep(Duration::from_millis(20)).await;
    let service = Arc::clone(&session.service);
    let started = Instant::now();
    let rest = session.finish().await;
    assert!(started.elapsed() < Duration::from_secs(2));
    assert!(rest.is_empty());
    assert_eq!(service.cancelled(), 1);
}

async fn duplicate_in_flight_id_is_rejected(link: Link) {
    let mut session = start(link, StdioConfig::default()).await;
    session
        .send(&request(json!(1), "slow", json!({"ms": 200})))
        .await;
    session.send(&request(json!(1), "echo", Value::Null)).await;
    let error = session.recv().await;
    assert_eq!(error["error"]["code"], -32600);
    assert_eq!(error["id"], 1);
    assert_eq!(session.recv().await["result"]["slept"], 200);
    assert!(session.finish().await.is_empty());
}

/// The core's authorization holds on any link: the transport only hands over the grant.
async fn scoped_grants_are_held_to_the_core_s_rules(link: Link) {
    use mcp_runtime::prelude::*;

    #[args]
    struct NoArgs {}

    /// Deletes everything.
    #[tool(scopes = ["notes:write"])]
    async fn purge(_args: NoArgs) -> ToolResult<String> {
        Ok("purged".into())
    }

    let server = Server::builder(Implementation::new("scoped", "0"))
        .tools(tools![purge])
        .scoped_authorization()
        .build()
        .unwrap();
    let grant = Grant::scoped(
        Principal::new("bot"),
        ["notes:read"],
        mcp_runtime::service::AuthScheme::OAuth,
    );
    let (mut input, output, _done, _unix) =
        connect(link, Arc::new(server), grant, StdioConfig::default()).await;
    let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                  "io.modelcontextprotocol/clientCapabilities": {}},
        "name": "purge", "arguments": {}}});
    let mut line = serde_json::to_vec(&call).unwrap();
    line.push(b'\n');
    input.write_all(&line).await.unwrap();
    let mut lines = BufReader::new(output).lines();
    let reply = tokio::time::timeout(Duration::from_secs(5), lines.next_line())
        .await
        .expect("a reply within 5 s")
        .unwrap()
        .unwrap();
    let reply: Value = serde_json::from_str(&reply).unwrap();
    assert_eq!(reply["error"]["code"], -32600, "{reply}");
    assert!(
        reply["error"]["message"]
            .as_str()
            .unwrap()
            .contains("notes:write"),
        "{reply}"
    );
}

/// Every case above, once per link.
macro_rules! on_every_link {
    ($($name:ident),* $(,)?) => {
        mod over_stdio {
            $(#[tokio::test]
            async fn $name() {
                super::$name(super::Link::Pipe).await
            })*
        }
        mod over_unix_socket {
            $(#[tokio::test]
            async fn $name() {
                super::$name(super::Link::Unix).await
            })*
        }
    };
}

on_every_link!(
    answers_requests_ignores_notifications_and_exits_on_eof,
    slow_request_does_not_block_fast_one,
    cancelled_request_sends_nothing_more,
    progress_notifications_precede_response,
    over_long_line_is_rejected_and_serving_continues,
    invalid_utf8_and_invalid_json_get_parse_errors,
    eof_waits_for_in_flight_then_cancels_after_grace,
    duplicate_in_flight_id_is_rejected,
    scoped_grants_are_held_to_the_core_s_rules
);
