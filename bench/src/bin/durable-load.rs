//! Load generator for the durable path: accepted `notes_delete` retries against the real notes
//! server (`notes-example serve --http`), each one claiming a fresh `requestState` and
//! deleting a real note.
//!
//! Usage: `durable-load URL WORKSPACE_DIR NOTES CONCURRENCY` (loopback URLs only).
//!
//! 1. Creates `NOTES` Markdown notes under `WORKSPACE_DIR` (which the server must serve as a
//!    workspace): `sNNNNN/nMMM.md`, four to a folder with unique titles, so each request
//!    lists one small folder (a sub-workspace) rather than all notes.
//! 2. Sends every note's first leg (`input_required`) and keeps its `requestState`.
//! 3. Sends the confirming retries from `CONCURRENCY` keep-alive connections at once and
//!    measures them: each must answer `Deleted ...`. Then checks that every note file is gone.
//!
//! Prints `RESULT accepted_per_s p50_ms p99_ms max_ms accepted errors seconds` on stdout;
//! details on stderr. Exit 1 if any retry was not accepted or a note survived.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1;
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};

/// Notes per folder (sub-workspace): each request lists one folder.
const PER_DIR: usize = 4;
/// A request that takes longer than this counts as an error.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// Errors printed in full; the rest are only counted.
const SHOWN_ERRORS: usize = 5;

type Error = Box<dyn std::error::Error + Send + Sync>;

struct Args {
    url: hyper::Uri,
    dir: PathBuf,
    notes: usize,
    conc: usize,
}

fn parse_args() -> Result<Args, Error> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [url, dir, notes, conc] = args.as_slice() else {
        return Err("usage: durable-load URL WORKSPACE_DIR NOTES CONCURRENCY".into());
    };
    let url: hyper::Uri = url.parse()?;
    let host = url.host().unwrap_or_default();
    if !matches!(host, "127.0.0.1" | "localhost" | "[::1]") || url.scheme_str() != Some("http") {
        return Err(format!("refusing non-loopback target {url}").into());
    }
    let (notes, conc) = (notes.parse::<usize>()?, conc.parse::<usize>()?);
    if notes == 0 || conc == 0 || conc > 4096 {
        return Err("NOTES must be > 0 and CONCURRENCY in 1..=4096".into());
    }
    Ok(Args {
        url,
        dir: std::fs::canonicalize(dir)?,
        notes,
        conc,
    })
}

/// One note: its folder's workspace URI, its title (also the search text) and its id.
struct Note {
    workspace_uri: String,
    title: String,
    id: String,
}

fn create_notes(dir: &Path, count: usize) -> Result<Vec<Note>, Error> {
    let mut notes = Vec::with_capacity(count);
    for i in 0..count {
        let folder = format!("s{:05}", i / PER_DIR);
        let id = format!("n{:03}.md", i % PER_DIR);
        // Fixed width: no title is a substring of another.
        let title = format!("durable bench note {i:07}");
        std::fs::create_dir_all(dir.join(&folder))?;
        std::fs::write(
            dir.join(&folder).join(&id),
            format!("# {title}\n\nTo be deleted.\n"),
        )?;
        notes.push(Note {
            workspace_uri: format!("file://{}/{folder}", dir.display()),
            title,
            id,
        });
    }
    Ok(notes)
}

fn first_leg(n: &Note, id: usize) -> Bytes {
    Bytes::from(
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
            "name": "notes_delete",
            "arguments": {"workspaceUri": n.workspace_uri, "title": n.title},
            "_meta": meta(),
        }})
        .to_string(),
    )
}

fn retry(n: &Note, id: usize, state: &str) -> Bytes {
    Bytes::from(
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
            "name": "notes_delete",
            "arguments": {"workspaceUri": n.workspace_uri, "title": n.title},
            "inputResponses": {"delete_choice": {"action": "accept",
                "content": {"note_id": n.id, "confirm": true}}},
            "requestState": state,
            "_meta": meta(),
        }})
        .to_string(),
    )
}

fn meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}},
    })
}

/// One keep-alive HTTP/1 connection.
struct Conn {
    send: http1::SendRequest<Full<Bytes>>,
    url: hyper::Uri,
    authority: String,
}

impl Conn {
    async fn open(url: &hyper::Uri) -> Result<Self, Error> {
        let authority = url.authority().ok_or("URL without host")?.to_string();
        let stream = tokio::net::TcpStream::connect(&authority).await?;
        stream.set_nodelay(true)?;
        let (send, conn) = http1::handshake(TokioIo::new(stream)).await?;
        tokio::spawn(async move {
            // The connection ends when the sender drops; an error shows up on the next send.
            let _ = conn.await;
        });
        Ok(Self {
            send,
            url: url.clone(),
            authority,
        })
    }

    /// POSTs `body` as a `tools/call` of `notes_delete`; the parsed JSON-RPC result.
    async fn call(&mut self, body: Bytes) -> Result<Value, Error> {
        let request = hyper::Request::post(self.url.clone())
            .header("host", &self.authority)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", "tools/call")
            .header("mcp-name", "notes_delete")
            .body(Full::new(body))?;
        let exchange = async {
            self.send.ready().await?;
            let response = self.send.send_request(request).await?;
            let status = response.status();
            let body = response.into_body().collect().await?.to_bytes();
            Ok::<_, Error>((status, body))
        };
        let (status, body) = tokio::time::timeout(REQUEST_TIMEOUT, exchange)
            .await
            .map_err(|_| "request timed out")??;
        if !status.is_success() {
            return Err(format!("HTTP {status}: {}", String::from_utf8_lossy(&body)).into());
        }
        let mut message: Value = serde_json::from_slice(&body)?;
        match message.get_mut("result") {
            Some(result) => Ok(result.take()),
            None => Err(format!("not a result: {}", String::from_utf8_lossy(&body)).into()),
        }
    }
}

/// Sends `bodies` from `conc` connections, each taking the next body; `check` judges each
/// result. Returns the latency of every accepted request and the error count.
async fn fire<T: Send + 'static>(
    url: &hyper::Uri,
    bodies: Arc<Vec<Bytes>>,
    conc: usize,
    check: fn(usize, &Value) -> Result<T, String>,
) -> Result<(Vec<(usize, T, Duration)>, usize), Error> {
    let next = Arc::new(AtomicUsize::new(0));
    let mut workers = Vec::new();
    for _ in 0..conc.min(bodies.len()) {
        let mut conn = Conn::open(url).await?;
        let (bodies, next) = (bodies.clone(), next.clone());
        workers.push(tokio::spawn(async move {
            let (mut done, mut errors) = (Vec::new(), 0usize);
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(body) = bodies.get(i) else { break };
                let t0 = Instant::now();
                let outcome = conn.call(body.clone()).await;
                let took = t0.elapsed();
                match outcome
                    .map_err(|e| e.to_string())
                    .and_then(|r| check(i, &r))
                {
                    Ok(value) => done.push((i, value, took)),
                    Err(e) => {
                        errors += 1;
                        if errors <= SHOWN_ERRORS {
                            eprintln!("durable-load: request {i}: {e}");
                        }
                        // A broken connection stays broken: open a fresh one.
                        if conn.send.is_closed() {
                            match Conn::open(&conn.url).await {
                                Ok(fresh) => conn = fresh,
                                Err(_) => return (done, errors),
                            }
                        }
                    }
                }
            }
            (done, errors)
        }));
    }
    let (mut all, mut errors) = (Vec::with_capacity(bodies.len()), 0);
    for w in workers {
        let (done, e) = w.await?;
        all.extend(done);
        errors += e;
    }
    Ok((all, errors))
}

fn check_first(_: usize, result: &Value) -> Result<String, String> {
    match (result.get("resultType"), result.get("requestState")) {
        (Some(t), Some(Value::String(state))) if t == "input_required" => Ok(state.clone()),
        _ => Err(format!("first leg: unexpected result {result}")),
    }
}

fn check_retry(_: usize, result: &Value) -> Result<(), String> {
    let text = result.pointer("/content/0/text").and_then(Value::as_str);
    let accepted = result.get("resultType").is_some_and(|t| t == "complete")
        && result.get("isError") != Some(&Value::Bool(true))
        && text.is_some_and(|t| t.starts_with("Deleted"));
    if accepted {
        Ok(())
    } else {
        Err(format!("retry not accepted: {result}"))
    }
}

fn percentile(sorted: &[Duration], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    // Nearest rank.
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1].as_secs_f64() * 1e3
}

async fn run(args: Args) -> Result<bool, Error> {
    let notes = create_notes(&args.dir, args.notes)?;
    let firsts: Vec<Bytes> = notes
        .iter()
        .enumerate()
        .map(|(i, n)| first_leg(n, i))
        .collect();
    let t0 = Instant::now();
    let (states, first_errors) = fire(&args.url, Arc::new(firsts), args.conc, check_first).await?;
    eprintln!(
        "durable-load: {} notes created, {} first legs in {:.1} s ({} errors)",
        notes.len(),
        states.len(),
        t0.elapsed().as_secs_f64(),
        first_errors
    );
    if first_errors > 0 {
        return Err("first legs failed; nothing measured".into());
    }
    let mut states = states;
    states.sort_by_key(|(i, _, _)| *i);
    let retries: Vec<Bytes> = states
        .iter()
        .map(|(i, state, _)| retry(&notes[*i], notes.len() + i, state))
        .collect();
    let t0 = Instant::now();
    let (accepted, errors) = fire(&args.url, Arc::new(retries), args.conc, check_retry).await?;
    let secs = t0.elapsed().as_secs_f64();
    let mut latencies: Vec<Duration> = accepted.iter().map(|(_, _, d)| *d).collect();
    latencies.sort_unstable();
    let survivors = notes
        .iter()
        .filter(|n| {
            let folder = n.workspace_uri.rsplit('/').next().unwrap_or_default();
            args.dir.join(folder).join(&n.id).exists()
        })
        .count();
    eprintln!(
        "durable-load: {} retries accepted, {errors} errors, {survivors} notes left, in {secs:.2} s at c={}",
        accepted.len(),
        args.conc
    );
    println!(
        "RESULT {:.0} {:.3} {:.3} {:.3} {} {} {:.3}",
        accepted.len() as f64 / secs,
        percentile(&latencies, 50.0),
        percentile(&latencies, 99.0),
        latencies.last().map_or(0.0, |d| d.as_secs_f64() * 1e3),
        accepted.len(),
        errors,
        secs
    );
    Ok(errors == 0 && survivors == 0)
}

fn main() {
    let outcome = parse_args().and_then(|args| {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?
            .block_on(run(args))
    });
    match outcome {
        Ok(true) => {}
        Ok(false) => std::process::exit(1),
        Err(e) => {
            eprintln!("durable-load: {e}");
            std::process::exit(2);
        }
    }
}
