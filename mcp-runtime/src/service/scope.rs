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
    /// What the transport received beside the body that must mirror a call's arguments
    /// (boxed, and only when there are some: the scope lives in every request's future).
    param_mirrors: Option<Box<super::ParamMirrors>>,
    /// The transport carries mirrors at all ([`RequestScope::with_param_mirrors`] was called).
    mirrors_carried: bool,
    /// The W3C trace context the transport received beside the body (HTTP headers).
    #[cfg(feature = "otel")]
    trace: Option<Box<crate::observe::TraceContext>>,
    /// The W3C baggage the transport received beside the body (HTTP header).
    #[cfg(feature = "otel")]
    baggage: Option<Box<crate::observe::Baggage>>,
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
            param_mirrors: None,
            mirrors_carried: false,
            #[cfg(feature = "otel")]
            trace: None,
            #[cfg(feature = "otel")]
            baggage: None,
        }
    }

    /// Records the W3C trace context the transport received beside the body (HTTP's
    /// `traceparent`/`tracestate` headers, read with [`TraceContext::parse`]). The request's
    /// span takes its `_meta` trace context first (SEP-414), then this one, as its parent.
    ///
    /// [`TraceContext::parse`]: crate::observe::TraceContext::parse
    #[cfg(feature = "otel")]
    #[must_use]
    pub fn with_trace_context(mut self, trace: Option<crate::observe::TraceContext>) -> Self {
        self.trace = trace.map(Box::new);
        self
    }

    /// Records the W3C baggage the transport received beside the body (HTTP's `baggage`
    /// header, read with [`Baggage::parse`]). The request span's OpenTelemetry context takes
    /// `_meta`'s baggage (SEP-414) if it carries any, else this one; an empty list is none.
    ///
    /// [`Baggage::parse`]: crate::observe::Baggage::parse
    #[cfg(feature = "otel")]
    #[must_use]
    pub fn with_baggage(mut self, baggage: Option<crate::observe::Baggage>) -> Self {
        self.baggage = baggage.filter(|b| !b.is_empty()).map(Box::new);
        self
    }

    /// The baggage the transport recorded ([`RequestScope::with_baggage`]).
    pub(crate) fn baggage(&self) -> Option<&crate::observe::Baggage> {
        #[cfg(feature = "otel")]
        return self.baggage.as_deref();
        #[cfg(not(feature = "otel"))]
        None
    }

    /// The trace context the transport recorded ([`RequestScope::with_trace_context`]).
    pub(crate) fn trace_context(&self) -> Option<&crate::observe::TraceContext> {
        #[cfg(feature = "otel")]
        return self.trace.as_deref();
        #[cfg(not(feature = "otel"))]
        None
    }

    /// Records the values the transport received beside the body that claim to mirror a
    /// `tools/call`'s arguments (HTTP's `Mcp-Param-*` headers). The core then holds them to
    /// the tool's `x-mcp-header` rules: a mirrored argument with no mirror, a differing or a
    /// repeated one is refused with `-32020` before the tool runs. A transport that has no
    /// such channel never calls this, and nothing is checked.
    #[must_use]
    pub fn with_param_mirrors(mut self, mirrors: super::ParamMirrors) -> Self {
        self.mirrors_carried = true;
        self.param_mirrors = (!mirrors.is_empty()).then(|| Box::new(mirrors));
        self
    }

    /// The mirrors the transport recorded ([`RequestScope::with_param_mirrors`]); `None` when
    /// it carries none at all (then nothing is checked).
    pub fn param_mirrors(&self) -> Option<&super::ParamMirrors> {
        static NONE_RECEIVED: super::ParamMirrors = super::ParamMirrors::new();
        match &self.param_mirrors {
            Some(mirrors) => Some(mirrors),
            None if self.mirrors_carried => Some(&NONE_RECEIVED),
            None => None,
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
