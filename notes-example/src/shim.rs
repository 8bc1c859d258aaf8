//! TEMPORARY: hand-written `ToolHandler`/`ElicitForm` impls standing in for `#[tool]` and
//! `#[derive(ElicitForm)]` until mcp-macros lands on main. Delete this module then.
#![allow(non_camel_case_types, missing_docs)]

use std::sync::OnceLock;

use futures::future::BoxFuture;
use mcp_runtime::prelude::*;
use mcp_types::{
    BooleanSchema, ClientCapabilities, ElicitationCapability, EnumOption, InputSchema, JsonObject,
    PrimitiveSchemaDefinition, RequestedSchema, TitledSingleSelectEnumSchema, Tool,
    ToolAnnotations,
};
use serde_json::Value;

use crate::tools::{DeleteArgs, DeleteChoice, ListArgs, NoteList};

#[derive(Debug, Default)]
pub struct DeleteChoiceChoices {
    note_id: Vec<(String, String)>,
}

impl DeleteChoiceChoices {
    pub fn note_id(mut self, items: impl IntoIterator<Item = (String, String)>) -> Self {
        self.note_id = items.into_iter().collect();
        self
    }
}

impl DeleteChoice {
    pub fn choices() -> DeleteChoiceChoices {
        DeleteChoiceChoices::default()
    }
}

impl ElicitForm for DeleteChoice {
    type Choices = DeleteChoiceChoices;
    fn choices() -> Self::Choices {
        DeleteChoiceChoices::default()
    }
    fn requested_schema(choices: &Self::Choices) -> RequestedSchema {
        let mut select: TitledSingleSelectEnumSchema = serde_json::from_value(serde_json::json!({
            "type": "string", "oneOf": [], "title": "Note", "description": "Which note to delete"
        }))
        .unwrap_or_else(|_| unreachable!());
        select.one_of = choices
            .note_id
            .iter()
            .map(|(v, t)| EnumOption::new(v.clone(), t.clone()))
            .collect();
        let mut confirm = BooleanSchema::new();
        confirm.description = Some("Yes, delete it".into());
        RequestedSchema::new()
            .field(
                "note_id",
                PrimitiveSchemaDefinition::TitledSingleSelect(select),
                true,
            )
            .field("confirm", PrimitiveSchemaDefinition::Boolean(confirm), true)
    }
    fn from_content(content: &JsonObject, choices: &Self::Choices) -> Result<Self, FormError> {
        let err = |field: &str, message: &str| FormError {
            field: field.into(),
            message: message.into(),
        };
        let note_id = match content.get("note_id") {
            Some(Value::String(s)) => s.clone(),
            _ => return Err(err("note_id", "a string is required")),
        };
        if !choices.note_id.iter().any(|(v, _)| *v == note_id) {
            return Err(err("note_id", "not one of the offered choices"));
        }
        let confirm = match content.get("confirm") {
            Some(Value::Bool(b)) => *b,
            _ => return Err(err("confirm", "a boolean is required")),
        };
        Ok(Self { note_id, confirm })
    }
}

fn schema_object<T: JsonSchema>() -> JsonObject {
    match serde_json::to_value(schemars::schema_for!(T)) {
        Ok(Value::Object(mut m)) => {
            m.remove("$schema");
            m.remove("title");
            m
        }
        _ => JsonObject::new(),
    }
}

fn args<T: serde::de::DeserializeOwned>(a: JsonObject) -> Result<T, ToolError> {
    serde_json::from_value(Value::Object(a))
        .map_err(|e| ToolError::invalid_arguments(e.to_string()))
}

#[derive(Default, Clone, Copy)]
pub struct notes_list {}

impl ToolHandler for notes_list {
    fn descriptor(&self) -> &Tool {
        static D: OnceLock<Tool> = OnceLock::new();
        D.get_or_init(|| {
            let mut t = Tool::new(
                "notes_list",
                InputSchema::new(schema_object::<ListArgs>())
                    .unwrap_or_else(|_| InputSchema::empty_object()),
            );
            t.description = Some(
                "List the notes (Markdown files) in a workspace, with their ids and titles.".into(),
            );
            t.output_schema = Some(schema_object::<NoteList>());
            t.annotations = Some(ToolAnnotations {
                read_only_hint: Some(true),
                ..ToolAnnotations::default()
            });
            t
        })
    }
    fn required_capabilities(&self) -> &ClientCapabilities {
        static C: OnceLock<ClientCapabilities> = OnceLock::new();
        C.get_or_init(ClientCapabilities::none)
    }
    fn call<'a>(
        &'a self,
        ctx: &'a mut ToolContext,
        a: JsonObject,
    ) -> BoxFuture<'a, Result<CallToolResult, ToolError>> {
        Box::pin(async move {
            let a = args::<ListArgs>(a)?;
            let State(notes) = State::from_context(ctx)?;
            crate::tools::notes_list(ctx, State(notes), a)
                .await
                .into_call_tool_result()
        })
    }
}

#[derive(Default, Clone, Copy)]
pub struct notes_delete {}

impl ToolHandler for notes_delete {
    fn descriptor(&self) -> &Tool {
        static D: OnceLock<Tool> = OnceLock::new();
        D.get_or_init(|| {
            let mut t = Tool::new(
                "notes_delete",
                InputSchema::new(schema_object::<DeleteArgs>()).unwrap_or_else(|_| InputSchema::empty_object()),
            );
            t.description = Some("Delete one note whose title contains the given text, after the user picks which one and confirms.".into());
            t.annotations = Some(ToolAnnotations {
                read_only_hint: Some(false),
                destructive_hint: Some(true),
                ..ToolAnnotations::default()
            });
            t
        })
    }
    fn required_capabilities(&self) -> &ClientCapabilities {
        static C: OnceLock<ClientCapabilities> = OnceLock::new();
        C.get_or_init(|| ClientCapabilities::none().with_elicitation(ElicitationCapability::form()))
    }
    fn call<'a>(
        &'a self,
        ctx: &'a mut ToolContext,
        a: JsonObject,
    ) -> BoxFuture<'a, Result<CallToolResult, ToolError>> {
        Box::pin(async move {
            let a = args::<DeleteArgs>(a)?;
            let State(notes) = State::from_context(ctx)?;
            crate::tools::notes_delete(ctx, State(notes), a)
                .await
                .into_call_tool_result()
        })
    }
}
