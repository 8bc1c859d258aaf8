//! The authenticated identity a request runs as.

use std::fmt;
use std::sync::Arc;

/// The authenticated identity a request runs as.
///
/// A transport establishes it (a bearer token on HTTP, the local user on stdio). It is never
/// derived from `clientInfo`, which the client reports about itself and which proves nothing.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Principal(Arc<str>);

impl Principal {
    /// Wraps an authenticated identity.
    pub fn new(name: impl Into<Arc<str>>) -> Self {
        Self(name.into())
    }

    /// The identity as a string, as bound into signed request state.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Principal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Principal").field(&&*self.0).finish()
    }
}

impl fmt::Display for Principal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}
