//! Serving the Prometheus exposition ([`PrometheusMetrics::serve`]) on the hardened HTTP edge.
//!
//! The method is the exporter's, but it lives with the transports: metrics are below the
//! transports (every layer records them), and only serving them needs an HTTP server.

use std::time::Duration;

use crate::observe::PrometheusMetrics;

/// How often [`PrometheusMetrics::serve`] runs the recorder's upkeep (drains histogram samples
/// so that memory stays bounded between scrapes).
const UPKEEP_INTERVAL: Duration = Duration::from_secs(5);

impl PrometheusMetrics {
    /// Serves [`PrometheusMetrics::router`] on `listener` until `shutdown` completes, running
    /// the recorder's upkeep meanwhile, with the MCP endpoint's connection limits and `Host`
    /// check (loopback names on a loopback listener).
    ///
    /// # Errors
    /// An I/O error from the listener.
    pub async fn serve(
        self,
        listener: tokio::net::TcpListener,
        shutdown: impl std::future::Future<Output = ()> + Send + 'static,
    ) -> std::io::Result<()> {
        let upkeep = {
            let metrics = self.clone();
            tokio::spawn(async move {
                let mut tick = tokio::time::interval(UPKEEP_INTERVAL);
                loop {
                    tick.tick().await;
                    metrics.run_upkeep();
                }
            })
        };
        // The hardened edge (header and idle deadlines, connection cap, `Host` check).
        let config = super::HttpConfig::default();
        let served = super::http::serve_router(listener, self.router(), &config, shutdown).await;
        upkeep.abort();
        served
    }
}
