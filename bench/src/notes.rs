//! The benchmark contract: four in-memory notes in `file:///workspaces/acme`; `notes_delete`
//! asks which note (form elicitation, signed `requestState`) and, on the accepted retry,
//! reports the deletion without performing it so that a load generator can repeat the retry;
//! `echo` returns its text.
//!
//! Per-request checks are the runtime's own: required client capabilities (form elicitation),
//! the signed state bound to principal, tool and canonical arguments, and the answer re-checked
//! against the choices that were offered. Only the one-time claim is configurable: see
//! [`NoReplay`].

use std::sync::Arc;
use std::time::SystemTime;

use futures::future::BoxFuture;
use mcp_runtime::context::{ElicitForm, Elicitation, FormError, ToolContext};
use mcp_runtime::replay::{ClaimAction, ClaimOutcome, Nonce, ReplayError, ReplayStore};
use mcp_runtime::tool::{IntoCallToolResult, ToolError, ToolHandler};
use mcp_types::{
    BooleanSchema, CallToolResult, ClientCapabilities, ElicitationCapability, EnumOption,
    InputSchema, JsonObject, RequestedSchema, StringType, TitledSingleSelectEnumSchema, Tool,
    ToolAnnotations,
};
use serde::Deserialize;
use serde_json::Value;

/// The one workspace the benchmark notes live in.
pub const WORKSPACE: &str = "file:///workspaces/acme";

/// Input key of the delete confirmation.
pub const INPUT_KEY: &str = "delete_choice";

/// One note.
#[derive(Debug, Clone)]
pub struct Note {
    /// Stable id, e.g. `note-14`.
    pub id: String,
    /// Workspace URI it belongs to.
    pub workspace_uri: String,
    /// Title.
    pub title: String,
    /// Body text.
    pub body: String,
}

/// The notes, shared read-only (nothing is deleted in benchmark mode).
#[derive(Debug, Clone)]
pub struct Notes(pub Arc<Vec<Note>>);

impl Notes {
    /// The four benchmark notes.
    pub fn demo() -> Self {
        let notes = [
            (
                "note-3",
                "TPS report",
                "Q2 TPS report, cover sheet missing.",
            ),
            (
                "note-14",
                "TPS report",
                "Q3 TPS report with the new cover sheet.",
            ),
            (
                "note-22",
                "TPS report (draft)",
                "Draft of the Q4 TPS report.",
            ),
            ("note-9", "Lunch order", "Friday: pizza."),
        ];
        Self(Arc::new(
            notes
                .into_iter()
                .map(|(id, title, body)| Note {
                    id: id.to_owned(),
                    workspace_uri: WORKSPACE.to_owned(),
                    title: title.to_owned(),
                    body: body.to_owned(),
                })
                .collect(),
        ))
    }
}

/// `notes_delete` arguments.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DeleteArgs {
    /// File URI of the workspace, e.g. file:///workspaces/acme
    pub workspace_uri: String,
    /// Text the note title must contain (case-insensitive)
    pub title: String,
}

/// `echo` arguments.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct EchoArgs {
    /// Text to echo back
    pub text: String,
}

/// The delete confirmation form: which note, and a confirm box.
#[derive(Debug)]
pub struct DeleteChoice {
    /// The chosen note id (one of the offered choices).
    pub note_id: String,
    /// Whether the user confirmed.
    pub confirm: bool,
}

impl ElicitForm for DeleteChoice {
    /// `(id, label)` of each offered note.
    type Choices = Vec<(String, String)>;

    fn choices() -> Self::Choices {
        Vec::new()
    }

    fn requested_schema(choices: &Self::Choices) -> RequestedSchema {
        let note = TitledSingleSelectEnumSchema {
            kind: StringType,
            title: Some("Note".to_owned()),
            description: Some("Which note to delete".to_owned()),
            one_of: choices
                .iter()
                .map(|(id, label)| EnumOption::new(id.clone(), label.clone()))
                .collect(),
            default: None,
            extra: JsonObject::new(),
        };
        let mut confirm = BooleanSchema::new();
        confirm.title = Some("Confirm deletion".to_owned());
        confirm.description = Some("Deletion cannot be undone".to_owned());
        RequestedSchema::new()
            .field(
                "note_id",
                mcp_types::PrimitiveSchemaDefinition::TitledSingleSelect(note),
                true,
            )
            .field("confirm", confirm, true)
    }

    fn from_content(content: &JsonObject, choices: &Self::Choices) -> Result<Self, FormError> {
        let note_id = match content.get("note_id") {
            Some(Value::String(id)) => id,
            _ => return Err(form_error("note_id", "required, a string")),
        };
        if !choices.iter().any(|(id, _)| id == note_id) {
            return Err(form_error("note_id", "not one of the offered notes"));
        }
        let confirm = match content.get("confirm") {
            Some(Value::Bool(b)) => *b,
            _ => return Err(form_error("confirm", "required, true or false")),
        };
        Ok(Self {
            note_id: note_id.clone(),
            confirm,
        })
    }
}

fn form_error(field: &str, message: &str) -> FormError {
    FormError {
        field: field.to_owned(),
        message: message.to_owned(),
    }
}

/// Input schema of `T`, generated once at registration (root `type: object`).
fn input_schema<T: schemars::JsonSchema>() -> InputSchema {
    let schema = schemars::SchemaGenerator::default().into_root_schema_for::<T>();
    match serde_json::to_value(schema) {
        Ok(Value::Object(mut obj)) => {
            obj.remove("$schema");
            InputSchema::new(obj).unwrap_or_else(|_| InputSchema::empty_object())
        }
        _ => InputSchema::empty_object(),
    }
}

fn parse_args<T: serde::de::DeserializeOwned>(args: JsonObject) -> Result<T, ToolError> {
    serde_json::from_value(Value::Object(args))
        .map_err(|e| ToolError::invalid_arguments(format!("invalid arguments: {e}")))
}

/// `notes_delete`: asks which matching note to delete, then reports it (benchmark mode: the
/// note is kept so the retry can repeat).
pub struct NotesDelete {
    descriptor: Tool,
    requires: ClientCapabilities,
}

impl Default for NotesDelete {
    fn default() -> Self {
        let mut descriptor = Tool::new("notes_delete", input_schema::<DeleteArgs>());
        descriptor.description =
            Some("Delete a note by title. Asks the user which note when several match.".to_owned());
        descriptor.annotations = Some(ToolAnnotations {
            destructive_hint: Some(true),
            ..ToolAnnotations::default()
        });
        Self {
            descriptor,
            requires: ClientCapabilities::none().with_elicitation(ElicitationCapability::form()),
        }
    }
}

async fn notes_delete(ctx: &mut ToolContext, args: DeleteArgs) -> Result<String, ToolError> {
    let notes = ctx.state::<Notes>()?;
    let needle = args.title.to_lowercase();
    let hits: Vec<&Note> = notes
        .0
        .iter()
        .filter(|n| n.workspace_uri == args.workspace_uri)
        .filter(|n| n.title.to_lowercase().contains(&needle))
        .collect();
    if hits.is_empty() {
        return Err(ToolError::tool(format!(
            "No note titled {:?} in {}",
            args.title, args.workspace_uri
        )));
    }
    let choices: Vec<(String, String)> = hits
        .iter()
        .map(|n| (n.id.clone(), format!("{} ({}): {}", n.title, n.id, n.body)))
        .collect();
    let message = format!(
        "{} notes match {:?} in {}. Which one should be deleted?",
        hits.len(),
        args.title,
        args.workspace_uri
    );
    match ctx
        .elicit::<DeleteChoice>(INPUT_KEY, message, choices)
        .await?
    {
        Elicitation::Accepted(c) if c.confirm => {
            let note = hits
                .iter()
                .find(|n| n.id == c.note_id)
                .ok_or_else(|| ToolError::tool("note no longer exists"))?;
            // Benchmark mode: report the deletion without removing the note.
            Ok(format!(
                "Deleted {} ({:?}) from {}.",
                note.id, note.title, note.workspace_uri
            ))
        }
        Elicitation::Accepted(c) => Ok(format!("Kept {}: deletion not confirmed.", c.note_id)),
        Elicitation::Declined => Ok("Deletion declined; nothing was deleted.".to_owned()),
        Elicitation::Cancelled => Err(ToolError::tool("Deletion cancelled; nothing was deleted.")),
    }
}

impl ToolHandler for NotesDelete {
    fn descriptor(&self) -> &Tool {
        &self.descriptor
    }
    fn required_capabilities(&self) -> &ClientCapabilities {
        &self.requires
    }
    fn call<'a>(
        &'a self,
        ctx: &'a mut ToolContext,
        args: JsonObject,
    ) -> BoxFuture<'a, Result<CallToolResult, ToolError>> {
        Box::pin(async move {
            let args = parse_args::<DeleteArgs>(args)?;
            notes_delete(ctx, args).await?.into_call_tool_result()
        })
    }
}

/// `echo`: returns its text.
pub struct Echo {
    descriptor: Tool,
    requires: ClientCapabilities,
}

impl Default for Echo {
    fn default() -> Self {
        let mut descriptor = Tool::new("echo", input_schema::<EchoArgs>());
        descriptor.description = Some("Echo the given text back".to_owned());
        Self {
            descriptor,
            requires: ClientCapabilities::none(),
        }
    }
}

impl ToolHandler for Echo {
    fn descriptor(&self) -> &Tool {
        &self.descriptor
    }
    fn required_capabilities(&self) -> &ClientCapabilities {
        &self.requires
    }
    fn call<'a>(
        &'a self,
        _ctx: &'a mut ToolContext,
        args: JsonObject,
    ) -> BoxFuture<'a, Result<CallToolResult, ToolError>> {
        Box::pin(async move { parse_args::<EchoArgs>(args)?.text.into_call_tool_result() })
    }
}

/// A replay store that never refuses: every claim succeeds, so one accepted retry can be
/// replayed by a load generator. **Benchmark only**: it removes the one-time guarantee.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoReplay;

impl ReplayStore for NoReplay {
    fn claim(
        &self,
        _nonce: Nonce,
        _expires_at: SystemTime,
    ) -> BoxFuture<'_, Result<ClaimOutcome, ReplayError>> {
        Box::pin(async { Ok(ClaimOutcome::Claimed) })
    }

    fn claim_with(
        &self,
        _nonce: Nonce,
        _expires_at: SystemTime,
        action: ClaimAction,
    ) -> BoxFuture<'_, Result<ClaimOutcome, ReplayError>> {
        Box::pin(async move {
            action().map_err(ReplayError::ActionFailed)?;
            Ok(ClaimOutcome::Claimed)
        })
    }

    fn prune_expired(&self) -> BoxFuture<'_, Result<u64, ReplayError>> {
        Box::pin(async { Ok(0) })
    }
}
