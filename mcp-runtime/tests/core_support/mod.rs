//! Shared fixtures for the core tests: a hand-written form and tools written against
//! `ToolHandler` directly (as `#[tool]` will generate).
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use futures::future::BoxFuture;
use mcp_runtime::context::{Elicitation, RequestContext};
use mcp_runtime::form::ElicitForm;
use mcp_runtime::form::FormError;
use mcp_runtime::prelude::*;
use mcp_runtime::tool::{IntoCallToolResult, ToolHandler};
use mcp_types::CallToolResult;
use mcp_types::LoggingLevel;
use mcp_types::{
    ClientCapabilities, ElicitationCapability, InputSchema, JsonObject, RequestedSchema, Tool,
};
use serde_json::{Value, json};

/// A form: pick one of the offered note ids, and confirm.
#[derive(Debug)]
pub struct DeleteChoice {
    pub note_id: String,
    pub confirm: bool,
}

#[derive(Default, Clone)]
pub struct DeleteChoices {
    pub ids: Vec<String>,
}

impl ElicitForm for DeleteChoice {
    type Choices = DeleteChoices;
    fn choices() -> DeleteChoices {
        DeleteChoices::default()
    }
    fn requested_schema(choices: &DeleteChoices) -> RequestedSchema {
        serde_json::from_value(json!({
            "type": "object",
            "properties": {
                "note_id": {"type": "string", "title": "Note", "enum": choices.ids},
                "confirm": {"type": "boolean", "title": "Yes, delete it"}
            },
            "required": ["note_id", "confirm"]
        }))
        .unwrap()
    }
    fn from_content(content: &JsonObject, choices: &DeleteChoices) -> Result<Self, FormError> {
        let note_id = match content.get("note_id") {
            Some(Value::String(s)) if choices.ids.contains(s) => s.clone(),
            _ => {
                return Err(bad("note_id"));
            }
        };
        let confirm = match content.get("confirm") {
            Some(Value::Bool(b)) => *b,
            _ => {
                return Err(bad("confirm"));
            }
        };
        Ok(Self { note_id, confirm })
    }
}

/// The one place that builds a `FormError` (its constructor is owned by `form`).
pub fn bad(field: &str) -> FormError {
    FormError::new(field, mcp_runtime::form::FormProblem::Missing)
}

/// A second form with no choices, for multi-key and multi-round flows.
#[derive(Debug)]
pub struct Reason {
    pub text: String,
}

impl ElicitForm for Reason {
    type Choices = ();
    fn choices() {}
    fn requested_schema(_: &()) -> RequestedSchema {
        serde_json::from_value(json!({
            "type": "object",
            "properties": {"text": {"type": "string"}},
            "required": ["text"]
        }))
        .unwrap()
    }
    fn from_content(content: &JsonObject, _: &()) -> Result<Self, FormError> {
        match content.get("text") {
            Some(Value::String(s)) => Ok(Self { text: s.clone() }),
            _ => Err(bad("text")),
        }
    }
}

/// Counts side effects (deletions) so tests can prove "no side effect".
#[derive(Clone, Default)]
pub struct Effects(pub Arc<AtomicUsize>);

impl Effects {
    pub fn count(&self) -> usize {
        self.0.load(Ordering::SeqCst)
    }
}

fn schema(props: Value) -> InputSchema {
    let Value::Object(o) = json!({"type": "object", "properties": props}) else {
        unreachable!()
    };
    InputSchema::new(o).unwrap()
}

/// `delete`: arguments `{title}`; offers the notes whose id contains `title` (the candidate
/// set comes from the arguments plus `extra_note` app state, so tests can change it).
pub struct DeleteTool {
    tool: Tool,
    caps: ClientCapabilities,
}

impl Default for DeleteTool {
    fn default() -> Self {
        let mut tool = Tool::new("delete", schema(json!({"title": {"type": "string"}})));
        tool.description = Some("Delete a note after confirmation".into());
        Self {
            tool,
            caps: ClientCapabilities::none().with_elicitation(ElicitationCapability::form()),
        }
    }
}

/// Candidate notes, shared so a test can change the set between legs.
#[derive(Clone, Default)]
pub struct Notes(pub Arc<std::sync::Mutex<Vec<String>>>);

impl ToolHandler for DeleteTool {
    fn descriptor(&self) -> &Tool {
        &self.tool
    }
    fn required_capabilities(&self) -> &ClientCapabilities {
        &self.caps
    }
    fn call<'a>(
        &'a self,
        ctx: &'a mut RequestContext,
        args: JsonObject,
    ) -> BoxFuture<'a, Result<CallToolResult, HandlerError>> {
        Box::pin(async move {
            let Some(Value::String(title)) = args.get("title") else {
                return Err(HandlerError::invalid_arguments("`title` must be a string"));
            };
            let effects = ctx.state::<Effects>()?;
            let notes = ctx.state::<Notes>()?;
            let ids: Vec<String> = notes
                .0
                .lock()
                .unwrap()
                .iter()
                .filter(|n| n.contains(title.as_str()))
                .cloned()
                .collect();
            if ids.is_empty() {
                return Err(HandlerError::tool(format!("No note matches {title:?}")));
            }
            let choices = DeleteChoices { ids };
            match ctx
                .elicit::<DeleteChoice>("delete_choice", "Which note should I delete?", choices)
                .await?
            {
                Elicitation::Accepted(c) if c.confirm => {
                    effects.0.fetch_add(1, Ordering::SeqCst);
                    Ok(format!("Deleted {}", c.note_id)).into_call_tool_result()
                }
                Elicitation::Accepted(_) | Elicitation::Declined => {
                    "Nothing deleted.".into_call_tool_result()
                }
                Elicitation::Cancelled => Err(HandlerError::tool("Cancelled; nothing deleted.")),
            }
        })
    }
}

/// `plain`: no inputs; echoes its `text` argument.
pub struct PlainTool(Tool, ClientCapabilities);

impl Default for PlainTool {
    fn default() -> Self {
        Self(
            Tool::new("plain", schema(json!({"text": {"type": "string"}}))),
            ClientCapabilities::none(),
        )
    }
}

impl ToolHandler for PlainTool {
    fn descriptor(&self) -> &Tool {
        &self.0
    }
    fn required_capabilities(&self) -> &ClientCapabilities {
        &self.1
    }
    fn call<'a>(
        &'a self,
        ctx: &'a mut RequestContext,
        args: JsonObject,
    ) -> BoxFuture<'a, Result<CallToolResult, HandlerError>> {
        Box::pin(async move {
            ctx.progress(1, Some(2), Some("halfway")).await;
            ctx.log(LoggingLevel::Info, json!("plain ran")).await;
            ctx.log(LoggingLevel::Debug, json!("debug detail")).await;
            match args.get("text") {
                Some(Value::String(s)) => s.clone().into_call_tool_result(),
                _ => Err(HandlerError::invalid_arguments("`text` must be a string")),
            }
        })
    }
}

pub fn caps_form() -> Value {
    json!({"elicitation": {"form": {}}})
}

pub fn meta(caps: Value) -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": caps,
    })
}

pub fn request(id: i64, method: &str, params: Value) -> Vec<u8> {
    serde_json::to_vec(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
        .unwrap()
}

pub fn call(id: i64, tool: &str, args: Value, caps: Value) -> Vec<u8> {
    request(
        id,
        "tools/call",
        json!({"_meta": meta(caps), "name": tool, "arguments": args}),
    )
}

pub fn retry(
    id: i64,
    tool: &str,
    args: Value,
    caps: Value,
    state: &str,
    responses: Value,
) -> Vec<u8> {
    request(
        id,
        "tools/call",
        json!({"_meta": meta(caps), "name": tool, "arguments": args,
               "requestState": state, "inputResponses": responses}),
    )
}

pub fn parse(bytes: Option<Vec<u8>>) -> Value {
    serde_json::from_slice(&bytes.expect("a response")).unwrap()
}

pub fn notes(ids: &[&str]) -> Notes {
    Notes(Arc::new(std::sync::Mutex::new(
        ids.iter().map(|s| (*s).to_owned()).collect(),
    )))
}
