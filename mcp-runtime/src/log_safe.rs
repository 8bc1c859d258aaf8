//! Client-chosen values in log records, escaped and bounded.
//!
//! A JSON-RPC method, id, tool name, URI or principal name is chosen (or influenced) by the
//! peer. Written raw through `tracing`'s `%` (Display) capture, a `\n` in it starts a new,
//! well-formed-looking log line, a `\r` overwrites the current one on a terminal, and an ANSI
//! escape recolours or hides text. Every such value goes through [`LogSafe`]
//! (`method = %LogSafe(&method)`; the `a_forged_line_stays_one_line` test shows the effect).
//! Internal: the runtime applies it to what it logs; applications choose their own escaping.
//!
//! What it writes:
//! - `\n`, `\r`, `\t` and `\\` as those two-character escapes (the backslash is doubled so an
//!   escape in the log always means the value held a control character, never that the client
//!   typed a backslash);
//! - every other control character (C0, DEL, C1) and the Unicode line/paragraph separators and
//!   bidirectional overrides (which reorder or break lines in editors and terminals) as
//!   `\u{…}` in hex;
//! - at most [`MAX_LOGGED_CHARS`] characters of the value, then `…(+N chars)`, so one
//!   oversized value cannot flood the log.
//!
//! Everything else, printable ASCII and ordinary Unicode text, is written unchanged.

use std::fmt::{self, Write as _};

/// Most characters of one value written to a log record; the rest is counted, not written.
pub const MAX_LOGGED_CHARS: usize = 256;

/// Displays a value with control characters escaped and its length bounded (see the module
/// docs). Wrap every client-controlled value logged with `%`: `method = %LogSafe(&method)`.
#[derive(Debug, Clone, Copy)]
pub struct LogSafe<T>(pub T);

impl<T: fmt::Display> fmt::Display for LogSafe<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut out = Escaper {
            inner: f,
            written: 0,
            dropped: 0,
        };
        write!(out, "{}", self.0)?;
        if out.dropped > 0 {
            write!(out.inner, "…(+{} chars)", out.dropped)?;
        }
        Ok(())
    }
}

/// Escapes as it writes, and counts instead of writing past the bound.
struct Escaper<'a, 'b> {
    inner: &'a mut fmt::Formatter<'b>,
    written: usize,
    dropped: usize,
}

impl fmt::Write for Escaper<'_, '_> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        for c in s.chars() {
            if self.written >= MAX_LOGGED_CHARS {
                self.dropped += 1;
                continue;
            }
            self.written += 1;
            match c {
                '\n' => self.inner.write_str("\\n")?,
                '\r' => self.inner.write_str("\\r")?,
                '\t' => self.inner.write_str("\\t")?,
                '\\' => self.inner.write_str("\\\\")?,
                c if needs_escape(c) => write!(self.inner, "\\u{{{:x}}}", u32::from(c))?,
                c => self.inner.write_char(c)?,
            }
        }
        Ok(())
    }
}

/// Control characters (C0, DEL, C1), line/paragraph separators, and the bidirectional
/// embedding, override and isolate controls.
fn needs_escape(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{2028}' | '\u{2029}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}'
                | '\u{2066}'..='\u{2069}'
        )
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn a_forged_line_stays_one_line() {
        let method = "tools/call\nINFO forged: admin logged in";
        tracing::info!(method = %LogSafe(method), "request");
        assert_eq!(
            LogSafe(method).to_string(),
            r"tools/call\nINFO forged: admin logged in"
        );
    }

    #[test]
    fn escapes_line_breaks_ansi_and_backslashes() {
        assert_eq!(
            LogSafe("a\nb\rc\x1b[31md\\n\u{85}\u{7f}\u{0}\u{202e}").to_string(),
            r"a\nb\rc\u{1b}[31md\\n\u{85}\u{7f}\u{0}\u{202e}"
        );
    }

    #[test]
    fn long_values_are_cut_with_a_count() {
        let long = "x".repeat(MAX_LOGGED_CHARS + 10);
        let shown = LogSafe(&long).to_string();
        assert_eq!(
            shown,
            format!("{}…(+10 chars)", "x".repeat(MAX_LOGGED_CHARS))
        );
        let exact = "y".repeat(MAX_LOGGED_CHARS);
        assert_eq!(LogSafe(&exact).to_string(), exact);
    }

    #[test]
    fn wraps_any_display_value() {
        let id = serde_json::json!("req\n1");
        // A JSON string id displays JSON-escaped already; the wrapper keeps it one line.
        assert_eq!(LogSafe(&id).to_string(), r#""req\\n1""#);
        assert_eq!(LogSafe(42).to_string(), "42");
    }

    proptest! {
        #[test]
        fn output_never_holds_a_control_character(value in any::<String>()) {
            let shown = LogSafe(&value).to_string();
            prop_assert!(!shown.chars().any(needs_escape), "{shown:?}");
            prop_assert!(shown.chars().count() <= MAX_LOGGED_CHARS * 10 + 32);
        }

        #[test]
        fn plain_ascii_passes_unchanged(value in "[ -\\[\\]-~]{0,256}") {
            prop_assert_eq!(LogSafe(&value).to_string(), value);
        }

        #[test]
        fn escaping_is_reversible(value in any::<String>().prop_filter("short", |v| v.chars().count() <= MAX_LOGGED_CHARS)) {
            prop_assert_eq!(unescape(&LogSafe(&value).to_string()), value);
        }
    }

    /// Inverse of the escaping, to show no two values log alike.
    fn unescape(s: &str) -> String {
        let mut out = String::new();
        let mut chars = s.chars();
        while let Some(c) = chars.next() {
            if c != '\\' {
                out.push(c);
                continue;
            }
            match chars.next() {
                Some('n') => out.push('\n'),
                Some('r') => out.push('\r'),
                Some('t') => out.push('\t'),
                Some('\\') => out.push('\\'),
                Some('u') => {
                    let hex: String = chars.by_ref().skip(1).take_while(|&c| c != '}').collect();
                    out.push(char::from_u32(u32::from_str_radix(&hex, 16).unwrap()).unwrap());
                }
                other => panic!("bad escape {other:?} in {s:?}"),
            }
        }
        out
    }
}
