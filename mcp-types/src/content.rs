//! Content blocks carried by tool results, prompts and sampling messages.

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Number, Value};

use crate::JsonObject;
use crate::meta::Icon;
use crate::serde_util::str_member;

const_str!(
    /// `"type": "text"`.
    TextType = "text"
);
const_str!(
    /// `"type": "image"`.
    ImageType = "image"
);
const_str!(
    /// `"type": "audio"`.
    AudioType = "audio"
);
const_str!(
    /// `"type": "resource_link"`.
    ResourceLinkType = "resource_link"
);
const_str!(
    /// `"type": "resource"`.
    EmbeddedResourceType = "resource"
);

/// Who a message or annotation is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The end user.
    User,
    /// The model.
    Assistant,
}

/// Display hints on content: `{audience?, priority?, lastModified?}`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Annotations {
    /// Intended audience.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audience: Option<Vec<Role>>,
    /// Importance in `[0, 1]`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<Number>,
    /// ISO-8601 timestamp.
    #[serde(
        rename = "lastModified",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub last_modified: Option<String>,
    /// Unknown members, preserved.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// `{"type":"text", text, annotations?, _meta?}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TextContent {
    /// Always `"text"`.
    #[serde(rename = "type")]
    pub kind: TextType,
    /// The text.
    pub text: String,
    /// Display hints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// `_meta`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
    /// Unknown members, preserved.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl TextContent {
    /// Text content with no annotations.
    pub fn new(text: impl Into<String>) -> Self {
        TextContent {
            kind: TextType,
            text: text.into(),
            annotations: None,
            meta: None,
            extra: JsonObject::new(),
        }
    }
}

/// `{"type":"image", data (base64), mimeType, annotations?, _meta?}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ImageContent {
    /// Always `"image"`.
    #[serde(rename = "type")]
    pub kind: ImageType,
    /// Base64-encoded image bytes.
    pub data: String,
    /// MIME type.
    #[serde(rename = "mimeType")]
    pub mime_type: String,
    /// Display hints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// `_meta`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
    /// Unknown members, preserved.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl ImageContent {
    /// Image content from base64 data and a MIME type.
    pub fn new(data: impl Into<String>, mime_type: impl Into<String>) -> Self {
        ImageContent {
            kind: ImageType,
            data: data.into(),
            mime_type: mime_type.into(),
            annotations: None,
            meta: None,
            extra: JsonObject::new(),
        }
    }
}

/// `{"type":"audio", data (base64), mimeType, annotations?, _meta?}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AudioContent {
    /// Always `"audio"`.
    #[serde(rename = "type")]
    pub kind: AudioType,
    /// Base64-encoded audio bytes.
    pub data: String,
    /// MIME type.
    #[serde(rename = "mimeType")]
    pub mime_type: String,
    /// Display hints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// `_meta`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
    /// Unknown members, preserved.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl AudioContent {
    /// Audio content from base64 data and a MIME type.
    pub fn new(data: impl Into<String>, mime_type: impl Into<String>) -> Self {
        AudioContent {
            kind: AudioType,
            data: data.into(),
            mime_type: mime_type.into(),
            annotations: None,
            meta: None,
            extra: JsonObject::new(),
        }
    }
}

/// A link to a resource: `{"type":"resource_link", uri, name, ...}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResourceLink {
    /// Always `"resource_link"`.
    #[serde(rename = "type")]
    pub kind: ResourceLinkType,
    /// Resource URI.
    pub uri: String,
    /// Programmatic name.
    pub name: String,
    /// Display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// MIME type.
    #[serde(rename = "mimeType", default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Size in bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    /// Icons.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icons: Option<Vec<Icon>>,
    /// Display hints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// `_meta`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
    /// Unknown members, preserved.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl ResourceLink {
    /// A link with only `uri` and `name`.
    pub fn new(uri: impl Into<String>, name: impl Into<String>) -> Self {
        ResourceLink {
            kind: ResourceLinkType,
            uri: uri.into(),
            name: name.into(),
            title: None,
            description: None,
            mime_type: None,
            size: None,
            icons: None,
            annotations: None,
            meta: None,
            extra: JsonObject::new(),
        }
    }
}

/// Text contents of a resource: `{uri, mimeType?, text, _meta?}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TextResourceContents {
    /// Resource URI.
    pub uri: String,
    /// MIME type.
    #[serde(rename = "mimeType", default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// The text.
    pub text: String,
    /// `_meta`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
    /// Unknown members, preserved.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// Binary contents of a resource: `{uri, mimeType?, blob (base64), _meta?}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BlobResourceContents {
    /// Resource URI.
    pub uri: String,
    /// MIME type.
    #[serde(rename = "mimeType", default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Base64-encoded bytes.
    pub blob: String,
    /// `_meta`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
    /// Unknown members, preserved.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// Text or blob resource contents (discriminated by which of `text`/`blob` is present).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum ResourceContents {
    /// Has `text`.
    Text(TextResourceContents),
    /// Has `blob`.
    Blob(BlobResourceContents),
}

impl<'de> Deserialize<'de> for ResourceContents {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = Value::deserialize(d)?;
        if v.get("text").is_some() {
            serde_json::from_value(v)
                .map(ResourceContents::Text)
                .map_err(D::Error::custom)
        } else if v.get("blob").is_some() {
            serde_json::from_value(v)
                .map(ResourceContents::Blob)
                .map_err(D::Error::custom)
        } else {
            Err(D::Error::custom(
                "resource contents need either \"text\" or \"blob\"",
            ))
        }
    }
}

/// A resource embedded in content: `{"type":"resource", resource, annotations?, _meta?}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EmbeddedResource {
    /// Always `"resource"`.
    #[serde(rename = "type")]
    pub kind: EmbeddedResourceType,
    /// The contents.
    pub resource: ResourceContents,
    /// Display hints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// `_meta`.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
    /// Unknown members, preserved.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl EmbeddedResource {
    /// Embeds the given contents.
    pub fn new(resource: ResourceContents) -> Self {
        EmbeddedResource {
            kind: EmbeddedResourceType,
            resource,
            annotations: None,
            meta: None,
            extra: JsonObject::new(),
        }
    }
}

/// A content block, discriminated by `type`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum ContentBlock {
    /// `text`
    Text(TextContent),
    /// `image`
    Image(ImageContent),
    /// `audio`
    Audio(AudioContent),
    /// `resource_link`
    ResourceLink(ResourceLink),
    /// `resource`
    Resource(EmbeddedResource),
}

impl ContentBlock {
    /// A text block.
    pub fn text(text: impl Into<String>) -> Self {
        ContentBlock::Text(TextContent::new(text))
    }
}

impl<'de> Deserialize<'de> for ContentBlock {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = Value::deserialize(d)?;
        let r = match str_member(&v, "type") {
            Some("text") => serde_json::from_value(v).map(ContentBlock::Text),
            Some("image") => serde_json::from_value(v).map(ContentBlock::Image),
            Some("audio") => serde_json::from_value(v).map(ContentBlock::Audio),
            Some("resource_link") => serde_json::from_value(v).map(ContentBlock::ResourceLink),
            Some("resource") => serde_json::from_value(v).map(ContentBlock::Resource),
            Some(other) => {
                return Err(D::Error::custom(format!(
                    "unknown content type {other:?}; expected text, image, audio, resource_link or resource"
                )));
            }
            None => return Err(D::Error::custom("content block needs a string \"type\"")),
        };
        r.map_err(D::Error::custom)
    }
}

macro_rules! from_variant {
    ($enum:ident: $($v:ident($t:ty)),*) => {$(
        impl From<$t> for $enum {
            fn from(x: $t) -> Self { $enum::$v(x) }
        }
    )*};
}
from_variant!(ContentBlock: Text(TextContent), Image(ImageContent), Audio(AudioContent), ResourceLink(ResourceLink), Resource(EmbeddedResource));
from_variant!(ResourceContents: Text(TextResourceContents), Blob(BlobResourceContents));
