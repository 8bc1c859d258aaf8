//! Client and server capabilities.
//!
//! Client capabilities are declared per request in `_meta` and checked per
//! request. [`ClientCapabilities::missing_from`] computes the exact
//! `requiredCapabilities` payload of a `-32021` error.

use serde::{Deserialize, Serialize};

use crate::JsonObject;

/// A map from (prefixed) extension or experimental key to its settings object.
pub type CapabilityMap = indexmap::IndexMap<String, JsonObject>;

/// `elicitation` client capability: `{}` (form only), `{form:{}}`, `{url:{}}` or both.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ElicitationCapability {
    /// Form mode settings, if declared.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub form: Option<JsonObject>,
    /// URL mode settings, if declared.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<JsonObject>,
    /// Unknown members, preserved.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl ElicitationCapability {
    /// `{"form":{}}`.
    pub fn form() -> Self {
        ElicitationCapability {
            form: Some(JsonObject::new()),
            ..Default::default()
        }
    }

    /// `{"url":{}}`.
    pub fn url() -> Self {
        ElicitationCapability {
            url: Some(JsonObject::new()),
            ..Default::default()
        }
    }

    /// `{"form":{},"url":{}}`.
    pub fn form_and_url() -> Self {
        ElicitationCapability {
            form: Some(JsonObject::new()),
            url: Some(JsonObject::new()),
            ..Default::default()
        }
    }

    /// Whether form mode is allowed. An object without `form` and without `url`
    /// (e.g. `{}`) means form only, per the spec's backward-compatibility rule.
    pub fn supports_form(&self) -> bool {
        self.form.is_some() || self.url.is_none()
    }

    /// Whether URL mode is allowed (only when `url` is declared).
    pub fn supports_url(&self) -> bool {
        self.url.is_some()
    }
}

/// `sampling` client capability (deprecated in 2026-07-28 but functional).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SamplingCapability {
    /// Support for `includeContext` values other than `"none"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<JsonObject>,
    /// Support for `tools` / `toolChoice` in sampling requests.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<JsonObject>,
    /// Unknown members, preserved.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// `roots` client capability (deprecated; `{}` in this revision).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RootsCapability {
    /// Unknown members (e.g. a legacy `listChanged`), preserved.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// Capabilities a client declares in a request's `_meta`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ClientCapabilities {
    /// Non-standard experimental capabilities.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub experimental: Option<CapabilityMap>,
    /// Roots (deprecated).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub roots: Option<RootsCapability>,
    /// Sampling (deprecated).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sampling: Option<SamplingCapability>,
    /// Elicitation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub elicitation: Option<ElicitationCapability>,
    /// Extensions, keyed by prefixed name (e.g. `io.modelcontextprotocol/tasks`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extensions: Option<CapabilityMap>,
    /// Unknown members, preserved.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl ClientCapabilities {
    /// `{}`: no optional capabilities.
    pub fn none() -> Self {
        Self::default()
    }

    /// Builder: sets `elicitation`.
    pub fn with_elicitation(mut self, e: ElicitationCapability) -> Self {
        self.elicitation = Some(e);
        self
    }

    /// Builder: sets `sampling`.
    pub fn with_sampling(mut self, s: SamplingCapability) -> Self {
        self.sampling = Some(s);
        self
    }

    /// Builder: sets `roots: {}`.
    pub fn with_roots(mut self) -> Self {
        self.roots = Some(RootsCapability::default());
        self
    }

    /// Builder: adds an extension with empty settings.
    pub fn with_extension(mut self, key: impl Into<String>) -> Self {
        self.extensions
            .get_or_insert_with(CapabilityMap::new)
            .insert(key.into(), JsonObject::new());
        self
    }

    /// Form-mode elicitation allowed (see [`ElicitationCapability::supports_form`]).
    pub fn supports_form(&self) -> bool {
        self.elicitation
            .as_ref()
            .is_some_and(ElicitationCapability::supports_form)
    }

    /// URL-mode elicitation allowed.
    pub fn supports_url(&self) -> bool {
        self.elicitation
            .as_ref()
            .is_some_and(ElicitationCapability::supports_url)
    }

    /// Sampling declared.
    pub fn supports_sampling(&self) -> bool {
        self.sampling.is_some()
    }

    /// Sampling with tools declared (`sampling.tools`).
    pub fn supports_sampling_tools(&self) -> bool {
        self.sampling.as_ref().is_some_and(|s| s.tools.is_some())
    }

    /// Sampling with context inclusion declared (`sampling.context`).
    pub fn supports_sampling_context(&self) -> bool {
        self.sampling.as_ref().is_some_and(|s| s.context.is_some())
    }

    /// Roots declared.
    pub fn supports_roots(&self) -> bool {
        self.roots.is_some()
    }

    /// Extension `key` declared.
    pub fn supports_extension(&self, key: &str) -> bool {
        self.extensions
            .as_ref()
            .is_some_and(|m| m.contains_key(key))
    }

    /// Whether nothing at all is declared.
    pub fn is_empty(&self) -> bool {
        self.no_known_capability() && self.extra.is_empty()
    }

    /// Whether none of the capabilities this revision defines is declared (unknown members
    /// aside). Field by field rather than against a built default: this runs on every
    /// request. The destructuring makes a new field a compile error here until it is counted.
    fn no_known_capability(&self) -> bool {
        let ClientCapabilities {
            experimental,
            roots,
            sampling,
            elicitation,
            extensions,
            extra: _,
        } = self;
        experimental.is_none()
            && roots.is_none()
            && sampling.is_none()
            && elicitation.is_none()
            && extensions.is_none()
    }

    /// Treating `self` as what a tool *requires*, returns the subset `declared`
    /// lacks, in the exact `requiredCapabilities` shape
    /// (`{"elicitation":{"form":{}}}`, `{"elicitation":{"url":{}}}`,
    /// `{"sampling":{}}`, `{"sampling":{"tools":{}}}`, `{"roots":{}}`,
    /// `{"extensions":{"x/y":{}}}`), or `None` when nothing is missing.
    ///
    /// A required `elicitation: {}` means form mode (the backward-compatible
    /// reading), so it reports `{"elicitation":{"form":{}}}` when missing. When a
    /// tool needs both modes and the request declared only the implicit
    /// `elicitation: {}`, both `form` and `url` are reported: adding just `url`
    /// to `{}` would turn the declaration into URL-only.
    pub fn missing_from(&self, declared: &ClientCapabilities) -> Option<ClientCapabilities> {
        // Most handlers require nothing: answer without building the empty result. Unknown
        // members (`extra`) are never required, so they do not count here either.
        if self.no_known_capability() {
            return None;
        }
        let mut missing = ClientCapabilities::default();
        if let Some(req) = &self.elicitation {
            let mut m = ElicitationCapability::default();
            let have = declared.elicitation.as_ref();
            if req.supports_url() && !declared.supports_url() {
                m.url = Some(JsonObject::new());
            }
            // A declared `{}` means form only *because* `url` is absent; once the
            // client adds `url` it must also name `form` explicitly, so report it.
            let form_only_implicit = have.is_some_and(|e| e.form.is_none());
            if req.supports_form()
                && (!declared.supports_form() || (m.url.is_some() && form_only_implicit))
            {
                m.form = Some(JsonObject::new());
            }
            if m.form.is_some() || m.url.is_some() {
                missing.elicitation = Some(m);
            }
        }
        if let Some(req) = &self.sampling {
            match &declared.sampling {
                None => {
                    // Report the sub-features too, so the client knows the full need.
                    missing.sampling = Some(SamplingCapability {
                        context: req.context.as_ref().map(|_| JsonObject::new()),
                        tools: req.tools.as_ref().map(|_| JsonObject::new()),
                        ..Default::default()
                    });
                }
                Some(have) => {
                    let mut m = SamplingCapability::default();
                    if req.context.is_some() && have.context.is_none() {
                        m.context = Some(JsonObject::new());
                    }
                    if req.tools.is_some() && have.tools.is_none() {
                        m.tools = Some(JsonObject::new());
                    }
                    if m.context.is_some() || m.tools.is_some() {
                        missing.sampling = Some(m);
                    }
                }
            }
        }
        if self.roots.is_some() && declared.roots.is_none() {
            missing.roots = Some(RootsCapability::default());
        }
        missing.extensions = missing_keys(self.extensions.as_ref(), declared.extensions.as_ref());
        missing.experimental =
            missing_keys(self.experimental.as_ref(), declared.experimental.as_ref());
        if missing.is_empty() {
            None
        } else {
            Some(missing)
        }
    }

    /// Names of the declared top-level capabilities, in schema order (used to word
    /// `-32021` messages).
    pub fn top_level_names(&self) -> Vec<&'static str> {
        let mut v = Vec::new();
        if self.elicitation.is_some() {
            v.push("elicitation");
        }
        if self.sampling.is_some() {
            v.push("sampling");
        }
        if self.roots.is_some() {
            v.push("roots");
        }
        if self.extensions.is_some() {
            v.push("extensions");
        }
        if self.experimental.is_some() {
            v.push("experimental");
        }
        v
    }
}

fn missing_keys(
    required: Option<&CapabilityMap>,
    declared: Option<&CapabilityMap>,
) -> Option<CapabilityMap> {
    let required = required?;
    let missing: CapabilityMap = required
        .keys()
        .filter(|k| !declared.is_some_and(|d| d.contains_key(k.as_str())))
        .map(|k| (k.clone(), JsonObject::new()))
        .collect();
    if missing.is_empty() {
        None
    } else {
        Some(missing)
    }
}

/// `prompts` server capability.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PromptsCapability {
    /// Whether `notifications/prompts/list_changed` is offered.
    #[serde(
        rename = "listChanged",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub list_changed: Option<bool>,
    /// Unknown members, preserved.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// `resources` server capability.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ResourcesCapability {
    /// Whether per-resource update subscriptions are offered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subscribe: Option<bool>,
    /// Whether `notifications/resources/list_changed` is offered.
    #[serde(
        rename = "listChanged",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub list_changed: Option<bool>,
    /// Unknown members, preserved.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// `tools` server capability.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ToolsCapability {
    /// Whether `notifications/tools/list_changed` is offered.
    #[serde(
        rename = "listChanged",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub list_changed: Option<bool>,
    /// Unknown members, preserved.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// Capabilities a server advertises in `server/discover`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ServerCapabilities {
    /// Non-standard experimental capabilities.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub experimental: Option<CapabilityMap>,
    /// Logging (deprecated).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logging: Option<JsonObject>,
    /// Argument completion.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completions: Option<JsonObject>,
    /// Prompts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompts: Option<PromptsCapability>,
    /// Resources.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<ResourcesCapability>,
    /// Tools.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<ToolsCapability>,
    /// Extensions, keyed by prefixed name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extensions: Option<CapabilityMap>,
    /// Unknown members, preserved.
    #[serde(flatten)]
    pub extra: JsonObject,
}
