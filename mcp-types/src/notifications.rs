//! Request-scoped notifications: cancelled, progress, logging message, and the
//! list-changed family.

use serde::{Deserialize, Serialize};
use serde_json::{Number, Value};

use crate::JsonObject;
use crate::jsonrpc::RequestId;
use crate::meta::{LoggingLevel, NotificationMeta, ProgressToken};

/// `notifications/cancelled`.
pub const METHOD_NOTIFICATION_CANCELLED: &str = "notifications/cancelled";
/// `notifications/progress`.
pub const METHOD_NOTIFICATION_PROGRESS: &str = "notifications/progress";
/// `notifications/message`.
pub const METHOD_NOTIFICATION_MESSAGE: &str = "notifications/message";
/// `notifications/tools/list_changed`.
pub const METHOD_NOTIFICATION_TOOLS_LIST_CHANGED: &str = "notifications/tools/list_changed";
/// `notifications/prompts/list_changed`.
pub const METHOD_NOTIFICATION_PROMPTS_LIST_CHANGED: &str = "notifications/prompts/list_changed";
/// `notifications/resources/list_changed`.
pub const METHOD_NOTIFICATION_RESOURCES_LIST_CHANGED: &str = "notifications/resources/list_changed";

/// `notifications/cancelled` params.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CancelledNotificationParams {
    /// The request being cancelled.
    #[serde(rename = "requestId")]
    pub request_id: RequestId,
    /// Why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// `_meta`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<NotificationMeta>,
    /// Unknown members, preserved.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// `notifications/progress` params.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProgressNotificationParams {
    /// The request's progress token.
    #[serde(rename = "progressToken")]
    pub progress_token: ProgressToken,
    /// Progress so far (must increase).
    pub progress: Number,
    /// Total, if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total: Option<Number>,
    /// Human-readable status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// `_meta`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<NotificationMeta>,
    /// Unknown members, preserved.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl ProgressNotificationParams {
    /// Progress params.
    pub fn new(
        progress_token: ProgressToken,
        progress: impl Into<Number>,
        total: Option<Number>,
    ) -> Self {
        ProgressNotificationParams {
            progress_token,
            progress: progress.into(),
            total,
            message: None,
            meta: None,
            extra: JsonObject::new(),
        }
    }
}

/// `notifications/message` params (deprecated logging).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoggingMessageNotificationParams {
    /// Severity.
    pub level: LoggingLevel,
    /// Logger name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logger: Option<String>,
    /// Any JSON payload.
    pub data: Value,
    /// `_meta`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<NotificationMeta>,
    /// Unknown members, preserved.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// Params of a notification with no specific members (e.g. list_changed).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct NotificationParams {
    /// `_meta` (carries `subscriptionId` on a listen stream).
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<NotificationMeta>,
    /// Unknown members, preserved.
    #[serde(flatten)]
    pub extra: JsonObject,
}
