//! The restricted JSON Schema of form-mode elicitation (`requestedSchema`).
//!
//! The schema is flat: an object whose properties are primitive definitions.
//! [`PrimitiveSchemaDefinition`] is decoded by looking at `type` and the
//! distinguishing members, in this order (spec schemas are open, so a naive
//! untagged decode would be ambiguous): for `"string"`, `oneOf` → titled single
//! select, `enumNames` → legacy, `enum` → untitled single select, else plain
//! string; for `"array"`, `items.anyOf` → titled multi select, else untitled.

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Number, Value};

use crate::JsonObject;
use crate::serde_util::str_member;

const_str!(
    /// `"type": "object"`.
    ObjectType = "object"
);
const_str!(
    /// `"type": "string"`.
    StringType = "string"
);
const_str!(
    /// `"type": "boolean"`.
    BooleanType = "boolean"
);
const_str!(
    /// `"type": "array"`.
    ArrayType = "array"
);

/// The ordered property map of a [`RequestedSchema`] (order = form field order).
pub type FormProperties = indexmap::IndexMap<String, PrimitiveSchemaDefinition>;

/// `requestedSchema`: `{ $schema?, type: "object", properties, required? }`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RequestedSchema {
    /// Optional `$schema` dialect URI.
    #[serde(rename = "$schema", default, skip_serializing_if = "Option::is_none")]
    pub schema: Option<String>,
    /// Always `"object"`.
    #[serde(rename = "type")]
    pub kind: ObjectType,
    /// Field name → definition, in display order.
    pub properties: FormProperties,
    /// Names of required fields.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub required: Option<Vec<String>>,
    /// Unknown members, preserved.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl RequestedSchema {
    /// An empty form schema.
    pub fn new() -> Self {
        RequestedSchema {
            schema: None,
            kind: ObjectType,
            properties: FormProperties::new(),
            required: None,
            extra: JsonObject::new(),
        }
    }

    /// Builder: appends a field, marking it required if asked.
    pub fn field(
        mut self,
        name: impl Into<String>,
        def: impl Into<PrimitiveSchemaDefinition>,
        required: bool,
    ) -> Self {
        let name = name.into();
        if required {
            self.required
                .get_or_insert_with(Vec::new)
                .push(name.clone());
        }
        self.properties.insert(name, def.into());
        self
    }
}

impl Default for RequestedSchema {
    fn default() -> Self {
        Self::new()
    }
}

/// `format` of a [`StringSchema`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum StringFormat {
    /// `email`
    #[serde(rename = "email")]
    Email,
    /// `uri`
    #[serde(rename = "uri")]
    Uri,
    /// `date`
    #[serde(rename = "date")]
    Date,
    /// `date-time`
    #[serde(rename = "date-time")]
    DateTime,
}

/// A free-text field.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StringSchema {
    /// Always `"string"`.
    #[serde(rename = "type")]
    pub kind: StringType,
    /// Label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Help text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Minimum length.
    #[serde(rename = "minLength", default, skip_serializing_if = "Option::is_none")]
    pub min_length: Option<u64>,
    /// Maximum length.
    #[serde(rename = "maxLength", default, skip_serializing_if = "Option::is_none")]
    pub max_length: Option<u64>,
    /// Format.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format: Option<StringFormat>,
    /// Default value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<String>,
    /// Unknown members, preserved.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl StringSchema {
    /// A plain string field.
    pub fn new() -> Self {
        StringSchema {
            kind: StringType,
            title: None,
            description: None,
            min_length: None,
            max_length: None,
            format: None,
            default: None,
            extra: JsonObject::new(),
        }
    }
}

impl Default for StringSchema {
    fn default() -> Self {
        Self::new()
    }
}

/// `type` of a [`NumberSchema`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum NumberKind {
    /// `"number"`
    Number,
    /// `"integer"`
    Integer,
}

/// A numeric field.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NumberSchema {
    /// `"number"` or `"integer"`.
    #[serde(rename = "type")]
    pub kind: NumberKind,
    /// Label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Help text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Inclusive minimum.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub minimum: Option<Number>,
    /// Inclusive maximum.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub maximum: Option<Number>,
    /// Default value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<Number>,
    /// Unknown members, preserved.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl NumberSchema {
    /// A field of the given numeric kind.
    pub fn new(kind: NumberKind) -> Self {
        NumberSchema {
            kind,
            title: None,
            description: None,
            minimum: None,
            maximum: None,
            default: None,
            extra: JsonObject::new(),
        }
    }
}

/// A checkbox field.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BooleanSchema {
    /// Always `"boolean"`.
    #[serde(rename = "type")]
    pub kind: BooleanType,
    /// Label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Help text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Default value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<bool>,
    /// Unknown members, preserved.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl BooleanSchema {
    /// A boolean field.
    pub fn new() -> Self {
        BooleanSchema {
            kind: BooleanType,
            title: None,
            description: None,
            default: None,
            extra: JsonObject::new(),
        }
    }
}

impl Default for BooleanSchema {
    fn default() -> Self {
        Self::new()
    }
}

/// One titled choice: `{const, title}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EnumOption {
    /// The value sent back.
    #[serde(rename = "const")]
    pub value: String,
    /// The label shown.
    pub title: String,
}

impl EnumOption {
    /// A choice.
    pub fn new(value: impl Into<String>, title: impl Into<String>) -> Self {
        EnumOption {
            value: value.into(),
            title: title.into(),
        }
    }
}

/// Single select without labels: `{type:"string", enum, default?}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UntitledSingleSelectEnumSchema {
    /// Always `"string"`.
    #[serde(rename = "type")]
    pub kind: StringType,
    /// Label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Help text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Allowed values.
    #[serde(rename = "enum")]
    pub values: Vec<String>,
    /// Default value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<String>,
    /// Unknown members, preserved.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// Single select with labels: `{type:"string", oneOf:[{const,title}], default?}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TitledSingleSelectEnumSchema {
    /// Always `"string"`.
    #[serde(rename = "type")]
    pub kind: StringType,
    /// Label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Help text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The choices.
    #[serde(rename = "oneOf")]
    pub one_of: Vec<EnumOption>,
    /// Default value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<String>,
    /// Unknown members, preserved.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// `items` of an [`UntitledMultiSelectEnumSchema`]: `{type:"string", enum}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UntitledEnumItems {
    /// Always `"string"`.
    #[serde(rename = "type")]
    pub kind: StringType,
    /// Allowed values.
    #[serde(rename = "enum")]
    pub values: Vec<String>,
    /// Unknown members, preserved.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// `items` of a [`TitledMultiSelectEnumSchema`]: `{anyOf:[{const,title}]}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TitledEnumItems {
    /// The choices.
    #[serde(rename = "anyOf")]
    pub any_of: Vec<EnumOption>,
    /// Unknown members, preserved.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// Multi select without labels.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UntitledMultiSelectEnumSchema {
    /// Always `"array"`.
    #[serde(rename = "type")]
    pub kind: ArrayType,
    /// Label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Help text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Minimum selections.
    #[serde(rename = "minItems", default, skip_serializing_if = "Option::is_none")]
    pub min_items: Option<u64>,
    /// Maximum selections.
    #[serde(rename = "maxItems", default, skip_serializing_if = "Option::is_none")]
    pub max_items: Option<u64>,
    /// The allowed values.
    pub items: UntitledEnumItems,
    /// Default selection.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<Vec<String>>,
    /// Unknown members, preserved.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// Multi select with labels.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TitledMultiSelectEnumSchema {
    /// Always `"array"`.
    #[serde(rename = "type")]
    pub kind: ArrayType,
    /// Label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Help text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Minimum selections.
    #[serde(rename = "minItems", default, skip_serializing_if = "Option::is_none")]
    pub min_items: Option<u64>,
    /// Maximum selections.
    #[serde(rename = "maxItems", default, skip_serializing_if = "Option::is_none")]
    pub max_items: Option<u64>,
    /// The choices.
    pub items: TitledEnumItems,
    /// Default selection.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<Vec<String>>,
    /// Unknown members, preserved.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// Deprecated single select with parallel `enumNames` labels.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LegacyTitledEnumSchema {
    /// Always `"string"`.
    #[serde(rename = "type")]
    pub kind: StringType,
    /// Label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Help text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Allowed values.
    #[serde(rename = "enum")]
    pub values: Vec<String>,
    /// Labels, parallel to `enum`.
    #[serde(rename = "enumNames", default, skip_serializing_if = "Option::is_none")]
    pub enum_names: Option<Vec<String>>,
    /// Default value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<String>,
    /// Unknown members, preserved.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// One field definition of a form.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum PrimitiveSchemaDefinition {
    /// Free text.
    String(StringSchema),
    /// Number or integer.
    Number(NumberSchema),
    /// Boolean.
    Boolean(BooleanSchema),
    /// Single select, plain values.
    UntitledSingleSelect(UntitledSingleSelectEnumSchema),
    /// Single select, labelled values.
    TitledSingleSelect(TitledSingleSelectEnumSchema),
    /// Multi select, plain values.
    UntitledMultiSelect(UntitledMultiSelectEnumSchema),
    /// Multi select, labelled values.
    TitledMultiSelect(TitledMultiSelectEnumSchema),
    /// Deprecated `enum` + `enumNames`.
    LegacyTitledEnum(LegacyTitledEnumSchema),
}

impl<'de> Deserialize<'de> for PrimitiveSchemaDefinition {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use PrimitiveSchemaDefinition as P;
        let v = Value::deserialize(d)?;
        let r = match str_member(&v, "type") {
            Some("string") => {
                if v.get("oneOf").is_some() {
                    serde_json::from_value(v).map(P::TitledSingleSelect)
                } else if v.get("enumNames").is_some() {
                    serde_json::from_value(v).map(P::LegacyTitledEnum)
                } else if v.get("enum").is_some() {
                    serde_json::from_value(v).map(P::UntitledSingleSelect)
                } else {
                    serde_json::from_value(v).map(P::String)
                }
            }
            Some("number" | "integer") => serde_json::from_value(v).map(P::Number),
            Some("boolean") => serde_json::from_value(v).map(P::Boolean),
            Some("array") => {
                if v.get("items").and_then(|i| i.get("anyOf")).is_some() {
                    serde_json::from_value(v).map(P::TitledMultiSelect)
                } else {
                    serde_json::from_value(v).map(P::UntitledMultiSelect)
                }
            }
            Some(other) => {
                return Err(D::Error::custom(format!(
                    "unsupported form field type {other:?}; expected string, number, integer, boolean or array"
                )));
            }
            None => {
                return Err(D::Error::custom(
                    "form field definition needs a string \"type\"",
                ));
            }
        };
        r.map_err(D::Error::custom)
    }
}

macro_rules! psd_from {
    ($($v:ident($t:ty)),*) => {$(
        impl From<$t> for PrimitiveSchemaDefinition {
            fn from(x: $t) -> Self { PrimitiveSchemaDefinition::$v(x) }
        }
    )*};
}
psd_from!(
    String(StringSchema),
    Number(NumberSchema),
    Boolean(BooleanSchema),
    UntitledSingleSelect(UntitledSingleSelectEnumSchema),
    TitledSingleSelect(TitledSingleSelectEnumSchema),
    UntitledMultiSelect(UntitledMultiSelectEnumSchema),
    TitledMultiSelect(TitledMultiSelectEnumSchema),
    LegacyTitledEnum(LegacyTitledEnumSchema)
);
