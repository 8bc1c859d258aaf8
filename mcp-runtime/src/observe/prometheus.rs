//! The runtime's metrics for Prometheus (feature `metrics`): a recorder from
//! `metrics-exporter-prometheus` installed as the process's `metrics` recorder, and its text
//! exposition served over HTTP.

use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};

/// Histogram buckets of the `*_seconds` metrics: 250 µs to 10 s.
const SECONDS_BUCKETS: &[f64] = &[
    0.000_25, 0.000_5, 0.001, 0.002_5, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0,
    10.0,
];

/// Why the Prometheus recorder could not be installed.
#[derive(Debug, thiserror::Error)]
#[error("cannot install the Prometheus metrics recorder: {0}")]
pub struct InstallError(String);

/// The installed Prometheus recorder: renders the current metrics as the Prometheus text
/// exposition format.
///
/// ```no_run
/// # #[cfg(feature = "http")]
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// use mcp_runtime::observe::PrometheusMetrics;
///
/// let metrics = PrometheusMetrics::install()?;
/// // On its own listener (keep it off the public network), e.g. 127.0.0.1:9464/metrics:
/// let listener = tokio::net::TcpListener::bind("127.0.0.1:9464").await?;
/// tokio::spawn(metrics.serve(listener, std::future::pending()));
/// # Ok(()) }
/// # fn main() {}
/// ```
#[derive(Debug, Clone)]
pub struct PrometheusMetrics {
    handle: PrometheusHandle,
}

impl PrometheusMetrics {
    /// Installs the Prometheus recorder as the process's global `metrics` recorder (once per
    /// process), with histogram buckets for the `*_seconds` metrics.
    ///
    /// # Errors
    /// [`InstallError`] when another recorder is installed already.
    pub fn install() -> Result<Self, InstallError> {
        let handle = PrometheusBuilder::new()
            .set_buckets_for_metric(Matcher::Suffix("_seconds".into()), SECONDS_BUCKETS)
            .map_err(|e| InstallError(e.to_string()))?
            .install_recorder()
            .map_err(|e| InstallError(e.to_string()))?;
        super::enable_metrics();
        Ok(Self { handle })
    }

    /// The metrics now, in the Prometheus text exposition format.
    pub fn render(&self) -> String {
        self.handle.render()
    }

    /// Drains buffered histogram samples; [`PrometheusMetrics::serve`] does this every few
    /// seconds. Call it periodically if you serve [`PrometheusMetrics::render`] yourself.
    pub fn run_upkeep(&self) {
        self.handle.run_upkeep();
    }

    /// A router answering `GET /metrics` with [`PrometheusMetrics::render`], to serve on a
    /// listener of its own (or merge into an operator-only router).
    #[cfg(feature = "http")]
    pub fn router(&self) -> axum::Router {
        let metrics = self.clone();
        axum::Router::new().route(
            "/metrics",
            axum::routing::get(move || {
                let body = metrics.render();
                async move {
                    (
                        [(
                            http::header::CONTENT_TYPE,
                            "text/plain; version=0.0.4; charset=utf-8",
                        )],
                        body,
                    )
                }
            }),
        )
    }
}
