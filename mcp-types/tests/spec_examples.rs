//! Official examples round-trip through our types (only when `MCP_SPEC_DIR` is set).
//!
//! Every `$MCP_SPEC_DIR/examples/<Folder>/*.json` whose folder is in `MODELLED`
//! must deserialize into the mapped Rust type and serialize back to an equal JSON
//! value. Folders in `NOT_MODELLED` are skipped on purpose; any other folder makes
//! the test fail, so a new upstream example cannot be silently ignored.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers outside #[test] fns

use std::path::{Path, PathBuf};

use mcp_types::*;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

type Check = fn(&Value) -> Result<(), String>;

fn rt<T: DeserializeOwned + Serialize>(v: &Value) -> Result<(), String> {
    let t: T = serde_json::from_value(v.clone())
        .map_err(|e| format!("deserialize as {}: {e}", std::any::type_name::<T>()))?;
    let back = serde_json::to_value(&t).map_err(|e| format!("serialize: {e}"))?;
    if &back == v {
        Ok(())
    } else {
        Err(format!("round trip differs:\n  in:  {v}\n  out: {back}"))
    }
}

fn params_of(v: &Value) -> Value {
    v.get("params")
        .cloned()
        .unwrap_or(Value::Object(Default::default()))
}

fn req<P: DeserializeOwned + Serialize>(v: &Value) -> Result<(), String> {
    rt::<JsonRpcRequest>(v)?;
    match classify(v) {
        Ok(JsonRpcMessage::Request(_)) => {}
        other => return Err(format!("classify did not yield a request: {other:?}")),
    }
    rt::<P>(&params_of(v))
}

fn note<P: DeserializeOwned + Serialize>(v: &Value) -> Result<(), String> {
    rt::<JsonRpcNotification>(v)?;
    match classify(v) {
        Ok(JsonRpcMessage::Notification(_)) => {}
        other => return Err(format!("classify did not yield a notification: {other:?}")),
    }
    rt::<P>(&params_of(v))
}

fn resp<R: DeserializeOwned + Serialize>(v: &Value) -> Result<(), String> {
    rt::<JsonRpcResponse>(v)?;
    match classify(v) {
        Ok(JsonRpcMessage::Response(_)) => {}
        other => return Err(format!("classify did not yield a response: {other:?}")),
    }
    rt::<R>(&v["result"])
}

fn err_env(v: &Value) -> Result<(), String> {
    rt::<JsonRpcErrorResponse>(v)?;
    match classify(v) {
        Ok(JsonRpcMessage::ErrorResponse(_)) => Ok(()),
        other => Err(format!(
            "classify did not yield an error response: {other:?}"
        )),
    }
}

/// Folder name -> check. Envelope folders also check the typed params/result.
const MODELLED: &[(&str, Check)] = &[
    ("AudioContent", rt::<AudioContent>),
    ("BlobResourceContents", rt::<BlobResourceContents>),
    ("BooleanSchema", rt::<BooleanSchema>),
    ("CallToolRequest", req::<CallToolRequestParams>),
    ("CallToolRequestParams", rt::<CallToolRequestParams>),
    ("CallToolResult", rt::<CallToolResult>),
    (
        "CallToolResultResponse",
        resp::<MaybeInputRequired<CallToolResult>>,
    ),
    ("CancelledNotification", note::<CancelledNotificationParams>),
    (
        "CancelledNotificationParams",
        rt::<CancelledNotificationParams>,
    ),
    ("ClientCapabilities", rt::<ClientCapabilities>),
    ("CompleteRequest", req::<CompleteRequestParams>),
    ("CompleteRequestParams", rt::<CompleteRequestParams>),
    ("CompleteResult", rt::<CompleteResult>),
    ("CompleteResultResponse", resp::<CompleteResult>),
    ("CreateMessageRequest", rt::<CreateMessageRequest>),
    (
        "CreateMessageRequestParams",
        rt::<CreateMessageRequestParams>,
    ),
    ("CreateMessageResult", rt::<CreateMessageResult>),
    ("DiscoverRequest", req::<DiscoverRequestParams>),
    ("DiscoverResult", rt::<DiscoverResult>),
    ("DiscoverResultResponse", resp::<DiscoverResult>),
    ("ElicitRequest", rt::<ElicitRequest>),
    ("ElicitRequestFormParams", rt::<ElicitRequestFormParams>),
    ("ElicitRequestURLParams", rt::<ElicitRequestURLParams>),
    ("ElicitResult", rt::<ElicitResult>),
    ("EmbeddedResource", rt::<EmbeddedResource>),
    ("GetPromptRequest", req::<GetPromptRequestParams>),
    ("GetPromptRequestParams", rt::<GetPromptRequestParams>),
    ("GetPromptResult", rt::<GetPromptResult>),
    (
        "GetPromptResultResponse",
        resp::<MaybeInputRequired<GetPromptResult>>,
    ),
    ("HeaderMismatchError", err_env),
    ("ImageContent", rt::<ImageContent>),
    ("InputRequests", rt::<InputRequests>),
    ("InputRequiredResult", rt::<InputRequiredResult>),
    ("InputResponses", rt::<InputResponses>),
    ("InternalError", rt::<ErrorObject>),
    ("InvalidParamsError", rt::<ErrorObject>),
    ("ListPromptsRequest", req::<PaginatedRequestParams>),
    ("ListPromptsResult", rt::<ListPromptsResult>),
    ("ListPromptsResultResponse", resp::<ListPromptsResult>),
    (
        "ListResourceTemplatesRequest",
        req::<PaginatedRequestParams>,
    ),
    (
        "ListResourceTemplatesResult",
        rt::<ListResourceTemplatesResult>,
    ),
    (
        "ListResourceTemplatesResultResponse",
        resp::<ListResourceTemplatesResult>,
    ),
    ("ListResourcesRequest", req::<PaginatedRequestParams>),
    ("ListResourcesResult", rt::<ListResourcesResult>),
    ("ListResourcesResultResponse", resp::<ListResourcesResult>),
    ("ListRootsRequest", rt::<ListRootsRequest>),
    ("ListRootsResult", rt::<ListRootsResult>),
    ("ListToolsRequest", req::<ListToolsRequestParams>),
    ("ListToolsResult", rt::<ListToolsResult>),
    ("ListToolsResultResponse", resp::<ListToolsResult>),
    (
        "LoggingMessageNotification",
        note::<LoggingMessageNotificationParams>,
    ),
    (
        "LoggingMessageNotificationParams",
        rt::<LoggingMessageNotificationParams>,
    ),
    ("MethodNotFoundError", rt::<ErrorObject>),
    ("MissingRequiredClientCapabilityError", err_env),
    ("ModelPreferences", rt::<ModelPreferences>),
    ("NumberSchema", rt::<NumberSchema>),
    ("PaginatedRequestParams", rt::<PaginatedRequestParams>),
    ("ParseError", rt::<ErrorObject>),
    ("ProgressNotification", note::<ProgressNotificationParams>),
    (
        "ProgressNotificationParams",
        rt::<ProgressNotificationParams>,
    ),
    ("PromptListChangedNotification", note::<NotificationParams>),
    ("ReadResourceRequest", req::<ReadResourceRequestParams>),
    ("ReadResourceResult", rt::<ReadResourceResult>),
    (
        "ReadResourceResultResponse",
        resp::<MaybeInputRequired<ReadResourceResult>>,
    ),
    ("Resource", rt::<Resource>),
    ("ResourceLink", rt::<ResourceLink>),
    (
        "ResourceListChangedNotification",
        note::<NotificationParams>,
    ),
    (
        "ResourceUpdatedNotification",
        note::<ResourceUpdatedNotificationParams>,
    ),
    (
        "ResourceUpdatedNotificationParams",
        rt::<ResourceUpdatedNotificationParams>,
    ),
    ("Root", rt::<Root>),
    ("SamplingMessage", rt::<SamplingMessage>),
    ("ServerCapabilities", rt::<ServerCapabilities>),
    ("StringSchema", rt::<StringSchema>),
    (
        "SubscriptionsAcknowledgedNotification",
        note::<SubscriptionsAcknowledgedNotificationParams>,
    ),
    (
        "SubscriptionsListenRequest",
        req::<SubscriptionsListenRequestParams>,
    ),
    ("SubscriptionsListenResult", rt::<SubscriptionsListenResult>),
    (
        "SubscriptionsListenResultResponse",
        resp::<SubscriptionsListenResult>,
    ),
    ("TextContent", rt::<TextContent>),
    ("TextResourceContents", rt::<TextResourceContents>),
    (
        "TitledMultiSelectEnumSchema",
        rt::<TitledMultiSelectEnumSchema>,
    ),
    (
        "TitledSingleSelectEnumSchema",
        rt::<TitledSingleSelectEnumSchema>,
    ),
    ("Tool", rt::<Tool>),
    ("ToolListChangedNotification", note::<NotificationParams>),
    ("ToolResultContent", rt::<ToolResultContent>),
    ("ToolUseContent", rt::<ToolUseContent>),
    ("UnsupportedProtocolVersionError", err_env),
    (
        "UntitledMultiSelectEnumSchema",
        rt::<UntitledMultiSelectEnumSchema>,
    ),
    (
        "UntitledSingleSelectEnumSchema",
        rt::<UntitledSingleSelectEnumSchema>,
    ),
];

/// Folders intentionally not modelled, with the reason (currently none: every
/// example folder of 2026-07-28 maps to a type).
const NOT_MODELLED: &[(&str, &str)] = &[];

/// Example files our model rejects on purpose: (path, substring of the error).
/// This file is a `"complete"` read result without the required `ttlMs`/
/// `cacheScope`; it only validates against the schema through the loose
/// `InputRequiredResult` branch. Our `ReadResourceResult` requires both hints
/// (servers MUST send them), and the result is decided by `resultType`.
const KNOWN_REJECTED: &[(&str, &str)] = &[(
    "ReadResourceResultResponse/read-resource-result-response.json",
    "ttlMs",
)];

fn spec_dir() -> Option<PathBuf> {
    std::env::var_os("MCP_SPEC_DIR").map(PathBuf::from)
}

fn json_files(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    v.sort();
    v
}

#[test]
fn every_official_example_round_trips() {
    let Some(dir) = spec_dir() else {
        println!("MCP_SPEC_DIR not set: official example round-trip test skipped");
        return;
    };
    let examples = dir.join("examples");
    let mut folders: Vec<String> = std::fs::read_dir(&examples)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    folders.sort();
    let mut failures = Vec::new();
    let mut checked = 0;
    for folder in &folders {
        let check = MODELLED.iter().find(|(n, _)| n == folder).map(|(_, c)| *c);
        let Some(check) = check else {
            if !NOT_MODELLED.iter().any(|(n, _)| n == folder) {
                failures.push(format!("{folder}: neither in MODELLED nor in NOT_MODELLED"));
            }
            continue;
        };
        for file in json_files(&examples.join(folder)) {
            let text = std::fs::read_to_string(&file).unwrap();
            let v: Value = serde_json::from_str(&text).unwrap();
            checked += 1;
            let rel = file.strip_prefix(&examples).unwrap().display().to_string();
            let known = KNOWN_REJECTED.iter().find(|(p, _)| *p == rel);
            match (check(&v), known) {
                (Ok(()), None) => {}
                (Err(e), None) => failures.push(format!("{rel}: {e}")),
                (Err(e), Some((_, why))) if e.contains(why) => {}
                (Err(e), Some(_)) => {
                    failures.push(format!("{rel}: rejected for an unexpected reason: {e}"))
                }
                (Ok(()), Some(_)) => {
                    failures.push(format!("{rel}: expected rejection but it was accepted"))
                }
            }
        }
    }
    for (name, _) in MODELLED {
        if !folders.iter().any(|f| f == name) {
            failures.push(format!("{name}: in MODELLED but no such example folder"));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {checked} checks failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
    println!("{checked} official examples round-tripped");
}
