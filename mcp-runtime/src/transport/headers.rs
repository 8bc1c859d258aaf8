//! Streamable HTTP header rules: the `MCP-*` headers must mirror the body, and `Origin` must be
//! allowed.
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

use super::service::ParamHeader;
use super::tools_call::{CallMeta, ToolsCall};
use crate::members::member_of;

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

    /// The facts of a `tools/call` read into its parts.
    pub(crate) fn of_call(call: &'a ToolsCall) -> Self {
        Self {
            protocol_version: match &call.meta {
                CallMeta::Typed { meta, .. } => Some(&meta.protocol_version),
                CallMeta::Tree(meta) => {
                    member_of(meta, PROTOCOL_VERSION_META).and_then(Value::as_str)
                }
                CallMeta::Absent => None,
            },
            name: Some(&call.name),
            arguments: call.arguments.as_ref(),
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

/// Which `Origin` values may talk to the server (defence against DNS rebinding).
///
/// Requests without `Origin` (non-browser clients) are always allowed; a present `Origin` that
/// matches no pattern gets 403.
#[derive(Debug, Clone)]
pub struct OriginAllowlist {
    patterns: Option<Vec<OriginPattern>>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct OriginPattern {
    scheme: String,
    host: String,
    /// `None` = any port (`:*`).
    port: Option<u16>,
    /// Whether the pattern matches an origin without an explicit port.
    allows_default_port: bool,
}

/// A malformed origin pattern.
#[derive(Debug, thiserror::Error)]
#[error(
    "invalid origin pattern `{0}`: expected scheme://host[:port|:*], e.g. https://app.example.com or http://localhost:*"
)]
pub struct OriginPatternError(String);

/// Splits `scheme://host[:port]` into lowercase scheme, lowercase host and the port text.
fn split_origin(origin: &str) -> Option<(String, String, Option<&str>)> {
    let (scheme, rest) = origin.split_once("://")?;
    if scheme.is_empty() || rest.is_empty() || rest.contains('/') {
        return None;
    }
    let (host, port) = if let Some(after) = rest.strip_prefix('[') {
        let (inside, tail) = after.split_once(']')?;
        let port = match tail {
            "" => None,
            t => Some(t.strip_prefix(':')?),
        };
        (format!("[{inside}]"), port)
    } else {
        match rest.rsplit_once(':') {
            Some((host, port)) => (host.to_owned(), Some(port)),
            None => (rest.to_owned(), None),
        }
    };
    if host.is_empty() || host == "[]" {
        return None;
    }
    Some((scheme.to_ascii_lowercase(), host.to_ascii_lowercase(), port))
}

impl OriginPattern {
    fn parse(pattern: &str) -> Result<Self, OriginPatternError> {
        let err = || OriginPatternError(pattern.to_owned());
        let (scheme, host, port) = split_origin(pattern).ok_or_else(err)?;
        let (port, allows_default_port) = match port {
            None => (Some(0), true),
            Some("*") => (None, true),
            Some(p) => (Some(p.parse::<u16>().map_err(|_| err())?), false),
        };
        Ok(Self {
            scheme,
            host,
            port,
            allows_default_port,
        })
    }

    fn matches(&self, scheme: &str, host: &str, port: Option<u16>) -> bool {
        if self.scheme != scheme || self.host != host {
            return false;
        }
        match (self.port, port) {
            (_, None) => self.allows_default_port,
            (None, Some(_)) => true,
            (Some(want), Some(got)) => want == got,
        }
    }
}

impl Default for OriginAllowlist {
    fn default() -> Self {
        Self::loopback()
    }
}

impl OriginAllowlist {
    /// Loopback origins on any port, over http or https: `localhost`, `127.0.0.1`, `[::1]`.
    pub fn loopback() -> Self {
        let mut patterns = Vec::new();
        for scheme in ["http", "https"] {
            for host in ["localhost", "127.0.0.1", "[::1]"] {
                patterns.push(OriginPattern {
                    scheme: scheme.to_owned(),
                    host: host.to_owned(),
                    port: None,
                    allows_default_port: true,
                });
            }
        }
        Self {
            patterns: Some(patterns),
        }
    }

    /// Exactly the given patterns: `scheme://host` (default port only), `scheme://host:port`,
    /// or `scheme://host:*` (any port). Hosts compare case-insensitively.
    ///
    /// # Errors
    /// [`OriginPatternError`] naming the first malformed pattern.
    pub fn parse<S: AsRef<str>>(
        patterns: impl IntoIterator<Item = S>,
    ) -> Result<Self, OriginPatternError> {
        let patterns = patterns
            .into_iter()
            .map(|p| OriginPattern::parse(p.as_ref()))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Self {
            patterns: Some(patterns),
        })
    }

    /// Any origin. Only for servers behind a proxy that validates `Origin` itself.
    pub fn any() -> Self {
        Self { patterns: None }
    }

    /// Whether a request carrying this `Origin` value may proceed.
    pub fn allows(&self, origin: &str) -> bool {
        let Some(patterns) = &self.patterns else {
            return true;
        };
        let Some((scheme, host, port)) = split_origin(origin) else {
            // Includes the opaque origin `null`.
            return false;
        };
        let port = match port {
            None => None,
            Some(p) => match p.parse::<u16>() {
                Ok(p) => Some(p),
                Err(_) => return false,
            },
        };
        patterns.iter().any(|p| p.matches(&scheme, &host, port))
    }
}

/// Which `Host` values the server answers to (defence against DNS rebinding, next to
/// [`OriginAllowlist`]).
///
/// A request whose `Host` (or absolute-form target) names no allowed host gets 421 before any
/// route runs. Patterns are `name` (any port) or `name:port`; names compare case-insensitively;
/// IPv6 addresses are written in brackets (`[::1]`).
#[derive(Debug, Clone)]
pub struct HostAllowlist {
    /// `None`: any host.
    patterns: Option<Vec<HostPattern>>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct HostPattern {
    name: String,
    /// `None`: any port.
    port: Option<u16>,
}

/// A malformed host pattern.
#[derive(Debug, thiserror::Error)]
#[error(
    "invalid host pattern `{0}`: expected a host name or address with an optional port, e.g. mcp.example.com, mcp.example.com:8443 or [::1]"
)]
pub struct HostPatternError(String);

/// Splits `name[:port]` into the name (as written) and the port text; `None` when malformed.
/// Borrowing only: this runs on every request.
fn split_host(value: &str) -> Option<(&str, Option<&str>)> {
    let (name, port) = if value.starts_with('[') {
        let end = value.find(']')?;
        let (name, tail) = value.split_at(end + 1);
        let inside = &name[1..end];
        if inside.is_empty()
            || !inside
                .bytes()
                .all(|b| b.is_ascii_hexdigit() || b == b':' || b == b'.')
        {
            return None;
        }
        let port = match tail {
            "" => None,
            t => Some(t.strip_prefix(':')?),
        };
        (name, port)
    } else {
        let (name, port) = match value.split_once(':') {
            Some((name, port)) => (name, Some(port)),
            None => (value, None),
        };
        let valid = !name.is_empty()
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.' || b == b'_');
        if !valid {
            return None;
        }
        (name, port)
    };
    Some((name, port))
}

impl HostAllowlist {
    /// Loopback names on any port: `localhost`, `127.0.0.1`, `[::1]`.
    pub fn loopback() -> Self {
        Self {
            patterns: Some(
                ["localhost", "127.0.0.1", "[::1]"]
                    .into_iter()
                    .map(|name| HostPattern {
                        name: name.to_owned(),
                        port: None,
                    })
                    .collect(),
            ),
        }
    }

    /// Any host. For servers bound beyond loopback whose names are not known, or behind a proxy
    /// that checks `Host` itself.
    pub fn any() -> Self {
        Self { patterns: None }
    }

    /// Exactly the given patterns: `name` (any port) or `name:port`.
    ///
    /// # Errors
    /// [`HostPatternError`] naming the first malformed pattern.
    pub fn parse<S: AsRef<str>>(
        patterns: impl IntoIterator<Item = S>,
    ) -> Result<Self, HostPatternError> {
        let patterns = patterns
            .into_iter()
            .map(|p| {
                let p = p.as_ref().trim();
                let err = || HostPatternError(p.to_owned());
                let (name, port) = split_host(p).ok_or_else(err)?;
                let port = match port {
                    None | Some("*") => None,
                    Some(port) => Some(port.parse::<u16>().map_err(|_| err())?),
                };
                Ok(HostPattern {
                    name: name.to_ascii_lowercase(),
                    port,
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Self {
            patterns: Some(patterns),
        })
    }

    /// This list plus `name` on any port; [`HostAllowlist::any`] stays as it is.
    #[must_use]
    pub fn with_name(mut self, name: &str) -> Self {
        if let Some(patterns) = &mut self.patterns {
            patterns.push(HostPattern {
                name: name.to_ascii_lowercase(),
                port: None,
            });
        }
        self
    }

    /// Whether every host is allowed.
    pub fn is_any(&self) -> bool {
        self.patterns.is_none()
    }

    /// Whether a request naming this `Host` value may proceed.
    pub fn allows(&self, host: &str) -> bool {
        let Some(patterns) = &self.patterns else {
            return true;
        };
        let Some((name, port)) = split_host(host) else {
            return false;
        };
        let port = match port {
            None => None,
            Some(p) => match p.parse::<u16>() {
                Ok(p) => Some(p),
                Err(_) => return false,
            },
        };
        patterns
            .iter()
            .any(|p| p.name.eq_ignore_ascii_case(name) && (p.port.is_none() || p.port == port))
    }
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

    #[test]
    fn origins() {
        let local = OriginAllowlist::loopback();
        assert!(local.allows("http://localhost:3000"));
        assert!(local.allows("http://127.0.0.1"));
        assert!(local.allows("https://[::1]:8443"));
        assert!(local.allows("HTTP://LOCALHOST:1"));
        assert!(!local.allows("http://localhost.evil.com"));
        assert!(!local.allows("http://evil.com"));
        assert!(!local.allows("null"));
        assert!(!local.allows("http://localhost:99999"));
        let custom =
            OriginAllowlist::parse(["https://app.example.com", "http://dev.local:8080"]).unwrap();
        assert!(custom.allows("https://app.example.com"));
        assert!(!custom.allows("https://app.example.com:444"));
        assert!(custom.allows("http://dev.local:8080"));
        assert!(!custom.allows("http://dev.local:8081"));
        assert!(OriginAllowlist::parse(["app.example.com"]).is_err());
        assert!(OriginAllowlist::any().allows("http://anything"));
    }

    #[test]
    fn hosts() {
        let local = HostAllowlist::loopback();
        for ok in [
            "localhost",
            "LOCALHOST:8080",
            "127.0.0.1:1",
            "[::1]",
            "[::1]:9",
        ] {
            assert!(local.allows(ok), "{ok}");
        }
        for bad in [
            "evil.com",
            "localhost.evil.com",
            "127.0.0.2",
            "localhost:99999",
            "localhost:x",
            "user@localhost",
            "",
            "[::1",
            "localhost:80:80",
        ] {
            assert!(!local.allows(bad), "{bad}");
        }
        let custom = HostAllowlist::parse(["mcp.example.com", "api.example.com:8443"]).unwrap();
        assert!(custom.allows("mcp.example.com"));
        assert!(custom.allows("MCP.example.com:443"));
        assert!(custom.allows("api.example.com:8443"));
        assert!(!custom.allows("api.example.com"));
        assert!(!custom.allows("localhost"));
        assert!(HostAllowlist::parse(["http://x"]).is_err());
        assert!(HostAllowlist::parse(["x:99999"]).is_err());
        assert!(HostAllowlist::any().allows("anything"));
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
            fn origin_check_never_panics_and_rejects_non_loopback(
                scheme in "[a-z]{1,6}",
                host in "[a-z0-9.-]{1,20}",
                port in proptest::option::of(any::<u16>()),
            ) {
                let origin = match port {
                    Some(p) => format!("{scheme}://{host}:{p}"),
                    None => format!("{scheme}://{host}"),
                };
                let allowed = OriginAllowlist::loopback().allows(&origin);
                let loopback_host = host == "localhost" || host == "127.0.0.1";
                let web_scheme = scheme == "http" || scheme == "https";
                prop_assert_eq!(allowed, loopback_host && web_scheme);
            }

            #[test]
            fn arbitrary_header_values_never_panic(v in any::<String>()) {
                let _ = decode_sentinel(&v, "h");
                let _ = OriginAllowlist::loopback().allows(&v);
                let _ = param_matches(&v, &json!(42));
            }
        }
    }
}
