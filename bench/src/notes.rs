//! The benchmark contract: four in-memory notes in `file:///workspaces/acme`; `notes_delete`
//! asks which note (form elicitation, signed `requestState`) and, on the accepted retry,
//! reports the deletion without performing it so that a load generator can repeat the retry;
//! `echo` returns its text.
//!
//! Declared with `#[tool]` and `#[derive(ElicitForm)]`, like any user of the framework.
//! Per-request checks are the runtime's own: required client capabilities (form elicitation),
//! the signed state bound to principal, tool and canonical arguments, and the answer re-checked
//! against the choices that were offered. Only the one-time claim is configurable: see
//! [`NoReplay`].

use std::sync::Arc;

use futures::future::BoxFuture;
use mcp_runtime::prelude::*;
use mcp_runtime::replay::{Claim, ClaimOutcome, ClaimWith, ReplayError, ReplayStore};

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
#[args]
#[derive(Debug)]
#[serde(rename_all = "camelCase")]
pub struct DeleteArgs {
    /// File URI of the workspace, e.g. file:///workspaces/acme
    pub workspace_uri: String,
    /// Text the note title must contain (case-insensitive)
    pub title: String,
}

/// `echo` arguments.
#[args]
#[derive(Debug)]
pub struct EchoArgs {
    /// Text to echo back
    pub text: String,
}

/// The delete confirmation form: which note, and a confirm box.
#[derive(Debug, ElicitForm)]
pub struct DeleteChoice {
    /// Which note to delete
    #[form(title = "Note", choices)]
    pub note_id: String,
    /// Yes, delete it
    pub confirm: bool,
}

/// Delete a note by title. Asks the user which note when several match.
#[tool(destructive, requires(form_elicitation))]
pub async fn notes_delete(
    ctx: &mut RequestContext,
    State(notes): State<Notes>,
    args: DeleteArgs,
) -> Result<String, HandlerError> {
    let needle = args.title.to_lowercase();
    let hits: Vec<&Note> = notes
        .0
        .iter()
        .filter(|n| n.workspace_uri == args.workspace_uri)
        .filter(|n| n.title.to_lowercase().contains(&needle))
        .collect();
    if hits.is_empty() {
        return Err(HandlerError::tool(format!(
            "No note titled {:?} in {}",
            args.title, args.workspace_uri
        )));
    }
    let choices = DeleteChoice::choices().note_id(
        hits.iter()
            .map(|n| (n.id.clone(), format!("{} ({}): {}", n.title, n.id, n.body))),
    );
    // Built only on the pass that sends the question (see `AskMessage`).
    let message = || question(hits.len(), &args);
    match ctx
        .elicit::<DeleteChoice>(INPUT_KEY, message, choices)
        .await?
    {
        Elicitation::Accepted(c) if c.confirm => {
            let note = chosen(&hits, &c.note_id)?;
            // Benchmark mode: report the deletion without removing the note.
            Ok(format!(
                "Deleted {} ({:?}) from {}.",
                note.id, note.title, note.workspace_uri
            ))
        }
        other => not_deleted(other),
    }
}

/// The question `notes_delete` asks when `matches` notes match.
pub(crate) fn question(matches: usize, args: &DeleteArgs) -> String {
    format!(
        "{matches} notes match {:?} in {}. Which one should be deleted?",
        args.title, args.workspace_uri
    )
}

/// The note among `hits` the user chose.
pub(crate) fn chosen<'a>(hits: &[&'a Note], id: &str) -> Result<&'a Note, HandlerError> {
    hits.iter()
        .copied()
        .find(|n| n.id == id)
        .ok_or_else(|| HandlerError::tool("note no longer exists"))
}

/// `notes_delete`'s reply to any answer but a confirmed choice.
pub(crate) fn not_deleted(answer: Elicitation<DeleteChoice>) -> Result<String, HandlerError> {
    match answer {
        Elicitation::Accepted(c) if c.confirm => Err(HandlerError::tool(
            "bench tool bug: a confirmed choice reached the reply for the other answers",
        )),
        Elicitation::Accepted(c) => Ok(format!("Kept {}: deletion not confirmed.", c.note_id)),
        Elicitation::Declined => Ok("Deletion declined; nothing was deleted.".to_owned()),
        Elicitation::Cancelled => Err(HandlerError::tool(
            "Deletion cancelled; nothing was deleted.",
        )),
    }
}

/// Echo the given text back
#[tool(read_only)]
pub async fn echo(args: EchoArgs) -> String {
    args.text
}

/// A replay store that never refuses: every claim succeeds, so one accepted retry can be
/// replayed by a load generator. **Benchmark only**: it removes the one-time guarantee.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoReplay;

impl ReplayStore for NoReplay {
    fn claim<'a>(&'a self, claim: Claim<'a>) -> BoxFuture<'a, Result<ClaimOutcome, ReplayError>> {
        let result = match claim.work {
            ClaimWith::Nothing => Ok(ClaimOutcome::Claimed),
            ClaimWith::During(action) => action()
                .map(|()| ClaimOutcome::Claimed)
                .map_err(ReplayError::ActionFailed),
            ClaimWith::InTx(work) => Err(work.mismatch(self.name())),
            _ => Err(ReplayError::backend(
                "no-replay",
                "claiming",
                "unknown kind of claim work",
            )),
        };
        Box::pin(async move { result })
    }

    fn prune_expired(&self) -> BoxFuture<'_, Result<u64, ReplayError>> {
        Box::pin(async { Ok(0) })
    }
}
