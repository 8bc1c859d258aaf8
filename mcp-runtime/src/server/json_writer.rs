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
    InputRequest, NumberKind, PrimitiveSchemaDefinition, RequestedSchema,
};

pub(super) use crate::json_bytes::write_str;
use crate::json_bytes::{Members, write_strings};
use crate::mrtr::{PendingRequest, PendingRequests};

/// Writes `requests` as the JSON object serde writes for the same requests typed
/// ([`PendingRequests::into_typed`](crate::mrtr::PendingRequests::into_typed)).
///
/// # Errors
/// What serde returns for a request written through it (a `Value` cannot fail to serialise,
/// so in practice none).
pub(super) fn write_input_requests(
    buf: &mut Vec<u8>,
    requests: &PendingRequests,
) -> Result<(), serde_json::Error> {
    buf.push(b'{');
    for (i, (key, request)) in requests.iter().enumerate() {
        if i > 0 {
            buf.push(b',');
        }
        write_str(buf, key);
        buf.push(b':');
        match request {
            PendingRequest::Form { message, schema } => {
                buf.extend_from_slice(br#"{"method":"elicitation/create","params":"#);
                let mut m = Members::open(buf);
                m.key(br#""mode":"form""#);
                m.str(br#""message":"#, message);
                m.key(br#""requestedSchema":"#).extend_from_slice(schema);
                m.close();
                buf.push(b'}');
            }
            PendingRequest::Typed(request) => match &**request {
                InputRequest::Elicit(elicit) => match &elicit.params {
                    ElicitRequestParams::Form(form) if plain_form(form) => {
                        buf.extend_from_slice(br#"{"method":"elicitation/create","params":"#);
                        write_form_params(buf, form);
                        buf.push(b'}');
                    }
                    _ => serde_json::to_writer(&mut *buf, &**request)?,
                },
                _ => serde_json::to_writer(&mut *buf, &**request)?,
            },
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
            m.opt_format(s.format);
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
            m.opt_bool(br#""default":"#, b.default);
        }
        P::UntitledSingleSelect(e) => {
            m.head(
                br#""type":"string""#,
                e.title.as_deref(),
                e.description.as_deref(),
            );
            m.strings(br#""enum":"#, e.values.iter().map(String::as_str));
            m.opt_str(br#""default":"#, e.default.as_deref());
        }
        P::TitledSingleSelect(e) => {
            m.head(
                br#""type":"string""#,
                e.title.as_deref(),
                e.description.as_deref(),
            );
            m.options(br#""oneOf":"#, titled_options(&e.one_of));
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
            write_strings(items, e.items.values.iter().map(String::as_str));
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
            items.options(br#""anyOf":"#, titled_options(&e.items.any_of));
            items.close();
            m.opt_strings(br#""default":"#, e.default.as_deref());
        }
        P::LegacyTitledEnum(e) => {
            m.head(
                br#""type":"string""#,
                e.title.as_deref(),
                e.description.as_deref(),
            );
            m.strings(br#""enum":"#, e.values.iter().map(String::as_str));
            m.opt_strings(br#""enumNames":"#, e.enum_names.as_deref());
            m.opt_str(br#""default":"#, e.default.as_deref());
        }
    }
    m.close();
}

/// A titled select's options as `(const, title)` pairs.
fn titled_options(options: &[EnumOption]) -> impl Iterator<Item = (&str, &str)> {
    options.iter().map(|o| (o.value.as_str(), o.title.as_str()))
}

#[cfg(test)]
mod tests;
