//! Hot replies written straight into JSON bytes: the forms of an `input_required` reply and a
//! `tools/call` result's content.
//!
//! A first leg's reply is mostly one form: the message, the field titles and descriptions and
//! every offered choice. serde_json escapes a string by looking up each byte in a table, and a
//! struct with flattened members is written as a map entry by entry; on the first leg that was
//! the largest share of the runtime's own time. Here each member is written in place and a
//! string that needs no escaping (nearly all of them) is checked eight bytes at a time and
//! copied.
//!
//! The output is byte-identical to serde's (the tests compare the two over generated values).
//! Anything this writer does not model member by member (extension members, `_meta`,
//! annotations, non-text content, a non-form request) goes through serde.

use mcp_types::{
    CallToolResult, ContentBlock, ElicitRequestFormParams, ElicitRequestParams, EnumOption,
    InputRequest, InputRequests, NumberKind, PrimitiveSchemaDefinition, RequestedSchema,
    StringFormat,
};

/// Writes `requests` as the JSON object serde would write.
///
/// # Errors
/// What serde returns for a request written through it (a `Value` cannot fail to serialise,
/// so in practice none).
pub(super) fn write_input_requests(
    buf: &mut Vec<u8>,
    requests: &InputRequests,
) -> Result<(), serde_json::Error> {
    buf.push(b'{');
    for (i, (key, request)) in requests.0.iter().enumerate() {
        if i > 0 {
            buf.push(b',');
        }
        write_str(buf, key);
        buf.push(b':');
        match request {
            InputRequest::Elicit(elicit) => match &elicit.params {
                ElicitRequestParams::Form(form) if plain_form(form) => {
                    buf.extend_from_slice(br#"{"method":"elicitation/create","params":"#);
                    write_form_params(buf, form);
                    buf.push(b'}');
                }
                _ => serde_json::to_writer(&mut *buf, request)?,
            },
            _ => serde_json::to_writer(&mut *buf, request)?,
        }
    }
    buf.push(b'}');
    Ok(())
}

/// Writes a `CallToolResult` without `_meta` and without extension members as serde would:
/// plain text blocks in place, anything else through serde.
///
/// # Errors
/// What serde returns for a member written through it.
pub(super) fn write_call_tool_result(
    buf: &mut Vec<u8>,
    result: &CallToolResult,
) -> Result<(), serde_json::Error> {
    if result.meta.is_some() || !result.extra.is_empty() {
        return serde_json::to_writer(&mut *buf, result);
    }
    let mut m = Members::open(buf);
    m.str(br#""resultType":"#, result.result_type.as_str());
    let content = m.key(br#""content":"#);
    content.push(b'[');
    for (i, block) in result.content.iter().enumerate() {
        if i > 0 {
            content.push(b',');
        }
        match block {
            ContentBlock::Text(t)
                if t.annotations.is_none() && t.meta.is_none() && t.extra.is_empty() =>
            {
                content.extend_from_slice(br#"{"type":"text","text":"#);
                write_str(content, &t.text);
                content.push(b'}');
            }
            other => serde_json::to_writer(&mut *content, other)?,
        }
    }
    content.push(b']');
    if let Some(structured) = &result.structured_content {
        serde_json::to_writer(&mut *m.key(br#""structuredContent":"#), structured)?;
    }
    if let Some(is_error) = result.is_error {
        m.key(if is_error {
            br#""isError":true"#
        } else {
            br#""isError":false"#
        });
    }
    m.close();
    Ok(())
}

/// Writes `s` as a JSON string: copied between quotes when no byte needs escaping, else
/// through serde_json (which escapes exactly `"`, `\` and the control characters).
pub(super) fn write_str(buf: &mut Vec<u8>, s: &str) {
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

/// Whether every object in the form has only the members written below (no extension
/// members): then the output of [`write_form_params`] is serde's.
fn plain_form(form: &ElicitRequestFormParams) -> bool {
    use PrimitiveSchemaDefinition as P;
    let schema = &form.requested_schema;
    form.extra.is_empty()
        && schema.extra.is_empty()
        && schema.properties.values().all(|d| match d {
            P::String(s) => s.extra.is_empty(),
            P::Number(n) => n.extra.is_empty(),
            P::Boolean(b) => b.extra.is_empty(),
            P::UntitledSingleSelect(e) => e.extra.is_empty(),
            P::TitledSingleSelect(e) => e.extra.is_empty(),
            P::UntitledMultiSelect(e) => e.extra.is_empty() && e.items.extra.is_empty(),
            P::TitledMultiSelect(e) => e.extra.is_empty() && e.items.extra.is_empty(),
            P::LegacyTitledEnum(e) => e.extra.is_empty(),
        })
}

/// Members in declaration order, as serde writes them; `first` tracks the comma.
struct Members<'a> {
    buf: &'a mut Vec<u8>,
    first: bool,
}

impl<'a> Members<'a> {
    fn open(buf: &'a mut Vec<u8>) -> Self {
        buf.push(b'{');
        Members { buf, first: true }
    }

    /// Starts a member; `name` is a literal `"name":` that needs no escaping.
    fn key(&mut self, name: &[u8]) -> &mut Vec<u8> {
        if !self.first {
            self.buf.push(b',');
        }
        self.first = false;
        self.buf.extend_from_slice(name);
        self.buf
    }

    fn str(&mut self, name: &[u8], value: &str) {
        write_str(self.key(name), value);
    }

    fn opt_str(&mut self, name: &[u8], value: Option<&str>) {
        if let Some(v) = value {
            self.str(name, v);
        }
    }

    /// The members every field definition starts with: its `"type":…` member (a literal),
    /// then `title` and `description` when present.
    fn head(&mut self, kind: &[u8], title: Option<&str>, description: Option<&str>) {
        self.key(kind);
        self.opt_str(br#""title":"#, title);
        self.opt_str(br#""description":"#, description);
    }

    fn opt_u64(&mut self, name: &[u8], value: Option<u64>) {
        if let Some(v) = value {
            use std::io::Write as _;
            // Writing into a Vec cannot fail.
            let _ = write!(self.key(name), "{v}");
        }
    }

    fn opt_number(&mut self, name: &[u8], value: Option<&serde_json::Number>) {
        if let Some(v) = value {
            // A Number always serialises.
            let _ = serde_json::to_writer(&mut *self.key(name), v);
        }
    }

    fn strings(&mut self, name: &[u8], values: &[String]) {
        let buf = self.key(name);
        write_strings(buf, values);
    }

    fn opt_strings(&mut self, name: &[u8], values: Option<&[String]>) {
        if let Some(v) = values {
            self.strings(name, v);
        }
    }

    fn options(&mut self, name: &[u8], options: &[EnumOption]) {
        let buf = self.key(name);
        buf.push(b'[');
        for (i, o) in options.iter().enumerate() {
            if i > 0 {
                buf.push(b',');
            }
            buf.extend_from_slice(br#"{"const":"#);
            write_str(buf, &o.value);
            buf.extend_from_slice(br#","title":"#);
            write_str(buf, &o.title);
            buf.push(b'}');
        }
        buf.push(b']');
    }

    fn close(self) {
        self.buf.push(b'}');
    }
}

fn write_strings(buf: &mut Vec<u8>, values: &[String]) {
    buf.push(b'[');
    for (i, v) in values.iter().enumerate() {
        if i > 0 {
            buf.push(b',');
        }
        write_str(buf, v);
    }
    buf.push(b']');
}

fn write_form_params(buf: &mut Vec<u8>, form: &ElicitRequestFormParams) {
    let mut m = Members::open(buf);
    if form.mode.is_some() {
        m.key(br#""mode":"form""#);
    }
    m.str(br#""message":"#, &form.message);
    write_schema(m.key(br#""requestedSchema":"#), &form.requested_schema);
    m.close();
}

fn write_schema(buf: &mut Vec<u8>, schema: &RequestedSchema) {
    let mut m = Members::open(buf);
    m.opt_str(br#""$schema":"#, schema.schema.as_deref());
    m.key(br#""type":"object""#);
    let props = m.key(br#""properties":"#);
    props.push(b'{');
    for (i, (name, definition)) in schema.properties.iter().enumerate() {
        if i > 0 {
            props.push(b',');
        }
        write_str(props, name);
        props.push(b':');
        write_definition(props, definition);
    }
    props.push(b'}');
    m.opt_strings(br#""required":"#, schema.required.as_deref());
    m.close();
}

fn write_definition(buf: &mut Vec<u8>, definition: &PrimitiveSchemaDefinition) {
    use PrimitiveSchemaDefinition as P;
    let mut m = Members::open(buf);
    match definition {
        P::String(s) => {
            m.head(
                br#""type":"string""#,
                s.title.as_deref(),
                s.description.as_deref(),
            );
            m.opt_u64(br#""minLength":"#, s.min_length);
            m.opt_u64(br#""maxLength":"#, s.max_length);
            if let Some(format) = s.format {
                m.key(match format {
                    StringFormat::Email => br#""format":"email""#,
                    StringFormat::Uri => br#""format":"uri""#,
                    StringFormat::Date => br#""format":"date""#,
                    StringFormat::DateTime => br#""format":"date-time""#,
                });
            }
            m.opt_str(br#""default":"#, s.default.as_deref());
        }
        P::Number(n) => {
            let kind: &[u8] = match n.kind {
                NumberKind::Number => br#""type":"number""#,
                NumberKind::Integer => br#""type":"integer""#,
            };
            m.head(kind, n.title.as_deref(), n.description.as_deref());
            m.opt_number(br#""minimum":"#, n.minimum.as_ref());
            m.opt_number(br#""maximum":"#, n.maximum.as_ref());
            m.opt_number(br#""default":"#, n.default.as_ref());
        }
        P::Boolean(b) => {
            m.head(
                br#""type":"boolean""#,
                b.title.as_deref(),
                b.description.as_deref(),
            );
            if let Some(d) = b.default {
                m.key(if d {
                    br#""default":true"#
                } else {
                    br#""default":false"#
                });
            }
        }
        P::UntitledSingleSelect(e) => {
            m.head(
                br#""type":"string""#,
                e.title.as_deref(),
                e.description.as_deref(),
            );
            m.strings(br#""enum":"#, &e.values);
            m.opt_str(br#""default":"#, e.default.as_deref());
        }
        P::TitledSingleSelect(e) => {
            m.head(
                br#""type":"string""#,
                e.title.as_deref(),
                e.description.as_deref(),
            );
            m.options(br#""oneOf":"#, &e.one_of);
            m.opt_str(br#""default":"#, e.default.as_deref());
        }
        P::UntitledMultiSelect(e) => {
            m.head(
                br#""type":"array""#,
                e.title.as_deref(),
                e.description.as_deref(),
            );
            m.opt_u64(br#""minItems":"#, e.min_items);
            m.opt_u64(br#""maxItems":"#, e.max_items);
            let items = m.key(br#""items":{"type":"string","enum":"#);
            write_strings(items, &e.items.values);
            items.push(b'}');
            m.opt_strings(br#""default":"#, e.default.as_deref());
        }
        P::TitledMultiSelect(e) => {
            m.head(
                br#""type":"array""#,
                e.title.as_deref(),
                e.description.as_deref(),
            );
            m.opt_u64(br#""minItems":"#, e.min_items);
            m.opt_u64(br#""maxItems":"#, e.max_items);
            let mut items = Members::open(m.key(br#""items":"#));
            items.options(br#""anyOf":"#, &e.items.any_of);
            items.close();
            m.opt_strings(br#""default":"#, e.default.as_deref());
        }
        P::LegacyTitledEnum(e) => {
            m.head(
                br#""type":"string""#,
                e.title.as_deref(),
                e.description.as_deref(),
            );
            m.strings(br#""enum":"#, &e.values);
            m.opt_strings(br#""enumNames":"#, e.enum_names.as_deref());
            m.opt_str(br#""default":"#, e.default.as_deref());
        }
    }
    m.close();
}

#[cfg(test)]
mod tests;
