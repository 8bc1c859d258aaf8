//! Message size and nesting limits, checked before a message is parsed.

/// Bounds on what one incoming message may cost.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Largest accepted message, in bytes (default 4 MiB).
    pub max_message_bytes: usize,
    /// Deepest accepted nesting of JSON arrays/objects (default 64). Checked by a linear scan
    /// before parsing, so a hostile message gets an error, never a deep recursion.
    pub max_depth: usize,
    /// Most MRTR rounds one `tools/call` may take (default 32); a flow that would need more
    /// is refused, so a looping client or tool cannot go on forever.
    pub max_rounds: u32,
    /// How long a copy of a confirmed retry waits for the outcome of another copy still being
    /// carried out (on another connection or instance sharing the replay store) before it is
    /// answered "still in progress, retry in a moment" (default 10 s). A client that resent
    /// its retry after a timeout gets the one recorded outcome instead of a second run.
    pub duplicate_wait: std::time::Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_message_bytes: 4 * 1024 * 1024,
            max_depth: 64,
            max_rounds: 32,
            duplicate_wait: std::time::Duration::from_secs(10),
        }
    }
}
