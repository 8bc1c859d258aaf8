//! `subscriptions/listen` and `notifications/subscriptions/acknowledged`.

use serde::{Deserialize, Serialize};

use crate::JsonObject;
use crate::jsonrpc::RequestId;
use crate::meta::{Implementation, NotificationMeta, RequestMeta};
use crate::result::ResultType;

/// `subscriptions/listen`.
pub const METHOD_SUBSCRIPTIONS_LISTEN: &str = "subscriptions/listen";
/// `notifications/subscriptions/acknowledged`.
pub const METHOD_NOTIFICATION_SUBSCRIPTIONS_ACKNOWLEDGED: &str =
    "notifications/subscriptions/acknowledged";

/// Which notifications a listen stream asks for (or the server honours).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SubscriptionFilter {
    /// `notifications/tools/list_changed`.
    #[serde(
        rename = "toolsListChanged",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub tools_list_changed: Option<bool>,
    /// `notifications/prompts/list_changed`.
    #[serde(
        rename = "promptsListChanged",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub prompts_list_changed: Option<bool>,
    /// `notifications/resources/list_changed`.
    #[serde(
        rename = "resourcesListChanged",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub resources_list_changed: Option<bool>,
    /// Resource URIs to receive `notifications/resources/updated` for.
    #[serde(
        rename = "resourceSubscriptions",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub resource_subscriptions: Option<Vec<String>>,
    /// Unknown members, preserved.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// `subscriptions/listen` params.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SubscriptionsListenRequestParams {
    /// Request `_meta`.
    #[serde(rename = "_meta")]
    pub meta: RequestMeta,
    /// Requested notifications.
    pub notifications: SubscriptionFilter,
    /// Unknown members, preserved.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// `notifications/subscriptions/acknowledged` params.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SubscriptionsAcknowledgedNotificationParams {
    /// The subset the server honours.
    pub notifications: SubscriptionFilter,
    /// `_meta` (carries `subscriptionId`).
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<NotificationMeta>,
    /// Unknown members, preserved.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// `_meta` of a `subscriptions/listen` result (`subscriptionId` required).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SubscriptionsListenResultMeta {
    /// The listen request's id.
    #[serde(rename = "io.modelcontextprotocol/subscriptionId")]
    pub subscription_id: RequestId,
    /// Server identity.
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

/// The result that gracefully closes a listen stream.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SubscriptionsListenResult {
    /// `"complete"`.
    #[serde(rename = "resultType", default)]
    pub result_type: ResultType,
    /// `_meta` with the `subscriptionId`.
    #[serde(rename = "_meta")]
    pub meta: SubscriptionsListenResultMeta,
    /// Unknown members, preserved.
    #[serde(flatten)]
    pub extra: JsonObject,
}
