//! Message size and nesting limits, checked before a message is parsed; and [`InvalidLimit`],
//! what every config setter of this crate answers a value that cannot work with.

use std::time::Duration;

/// Bounds on what one incoming message may cost.
///
/// Start from [`Limits::default`] and change what you need with the `with_*` setters (each
/// checks its value); read a setting back with the getter of the same name.
///
/// ```
/// # fn main() -> Result<(), mcp_runtime::server::InvalidLimit> {
/// use mcp_runtime::server::Limits;
///
/// let limits = Limits::default().with_max_message_bytes(1 << 20)?.with_max_rounds(8);
/// assert_eq!(limits.max_rounds(), 8);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Limits {
    pub(crate) max_message_bytes: usize,
    pub(crate) max_depth: usize,
    pub(crate) max_rounds: u32,
    pub(crate) duplicate_wait: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_message_bytes: 4 * 1024 * 1024,
            max_depth: 64,
            max_rounds: 32,
            duplicate_wait: Duration::from_secs(10),
        }
    }
}

impl Limits {
    /// Largest accepted message, in bytes (default 4 MiB).
    pub fn max_message_bytes(&self) -> usize {
        self.max_message_bytes
    }

    /// Sets [`Limits::max_message_bytes`] (default 4 MiB).
    ///
    /// # Errors
    /// [`InvalidLimit::Zero`] for 0.
    pub fn with_max_message_bytes(mut self, bytes: usize) -> Result<Self, InvalidLimit> {
        self.max_message_bytes = nonzero("max_message_bytes", bytes)?;
        Ok(self)
    }

    /// Deepest accepted nesting of JSON arrays/objects (default 64). Checked by a linear scan
    /// before parsing, so a hostile message gets an error, never a deep recursion.
    pub fn max_depth(&self) -> usize {
        self.max_depth
    }

    /// Sets [`Limits::max_depth`] (default 64). Every request is an object, so the least
    /// depth that can work is 1; `tools/call` arguments need 2 or more.
    ///
    /// # Errors
    /// [`InvalidLimit::Zero`] for 0.
    pub fn with_max_depth(mut self, depth: usize) -> Result<Self, InvalidLimit> {
        self.max_depth = nonzero("max_depth", depth)?;
        Ok(self)
    }

    /// Most MRTR rounds one `tools/call` may take (default 32); a flow that would need more
    /// is refused, so a looping client or tool cannot go on forever.
    pub fn max_rounds(&self) -> u32 {
        self.max_rounds
    }

    /// Sets [`Limits::max_rounds`] (default 32). Any value works: 0 refuses every input
    /// round, so tools that ask the client for input always fail.
    #[must_use]
    pub fn with_max_rounds(mut self, rounds: u32) -> Self {
        self.max_rounds = rounds;
        self
    }

    /// How long a copy of a confirmed retry waits for the outcome of another copy still being
    /// carried out (on another connection or instance sharing the replay store) before it is
    /// answered "still in progress, retry in a moment" (default 10 s). A client that resent
    /// its retry after a timeout gets the one recorded outcome instead of a second run.
    pub fn duplicate_wait(&self) -> Duration {
        self.duplicate_wait
    }

    /// Sets [`Limits::duplicate_wait`] (default 10 s). Any value works: zero answers a
    /// duplicate "still in progress" at once.
    #[must_use]
    pub fn with_duplicate_wait(mut self, wait: Duration) -> Self {
        self.duplicate_wait = wait;
        self
    }
}

/// A setting that cannot work, refused by the config setter that was given it
/// ([`Limits`], `StdioConfig`, `HttpConfig`, ...).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum InvalidLimit {
    /// A timeout, cap or size of zero (the setting's name); there is no "off" value.
    #[error("invalid limit: {0} must be greater than zero (there is no \"off\" value)")]
    Zero(&'static str),
    /// A public URL that is not an `http`/`https` URL with a host.
    #[error(
        "invalid public URL {0:?}: write http(s)://HOST[:PORT][/PATH], e.g. https://mcp.example.com"
    )]
    PublicUrl(String),
    /// An endpoint path that cannot be routed.
    #[error(
        "invalid MCP endpoint path {0:?}: write an absolute path without `{{`, `}}` or `*`, e.g. /mcp"
    )]
    Path(String),
}

/// `value`, or [`InvalidLimit::Zero`] naming `name` when it is zero.
pub(crate) fn nonzero<T: Default + PartialEq>(
    name: &'static str,
    value: T,
) -> Result<T, InvalidLimit> {
    if value == T::default() {
        Err(InvalidLimit::Zero(name))
    } else {
        Ok(value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn setters_refuse_zero_where_it_cannot_work() {
        assert_eq!(
            Limits::default().with_max_message_bytes(0),
            Err(InvalidLimit::Zero("max_message_bytes"))
        );
        assert_eq!(
            Limits::default().with_max_depth(0),
            Err(InvalidLimit::Zero("max_depth"))
        );
        let limits = Limits::default()
            .with_max_rounds(0)
            .with_duplicate_wait(Duration::ZERO)
            .with_max_depth(3)
            .unwrap();
        assert_eq!(
            (
                limits.max_rounds(),
                limits.duplicate_wait(),
                limits.max_depth()
            ),
            (0, Duration::ZERO, 3)
        );
        assert!(
            InvalidLimit::Zero("max_depth")
                .to_string()
                .contains("max_depth must be greater than zero")
        );
    }
}
