//! The [`Transport`] seam and the in-process transport.
//!
//! A transport carries one serialized JSON-RPC request to a server and brings back the one
//! JSON-RPC response to it. The client builds the message, sets the ids, checks the response and
//! bounds every call with its deadline; a transport only moves bytes (plus, for HTTP, the
//! standard headers described by [`Outgoing`]).

use bytes::Bytes;
use futures::future::BoxFuture;
use mcp_types::RequestId;
use serde_json::Value;

use super::ClientError;
use crate::server::Server;
use crate::service::Grant;
use crate::service::{CancellationToken, NotificationSink, RequestScope};

/// One outgoing message and what an HTTP transport mirrors into headers.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Outgoing {
    /// The serialized JSON-RPC message (one line of JSON, no trailing newline).
    pub body: Bytes,
    /// `method` (the `Mcp-Method` header).
    pub method: String,
    /// `params.name` of `tools/call`/`prompts/get`, `params.uri` of `resources/read` (the
    /// `Mcp-Name` header).
    pub name: Option<String>,
    /// The request's `io.modelcontextprotocol/protocolVersion` (the `MCP-Protocol-Version`
    /// header).
    pub protocol_version: String,
    /// `Mcp-Param-{Name}` headers (name without the prefix, raw value) for a `tools/call` of a
    /// tool whose input schema declares `x-mcp-header`.
    pub param_headers: Vec<(String, String)>,
    /// Whether the message is a notification (no response expected).
    pub is_notification: bool,
    /// The request's id (`None` for a notification): what a cancellation names.
    pub id: Option<RequestId>,
}

/// Carries one JSON-RPC message to a server.
///
/// Implementations return the server's response to a request as a JSON value (a result or an
/// error response), and `Value::Null` for a notification. They need not bound the wait: the
/// client wraps every call in its own deadline (dropping the future cancels the call).
pub trait Transport: Send + Sync + 'static {
    /// Sends `message` and waits for its response.
    fn send<'a>(&'a self, message: &'a Outgoing) -> BoxFuture<'a, Result<Value, ClientError>>;

    /// Tells the server that the client gave up on `request` (its future from
    /// [`Transport::send`] has already been dropped): the client calls this when a request
    /// passes its deadline or its caller drops it.
    ///
    /// The default does nothing, which is right where dropping the send future is itself the
    /// cancellation (Streamable HTTP closes the request's connection; in process the handler's
    /// future is dropped). A transport on a shared stream sends `notifications/cancelled`
    /// naming the request, as [`super::StdioTransport`] does. The client bounds the wait.
    fn cancel<'a>(&'a self, request: &'a Outgoing, reason: &'a str) -> BoxFuture<'a, ()> {
        let _ = (request, reason);
        Box::pin(async {})
    }
}

/// A shared transport (e.g. to keep a handle for [`super::StdioTransport::close`]).
impl<T: Transport + ?Sized> Transport for std::sync::Arc<T> {
    fn send<'a>(&'a self, message: &'a Outgoing) -> BoxFuture<'a, Result<Value, ClientError>> {
        (**self).send(message)
    }

    fn cancel<'a>(&'a self, request: &'a Outgoing, reason: &'a str) -> BoxFuture<'a, ()> {
        (**self).cancel(request, reason)
    }
}

/// The in-process transport: hands each message to a [`Server`](crate::server::Server) as bytes,
/// the same entry point the stdio and HTTP transports use, with no port and no process.
#[derive(Debug, Clone)]
pub struct InProcess {
    server: Server,
    grant: Grant,
}

impl InProcess {
    /// Talks to `server` under `grant` (what a real transport would have
    /// established from a token or the local user).
    pub fn new(server: Server, grant: impl Into<Grant>) -> Self {
        Self {
            server,
            grant: grant.into(),
        }
    }
}

impl Transport for InProcess {
    fn send<'a>(&'a self, message: &'a Outgoing) -> BoxFuture<'a, Result<Value, ClientError>> {
        Box::pin(async move {
            let cancel = CancellationToken::new();
            // Like a real transport: the request's token is cancelled when the call ends,
            // including when the client drops it on its deadline, so the handler's spawned
            // work sees the cancellation.
            let _over = cancel.clone().drop_guard();
            let ctx = RequestScope::new(self.grant.clone(), NotificationSink::discard(), cancel);
            match self.server.handle_raw(&message.body, ctx).await {
                None => Ok(Value::Null),
                Some(reply) => {
                    serde_json::from_slice(&reply.body).map_err(|e| ClientError::Protocol {
                        method: message.method.clone(),
                        detail: format!("the server's reply is not JSON ({e})"),
                    })
                }
            }
        })
    }
}
