//! stdio transport over in-memory duplex pipes.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers outside #[test] fns: panics are failures

mod transport_support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use mcp_runtime::Principal;
use mcp_runtime::service::McpService;
use mcp_runtime::transport::stdio::{StdioConfig, serve};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, Lines};
use tokio::task::JoinHandle;
use transport_support::{TestService, request};

struct Session {
    input: Option<DuplexStream>,
    output: Lines<BufReader<DuplexStream>>,
    service: Arc<TestService>,
    done: JoinHandle<std::io::Result<()>>,
}

fn start(config: StdioConfig) -> Session {
    let service = TestService::new();
    let (input, server_in) = tokio::io::duplex(1 << 16);
    let (server_out, output) = tokio::io::duplex(1 << 16);
    let done = tokio::spawn(serve(
        Arc::clone(&service) as Arc<dyn McpService>,
        Principal::new("local-user"),
        server_in,
        server_out,
        config,
    ));
    Session {
        input: Some(input),
        output: BufReader::new(output).lines(),
        service,
        done,
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

    /// Closes stdin and returns every remaining output line; asserts the server exits.
    async fn finish(mut self) -> Vec<Value> {
        self.input = None;
        let mut rest = Vec::new();
        while let Some(line) = tokio::time::timeout(Duration::from_secs(5), self.output.next_line())
            .await
            .expect("output closes within 5 s")
            .unwrap()
        {
            rest.push(serde_json::from_str(&line).unwrap());
        }
        tokio::time::timeout(Duration::from_secs(5), self.done)
            .await
            .expect("serve returns on EOF")
            .unwrap()
            .unwrap();
        rest
    }
}

#[tokio::test]
async fn answers_requests_ignores_notifications_and_exits_on_eof() {
    let mut session = start(StdioConfig::default());
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

#[tokio::test]
async fn slow_request_does_not_block_fast_one() {
    let mut session = start(StdioConfig::default());
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

#[tokio::test]
async fn cancelled_request_sends_nothing_more() {
    let mut session = start(StdioConfig::default());
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

#[tokio::test]
async fn progress_notifications_precede_response() {
    let mut session = start(StdioConfig::default());
    session
        .send(&request(json!(3), "progress", json!({"count": 2})))
        .await;
    assert_eq!(session.recv().await["params"]["progress"], 1);
    assert_eq!(session.recv().await["params"]["progress"], 2);
    assert_eq!(session.recv().await["id"], 3);
    assert!(session.finish().await.is_empty());
}

#[tokio::test]
async fn over_long_line_is_rejected_and_serving_continues() {
    let config = StdioConfig {
        max_line_bytes: 200,
        ..StdioConfig::default()
    };
    let mut session = start(config);
    let huge = request(json!(1), "echo", json!({"pad": "x".repeat(10_000)}));
    session.send(&huge).await;
    let error = session.recv().await;
    assert_eq!(error["error"]["code"], -32600);
    assert!(error.get("id").is_none(), "{error}");
    session.send(&request(json!(2), "echo", Value::Null)).await;
    assert_eq!(session.recv().await["id"], 2);
    assert!(session.finish().await.is_empty());
}

#[tokio::test]
async fn invalid_utf8_and_invalid_json_get_parse_errors() {
    let mut session = start(StdioConfig::default());
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

#[tokio::test]
async fn eof_waits_for_in_flight_then_cancels_after_grace() {
    let mut session = start(StdioConfig::default());
    session
        .send(&request(json!(1), "slow", json!({"ms": 100})))
        .await;
    let rest = session.finish().await;
    assert_eq!(rest.len(), 1, "in-flight request finishes after EOF");
    assert_eq!(rest[0]["result"]["slept"], 100);

    let config = StdioConfig {
        shutdown_grace: Duration::from_millis(100),
        ..StdioConfig::default()
    };
    let mut session = start(config);
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

#[tokio::test]
async fn duplicate_in_flight_id_is_rejected() {
    let mut session = start(StdioConfig::default());
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
