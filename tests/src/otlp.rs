//! An in-test OTLP/HTTP receiver: a small HTTP/1.1 server on loopback that decodes the real
//! OTLP protobuf messages (`ExportTraceServiceRequest`, `ExportMetricsServiceRequest`, with
//! `opentelemetry-proto`'s prost types) that servers started with `--otlp-endpoint` send it.
//!
//! It can stall: while [`Receiver::stall`] is on, a request is read but not answered (the
//! connection is held open), as a collector that is slow or gone would.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue, any_value};
use opentelemetry_proto::tonic::trace::v1::Span;
use prost::Message as _;

use crate::Error;

/// The largest request body accepted (a batch of spans is far smaller).
const MAX_BODY: usize = 16 * 1024 * 1024;

/// One exported span and the resource it came from.
#[derive(Debug, Clone)]
pub struct ReceivedSpan {
    /// The span as sent.
    pub span: Span,
    /// Its resource's attributes (`service.name`, `service.instance.id`, ...).
    pub resource: Vec<KeyValue>,
}

impl ReceivedSpan {
    /// The string, int, double or bool attribute `key`, as text; `None` when absent.
    pub fn attr(&self, key: &str) -> Option<String> {
        attr_text(&self.span.attributes, key)
    }

    /// The resource attribute `key`, as text.
    pub fn resource_attr(&self, key: &str) -> Option<String> {
        attr_text(&self.resource, key)
    }

    /// Every attribute value of the span, of its events and of its links, as text.
    pub fn all_values(&self) -> Vec<String> {
        let mut all: Vec<String> = self
            .span
            .attributes
            .iter()
            .filter_map(|kv| kv.value.as_ref().map(value_text))
            .collect();
        for event in &self.span.events {
            all.extend(
                event
                    .attributes
                    .iter()
                    .filter_map(|kv| kv.value.as_ref().map(value_text)),
            );
        }
        for link in &self.span.links {
            all.extend(
                link.attributes
                    .iter()
                    .filter_map(|kv| kv.value.as_ref().map(value_text)),
            );
        }
        all
    }
}

/// A value as text (arrays as `[a, b]`).
pub fn value_text(value: &AnyValue) -> String {
    match &value.value {
        Some(any_value::Value::StringValue(s)) => s.clone(),
        Some(any_value::Value::IntValue(i)) => i.to_string(),
        Some(any_value::Value::DoubleValue(d)) => d.to_string(),
        Some(any_value::Value::BoolValue(b)) => b.to_string(),
        Some(any_value::Value::ArrayValue(a)) => format!(
            "[{}]",
            a.values
                .iter()
                .map(value_text)
                .collect::<Vec<_>>()
                .join(", ")
        ),
        Some(other) => format!("{other:?}"),
        None => String::new(),
    }
}

/// The attribute `key` of `attrs`, as text.
pub fn attr_text(attrs: &[KeyValue], key: &str) -> Option<String> {
    attrs
        .iter()
        .find(|kv| kv.key == key)
        .and_then(|kv| kv.value.as_ref())
        .map(value_text)
}

#[derive(Default)]
struct Shared {
    spans: Mutex<Vec<ReceivedSpan>>,
    metric_names: Mutex<Vec<String>>,
    stalled: AtomicBool,
    stop: AtomicBool,
    requests: AtomicUsize,
}

/// The receiver; stops accepting when dropped.
pub struct Receiver {
    addr: SocketAddr,
    shared: Arc<Shared>,
}

impl Receiver {
    /// Listens on an ephemeral loopback port.
    ///
    /// # Errors
    /// The bind error.
    pub fn start() -> Result<Self, Error> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let addr = listener.local_addr()?;
        listener.set_nonblocking(true)?;
        let shared = Arc::new(Shared::default());
        let accepting = Arc::clone(&shared);
        std::thread::spawn(move || {
            while !accepting.stop.load(Ordering::Relaxed) {
                match listener.accept() {
                    Ok((stream, _)) => {
                        let conn = Arc::clone(&accepting);
                        std::thread::spawn(move || {
                            let _ = serve(stream, &conn);
                        });
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(10)),
                }
            }
        });
        Ok(Self { addr, shared })
    }

    /// The base URL to give `--otlp-endpoint`.
    pub fn endpoint(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Holds every request unanswered while `on` (a slow or hung collector).
    pub fn stall(&self, on: bool) {
        self.shared.stalled.store(on, Ordering::Relaxed);
    }

    /// Every span received so far.
    pub fn spans(&self) -> Vec<ReceivedSpan> {
        self.shared
            .spans
            .lock()
            .map(|s| s.clone())
            .unwrap_or_default()
    }

    /// The names of every metric received so far (repeated per export).
    pub fn metric_names(&self) -> Vec<String> {
        self.shared
            .metric_names
            .lock()
            .map(|s| s.clone())
            .unwrap_or_default()
    }

    /// How many export requests arrived (answered or not).
    pub fn requests(&self) -> usize {
        self.shared.requests.load(Ordering::Relaxed)
    }

    /// Waits up to `timeout` until `done(spans)` holds; returns the spans then (whether or
    /// not it held).
    pub fn wait_for(
        &self,
        timeout: Duration,
        done: impl Fn(&[ReceivedSpan]) -> bool,
    ) -> Vec<ReceivedSpan> {
        let deadline = Instant::now() + timeout;
        loop {
            let spans = self.spans();
            if done(&spans) || Instant::now() > deadline {
                return spans;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Relaxed);
        self.shared.stalled.store(false, Ordering::Relaxed);
    }
}

/// Serves one keep-alive connection: reads requests, decodes them, answers 200.
fn serve(stream: TcpStream, shared: &Shared) -> Result<(), Error> {
    stream.set_read_timeout(Some(Duration::from_secs(30)))?;
    let mut writer = stream.try_clone()?;
    let mut reader = BufReader::new(stream);
    loop {
        let mut request_line = String::new();
        if reader.read_line(&mut request_line)? == 0 {
            return Ok(());
        }
        let path = request_line
            .split_whitespace()
            .nth(1)
            .unwrap_or("")
            .to_owned();
        let mut length = 0usize;
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line)? == 0 {
                return Ok(());
            }
            let line = line.trim_end();
            if line.is_empty() {
                break;
            }
            if let Some((name, value)) = line.split_once(':')
                && name.trim().eq_ignore_ascii_case("content-length")
            {
                length = value.trim().parse()?;
            }
        }
        if length > MAX_BODY {
            return Err("OTLP body too large".into());
        }
        let mut body = vec![0u8; length];
        reader.read_exact(&mut body)?;
        shared.requests.fetch_add(1, Ordering::Relaxed);
        while shared.stalled.load(Ordering::Relaxed) && !shared.stop.load(Ordering::Relaxed) {
            std::thread::sleep(Duration::from_millis(20));
        }
        if path.ends_with("/v1/traces") {
            let request = ExportTraceServiceRequest::decode(body.as_slice())?;
            let mut spans = shared.spans.lock().map_err(|_| "poisoned")?;
            for rs in request.resource_spans {
                let resource = rs.resource.map(|r| r.attributes).unwrap_or_default();
                for ss in rs.scope_spans {
                    for span in ss.spans {
                        spans.push(ReceivedSpan {
                            span,
                            resource: resource.clone(),
                        });
                    }
                }
            }
        } else if path.ends_with("/v1/metrics") {
            let request = ExportMetricsServiceRequest::decode(body.as_slice())?;
            let mut names = shared.metric_names.lock().map_err(|_| "poisoned")?;
            for rm in request.resource_metrics {
                for sm in rm.scope_metrics {
                    names.extend(sm.metrics.into_iter().map(|m| m.name));
                }
            }
        }
        writer.write_all(
            b"HTTP/1.1 200 OK\r\nContent-Type: application/x-protobuf\r\nContent-Length: 0\r\n\r\n",
        )?;
        writer.flush()?;
    }
}
