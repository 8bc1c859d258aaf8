//! A crate whose only dependency is `mcp-runtime`, holding the tools a new user writes first,
//! as the README shows them: documented parameters, an `#[args]` struct with a nested enum, a
//! form, state. It builds only because `#[args]` and the form derive reach serde and schemars
//! through the runtime; `mcp-tests` (`tests/runtime_only.rs`) calls the tools.

use std::sync::{Arc, Mutex, PoisonError};

use mcp_runtime::prelude::*;
use mcp_runtime::server::BuildError;

/// Note titles, in memory.
#[derive(Clone, Default)]
pub struct Notes(Arc<Mutex<Vec<String>>>);

impl Notes {
    /// Notes with these titles.
    pub fn with(titles: &[&str]) -> Self {
        Notes(Arc::new(Mutex::new(
            titles.iter().map(|t| (*t).to_owned()).collect(),
        )))
    }

    fn titles(&self) -> Vec<String> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn matching(&self, text: &str) -> Vec<String> {
        let text = text.to_lowercase();
        self.titles()
            .into_iter()
            .filter(|t| t.to_lowercase().contains(&text))
            .collect()
    }

    fn delete(&self, title: &str) {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .retain(|t| t != title);
    }
}

/// How `notes_list` sorts.
#[args]
#[serde(rename_all = "lowercase")]
pub enum Order {
    /// A to Z.
    Ascending,
    /// Z to A.
    Descending,
}

/// The arguments of `notes_list`.
#[args]
#[serde(rename_all = "camelCase")]
pub struct ListArgs {
    /// Text the titles must contain (case-insensitive)
    pub title_contains: Option<String>,
    /// Sort order (default ascending)
    #[serde(default)]
    pub order: Option<Order>,
}

/// Lists the note titles, one per line.
#[tool(read_only)]
pub fn notes_list(State(notes): State<Notes>, args: ListArgs) -> String {
    let mut titles = notes.matching(args.title_contains.as_deref().unwrap_or(""));
    titles.sort();
    if let Some(Order::Descending) = args.order {
        titles.reverse();
    }
    titles.join("\n")
}

/// The form `notes_delete` asks.
#[derive(ElicitForm)]
pub struct DeleteChoice {
    /// Which note to delete
    #[form(choices)]
    pub note_id: String,
    /// Yes, delete it
    pub confirm: bool,
}

/// Delete one note whose title contains `title`, after the user picks it and confirms.
#[tool(destructive, requires(form_elicitation))]
pub async fn notes_delete(
    ctx: &mut RequestContext,
    State(notes): State<Notes>,
    /// Text the note title must contain (case-insensitive)
    title: String,
) -> ToolResult<String> {
    let candidates = notes.matching(&title);
    if candidates.is_empty() {
        return Err(HandlerError::tool(format!(
            "No note title contains {title:?}."
        )));
    }
    let choices = DeleteChoice::choices().note_id(candidates);
    let answer = ctx.elicit::<DeleteChoice>("delete_choice", "Which note?", choices);
    match answer.await? {
        Elicitation::Accepted(c) if c.confirm => {
            notes.delete(&c.note_id);
            Ok(format!("Deleted {}.", c.note_id))
        }
        Elicitation::Cancelled => Err(HandlerError::tool("Cancelled; nothing was deleted.")),
        _ => Ok("Nothing was deleted.".into()),
    }
}

/// A server with both tools over `notes`.
pub fn server(notes: Notes) -> Result<Server, BuildError> {
    Server::builder(Implementation::new("runtime-only", "0.1.0"))
        .tools(tools![notes_list, notes_delete])
        .state(notes)
        .build()
}
