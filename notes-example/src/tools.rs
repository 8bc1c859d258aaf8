//! The MCP tools `notes_list` and `notes_delete`, declared with `#[tool]`, and the `note`
//! resource template (`file://{+path}`), declared with `#[resource]`.
//!
//! Neither tool trusts anything but its arguments and the authenticated principal: the
//! workspace URI is authorized for that principal on every call (first leg and retry alike),
//! and a deletion happens only under the runtime's one-time claim of the signed confirmation.

use mcp_runtime::prelude::*;
use mcp_runtime::replay::ClaimWork;
use mcp_runtime::resource::ResourceUri;

use mcp_runtime::scope::FsError;

use crate::backend::NotesStore;
use crate::notes::{Note, NotesError, title_matches};

/// The `elicitation/create` key of the deletion form.
pub const DELETE_CHOICE_KEY: &str = "delete_choice";

impl From<NotesError> for HandlerError {
    fn from(e: NotesError) -> Self {
        match e {
            // Only reads fail this way here (a deletion's own failures go through its claim):
            // nothing was changed, and the database may be back by the next try.
            NotesError::Backend(_) => {
                HandlerError::tool(format!("{e}; nothing was changed, retry later"))
            }
            e => HandlerError::tool(e.to_string()),
        }
    }
}

/// Arguments of `notes_list`.
#[args]
#[derive(Debug)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ListArgs {
    /// File URI of the workspace, e.g. file:///home/me/notes
    pub workspace_uri: String,
}

/// What `notes_list` returns.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NoteList {
    /// The workspace's canonical file URI.
    pub workspace_uri: String,
    /// Every note in the workspace, sorted by id.
    pub notes: Vec<Note>,
}

/// Arguments of `notes_delete`.
#[args]
#[derive(Debug)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DeleteArgs {
    /// File URI of the workspace, e.g. file:///home/me/notes
    pub workspace_uri: String,
    /// Text the note title must contain (case-insensitive)
    pub title: String,
}

/// The confirmation form: which of the matching notes, and a yes.
#[derive(Debug, ElicitForm)]
pub struct DeleteChoice {
    /// Which note to delete
    #[form(title = "Note", choices)]
    pub note_id: String,
    /// Yes, delete it
    pub confirm: bool,
}

/// List the notes (Markdown files) in a workspace, with their ids and titles.
#[tool(read_only)]
pub async fn notes_list(
    ctx: &mut RequestContext,
    State(notes): State<NotesStore>,
    args: ListArgs,
) -> Result<Json<NoteList>, HandlerError> {
    let (uri, listed) = notes.list(ctx.principal(), &args.workspace_uri).await?;
    Ok(Json(NoteList {
        workspace_uri: uri.to_string(),
        notes: listed,
    }))
}

/// Delete one note whose title contains the given text, after the user picks which one and
/// confirms. Always asks, even when only one note matches.
#[tool(destructive, requires(form_elicitation))]
pub async fn notes_delete(
    ctx: &mut RequestContext,
    State(notes): State<NotesStore>,
    args: DeleteArgs,
) -> Result<String, HandlerError> {
    let (_, listed) = notes.list(ctx.principal(), &args.workspace_uri).await?;
    let hits: Vec<Note> = listed
        .into_iter()
        .filter(|n| title_matches(&n.title, &args.title))
        .collect();
    if hits.is_empty() {
        return Err(HandlerError::tool(format!(
            "No note title contains {:?}; nothing was deleted. Call notes_list to see the titles.",
            args.title
        )));
    }
    // A closure: the message is built only on a pass that sends the question, not on the
    // retry that brings the answer.
    let message = || {
        if hits.len() == 1 {
            format!("Delete the note {:?}?", hits[0].title)
        } else {
            format!(
                "{} notes have a title containing {:?}. Which one should I delete?",
                hits.len(),
                args.title
            )
        }
    };
    let choices =
        DeleteChoice::choices().note_id(hits.iter().map(|n| (n.id.clone(), n.title.clone())));
    // The deletion is bound to the one-time claim: files are unlinked only after the claim
    // has committed (at most once: a failure or crash in between uses the confirmation up and
    // deletes nothing); database notes are deleted *in* the claim's transaction (exactly
    // once), after re-checking authorization, existence and the match. A second use of the
    // same confirmation (on any instance) deletes nothing.
    let principal = ctx.principal().clone();
    let (uri, needle) = (args.workspace_uri.clone(), args.title.clone());
    let outcome = ctx
        .elicit_with_mutation::<DeleteChoice, _, _>(DELETE_CHOICE_KEY, message, choices, move |c| {
            if !c.confirm {
                return ClaimWork::Nothing(None);
            }
            notes
                .delete_mutation(&principal, &uri, &needle, c.note_id)
                .map(Some)
        })
        .await?;
    match outcome {
        Elicitation::Accepted(Some(id)) => Ok(format!("Deleted {id}.")),
        Elicitation::Accepted(None) => {
            Ok("The deletion was not confirmed; nothing was deleted.".to_owned())
        }
        Elicitation::Declined => Ok("You declined; nothing was deleted.".to_owned()),
        Elicitation::Cancelled => Err(HandlerError::tool(
            "The confirmation was cancelled; nothing was deleted. Retry with the same \
             requestState to choose again before it expires.",
        )),
    }
}

/// One note, read by its `file:` URI (a Markdown file inside a workspace you may use), e.g.
/// to show it before deleting it.
#[resource(uri = "file://{+path}", name = "note", mime_type = "text/markdown")]
pub async fn note(
    ctx: &mut RequestContext,
    State(notes): State<NotesStore>,
    ResourceUri(uri): ResourceUri,
) -> Result<String, HandlerError> {
    match notes.read_note_uri(ctx.principal(), &uri).await {
        Ok((_, text)) => Ok(text),
        // Unauthorized, unreachable and missing look the same: the caller learns nothing
        // about files it may not see, not even that a link leads outside or that something
        // other than a note sits at that path.
        Err(
            NotesError::NotInWorkspace { .. }
            | NotesError::Scope(_)
            | NotesError::NotANote { .. }
            | NotesError::InvalidId { .. }
            | NotesError::Fs(
                FsError::NotFound { .. }
                | FsError::Denied { .. }
                | FsError::SymlinkRefused { .. }
                | FsError::NotADirectory { .. }
                | FsError::NotARegularFile { .. },
            ),
        ) => Err(mcp_runtime::resource::not_found(&uri)),
        Err(e) => Err(e.into()),
    }
}

/// The OAuth scope listing and reading notes needs.
pub const SCOPE_READ: &str = "notes:read";
/// The OAuth scope deleting notes needs.
pub const SCOPE_WRITE: &str = "notes:write";

/// Where a notes server keeps its state: the replay claims and, if given, the tasks (the
/// runtime's in-memory task store otherwise). `serve` opens both from the one `--store`
/// spec, so that a task created through one instance can be polled through any other that
/// shares the store.
#[derive(Clone)]
pub struct Stores {
    /// The replay store.
    pub replay: std::sync::Arc<dyn mcp_runtime::replay::ReplayStore>,
    /// The task store (`None`: the runtime's default, one process).
    pub tasks: Option<std::sync::Arc<dyn mcp_runtime::tasks::TaskStore>>,
}

impl From<std::sync::Arc<dyn mcp_runtime::replay::ReplayStore>> for Stores {
    fn from(replay: std::sync::Arc<dyn mcp_runtime::replay::ReplayStore>) -> Self {
        Self {
            replay,
            tasks: None,
        }
    }
}

impl<R: mcp_runtime::replay::ReplayStore + 'static> From<std::sync::Arc<R>> for Stores {
    fn from(replay: std::sync::Arc<R>) -> Self {
        Self {
            replay,
            tasks: None,
        }
    }
}

/// The notes server with a fresh (link-less) connect state; see [`build_server_with`].
pub fn build_server(
    notes: impl Into<NotesStore>,
    keys: mcp_runtime::state::StateKeyring,
    store: impl Into<Stores>,
    state_ttl: std::time::Duration,
) -> Result<Server, mcp_runtime::server::BuildError> {
    build_server_with(
        notes,
        keys,
        store,
        state_ttl,
        crate::connect::ExportConnect::default(),
    )
}

/// The names of the notes server's tools (what `--tool-rate-limit` may name).
pub const TOOL_NAMES: &[&str] = &[
    "notes_list",
    "notes_delete",
    "notes_connect_export",
    "notes_export",
];

/// Limits on `tools/call`: rate limits per principal (`--rate-limit`, `--tool-rate-limit`),
/// counted in the replay store's backend (`--store`) so every instance sharing it enforces
/// one limit (default: none); and how long a resent confirmation waits for a copy still at
/// work (`--duplicate-wait-secs`, default: the runtime's 10 s).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CallLimits {
    /// The rate limit of every tool without one of its own.
    pub default: Option<mcp_runtime::rate_limit::RateLimit>,
    /// Per-tool rate limits; `None` exempts the tool from the default.
    pub tools: Vec<(String, Option<mcp_runtime::rate_limit::RateLimit>)>,
    /// [`mcp_runtime::server::Limits::duplicate_wait`]; `None` keeps the runtime's default.
    pub duplicate_wait: Option<std::time::Duration>,
    /// How often to sweep for abandoned flows
    /// ([`ServerBuilder::count_abandoned_flows`](mcp_runtime::server::ServerBuilder::count_abandoned_flows)),
    /// or `None` not to count them: `serve` counts them when metrics or OTLP export is on.
    pub abandoned_sweep: Option<std::time::Duration>,
}

impl CallLimits {
    /// `builder` with these limits.
    pub fn apply(
        &self,
        builder: mcp_runtime::server::ServerBuilder,
    ) -> mcp_runtime::server::ServerBuilder {
        let builder = match self.duplicate_wait {
            Some(duplicate_wait) => builder
                .limits(mcp_runtime::server::Limits::default().with_duplicate_wait(duplicate_wait)),
            None => builder,
        };
        let builder = match self.default {
            Some(limit) => builder.rate_limit(limit),
            None => builder,
        };
        let builder = match self.abandoned_sweep {
            Some(every) => builder.count_abandoned_flows(every),
            None => builder,
        };
        self.tools
            .iter()
            .fold(builder, |builder, (tool, limit)| match limit {
                Some(limit) => builder.tool_rate_limit(tool.clone(), *limit),
                None => builder.tool_without_rate_limit(tool.clone()),
            })
    }
}

/// The notes server: its tools, the notes state, and the given state keys, stores (replay
/// claims and tasks) and state lifetime, and the connect flow's state; no rate limits.
pub fn build_server_with(
    notes: impl Into<NotesStore>,
    keys: mcp_runtime::state::StateKeyring,
    store: impl Into<Stores>,
    state_ttl: std::time::Duration,
    connect: crate::connect::ExportConnect,
) -> Result<Server, mcp_runtime::server::BuildError> {
    build_server_limited(
        notes,
        keys,
        store,
        state_ttl,
        connect,
        &CallLimits::default(),
    )
}

/// [`build_server_with`], with rate limits on `tools/call`.
pub fn build_server_limited(
    notes: impl Into<NotesStore>,
    keys: mcp_runtime::state::StateKeyring,
    store: impl Into<Stores>,
    state_ttl: std::time::Duration,
    connect: crate::connect::ExportConnect,
    limits: &CallLimits,
) -> Result<Server, mcp_runtime::server::BuildError> {
    // A connect link lives as long as the requestState that carries it.
    connect.set_link_ttl(state_ttl);
    let stores = store.into();
    let builder = Server::builder(Implementation::new(
        "notes-example",
        env!("CARGO_PKG_VERSION"),
    ))
    .tools(
        // notes_export is `#[tool(task)]`: a long export runs as a task for clients that
        // support the tasks extension.
        tools![
            notes_list,
            notes_delete,
            crate::connect::notes_connect_export,
            crate::export::notes_export
        ],
    )
    .resources(resources![note])
    // Every tool and resource declares its scopes, and the build fails if one does not:
    // an OAuth token (--oauth-issuer) is held to them on every transport (403
    // insufficient_scope over HTTP); stdio and --auth-file tokens carry no scopes and are
    // not restricted. notes_delete shows the matching notes' titles before it deletes, so it
    // needs to read as well as write.
    .scoped_authorization()
    .tool_scopes("notes_list", [SCOPE_READ])
    .tool_scopes("notes_delete", [SCOPE_READ, SCOPE_WRITE])
    .tool_scopes("notes_connect_export", [SCOPE_READ])
    .tool_scopes("notes_export", [SCOPE_READ])
    .resource_scopes("file://{+path}", [SCOPE_READ])
    .state::<NotesStore>(notes.into())
    .state(connect)
    .state_keys(keys)
    .replay_store(stores.replay)
    .state_ttl(state_ttl)
    // notes_export's bundle (up to 8 MiB) is over the runtime's default task result cap.
    .max_task_result_bytes(crate::export::MAX_TASK_RESULT_BYTES)
    .instructions(
        "Notes live in workspaces named by file: URIs. notes_list shows ids and titles; \
             notes_delete always asks the user which note and for confirmation; notes_export \
             bundles a workspace into one Markdown text (a task when the client supports \
             tasks).",
    );
    let builder = match stores.tasks {
        Some(tasks) => builder.task_store(tasks),
        None => builder,
    };
    limits.apply(builder).build()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_read_of_the_notes_database_says_nothing_changed_and_to_retry() {
        let e = HandlerError::from(NotesError::Backend(
            "PostgreSQL notes: listing notes: connection closed".into(),
        ));
        assert_eq!(
            e.to_string(),
            "PostgreSQL notes: listing notes: connection closed; nothing was changed, retry later"
        );
        // Other errors keep their own words.
        let e = HandlerError::from(NotesError::NoMatch { needle: "x".into() });
        assert!(!e.to_string().contains("retry"), "{e}");
    }
}
