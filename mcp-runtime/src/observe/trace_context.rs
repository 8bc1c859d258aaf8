//! W3C Trace Context as it reaches the server: the `traceparent` and `tracestate` of an HTTP
//! request's headers or of a request's `params._meta` (SEP-414: unprefixed keys), validated.
//!
//! Client-controlled, so read strictly and never an error: a value that is not exactly what
//! the W3C Trace Context recommendation allows is ignored, as if absent. Compiled always
//! (a few byte comparisons); only the `otel` feature acts on what it reads.

/// A validated `traceparent` (version `00` layout; a later version's first 55 characters, as
/// the recommendation asks), and the `tracestate` that came with it, if that was valid too.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceContext {
    /// The trace id (never all zeros).
    pub trace_id: [u8; 16],
    /// The caller's span id, the parent of the server's span (never all zeros).
    pub span_id: [u8; 8],
    /// The trace flags (bit 0: sampled).
    pub flags: u8,
    /// The `tracestate` list, when one came with it and was well-formed (at most
    /// [`MAX_TRACESTATE_LEN`] bytes and [`MAX_TRACESTATE_MEMBERS`] members).
    pub tracestate: Option<String>,
}

/// The longest `tracestate` taken (the recommendation's 512 bytes).
pub const MAX_TRACESTATE_LEN: usize = 512;

/// The most `tracestate` list members taken (the recommendation's 32).
pub const MAX_TRACESTATE_MEMBERS: usize = 32;

impl TraceContext {
    /// Reads a `traceparent` and its optional `tracestate`; `None` when the `traceparent` is
    /// absent or malformed. A malformed `tracestate` is dropped, the `traceparent` kept.
    pub fn parse(traceparent: &str, tracestate: Option<&str>) -> Option<Self> {
        let b = traceparent.as_bytes();
        if b.len() < 55 {
            return None;
        }
        let version = hex_byte(b[0], b[1])?;
        // `ff` is forbidden; version 00 is exactly 55 characters; a later version may carry
        // more after a `-`, which this reader does not know and ignores.
        if version == 0xff || (version == 0 && b.len() != 55) || (b.len() > 55 && b[55] != b'-') {
            return None;
        }
        if b[2] != b'-' || b[35] != b'-' || b[52] != b'-' {
            return None;
        }
        let mut trace_id = [0u8; 16];
        for (i, out) in trace_id.iter_mut().enumerate() {
            *out = hex_byte(b[3 + 2 * i], b[4 + 2 * i])?;
        }
        let mut span_id = [0u8; 8];
        for (i, out) in span_id.iter_mut().enumerate() {
            *out = hex_byte(b[36 + 2 * i], b[37 + 2 * i])?;
        }
        let flags = hex_byte(b[53], b[54])?;
        if trace_id == [0; 16] || span_id == [0; 8] {
            return None;
        }
        Some(Self {
            trace_id,
            span_id,
            flags,
            tracestate: tracestate
                .filter(|s| valid_tracestate(s))
                .map(str::to_owned),
        })
    }

    /// Reads the SEP-414 keys of a request's `_meta` (`traceparent`, `tracestate`); `None`
    /// when there is no valid `traceparent`. The third key, `baggage`, is
    /// [`Baggage::from_meta`](crate::observe::Baggage::from_meta)'s.
    pub fn from_meta(meta: &serde_json::Map<String, serde_json::Value>) -> Option<Self> {
        let traceparent = meta.get("traceparent")?.as_str()?;
        let tracestate = meta.get("tracestate").and_then(serde_json::Value::as_str);
        Self::parse(traceparent, tracestate)
    }

    /// Whether the caller sampled this trace (flag bit 0).
    pub fn sampled(&self) -> bool {
        self.flags & 1 == 1
    }
}

/// One lowercase hex byte (the recommendation allows no uppercase).
fn hex_byte(hi: u8, lo: u8) -> Option<u8> {
    fn nibble(c: u8) -> Option<u8> {
        match c {
            b'0'..=b'9' => Some(c - b'0'),
            b'a'..=b'f' => Some(c - b'a' + 10),
            _ => None,
        }
    }
    Some(nibble(hi)? << 4 | nibble(lo)?)
}

/// A `tracestate` the recommendation allows: at most 512 bytes, at most 32 comma-separated
/// `key=value` members (empty members allowed), keys and values in the allowed characters.
fn valid_tracestate(s: &str) -> bool {
    if s.len() > MAX_TRACESTATE_LEN {
        return false;
    }
    let mut members = 0;
    for member in s.split(',') {
        let member = member.trim_matches([' ', '\t']);
        if member.is_empty() {
            continue;
        }
        members += 1;
        if members > MAX_TRACESTATE_MEMBERS {
            return false;
        }
        let Some((key, value)) = member.split_once('=') else {
            return false;
        };
        let key_ok = !key.is_empty()
            && key.len() <= 256
            && key.bytes().all(|c| {
                c.is_ascii_lowercase()
                    || c.is_ascii_digit()
                    || matches!(c, b'_' | b'-' | b'*' | b'/' | b'@')
            });
        let value_ok = !value.is_empty()
            && value.len() <= 256
            && value
                .bytes()
                .all(|c| (0x20..=0x7e).contains(&c) && c != b',' && c != b'=')
            && !value.ends_with(' ');
        if !key_ok || !value_ok {
            return false;
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    #[test]
    fn a_valid_traceparent_is_read() {
        let tc =
            TraceContext::parse(GOOD, Some("rojo=00f067aa0ba902b7,congo=t61rcWkgMzE")).unwrap();
        assert_eq!(tc.trace_id[0], 0x4b);
        assert_eq!(tc.trace_id[15], 0x36);
        assert_eq!(tc.span_id, [0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7]);
        assert!(tc.sampled());
        assert_eq!(
            tc.tracestate.as_deref(),
            Some("rojo=00f067aa0ba902b7,congo=t61rcWkgMzE")
        );
    }

    #[test]
    fn malformed_traceparents_are_ignored() {
        for bad in [
            "",
            "garbage",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01", // uppercase
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01", // zero trace id
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01", // zero span id
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", // forbidden version
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra", // v00 too long
            "00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e473g-00f067aa0ba902b7-01",
            "0-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        ] {
            assert_eq!(TraceContext::parse(bad, None), None, "{bad}");
        }
    }

    #[test]
    fn a_later_version_is_read_by_its_known_prefix() {
        let later = "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-whatever";
        assert!(TraceContext::parse(later, None).is_some());
    }

    #[test]
    fn a_malformed_tracestate_is_dropped_and_the_parent_kept() {
        let long = "a=".to_owned() + &"b".repeat(MAX_TRACESTATE_LEN);
        let many = (0..=MAX_TRACESTATE_MEMBERS)
            .map(|i| format!("k{i}=v"))
            .collect::<Vec<_>>()
            .join(",");
        for bad in ["novalue", "UP=1", "a=b=c", long.as_str(), many.as_str()] {
            let tc = TraceContext::parse(GOOD, Some(bad)).unwrap();
            assert_eq!(tc.tracestate, None, "{bad}");
        }
    }

    #[test]
    fn meta_keys_are_read_unprefixed() {
        let meta = serde_json::json!({"traceparent": GOOD, "tracestate": "a=b", "baggage": "k=v"});
        let tc = TraceContext::from_meta(meta.as_object().unwrap()).unwrap();
        assert_eq!(tc.tracestate.as_deref(), Some("a=b"));
        let meta = serde_json::json!({"traceparent": 42});
        assert_eq!(TraceContext::from_meta(meta.as_object().unwrap()), None);
    }
}
