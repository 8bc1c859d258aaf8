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

/// The bundle's size limit, counted as the bundle travels (JSON-escaped text): the export
/// stops (saying so) rather than grow without bound.
pub const MAX_BUNDLE_BYTES: usize = 8 * 1024 * 1024;

/// The task result cap the notes server sets (`ServerBuilder::max_task_result_bytes`): the
/// largest bundle plus room for the result's envelope and the stop notice, so an export that
/// runs as a task always fits (the runtime's default, 4 MiB, would fail the larger ones).
pub const MAX_TASK_RESULT_BYTES: usize = MAX_BUNDLE_BYTES + 64 * 1024;

/// The length of `text` once JSON-escaped (without the quotes), as `serde_json` writes it:
/// a note full of control characters or quotes grows, and the limit must hold for that.
fn json_len(text: &str) -> usize {
    text.chars()
        .map(|c| match c {
            '"' | '\\' | '\n' | '\r' | '\t' | '\u{8}' | '\u{c}' => 2,
            c if u32::from(c) < 0x20 => 6,
            c => c.len_utf8(),
        })
        .sum()
}

/// Arguments of `notes_export`.
#[args]
#[derive(Debug)]
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
    let mut encoded = json_len(&bundle);
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
        let section = format!("\n---\n\n<!-- {} -->\n\n{}\n", note.id, text.trim_end());
        let section_len = json_len(&section);
        if encoded + section_len > MAX_BUNDLE_BYTES {
            bundle.push_str(&format!(
                "\n(export stopped at {done} of {total} notes: the bundle reached its {MAX_BUNDLE_BYTES}-byte limit)\n"
            ));
            return Ok(bundle);
        }
        encoded += section_len;
        bundle.push_str(&section);
        // Let other work run between notes: a large export must not hog a worker thread.
        tokio::task::yield_now().await;
    }
    ctx.progress(total, Some(total), Some("done")).await;
    Ok(bundle)
}

#[cfg(test)]
mod tests {
    use super::json_len;

    #[test]
    fn json_len_matches_serde_json() {
        for text in [
            "plain",
            "a \"quoted\" \\ line\n\ttab",
            "\u{1}\u{1f}\u{7f} é 📝",
            "",
        ] {
            let encoded = serde_json::to_string(text).unwrap_or_default();
            assert_eq!(json_len(text), encoded.len() - 2, "{text:?}");
        }
    }
}
