//! [`RequestScope`]: what a transport knows about one message besides its body.

use tokio_util::sync::CancellationToken;

use super::{Grant, NotificationSink};

/// Everything a transport knows about one incoming message besides its body.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct RequestScope {
    /// Who sent the message and what its credentials allow, as the transport authenticated
    /// it (never taken from `clientInfo`). The core authorizes every request against it.
    pub grant: Grant,
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
    /// The scope of one message sent under `grant` (a plain [`Principal`](crate::Principal)
    /// is a local, unscoped grant: see [`Grant`]).
    pub fn new(
        grant: impl Into<Grant>,
        notifications: NotificationSink,
        cancel: CancellationToken,
    ) -> Self {
        Self {
            grant: grant.into(),
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

    /// Who sent the message (the grant's principal).
    pub fn principal(&self) -> &crate::Principal {
        &self.grant.principal
    }

    /// Takes the transport's request span, if it opened one.
    pub(crate) fn take_span(&mut self) -> Option<Box<tracing::Span>> {
        self.span.take()
    }
}
