//! From field declarations to the wire: the form's `requestedSchema`, and the canonical
//! encoding of the offered fields that `requestState` binds.

use super::*;
use crate::json_bytes::{Members, write_str, write_strings};

/// Writes an unambiguous encoding of `fields` (the [`ElicitForm::write_binding`] of derived
/// forms).
///
/// The wire `requestedSchema` is a function of the field declarations alone
/// ([`requested_schema`]), so an injective encoding of the declarations binds the schema too.
/// Every string and list is length-prefixed and every optional value tagged, so no two field
/// lists share an encoding.
///
/// # Errors
/// Whatever `out` returns.
pub fn write_fields_binding(
    fields: &[FieldSpec<'_>],
    out: &mut dyn std::io::Write,
) -> std::io::Result<()> {
    let mut w = BindingWriter(out);
    w.bytes(b"fields/v1")?;
    w.len(fields.len())?;
    for f in fields {
        w.bytes(f.name.as_bytes())?;
        w.opt_str(f.title)?;
        w.opt_str(f.description)?;
        w.tag(u8::from(f.required))?;
        match &f.kind {
            FieldKind::Text {
                min_length,
                max_length,
                format,
                default,
            } => {
                w.tag(1)?;
                w.opt_u64(*min_length)?;
                w.opt_u64(*max_length)?;
                match format {
                    None => w.tag(0)?,
                    Some(StringFormat::Email) => w.tag(1)?,
                    Some(StringFormat::Uri) => w.tag(2)?,
                    Some(StringFormat::Date) => w.tag(3)?,
                    Some(StringFormat::DateTime) => w.tag(4)?,
                }
                w.opt_str(default.as_deref())?;
            }
            FieldKind::Integer {
                minimum,
                maximum,
                default,
            } => {
                w.tag(2)?;
                w.0.write_all(&minimum.to_le_bytes())?;
                w.0.write_all(&maximum.to_le_bytes())?;
                match default {
                    None => w.tag(0)?,
                    Some(d) => {
                        w.tag(1)?;
                        w.0.write_all(&d.to_le_bytes())?;
                    }
                }
            }
            FieldKind::Number {
                minimum,
                maximum,
                default,
            } => {
                w.tag(3)?;
                for v in [minimum, maximum, default] {
                    w.opt_u64(v.map(f64::to_bits))?;
                }
            }
            FieldKind::Boolean { default } => {
                w.tag(4)?;
                w.opt_u64(default.map(u64::from))?;
            }
            FieldKind::Select { options, default } => {
                w.tag(5)?;
                w.choices(options)?;
                w.opt_str(default.as_deref())?;
            }
            FieldKind::MultiSelect {
                options,
                min_items,
                max_items,
            } => {
                w.tag(6)?;
                w.choices(options)?;
                w.opt_u64(*min_items)?;
                w.opt_u64(*max_items)?;
            }
        }
    }
    Ok(())
}

/// Length-prefixed, tagged writes for [`write_fields_binding`].
pub(super) struct BindingWriter<'a>(&'a mut dyn std::io::Write);

impl BindingWriter<'_> {
    fn tag(&mut self, t: u8) -> std::io::Result<()> {
        self.0.write_all(&[t])
    }

    fn len(&mut self, n: usize) -> std::io::Result<()> {
        self.0.write_all(&(n as u64).to_le_bytes())
    }

    fn bytes(&mut self, b: &[u8]) -> std::io::Result<()> {
        self.len(b.len())?;
        self.0.write_all(b)
    }

    fn opt_str(&mut self, s: Option<&str>) -> std::io::Result<()> {
        match s {
            None => self.tag(0),
            Some(s) => {
                self.tag(1)?;
                self.bytes(s.as_bytes())
            }
        }
    }

    fn opt_u64(&mut self, v: Option<u64>) -> std::io::Result<()> {
        match v {
            None => self.tag(0),
            Some(v) => {
                self.tag(1)?;
                self.0.write_all(&v.to_le_bytes())
            }
        }
    }

    fn choices(&mut self, options: &[Choice]) -> std::io::Result<()> {
        self.len(options.len())?;
        for c in options {
            self.bytes(c.value.as_bytes())?;
            self.opt_str(c.title.as_deref())?;
        }
        Ok(())
    }
}

/// Builds the wire `requestedSchema` for a list of fields (order preserved).
pub fn requested_schema(fields: &[FieldSpec<'_>]) -> RequestedSchema {
    // Sized up front: built on every first leg, and growing the map and list as fields are
    // added reallocates both.
    let mut schema = RequestedSchema::new();
    schema.properties.reserve(fields.len());
    let required = fields.iter().filter(|f| f.required).count();
    if required > 0 {
        schema.required = Some(Vec::with_capacity(required));
    }
    for f in fields {
        schema = schema.field(f.name, definition(f), f.required);
    }
    schema
}

/// Writes the wire `requestedSchema` for a list of fields as JSON: the bytes serde_json writes
/// for [`requested_schema`] of the same fields, without building that schema (the
/// [`ElicitForm::write_requested_schema`] of derived forms).
///
/// A first leg sends the schema once and never reads it: built as a [`RequestedSchema`], every
/// name, label and offered choice was copied into a string of its own only to be written out
/// and freed.
pub fn write_fields_schema(fields: &[FieldSpec<'_>], out: &mut Vec<u8>) {
    if repeats_a_name(fields) {
        // A later field of the same name replaces the earlier one in the schema's property
        // map; the derive never declares two, so that case is left to the map.
        let _ = serde_json::to_writer(&mut *out, &requested_schema(fields));
        return;
    }
    let mut m = Members::open(out);
    m.key(br#""type":"object""#);
    let properties = m.key(br#""properties":"#);
    properties.push(b'{');
    for (i, f) in fields.iter().enumerate() {
        if i > 0 {
            properties.push(b',');
        }
        write_str(properties, f.name);
        properties.push(b':');
        write_field(properties, f);
    }
    properties.push(b'}');
    if fields.iter().any(|f| f.required) {
        let required = fields.iter().filter(|f| f.required).map(|f| f.name);
        m.strings(br#""required":"#, required);
    }
    m.close();
}

fn repeats_a_name(fields: &[FieldSpec<'_>]) -> bool {
    fields
        .iter()
        .enumerate()
        .any(|(i, f)| fields[..i].iter().any(|g| g.name == f.name))
}

/// One field's definition, as [`definition`] builds it and serde writes it.
fn write_field(buf: &mut Vec<u8>, f: &FieldSpec<'_>) {
    let mut m = Members::open(buf);
    let (title, description) = (f.title, f.description);
    match &f.kind {
        FieldKind::Text {
            min_length,
            max_length,
            format,
            default,
        } => {
            m.head(br#""type":"string""#, title, description);
            m.opt_u64(br#""minLength":"#, *min_length);
            m.opt_u64(br#""maxLength":"#, *max_length);
            m.opt_format(*format);
            m.opt_str(br#""default":"#, default.as_deref());
        }
        FieldKind::Integer {
            minimum,
            maximum,
            default,
        } => {
            m.head(br#""type":"integer""#, title, description);
            m.opt_number(br#""minimum":"#, Some(&int_number(*minimum)));
            m.opt_number(br#""maximum":"#, Some(&int_number(*maximum)));
            m.opt_number(br#""default":"#, default.map(int_number).as_ref());
        }
        FieldKind::Number {
            minimum,
            maximum,
            default,
        } => {
            m.head(br#""type":"number""#, title, description);
            m.opt_number(br#""minimum":"#, minimum.and_then(float_number).as_ref());
            m.opt_number(br#""maximum":"#, maximum.and_then(float_number).as_ref());
            m.opt_number(br#""default":"#, default.and_then(float_number).as_ref());
        }
        FieldKind::Boolean { default } => {
            m.head(br#""type":"boolean""#, title, description);
            m.opt_bool(br#""default":"#, *default);
        }
        FieldKind::Select { options, default } => {
            m.head(br#""type":"string""#, title, description);
            if titled(options) {
                m.options(br#""oneOf":"#, labelled(options));
            } else {
                m.strings(br#""enum":"#, options.iter().map(|c| c.value.as_str()));
            }
            m.opt_str(br#""default":"#, default.as_deref());
        }
        FieldKind::MultiSelect {
            options,
            min_items,
            max_items,
        } => {
            m.head(br#""type":"array""#, title, description);
            m.opt_u64(br#""minItems":"#, *min_items);
            m.opt_u64(br#""maxItems":"#, *max_items);
            if titled(options) {
                let mut items = Members::open(m.key(br#""items":"#));
                items.options(br#""anyOf":"#, labelled(options));
                items.close();
            } else {
                let items = m.key(br#""items":{"type":"string","enum":"#);
                write_strings(items, options.iter().map(|c| c.value.as_str()));
                items.push(b'}');
            }
        }
    }
    m.close();
}

/// Options as `(const, title)`, the value standing in for a missing label (as
/// [`enum_options`] builds them).
fn labelled(options: &[Choice]) -> impl Iterator<Item = (&str, &str)> {
    options
        .iter()
        .map(|c| (c.value.as_str(), c.title.as_deref().unwrap_or(&c.value)))
}

pub(super) fn titled(options: &[Choice]) -> bool {
    options.iter().any(|c| c.title.is_some())
}

pub(super) fn enum_options(options: &[Choice]) -> Vec<EnumOption> {
    options
        .iter()
        .map(|c| EnumOption::new(&c.value, c.title.as_deref().unwrap_or(&c.value)))
        .collect()
}

pub(super) fn values(options: &[Choice]) -> Vec<String> {
    options.iter().map(|c| c.value.clone()).collect()
}

/// A JSON number for an integer bound: exact for anything `i64`/`u64` can hold.
pub(super) fn int_number(v: i128) -> Number {
    if let Ok(i) = i64::try_from(v) {
        Number::from(i)
    } else if let Ok(u) = u64::try_from(v) {
        Number::from(u)
    } else {
        // Bounds come from Rust integer types no wider than 64 bits, so this is unreachable in
        // generated code; saturate rather than panic.
        Number::from(if v < 0 { i64::MIN } else { i64::MAX })
    }
}

/// A JSON number for a float bound: whole values print without `.0`.
pub(super) fn float_number(v: f64) -> Option<Number> {
    if v.fract() == 0.0 && v.abs() < 9.0e15 {
        #[allow(clippy::cast_possible_truncation)]
        return Some(Number::from(v as i64));
    }
    Number::from_f64(v)
}

pub(super) fn definition(f: &FieldSpec<'_>) -> PrimitiveSchemaDefinition {
    let title = f.title.map(str::to_owned);
    let description = f.description.map(str::to_owned);
    match &f.kind {
        FieldKind::Text {
            min_length,
            max_length,
            format,
            default,
        } => {
            let mut s = StringSchema::new();
            s.title = title;
            s.description = description;
            s.min_length = *min_length;
            s.max_length = *max_length;
            s.format = *format;
            s.default = default.clone();
            s.into()
        }
        FieldKind::Integer {
            minimum,
            maximum,
            default,
        } => {
            let mut s = NumberSchema::new(NumberKind::Integer);
            s.title = title;
            s.description = description;
            s.minimum = Some(int_number(*minimum));
            s.maximum = Some(int_number(*maximum));
            s.default = default.map(int_number);
            s.into()
        }
        FieldKind::Number {
            minimum,
            maximum,
            default,
        } => {
            let mut s = NumberSchema::new(NumberKind::Number);
            s.title = title;
            s.description = description;
            s.minimum = minimum.and_then(float_number);
            s.maximum = maximum.and_then(float_number);
            s.default = default.and_then(float_number);
            s.into()
        }
        FieldKind::Boolean { default } => {
            let mut s = mcp_types::BooleanSchema::new();
            s.title = title;
            s.description = description;
            s.default = *default;
            s.into()
        }
        FieldKind::Select { options, default } => {
            if titled(options) {
                TitledSingleSelectEnumSchema {
                    kind: Default::default(),
                    title,
                    description,
                    one_of: enum_options(options),
                    default: default.clone(),
                    extra: JsonObject::new(),
                }
                .into()
            } else {
                UntitledSingleSelectEnumSchema {
                    kind: Default::default(),
                    title,
                    description,
                    values: values(options),
                    default: default.clone(),
                    extra: JsonObject::new(),
                }
                .into()
            }
        }
        FieldKind::MultiSelect {
            options,
            min_items,
            max_items,
        } => {
            if titled(options) {
                TitledMultiSelectEnumSchema {
                    kind: Default::default(),
                    title,
                    description,
                    min_items: *min_items,
                    max_items: *max_items,
                    items: TitledEnumItems {
                        any_of: enum_options(options),
                        extra: JsonObject::new(),
                    },
                    default: None,
                    extra: JsonObject::new(),
                }
                .into()
            } else {
                UntitledMultiSelectEnumSchema {
                    kind: Default::default(),
                    title,
                    description,
                    min_items: *min_items,
                    max_items: *max_items,
                    items: UntitledEnumItems {
                        kind: Default::default(),
                        values: values(options),
                        extra: JsonObject::new(),
                    },
                    default: None,
                    extra: JsonObject::new(),
                }
                .into()
            }
        }
    }
}
