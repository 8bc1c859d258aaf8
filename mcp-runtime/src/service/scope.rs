//! [`RequestScope`]: what a transport knows about one message besides its body.

use tokio_util::sync::CancellationToken;

use super::NotificationSink;
use crate::Principal;

/// Everything a transport knows about one incoming message besides its body.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct RequestScope {
    /// Who sent the message, as the transport authenticated it (never taken from `clientInfo`).
    pub principal: Principal,
    /// Where the request's progress and log notifications go.
    pub notifications: NotificationSink,
    /// Cancelled when the client cancels the request (stdio `notifications/cancelled`, HTTP
    /// disconnect), when it times out, or when it completes. Transports also drop the handler
    /// future at that point; the token is for work the handler spawned elsewhere.
    pub cancel: CancellationToken,
    /// The request span a transport opened for the core to adopt (see
    /// [`observe`](crate::observe)), so that one request makes one record.
    span: Option<Box<tracing::Span>>,
}

impl RequestScope {
    /// Builds a context.
    pub fn new(
        principal: Principal,
        notifications: NotificationSink,
        cancel: CancellationToken,
    ) -> Self {
        Self {
            principal,
            notifications,
            cancel,
            span: None,
        }
    }

    /// Hands the transport's request span to the core.
    #[cfg(feature = "http")]
    pub(crate) fn with_span(mut self, span: Option<Box<tracing::Span>>) -> Self {
        self.span = span;
        self
    }

    /// Takes the transport's request span, if it opened one.
    pub(crate) fn take_span(&mut self) -> Option<Box<tracing::Span>> {
        self.span.take()
    }
}
