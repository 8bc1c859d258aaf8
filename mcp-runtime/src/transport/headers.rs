//! Streamable HTTP header rules: the `MCP-*` headers must mirror the body. (Which `Origin` and
//! `Host` values are allowed is [`super::allowlist`]'s.)
//!
//! The body is the source of truth; headers exist so intermediaries can route without parsing
//! it. A header that is missing, malformed or different from the body is a `-32020`
//! HeaderMismatch (400). Header names compare case-insensitively (the `http` crate lowercases
//! them); values compare case-sensitively.

use std::fmt;

use http::{HeaderMap, HeaderName};
use serde_json::Value;

use crate::service::Message;
use crate::service::ParamMirrors;
use mcp_types::ToolsCall;
use mcp_types::members::member_of;

pub(crate) const PROTOCOL_VERSION: HeaderName = HeaderName::from_static("mcp-protocol-version");
pub(crate) const MCP_METHOD: HeaderName = HeaderName::from_static("mcp-method");
pub(crate) const MCP_NAME: HeaderName = HeaderName::from_static("mcp-name");

/// The `_meta` key the `MCP-Protocol-Version` header mirrors.
const PROTOCOL_VERSION_META: &str = "io.modelcontextprotocol/protocolVersion";

/// Why the headers were rejected; the `Display` text is the JSON-RPC error message.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum HeaderError {
    /// A required header is absent.
    Missing(&'static str),
    /// A header appears more than once.
    Repeated(String),
    /// A header value is not visible ASCII, or a base64 sentinel does not decode to UTF-8.
    InvalidCharacters(String),
    /// A header differs from the body.
    Mismatch {
        header: String,
        header_value: String,
        body_value: String,
    },
}

use crate::service::param_header_clip as clip;

impl fmt::Display for HeaderError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Missing(name) => write!(f, "Header mismatch: required header {name} is missing"),
            Self::Repeated(name) => {
                write!(f, "Header mismatch: header {name} must appear only once")
            }
            Self::InvalidCharacters(name) => write!(
                f,
                "Header mismatch: header {name} contains invalid characters (use the =?base64?...?= form for non-ASCII values)"
            ),
            Self::Mismatch {
                header,
                header_value,
                body_value,
            } => write!(
                f,
                "Header mismatch: {header} header value '{}' does not match body value '{}'",
                clip(header_value),
                clip(body_value)
            ),
        }
    }
}

/// Reads a header as visible ASCII; `Ok(None)` when absent.
fn header_str<'h>(
    headers: &'h HeaderMap,
    name: &HeaderName,
    display: &str,
) -> Result<Option<&'h str>, HeaderError> {
    let mut values = headers.get_all(name).iter();
    let Some(value) = values.next() else {
        return Ok(None);
    };
    if values.next().is_some() {
        return Err(HeaderError::Repeated(display.to_owned()));
    }
    value
        .to_str()
        .map(Some)
        .map_err(|_| HeaderError::InvalidCharacters(display.to_owned()))
}

/// Decodes the `=?base64?<b64>?=` sentinel (see [`crate::service::decode_sentinel`]); a
/// malformed one is refused as invalid characters in the header `display`.
pub(crate) fn decode_sentinel<'v>(
    value: &'v str,
    display: &str,
) -> Result<std::borrow::Cow<'v, str>, HeaderError> {
    crate::service::decode_sentinel(value)
        .ok_or_else(|| HeaderError::InvalidCharacters(display.to_owned()))
}

fn mismatch(header: &str, header_value: &str, body_value: &str) -> HeaderError {
    HeaderError::Mismatch {
        header: header.to_owned(),
        header_value: header_value.to_owned(),
        body_value: body_value.to_owned(),
    }
}

/// Checks a request's headers against its body.
///
/// Where the body lacks a value a header mirrors (e.g. no `_meta.protocolVersion`), the header
/// is not compared: the body is then malformed, which the service reports as `-32602`.
///
/// The `Mcp-Param-*` headers are not checked here: [`param_mirrors`] records them for the
/// core, which knows each tool's rules.
pub(crate) fn check_request(
    headers: &HeaderMap,
    body: BodyFacts<'_>,
    method: &str,
) -> Result<(), HeaderError> {
    // MCP-Protocol-Version: required on every request, equal to _meta's protocolVersion.
    let version = header_str(headers, &PROTOCOL_VERSION, "MCP-Protocol-Version")?
        .ok_or(HeaderError::Missing("MCP-Protocol-Version"))?;
    if let Some(body_version) = body.protocol_version
        && body_version != version
    {
        return Err(mismatch("MCP-Protocol-Version", version, body_version));
    }

    // Mcp-Method: required on every request, equal to `method`.
    let header_method = header_str(headers, &MCP_METHOD, "Mcp-Method")?
        .ok_or(HeaderError::Missing("Mcp-Method"))?;
    if header_method != method {
        return Err(mismatch("Mcp-Method", header_method, method));
    }

    // Mcp-Name: params.name (tools/call, prompts/get), params.uri (resources/read) or
    // params.taskId (tasks/get, tasks/update, tasks/cancel).
    if name_field(method).is_none() {
        return Ok(());
    }
    let header_name =
        header_str(headers, &MCP_NAME, "Mcp-Name")?.ok_or(HeaderError::Missing("Mcp-Name"))?;
    let header_name = decode_sentinel(header_name, "Mcp-Name")?;
    let Some(body_name) = body.name else {
        return Ok(());
    };
    if header_name != body_name {
        return Err(mismatch("Mcp-Name", &header_name, body_name));
    }
    Ok(())
}

/// The request's `Mcp-Param-{Name}` headers, for the core to hold to the tool's `x-mcp-header`
/// rules ([`crate::service::ParamMirrors`]); a value that is not visible ASCII is recorded as
/// unreadable, refused only if a rule names it.
pub(crate) fn param_mirrors(headers: &HeaderMap) -> ParamMirrors {
    const PREFIX: &str = "mcp-param-";
    let mut mirrors = ParamMirrors::new();
    for (name, value) in headers {
        // `http` lowercases header names.
        if let Some(param) = name.as_str().strip_prefix(PREFIX) {
            mirrors.push(param, value.to_str().ok());
        }
    }
    mirrors
}

/// The `params` member a method's `Mcp-Name` header mirrors, if it has one.
fn name_field(method: &str) -> Option<&'static str> {
    match method {
        "tools/call" | "prompts/get" => Some("name"),
        "resources/read" => Some("uri"),
        // The tasks extension routes its methods by task id.
        "tasks/get" | "tasks/update" | "tasks/cancel" => Some("taskId"),
        _ => None,
    }
}

/// What the header checks read from a request body, taken from a parsed tree or from a
/// `tools/call` read into its parts.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct BodyFacts<'a> {
    /// `params._meta["io.modelcontextprotocol/protocolVersion"]`, when a string.
    pub(crate) protocol_version: Option<&'a str>,
    /// `params.name` (tools/call, prompts/get) or `params.uri` (resources/read), when a string.
    pub(crate) name: Option<&'a str>,
}

impl<'a> BodyFacts<'a> {
    /// The facts of a parsed message whose method is `method`.
    pub(crate) fn of_tree(message: &'a Value, method: &str) -> Self {
        let params = member_of(message, "params");
        Self {
            protocol_version: params
                .and_then(|p| member_of(p, "_meta"))
                .and_then(|m| member_of(m, PROTOCOL_VERSION_META))
                .and_then(Value::as_str),
            name: name_field(method)
                .and_then(|field| params.and_then(|p| member_of(p, field)))
                .and_then(Value::as_str),
        }
    }

    /// The facts of `message`, whose method is `method`.
    pub(crate) fn of_message(message: &'a Message, method: &str) -> Self {
        match message.as_call() {
            Some(call) => Self::of_call(call),
            None => Self::of_tree(message.value(), method),
        }
    }

    /// The facts of a `tools/call` read into its parts.
    pub(crate) fn of_call(call: &'a ToolsCall) -> Self {
        Self {
            protocol_version: call.params.protocol_version(),
            name: Some(&call.params.name),
        }
    }
}

/// Checks a notification's headers leniently: the spec does not say which headers a
/// notification needs, so none is required, but one that is present must not contradict the
/// body.
pub(crate) fn check_notification(
    headers: &HeaderMap,
    message: &Value,
    method: &str,
) -> Result<(), HeaderError> {
    if let Some(header_method) = header_str(headers, &MCP_METHOD, "Mcp-Method")?
        && header_method != method
    {
        return Err(mismatch("Mcp-Method", header_method, method));
    }
    if let Some(version) = header_str(headers, &PROTOCOL_VERSION, "MCP-Protocol-Version")?
        && let Some(body_version) = message
            .get("params")
            .and_then(|p| p.get("_meta"))
            .and_then(|m| m.get(PROTOCOL_VERSION_META))
            .and_then(Value::as_str)
        && body_version != version
    {
        return Err(mismatch("MCP-Protocol-Version", version, body_version));
    }
    Ok(())
}

/// The W3C trace context of a request's `traceparent`/`tracestate` headers, validated (see
/// [`TraceContext::parse`](crate::observe::TraceContext::parse)); `None` when the
/// `traceparent` is absent, repeated or malformed. Repeated `tracestate` headers are one list
/// (joined with commas), as the recommendation says.
#[cfg(feature = "otel")]
pub(crate) fn trace_context(headers: &HeaderMap) -> Option<crate::observe::TraceContext> {
    let mut parents = headers
        .get_all(http::header::HeaderName::from_static("traceparent"))
        .iter();
    let parent = parents.next()?.to_str().ok()?;
    if parents.next().is_some() {
        return None;
    }
    // A malformed (or non-ASCII) tracestate is dropped, the traceparent kept.
    let state = headers
        .get_all(http::header::HeaderName::from_static("tracestate"))
        .iter()
        .map(|v| v.to_str())
        .collect::<Result<Vec<&str>, _>>()
        .ok()
        .filter(|states| !states.is_empty())
        .map(|states| states.join(","));
    crate::observe::TraceContext::parse(parent, state.as_deref())
}

/// The W3C baggage of a request's `baggage` headers (several are one list, joined with
/// commas), read with [`Baggage::parse`](crate::observe::Baggage::parse); `None` when absent,
/// not ASCII, or holding no valid member. The joined list is cut at the parser's byte limit
/// first, so many headers cost no more than one.
#[cfg(feature = "otel")]
pub(crate) fn baggage(headers: &HeaderMap) -> Option<crate::observe::Baggage> {
    let mut list = String::new();
    for value in headers.get_all(http::header::HeaderName::from_static("baggage")) {
        if list.len() > crate::observe::MAX_BAGGAGE_LEN {
            break;
        }
        let value = value.to_str().ok()?;
        if !list.is_empty() {
            list.push(',');
        }
        list.push_str(value);
    }
    Some(crate::observe::Baggage::parse(&list)).filter(|b| !b.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;
    use serde_json::json;

    #[cfg(feature = "otel")]
    #[test]
    fn baggage_headers_are_one_list_and_bad_ones_are_none() {
        let mut headers = HeaderMap::new();
        assert_eq!(baggage(&headers), None);
        headers.append("baggage", HeaderValue::from_static("a=1,bad"));
        headers.append("baggage", HeaderValue::from_static("b=2"));
        let read = baggage(&headers).unwrap();
        assert_eq!(read.iter().collect::<Vec<_>>(), [("a", "1"), ("b", "2")]);
        let mut junk = HeaderMap::new();
        junk.append("baggage", HeaderValue::from_static("no members here"));
        assert_eq!(baggage(&junk), None);
        // Many large headers: read up to the parser's limit, no further.
        let mut many = HeaderMap::new();
        let big = format!("k={}", "v".repeat(4000));
        for _ in 0..100 {
            many.append("baggage", HeaderValue::from_str(&big).unwrap());
        }
        assert_eq!(baggage(&many).unwrap().len(), 1);
    }

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(
                HeaderName::from_bytes(k.as_bytes()).unwrap(),
                HeaderValue::from_str(v).unwrap(),
            );
        }
        h
    }

    fn call(name: &str, args: Value) -> Value {
        json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{
            "_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"},
            "name":name,"arguments":args}})
    }

    const BASE: [(&str, &str); 3] = [
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", "tools/call"),
        ("mcp-name", "weather"),
    ];

    fn with(extra: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut all = BASE.to_vec();
        all.extend_from_slice(extra);
        headers(&all)
    }

    #[test]
    fn param_headers_are_recorded_for_the_core_not_judged_here() {
        let body = call("weather", json!({"region":"eu-west"}));
        // A wrong or missing Mcp-Param header is not this module's call: the core knows the
        // tool's rules.
        let wrong = with(&[("Mcp-Param-Region", "EU-WEST"), ("x-other", "1")]);
        assert_eq!(
            check_request(
                &wrong,
                BodyFacts::of_tree(&body, "tools/call"),
                "tools/call"
            ),
            Ok(())
        );
        let mut expected = ParamMirrors::new();
        expected.push("region", Some("EU-WEST"));
        assert_eq!(param_mirrors(&wrong), expected);
        // Unreadable values are recorded as such; repeated ones twice.
        let mut odd = HeaderMap::new();
        odd.append(
            HeaderName::from_static("mcp-param-region"),
            HeaderValue::from_bytes(b"caf\xe9").unwrap(),
        );
        odd.append(
            HeaderName::from_static("mcp-param-region"),
            HeaderValue::from_static("eu"),
        );
        let mut expected = ParamMirrors::new();
        expected.push("region", None);
        expected.push("region", Some("eu"));
        assert_eq!(param_mirrors(&odd), expected);
        assert!(param_mirrors(&with(&[])).is_empty());
    }

    #[test]
    fn sentinel_decoding() {
        assert_eq!(decode_sentinel("plain", "h").unwrap(), "plain");
        assert_eq!(
            decode_sentinel("=?base64?w6lsw6h2ZQ==?=", "h").unwrap(),
            "élève"
        );
        // Missing or extra padding is malformed.
        assert!(decode_sentinel("=?base64?w6lsw6h2ZQ?=", "h").is_err());
        assert!(decode_sentinel("=?base64?SGVsbG8?=", "h").is_err());
        assert!(decode_sentinel("=?base64?SGVsbG8==?=", "h").is_err());
        assert!(decode_sentinel("=?base64?!!!?=", "h").is_err());
        assert!(decode_sentinel("=?base64?/w==?=", "h").is_err()); // not UTF-8
        // Markers are case-sensitive: an uppercase sentinel is compared literally.
        assert_eq!(
            decode_sentinel("=?BASE64?YQ==?=", "h").unwrap(),
            "=?BASE64?YQ==?="
        );
    }

    mod props {
        use super::*;
        use base64::Engine as _;
        use base64::engine::general_purpose::STANDARD;
        use proptest::prelude::*;

        proptest! {
            #[test]
            fn sentinel_round_trips_any_string(s in any::<String>()) {
                let header = format!("=?base64?{}?=", STANDARD.encode(s.as_bytes()));
                prop_assert_eq!(decode_sentinel(&header, "h").unwrap(), s.as_str());
            }

            #[test]
            fn arbitrary_header_values_never_panic(v in any::<String>()) {
                let _ = decode_sentinel(&v, "h");
            }
        }
    }
}
