//! [`ParamHeader`]: a tool's `x-mcp-header` rule, as the service hands it to a transport.
//!
//! Its own module so that the service seam (which hands the rules out) and the HTTP header
//! checks (which apply them) both depend on it instead of on each other.

/// One `x-mcp-header` rule: a `tools/call` whose `arguments` hold a non-null value at `path` must
/// carry an `Mcp-Param-{name}` header equal to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParamHeader {
    /// The `{Name}` in `Mcp-Param-{Name}` (compared case-insensitively, like all header names).
    pub name: String,
    /// Property names leading from `arguments` to the value (only `properties` keys, per spec).
    pub path: Vec<String>,
}

impl ParamHeader {
    /// A rule for `Mcp-Param-{name}` mirroring `arguments.<path[0]>.<path[1]>…`.
    pub fn new(name: impl Into<String>, path: impl IntoIterator<Item = impl Into<String>>) -> Self {
        Self {
            name: name.into(),
            path: path.into_iter().map(Into::into).collect(),
        }
    }
}
