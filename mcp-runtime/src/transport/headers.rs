//! Streamable HTTP header rules: the `MCP-*` headers must mirror the body. (Which `Origin` and
//! `Host` values are allowed is [`super::allowlist`]'s.)
//!
//! The body is the source of truth; headers exist so intermediaries can route without parsing
//! it. A header that is missing, malformed or different from the body is a `-32020`
//! HeaderMismatch (400). Header names compare case-insensitively (the `http` crate lowercases
//! them); values compare case-sensitively.

use std::fmt;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use http::{HeaderMap, HeaderName};
use serde_json::Value;

use crate::members::member_of;
use crate::service::Message;
use crate::service::ParamHeader;
use mcp_types::ToolsCall;

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

/// Cuts values echoed into error messages to a readable size.
fn clip(s: &str) -> &str {
    const MAX: usize = 128;
    if s.len() <= MAX {
        return s;
    }
    let mut end = MAX;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

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

/// Decodes the `=?base64?<b64>?=` sentinel (markers lowercase and case-sensitive); other values
/// pass through unchanged.
pub(crate) fn decode_sentinel<'v>(
    value: &'v str,
    display: &str,
) -> Result<std::borrow::Cow<'v, str>, HeaderError> {
    let Some(inner) = value
        .strip_prefix("=?base64?")
        .and_then(|rest| rest.strip_suffix("?="))
    else {
        return Ok(std::borrow::Cow::Borrowed(value));
    };
    // Standard base64 with its padding (RFC 4648 section 4): a value with missing or wrong
    // padding is refused like any other malformed sentinel, not guessed at.
    let bytes = STANDARD
        .decode(inner)
        .map_err(|_| HeaderError::InvalidCharacters(display.to_owned()))?;
    String::from_utf8(bytes)
        .map(std::borrow::Cow::Owned)
        .map_err(|_| HeaderError::InvalidCharacters(display.to_owned()))
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
pub(crate) fn check_request<'s>(
    headers: &HeaderMap,
    body: BodyFacts<'_>,
    method: &str,
    param_headers: impl FnOnce(&str) -> &'s [ParamHeader],
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

    if method == "tools/call" {
        let rules = param_headers(body_name);
        if !rules.is_empty() {
            check_params(headers, body.arguments, rules)?;
        }
    }
    Ok(())
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
    /// `params.arguments`, when present.
    pub(crate) arguments: Option<&'a Value>,
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
            arguments: params.and_then(|p| member_of(p, "arguments")),
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
            arguments: call.params.arguments.as_ref(),
        }
    }
}

/// Checks `Mcp-Param-*` headers for a tool's `x-mcp-header` rules.
fn check_params(
    headers: &HeaderMap,
    arguments: Option<&Value>,
    rules: &[ParamHeader],
) -> Result<(), HeaderError> {
    for rule in rules {
        let mut value = arguments;
        for key in &rule.path {
            value = value.and_then(|v| v.get(key));
        }
        // Absent or null in the body: the header is not expected (and not compared).
        let Some(body) = value.filter(|v| !v.is_null()) else {
            continue;
        };
        let display = format!("Mcp-Param-{}", rule.name);
        let Ok(name) = HeaderName::from_bytes(display.as_bytes()) else {
            // A rule whose name is not a valid header token can never be satisfied; the tool
            // declaration is broken, which the tool macro rejects at compile time.
            return Err(HeaderError::InvalidCharacters(display));
        };
        let Some(raw) = header_str(headers, &name, &display)? else {
            return Err(HeaderError::Mismatch {
                header: display,
                header_value: "(missing)".to_owned(),
                body_value: body_text(body),
            });
        };
        let decoded = decode_sentinel(raw, &display)?;
        if !param_matches(&decoded, body) {
            return Err(mismatch(&display, &decoded, &body_text(body)));
        }
    }
    Ok(())
}

fn body_text(body: &Value) -> String {
    match body {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Compares a decoded header value with the body value: strings exactly, numbers numerically
/// (so `42.0` equals `42`), booleans as `true`/`false`.
fn param_matches(header: &str, body: &Value) -> bool {
    match body {
        Value::String(s) => header == s,
        Value::Bool(b) => header == if *b { "true" } else { "false" },
        Value::Number(n) => match (header.trim().parse::<f64>(), n.as_f64()) {
            (Ok(h), Some(b)) => h.is_finite() && h == b,
            _ => false,
        },
        // x-mcp-header sits only on primitives; anything else cannot be mirrored.
        _ => false,
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

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;
    use serde_json::json;

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

    fn rule_set() -> Vec<ParamHeader> {
        vec![
            ParamHeader::new("Region", ["region"]),
            ParamHeader::new("Count", ["opts", "count"]),
            ParamHeader::new("Dry", ["dry"]),
        ]
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
    fn param_headers_compare_by_type() {
        let set = rule_set();
        let rules = |_: &str| &set[..];
        let body = call(
            "weather",
            json!({"region":"eu-west","opts":{"count":42},"dry":true}),
        );
        let ok = with(&[
            ("mcp-param-region", "eu-west"),
            ("Mcp-Param-Count", "42.0"),
            ("mcp-param-dry", "true"),
        ]);
        assert_eq!(
            check_request(
                &ok,
                BodyFacts::of_tree(&body, "tools/call"),
                "tools/call",
                rules
            ),
            Ok(())
        );
        let b64 = with(&[
            ("mcp-param-region", "=?base64?ZXUtd2VzdA==?="),
            ("mcp-param-count", "42"),
            ("mcp-param-dry", "true"),
        ]);
        assert_eq!(
            check_request(
                &b64,
                BodyFacts::of_tree(&body, "tools/call"),
                "tools/call",
                rules
            ),
            Ok(())
        );
        let wrong_case = with(&[
            ("mcp-param-region", "EU-WEST"),
            ("mcp-param-count", "42"),
            ("mcp-param-dry", "true"),
        ]);
        assert!(
            check_request(
                &wrong_case,
                BodyFacts::of_tree(&body, "tools/call"),
                "tools/call",
                rules
            )
            .is_err()
        );
        let missing = with(&[("mcp-param-region", "eu-west"), ("mcp-param-dry", "true")]);
        let err = check_request(
            &missing,
            BodyFacts::of_tree(&body, "tools/call"),
            "tools/call",
            rules,
        )
        .unwrap_err();
        assert!(err.to_string().contains("Mcp-Param-Count"), "{err}");
        // Null or absent body values need no header.
        let body = call("weather", json!({"region":null}));
        assert_eq!(
            check_request(
                &with(&[]),
                BodyFacts::of_tree(&body, "tools/call"),
                "tools/call",
                rules
            ),
            Ok(())
        );
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
                let _ = param_matches(&v, &json!(42));
            }
        }
    }
}
