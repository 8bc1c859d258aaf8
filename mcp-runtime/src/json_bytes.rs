//! JSON written straight into bytes: strings copied between quotes when nothing in them needs
//! escaping, and objects member by member in the order serde writes them.
//!
//! The hot replies (`server/json_writer.rs`) and a derived form's `requestedSchema`
//! ([`crate::form::write_fields_schema`]) are written with these instead of through serde:
//! serde_json looks up every byte of every string in its escape table, and writes a struct with
//! flattened members as a map, entry by entry. The bytes are serde's; the writers' tests compare
//! the two.

/// Writes `s` as a JSON string: copied between quotes when no byte needs escaping, else
/// through serde_json (which escapes exactly `"`, `\` and the control characters).
pub(crate) fn write_str(buf: &mut Vec<u8>, s: &str) {
    if plain(s.as_bytes()) {
        buf.reserve(s.len() + 2);
        buf.push(b'"');
        buf.extend_from_slice(s.as_bytes());
        buf.push(b'"');
    } else {
        // Serialising a string into a Vec cannot fail.
        let _ = serde_json::to_writer(&mut *buf, s);
    }
}

/// Whether no byte of `bytes` needs escaping in a JSON string (`"`, `\\`, or below 0x20).
fn plain(bytes: &[u8]) -> bool {
    // Eight bytes per step (SWAR): a byte-at-a-time check was most of the writer's time. Each
    // test sets a word's high bit in a byte's lane exactly when some byte of the word matches,
    // so there are no false answers, only false lanes, and only "any" is asked.
    const ONES: u64 = u64::from_ne_bytes([0x01; 8]);
    const HIGHS: u64 = u64::from_ne_bytes([0x80; 8]);
    let has_zero = |v: u64| v.wrapping_sub(ONES) & !v & HIGHS;
    let has_below = |v: u64, n: u8| v.wrapping_sub(ONES * u64::from(n)) & !v & HIGHS;
    let (words, rest) = bytes.as_chunks::<8>();
    let mut found = 0u64;
    for word in words {
        let v = u64::from_ne_bytes(*word);
        found |= has_below(v, 0x20)
            | has_zero(v ^ (ONES * u64::from(b'"')))
            | has_zero(v ^ (ONES * u64::from(b'\\')));
    }
    let escapes = |b: &u8| *b < 0x20 || *b == b'"' || *b == b'\\';
    found == 0 && !rest.iter().any(escapes)
}

/// Members in declaration order, as serde writes them; `first` tracks the comma.
pub(crate) struct Members<'a> {
    buf: &'a mut Vec<u8>,
    first: bool,
}

impl<'a> Members<'a> {
    pub(crate) fn open(buf: &'a mut Vec<u8>) -> Self {
        buf.push(b'{');
        Members { buf, first: true }
    }

    /// Starts a member; `name` is a literal `"name":` that needs no escaping.
    pub(crate) fn key(&mut self, name: &[u8]) -> &mut Vec<u8> {
        if !self.first {
            self.buf.push(b',');
        }
        self.first = false;
        self.buf.extend_from_slice(name);
        self.buf
    }

    pub(crate) fn str(&mut self, name: &[u8], value: &str) {
        write_str(self.key(name), value);
    }

    pub(crate) fn opt_str(&mut self, name: &[u8], value: Option<&str>) {
        if let Some(v) = value {
            self.str(name, v);
        }
    }

    /// The members every field definition starts with: its `"type":…` member (a literal),
    /// then `title` and `description` when present.
    pub(crate) fn head(&mut self, kind: &[u8], title: Option<&str>, description: Option<&str>) {
        self.key(kind);
        self.opt_str(br#""title":"#, title);
        self.opt_str(br#""description":"#, description);
    }

    pub(crate) fn opt_u64(&mut self, name: &[u8], value: Option<u64>) {
        if let Some(v) = value {
            use std::io::Write as _;
            // Writing into a Vec cannot fail.
            let _ = write!(self.key(name), "{v}");
        }
    }

    pub(crate) fn opt_number(&mut self, name: &[u8], value: Option<&serde_json::Number>) {
        if let Some(v) = value {
            // A Number always serialises.
            let _ = serde_json::to_writer(&mut *self.key(name), v);
        }
    }

    /// `"format":"…"` of a string field, when it has one.
    pub(crate) fn opt_format(&mut self, format: Option<mcp_types::StringFormat>) {
        use mcp_types::StringFormat;
        if let Some(format) = format {
            self.key(match format {
                StringFormat::Email => br#""format":"email""#,
                StringFormat::Uri => br#""format":"uri""#,
                StringFormat::Date => br#""format":"date""#,
                StringFormat::DateTime => br#""format":"date-time""#,
            });
        }
    }

    /// `name` and `true` or `false`, when there is a value.
    pub(crate) fn opt_bool(&mut self, name: &[u8], value: Option<bool>) {
        if let Some(v) = value {
            self.key(name)
                .extend_from_slice(if v { b"true" } else { b"false" });
        }
    }

    /// `[string,...]`.
    pub(crate) fn strings<'s>(&mut self, name: &[u8], values: impl IntoIterator<Item = &'s str>) {
        let buf = self.key(name);
        write_strings(buf, values);
    }

    pub(crate) fn opt_strings(&mut self, name: &[u8], values: Option<&[String]>) {
        if let Some(v) = values {
            self.strings(name, v.iter().map(String::as_str));
        }
    }

    /// `[{"const":value,"title":title},...]`: the options of a titled select.
    pub(crate) fn options<'o>(
        &mut self,
        name: &[u8],
        options: impl IntoIterator<Item = (&'o str, &'o str)>,
    ) {
        let buf = self.key(name);
        buf.push(b'[');
        for (i, (value, title)) in options.into_iter().enumerate() {
            if i > 0 {
                buf.push(b',');
            }
            buf.extend_from_slice(br#"{"const":"#);
            write_str(buf, value);
            buf.extend_from_slice(br#","title":"#);
            write_str(buf, title);
            buf.push(b'}');
        }
        buf.push(b']');
    }

    pub(crate) fn close(self) {
        self.buf.push(b'}');
    }
}

/// `[string,...]`.
pub(crate) fn write_strings<'s>(buf: &mut Vec<u8>, values: impl IntoIterator<Item = &'s str>) {
    buf.push(b'[');
    for (i, v) in values.into_iter().enumerate() {
        if i > 0 {
            buf.push(b',');
        }
        write_str(buf, v);
    }
    buf.push(b']');
}

#[cfg(test)]
mod tests {
    use proptest::collection::vec;
    use proptest::prelude::*;

    use super::plain;

    /// The word-at-a-time check agrees with the byte-at-a-time definition: every byte value,
    /// at every position of the words and of the tail, among bytes that need no escaping.
    #[test]
    fn plain_agrees_with_the_definition_for_every_byte_and_position() {
        let needs = |b: u8| b < 0x20 || b == b'"' || b == b'\\';
        for len in [1usize, 7, 8, 9, 16, 19] {
            for at in 0..len {
                for byte in 0..=255u8 {
                    // Fillers just above and below the edges (0x20, 0x21, 0x23, 0x5b, 0x5d, 0xff).
                    for filler in [0x20u8, 0x21, 0x23, 0x5b, 0x5d, 0xff] {
                        let mut bytes = vec![filler; len];
                        bytes[at] = byte;
                        assert_eq!(
                            plain(&bytes),
                            !needs(byte),
                            "byte {byte:#04x} at {at} of {len} among {filler:#04x}"
                        );
                    }
                }
            }
        }
        assert!(plain(b""));
    }

    proptest! {
        #[test]
        fn plain_agrees_with_the_definition(bytes in vec(any::<u8>(), 0..64)) {
            let expected = !bytes.iter().any(|&b| b < 0x20 || b == b'"' || b == b'\\');
            prop_assert_eq!(plain(&bytes), expected);
        }
    }
}
