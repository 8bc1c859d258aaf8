//! `notes_export`: every note of a workspace in one Markdown bundle. A long-running tool with
//! optional task support (`#[tool(task)]`): a client that declares the tasks extension gets a
//! task to poll, any other client waits for the plain result.

use mcp_runtime::prelude::*;
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};

use crate::backend::NotesStore;

/// Characters escaped in a note id put into a `file:` URI path (`/` separates segments).
const PATH: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'/')
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// The bundle's size limit: the export stops (saying so) rather than grow without bound.
pub const MAX_BUNDLE_BYTES: usize = 8 * 1024 * 1024;

/// Arguments of `notes_export`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ExportArgs {
    /// File URI of the workspace, e.g. file:///home/me/notes
    pub workspace_uri: String,
}

/// Export every note of a workspace as one Markdown bundle (one section per note, in id
/// order). Can take a while on a large workspace: clients that support tasks get a task.
#[tool(read_only, task)]
pub async fn notes_export(
    ctx: &mut RequestContext,
    State(notes): State<NotesStore>,
    args: ExportArgs,
) -> Result<String, HandlerError> {
    let (uri, listed) = notes.list(ctx.principal(), &args.workspace_uri).await?;
    let total = u64::try_from(listed.len()).unwrap_or(u64::MAX);
    let base = uri.to_string();
    let base = base.trim_end_matches('/');
    let mut bundle = format!("# Notes of {base}\n");
    for (done, note) in (0u64..).zip(listed.iter()) {
        // tasks/cancel (or the client leaving a plain call) stops the export between notes.
        if ctx.is_cancelled() {
            return Err(HandlerError::tool(format!(
                "export cancelled after {done} of {total} notes"
            )));
        }
        ctx.progress(done, Some(total), Some(&note.id)).await;
        let note_uri = format!("{base}/{}", utf8_percent_encode(&note.id, PATH));
        let (_, text) = notes.read_note_uri(ctx.principal(), &note_uri).await?;
        if bundle.len() + text.len() > MAX_BUNDLE_BYTES {
            bundle.push_str(&format!(
                "\n(export stopped at {done} of {total} notes: the bundle reached its {MAX_BUNDLE_BYTES}-byte limit)\n"
            ));
            return Ok(bundle);
        }
        bundle.push_str(&format!(
            "\n---\n\n<!-- {} -->\n\n{}\n",
            note.id,
            text.trim_end()
        ));
        // Let other work run between notes: a large export must not hog a worker thread.
        tokio::task::yield_now().await;
    }
    ctx.progress(total, Some(total), Some("done")).await;
    Ok(bundle)
}
