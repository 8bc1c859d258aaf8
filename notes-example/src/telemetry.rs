//! OpenTelemetry export for `notes-example serve`: on with `--otlp-endpoint URL`, or when the
//! standard `OTEL_EXPORTER_OTLP_ENDPOINT` / `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` variable is
//! set; flushed when the server stops.

use std::time::Duration;

use mcp_runtime::observe::otel::{Otel, OtelConfig, OtelError};

/// The service name when `OTEL_SERVICE_NAME` does not set one.
const SERVICE_NAME: &str = "notes-example";

/// How long the final flush may take when the server stops.
const FLUSH_DEADLINE: Duration = Duration::from_secs(5);

/// Whether export is asked for: `endpoint` (`--otlp-endpoint`), or the standard variables,
/// and not turned off by `OTEL_SDK_DISABLED=true`.
pub fn requested(endpoint: Option<&str>) -> bool {
    let set = |name: &str| std::env::var_os(name).is_some_and(|v| !v.is_empty());
    if std::env::var("OTEL_SDK_DISABLED").is_ok_and(|v| v.eq_ignore_ascii_case("true")) {
        return false;
    }
    endpoint.is_some()
        || set("OTEL_EXPORTER_OTLP_ENDPOINT")
        || set("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
}

/// Prepares export if asked for (`endpoint`, or the standard variables): the tracer whose
/// layer joins the subscriber now; `None` when export is off. Nothing is sent (and no thread
/// runs) until [`Otel::start_export`], which `serve` calls once its sandbox is in place.
pub fn prepare(endpoint: Option<&str>) -> Option<Otel> {
    let set = |name: &str| std::env::var_os(name).is_some_and(|v| !v.is_empty());
    if !requested(endpoint) {
        return None;
    }
    let mut config =
        OtelConfig::new().resource_attribute("service.version", env!("CARGO_PKG_VERSION"));
    if !set("OTEL_SERVICE_NAME") {
        config = config.service_name(SERVICE_NAME);
    }
    if let Some(endpoint) = endpoint {
        config = config.endpoint(endpoint);
    }
    Some(Otel::prepare(config))
}

/// Starts export prepared by [`prepare`] (a no-op when it is off).
///
/// # Errors
/// A malformed endpoint or `OTEL_*` variable.
pub fn start_export(otel: Option<&Otel>) -> Result<(), OtelError> {
    otel.map_or(Ok(()), Otel::start_export)
}

/// Flushes and stops export (a no-op when it is off); a failed flush is reported on stderr.
pub fn stop(otel: Option<Otel>) {
    if let Some(otel) = otel
        && let Err(e) = otel.shutdown(FLUSH_DEADLINE)
    {
        eprintln!("notes-example: {e}");
    }
}
