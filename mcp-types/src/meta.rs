//! `_meta` objects: request, result and notification metadata, plus the
//! [`Implementation`] and [`Icon`] shapes they carry.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::JsonObject;
use crate::capabilities::ClientCapabilities;
use crate::errors::ErrorObject;
use crate::jsonrpc::RequestId;

/// `_meta` key of the request's protocol version (required on every request).
pub const PROTOCOL_VERSION_KEY: &str = "io.modelcontextprotocol/protocolVersion";
/// `_meta` key of the request's client capabilities (required on every request).
pub const CLIENT_CAPABILITIES_KEY: &str = "io.modelcontextprotocol/clientCapabilities";
/// `_meta` key of the self-reported client identity (optional).
pub const CLIENT_INFO_KEY: &str = "io.modelcontextprotocol/clientInfo";
/// `_meta` key of the requested log level (optional, deprecated with logging).
pub const LOG_LEVEL_KEY: &str = "io.modelcontextprotocol/logLevel";
/// `_meta` key of the progress token (optional, no prefix).
pub const PROGRESS_TOKEN_KEY: &str = "progressToken";
/// Result `_meta` key of the server identity.
pub const SERVER_INFO_KEY: &str = "io.modelcontextprotocol/serverInfo";
/// Notification `_meta` key naming the `subscriptions/listen` request id.
pub const SUBSCRIPTION_ID_KEY: &str = "io.modelcontextprotocol/subscriptionId";

/// A progress token: a string or an integer.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ProgressToken {
    /// An integer token.
    Number(i64),
    /// A string token.
    String(String),
}

/// Log severity (RFC 5424 order: `Debug` is the lowest, `Emergency` the highest).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LoggingLevel {
    /// `debug`
    Debug,
    /// `info`
    Info,
    /// `notice`
    Notice,
    /// `warning`
    Warning,
    /// `error`
    Error,
    /// `critical`
    Critical,
    /// `alert`
    Alert,
    /// `emergency`
    Emergency,
}

/// Icon colour theme.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum IconTheme {
    /// For light backgrounds.
    Light,
    /// For dark backgrounds.
    Dark,
}

/// An icon: `{src, mimeType?, sizes?, theme?}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Icon {
    /// `https:` or `data:` URI.
    pub src: String,
    /// MIME type of the image.
    #[serde(rename = "mimeType", default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Sizes such as `"48x48"` or `"any"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sizes: Option<Vec<String>>,
    /// The theme this icon is designed for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub theme: Option<IconTheme>,
    /// Unknown members, preserved.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl Icon {
    /// An icon with only `src`.
    pub fn new(src: impl Into<String>) -> Self {
        Icon {
            src: src.into(),
            mime_type: None,
            sizes: None,
            theme: None,
            extra: JsonObject::new(),
        }
    }
}

/// Identity of a client or server implementation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Implementation {
    /// Programmatic name.
    pub name: String,
    /// Version string.
    pub version: String,
    /// Display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Human-readable description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Website URL.
    #[serde(
        rename = "websiteUrl",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub website_url: Option<String>,
    /// Icons.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icons: Option<Vec<Icon>>,
    /// Unknown members, preserved.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl Implementation {
    /// An implementation with only `name` and `version`.
    pub fn new(name: impl Into<String>, version: impl Into<String>) -> Self {
        Implementation {
            name: name.into(),
            version: version.into(),
            title: None,
            description: None,
            website_url: None,
            icons: None,
            extra: JsonObject::new(),
        }
    }
}

/// `params._meta` of every client request (`RequestMetaObject`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RequestMeta {
    /// `io.modelcontextprotocol/protocolVersion`.
    #[serde(rename = "io.modelcontextprotocol/protocolVersion")]
    pub protocol_version: String,
    /// `io.modelcontextprotocol/clientCapabilities`, valid for this request only.
    #[serde(rename = "io.modelcontextprotocol/clientCapabilities")]
    pub client_capabilities: ClientCapabilities,
    /// `io.modelcontextprotocol/clientInfo` (self-reported, never a security input).
    #[serde(
        rename = "io.modelcontextprotocol/clientInfo",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub client_info: Option<Implementation>,
    /// `io.modelcontextprotocol/logLevel`.
    #[serde(
        rename = "io.modelcontextprotocol/logLevel",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub log_level: Option<LoggingLevel>,
    /// `progressToken`.
    #[serde(
        rename = "progressToken",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub progress_token: Option<ProgressToken>,
    /// Every other key (`traceparent`, extension keys, ...), preserved.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// Which `_meta` member was wrong, for [`MetaError`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MetaField {
    /// `params._meta` itself.
    Meta,
    /// `io.modelcontextprotocol/protocolVersion`.
    ProtocolVersion,
    /// `io.modelcontextprotocol/clientCapabilities`.
    ClientCapabilities,
    /// `io.modelcontextprotocol/clientInfo`.
    ClientInfo,
    /// `io.modelcontextprotocol/logLevel`.
    LogLevel,
    /// `progressToken`.
    ProgressToken,
}

impl MetaField {
    /// The wire key (`"_meta"` for the object itself).
    pub fn key(self) -> &'static str {
        match self {
            MetaField::Meta => "_meta",
            MetaField::ProtocolVersion => PROTOCOL_VERSION_KEY,
            MetaField::ClientCapabilities => CLIENT_CAPABILITIES_KEY,
            MetaField::ClientInfo => CLIENT_INFO_KEY,
            MetaField::LogLevel => LOG_LEVEL_KEY,
            MetaField::ProgressToken => PROGRESS_TOKEN_KEY,
        }
    }
}

/// Why a request's `_meta` was rejected. Every variant maps to `-32602` (and
/// HTTP 400) via [`MetaError::to_error_object`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MetaError {
    /// A required member is absent.
    #[error("missing required params._meta member \"{}\"", .0.key())]
    Missing(MetaField),
    /// A member is present with the wrong JSON type.
    #[error("params._meta member \"{}\" must be {expected}, got {found}", .field.key())]
    WrongType {
        /// The member.
        field: MetaField,
        /// What the spec requires.
        expected: &'static str,
        /// What was found.
        found: &'static str,
    },
    /// A member has the right JSON type but an invalid value.
    #[error("params._meta member \"{}\" is invalid: {reason}", .field.key())]
    Invalid {
        /// The member.
        field: MetaField,
        /// Why.
        reason: String,
    },
}

impl MetaError {
    /// The member at fault.
    pub fn field(&self) -> MetaField {
        match self {
            MetaError::Missing(f) => *f,
            MetaError::WrongType { field, .. } | MetaError::Invalid { field, .. } => *field,
        }
    }

    /// The `-32602` error object to send back.
    pub fn to_error_object(&self) -> ErrorObject {
        ErrorObject::invalid_params(format!("Invalid params: {self}"))
    }
}

fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

impl RequestMeta {
    /// A minimal `_meta` for the given version and capabilities.
    pub fn new(
        protocol_version: impl Into<String>,
        client_capabilities: ClientCapabilities,
    ) -> Self {
        RequestMeta {
            protocol_version: protocol_version.into(),
            client_capabilities,
            client_info: None,
            log_level: None,
            progress_token: None,
            extra: JsonObject::new(),
        }
    }

    /// Reads `_meta` out of a request's `params` object, saying precisely which
    /// member is missing or malformed.
    pub fn from_params(params: &JsonObject) -> Result<RequestMeta, MetaError> {
        // A scan, not a hash lookup: params objects have a handful of members.
        Self::from_meta_member(params.iter().find_map(|(k, v)| (k == "_meta").then_some(v)))
    }

    /// Reads `_meta` from the value of the `_meta` member of a request's `params` (`None` when
    /// the member is absent), with the same errors as [`RequestMeta::from_params`].
    pub fn from_meta_member(meta: Option<&Value>) -> Result<RequestMeta, MetaError> {
        match meta {
            None => Err(MetaError::Missing(MetaField::Meta)),
            Some(Value::Object(meta)) => Self::from_meta_object(meta),
            Some(other) => Err(MetaError::WrongType {
                field: MetaField::Meta,
                expected: "an object",
                found: json_kind(other),
            }),
        }
    }

    /// Reads a `_meta` object (see [`RequestMeta::from_params`]).
    pub fn from_meta_object(meta: &JsonObject) -> Result<RequestMeta, MetaError> {
        // One pass sorts the members (no per-key hashing); they are then checked in a fixed
        // order, so the first error reported does not depend on member order.
        let (mut version, mut caps, mut info, mut level, mut progress) =
            (None, None, None, None, None);
        let mut extra = JsonObject::new();
        for (key, value) in meta {
            match key.as_str() {
                PROTOCOL_VERSION_KEY => version = Some(value),
                CLIENT_CAPABILITIES_KEY => caps = Some(value),
                CLIENT_INFO_KEY => info = Some(value),
                LOG_LEVEL_KEY => level = Some(value),
                PROGRESS_TOKEN_KEY => progress = Some(value),
                _ => {
                    extra.insert(key.clone(), value.clone());
                }
            }
        }
        let protocol_version = match version {
            None => return Err(MetaError::Missing(MetaField::ProtocolVersion)),
            Some(Value::String(s)) => s.clone(),
            Some(other) => {
                return Err(MetaError::WrongType {
                    field: MetaField::ProtocolVersion,
                    expected: "a string",
                    found: json_kind(other),
                });
            }
        };
        let client_capabilities = match caps {
            None => return Err(MetaError::Missing(MetaField::ClientCapabilities)),
            Some(v @ Value::Object(_)) => {
                ClientCapabilities::deserialize(v).map_err(|e| MetaError::Invalid {
                    field: MetaField::ClientCapabilities,
                    reason: e.to_string(),
                })?
            }
            Some(other) => {
                return Err(MetaError::WrongType {
                    field: MetaField::ClientCapabilities,
                    expected: "an object",
                    found: json_kind(other),
                });
            }
        };
        let client_info =
            match info {
                None => None,
                Some(v @ Value::Object(_)) => Some(Implementation::deserialize(v).map_err(
                    |e| MetaError::Invalid {
                        field: MetaField::ClientInfo,
                        reason: e.to_string(),
                    },
                )?),
                Some(other) => {
                    return Err(MetaError::WrongType {
                        field: MetaField::ClientInfo,
                        expected: "an object",
                        found: json_kind(other),
                    });
                }
            };
        let log_level = match level {
            None => None,
            Some(v @ Value::String(s)) => Some(LoggingLevel::deserialize(v).map_err(|_| {
                MetaError::Invalid {
                    field: MetaField::LogLevel,
                    reason: format!(
                        "unknown level {s:?}; expected one of debug, info, notice, warning, error, critical, alert, emergency"
                    ),
                }
            })?),
            Some(other) => {
                return Err(MetaError::WrongType { field: MetaField::LogLevel, expected: "a string", found: json_kind(other) });
            }
        };
        let progress_token = match progress {
            None => None,
            Some(Value::String(s)) => Some(ProgressToken::String(s.clone())),
            Some(Value::Number(n)) => match n.as_i64() {
                Some(i) => Some(ProgressToken::Number(i)),
                None => {
                    return Err(MetaError::Invalid {
                        field: MetaField::ProgressToken,
                        reason: format!("{n} is not an integer"),
                    });
                }
            },
            Some(other) => {
                return Err(MetaError::WrongType {
                    field: MetaField::ProgressToken,
                    expected: "a string or an integer",
                    found: json_kind(other),
                });
            }
        };
        Ok(RequestMeta {
            protocol_version,
            client_capabilities,
            client_info,
            log_level,
            progress_token,
            extra,
        })
    }
}

/// `_meta` of a result (`ResultMetaObject`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ResultMeta {
    /// `io.modelcontextprotocol/serverInfo`: servers SHOULD set it on every result.
    #[serde(
        rename = "io.modelcontextprotocol/serverInfo",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub server_info: Option<Implementation>,
    /// Every other key, preserved.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl ResultMeta {
    /// A result `_meta` carrying the server identity.
    pub fn with_server_info(server_info: Implementation) -> Self {
        ResultMeta {
            server_info: Some(server_info),
            extra: JsonObject::new(),
        }
    }
}

/// `_meta` of a notification (`NotificationMetaObject`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct NotificationMeta {
    /// `io.modelcontextprotocol/subscriptionId`: the `subscriptions/listen` request id.
    #[serde(
        rename = "io.modelcontextprotocol/subscriptionId",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub subscription_id: Option<RequestId>,
    /// Every other key, preserved.
    #[serde(flatten)]
    pub extra: JsonObject,
}
