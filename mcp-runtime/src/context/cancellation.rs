//! Cancellation as a handler sees it: the transport's per-request token, exposed on
//! [`RequestContext`].
//!
//! Every transport gives a request one [`CancellationToken`] and cancels it when the client
//! cancels the request (stdio: `notifications/cancelled` naming it; Streamable HTTP: the client
//! closes the connection or the SSE stream), when the transport's request deadline passes, and
//! once the request has been answered. At cancellation the transport also drops the handler's
//! future, so a handler stops at its next `.await` without doing anything. What the token adds
//! is reach beyond that future: work the handler spawned (`tokio::spawn`,
//! `spawn_blocking`, a thread) keeps running after the future is dropped unless it watches the
//! token.

use super::RequestContext;
use crate::service::CancellationToken;

impl RequestContext {
    /// Completes once this request is over: cancelled by the client, timed out, or answered.
    ///
    /// Useful in a `tokio::select!` inside the handler, to stop a step cleanly (release a lock,
    /// remove a temporary file) before the transport drops the handler's future. For work the
    /// handler spawns, move [`RequestContext::cancellation_token`] into it instead. Cancel safe.
    pub async fn cancelled(&self) {
        self.cancel.cancelled().await;
    }

    /// Whether this request is over (see [`RequestContext::cancelled`]): a long loop that never
    /// awaits (CPU-bound work in `spawn_blocking`, say, with a token clone) checks this between
    /// steps.
    pub fn is_cancelled(&self) -> bool {
        self.cancel.is_cancelled()
    }

    /// A token to move into work the handler spawns: it is cancelled when this request is over
    /// (client cancellation, timeout, or the response sent), so the spawned work stops instead
    /// of outliving the request.
    ///
    /// The token is a child of the request's: cancelling it (to stop just that work) does not
    /// cancel the request itself.
    pub fn cancellation_token(&self) -> CancellationToken {
        self.cancel.child_token()
    }

    /// Replaces the token this context reports, e.g. to cancel a
    /// [`RequestContext::detached`] context from a unit test and check that the tool stops.
    #[must_use]
    pub fn with_cancellation(mut self, token: CancellationToken) -> Self {
        self.cancel = token;
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Principal;

    #[test]
    fn detached_contexts_are_never_cancelled_until_told_and_children_do_not_cancel_the_request() {
        let ctx = RequestContext::detached(Principal::new("t"));
        assert!(!ctx.is_cancelled());
        let token = CancellationToken::new();
        let ctx = ctx.with_cancellation(token.clone());
        let child = ctx.cancellation_token();
        child.cancel();
        assert!(
            !ctx.is_cancelled(),
            "a child token never cancels the request"
        );
        let other = ctx.cancellation_token();
        token.cancel();
        assert!(ctx.is_cancelled() && other.is_cancelled());
        futures::executor::block_on(ctx.cancelled());
    }
}
