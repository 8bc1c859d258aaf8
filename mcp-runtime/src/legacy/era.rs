//! Which era an HTTP request belongs to: 2026-07-28 (sessionless) or a 2025-era session,
//! decided from the verb and headers, and for a header-less POST from the body.

use http::{HeaderMap, HeaderName, Method};
use mcp_types::PROTOCOL_VERSION_KEY;
use serde_json::Value;

/// The 2025-11-25 session header.
pub const MCP_SESSION_ID: HeaderName = HeaderName::from_static("mcp-session-id");
pub(super) const MCP_PROTOCOL_VERSION: HeaderName = HeaderName::from_static("mcp-protocol-version");
const MCP_METHOD: HeaderName = HeaderName::from_static("mcp-method");

/// The revisions whose clients use sessions; a request declaring one of them is legacy.
pub const SESSION_ERA_VERSIONS: [&str; 3] = ["2025-11-25", "2025-06-18", "2025-03-26"];

/// Which era an HTTP request belongs to, as far as its verb and headers tell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HttpEra {
    /// 2026-07-28: handled by the modern router, untouched.
    Modern,
    /// 2025-11-25: handled by the adapter.
    Legacy,
    /// A header-less POST: legacy only if the body is an `initialize` ([`is_legacy_initialize`]).
    NeedsBody,
}

/// Decides the era from the verb and headers alone (see the module docs' table).
pub fn era_from_headers(method: &Method, headers: &HeaderMap) -> HttpEra {
    if let Some(version) = headers.get(MCP_PROTOCOL_VERSION) {
        let legacy = version
            .to_str()
            .is_ok_and(|v| SESSION_ERA_VERSIONS.contains(&v.trim()));
        return if legacy {
            HttpEra::Legacy
        } else {
            HttpEra::Modern
        };
    }
    if headers.contains_key(MCP_METHOD) {
        return HttpEra::Modern;
    }
    if headers.contains_key(MCP_SESSION_ID) {
        return HttpEra::Legacy;
    }
    if method == Method::POST {
        HttpEra::NeedsBody
    } else {
        HttpEra::Modern
    }
}

/// Whether a body is a 2025-11-25 `initialize` request: method `initialize` and no modern
/// `_meta` protocol version (a modern `initialize` is just an unknown method for the core).
pub fn is_legacy_initialize(body: &[u8]) -> bool {
    let Ok(value) = serde_json::from_slice::<Value>(body) else {
        return false;
    };
    value.get("method").and_then(Value::as_str) == Some("initialize")
        && value
            .get("params")
            .and_then(|p| p.get("_meta"))
            .and_then(|m| m.get(PROTOCOL_VERSION_KEY))
            .is_none()
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(HeaderName::from_static(k), HeaderValue::from_static(v));
        }
        h
    }

    #[test]
    fn era_from_headers_table() {
        let post = Method::POST;
        assert_eq!(
            era_from_headers(&post, &HeaderMap::new()),
            HttpEra::NeedsBody
        );
        for v in SESSION_ERA_VERSIONS {
            let h = {
                let mut h = HeaderMap::new();
                h.insert(MCP_PROTOCOL_VERSION, HeaderValue::from_static(v));
                h
            };
            assert_eq!(era_from_headers(&post, &h), HttpEra::Legacy, "{v}");
        }
        // A modern version wins over a stray session id (modern ignores Mcp-Session-Id).
        let modern = headers(&[
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-session-id", "abc"),
        ]);
        assert_eq!(era_from_headers(&post, &modern), HttpEra::Modern);
        let method_only = headers(&[("mcp-method", "tools/list"), ("mcp-session-id", "abc")]);
        assert_eq!(era_from_headers(&post, &method_only), HttpEra::Modern);
        let session = headers(&[("mcp-session-id", "abc")]);
        assert_eq!(era_from_headers(&post, &session), HttpEra::Legacy);
        assert_eq!(era_from_headers(&Method::DELETE, &session), HttpEra::Legacy);
        assert_eq!(
            era_from_headers(&Method::GET, &HeaderMap::new()),
            HttpEra::Modern
        );
        assert_eq!(
            era_from_headers(&Method::DELETE, &HeaderMap::new()),
            HttpEra::Modern
        );
    }

    #[test]
    fn legacy_initialize_detection() {
        assert!(is_legacy_initialize(
            br#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25"}}"#
        ));
        assert!(is_legacy_initialize(
            br#"{"jsonrpc":"2.0","id":1,"method":"initialize"}"#
        ));
        assert!(!is_legacy_initialize(
            br#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}"#
        ));
        assert!(!is_legacy_initialize(
            br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#
        ));
        assert!(!is_legacy_initialize(b"[{\"method\":\"initialize\"}]"));
        assert!(!is_legacy_initialize(b"not json"));
    }
}
