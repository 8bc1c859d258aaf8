//! An instrument, not the benchmark: `notes_delete` with its own string work made cheap, to
//! tell the framework's share of an MRTR leg from the tool's.
//!
//! [`crate::notes::notes_delete`] does what the peers' tools do: it lower-cases every title
//! to match, and builds each choice's label and the reply with `format!`. That work is the
//! application's, the same in every SDK, yet a bare HTTP floor does none of it. This variant
//! answers byte for byte the same (same hits, same labels, so the same form and binding,
//! same reply) and checks exactly the same, but matches ASCII titles without allocating and
//! writes its strings with `push_str` into buffers sized up front. Anything outside that
//! easy case (a non-ASCII title or needle, a title that `{:?}` would escape) takes the
//! default tool's code, so the replies never differ.
//!
//! `bench-server` serves it when started with `MCP_BENCH_TOOL=lean`; `bench/README.md`
//! (twenty-fourth pass) says what it measured.

use mcp_runtime::prelude::*;

use crate::notes::{
    DeleteArgs, DeleteChoice, INPUT_KEY, Note, Notes, chosen, not_deleted, question,
};

/// `to_lowercase(haystack).contains(to_lowercase(needle))`, without allocating when both are
/// ASCII (where lower-casing is byte by byte and the two agree).
fn contains_ignoring_case(haystack: &str, needle: &str) -> bool {
    if !(haystack.is_ascii() && needle.is_ascii()) {
        return haystack.to_lowercase().contains(&needle.to_lowercase());
    }
    let (h, n) = (haystack.as_bytes(), needle.as_bytes());
    n.is_empty() || h.windows(n.len()).any(|w| w.eq_ignore_ascii_case(n))
}

/// `format!("{:?}", s)` appended to `out`; quotes and the text itself when nothing in it
/// needs escaping.
fn push_debug(out: &mut String, s: &str) {
    if s.bytes()
        .all(|b| (0x20..0x7f).contains(&b) && b != b'"' && b != b'\\')
    {
        out.push('"');
        out.push_str(s);
        out.push('"');
    } else {
        out.push_str(&format!("{s:?}"));
    }
}

/// `format!("{} ({}): {}", title, id, body)`.
fn label(n: &Note) -> String {
    let mut s = String::with_capacity(n.title.len() + n.id.len() + n.body.len() + 5);
    s.push_str(&n.title);
    s.push_str(" (");
    s.push_str(&n.id);
    s.push_str("): ");
    s.push_str(&n.body);
    s
}

/// Delete a note by title. Asks the user which note when several match.
#[tool(name = "notes_delete", destructive, requires(form_elicitation))]
pub async fn notes_delete_lean(
    ctx: &mut RequestContext,
    State(notes): State<Notes>,
    args: DeleteArgs,
) -> Result<String, HandlerError> {
    let hits: Vec<&Note> = notes
        .0
        .iter()
        .filter(|n| n.workspace_uri == args.workspace_uri)
        .filter(|n| contains_ignoring_case(&n.title, &args.title))
        .collect();
    if hits.is_empty() {
        return Err(HandlerError::tool(format!(
            "No note titled {:?} in {}",
            args.title, args.workspace_uri
        )));
    }
    let choices = DeleteChoice::choices().note_id(hits.iter().map(|n| (n.id.clone(), label(n))));
    let message = || question(hits.len(), &args);
    match ctx
        .elicit::<DeleteChoice>(INPUT_KEY, message, choices)
        .await?
    {
        Elicitation::Accepted(c) if c.confirm => {
            let note = chosen(&hits, &c.note_id)?;
            let mut out = String::with_capacity(
                note.id.len() + note.title.len() + note.workspace_uri.len() + 20,
            );
            out.push_str("Deleted ");
            out.push_str(&note.id);
            out.push_str(" (");
            push_debug(&mut out, &note.title);
            out.push_str(") from ");
            out.push_str(&note.workspace_uri);
            out.push('.');
            Ok(out)
        }
        other => not_deleted(other),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matching_agrees_with_lower_casing() {
        let titles = [
            "TPS report",
            "tps REPORT (draft)",
            "Lunch order",
            "Straße",
            "ÉTÉ",
            "",
        ];
        let needles = [
            "tps", "REPORT", "ort (", "x", "", "STRASSE", "straße", "été", "É",
        ];
        for t in titles {
            for n in needles {
                assert_eq!(
                    contains_ignoring_case(t, n),
                    t.to_lowercase().contains(&n.to_lowercase()),
                    "{t:?} / {n:?}"
                );
            }
        }
    }

    #[test]
    fn strings_agree_with_format() {
        let note = Note {
            id: "note-14".into(),
            workspace_uri: "file:///w".into(),
            title: "TPS \"report\"".into(),
            body: "Q3.".into(),
        };
        assert_eq!(
            label(&note),
            format!("{} ({}): {}", note.title, note.id, note.body)
        );
        for s in [
            "TPS report",
            "say \"hi\"",
            "back\\slash",
            "tab\there",
            "été",
            "",
        ] {
            let mut out = String::new();
            push_debug(&mut out, s);
            assert_eq!(out, format!("{s:?}"));
        }
    }
}
