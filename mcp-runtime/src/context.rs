//! [`RequestContext`]: what a running tool can see and ask for.
//!
//! # Multi round-trip requests (MRTR)
//!
//! A tool that needs the user (elicitation), the client's model (sampling) or the client's
//! roots asks through the context. On a pass where the answer is not there yet, the call
//! returns the hidden input-required [`HandlerError`]; propagate it with `?` and the runtime
//! answers the request with an `InputRequiredResult` carrying the input requests and a freshly
//! sealed `requestState`. The client retries the same call with `inputResponses` and the
//! echoed state; the runtime verifies the state *before* the tool runs again (signature,
//! principal, method, tool, argument digest, expiry), and this time the same call returns the
//! validated, typed answer.
//!
//! Security properties the context enforces, so a tool author gets them without thinking:
//!
//! - Responses are only read under keys the sealed state says were asked, and only when the
//!   schema (or sampling request) the tool rebuilds on the retry has the digest that was sealed
//!   under that key: a changed candidate set is refused, not silently accepted.
//! - Accepted form content is parsed and re-validated with [`ElicitForm::from_content`]; bad
//!   content is asked for again (the state stays retryable).
//! - The first time a pass hands the tool an answer taken from the retry (accept, decline,
//!   sampling result, root list), the state's nonce is claimed in the shared
//!   [`ReplayStore`](crate::replay::ReplayStore). A second use of the same state, on any
//!   instance, is refused before the tool sees the answer, so the mutation that follows runs at
//!   most once. [`RequestContext::elicit_with_commit`] runs the mutation inside the claim.
//! - An identical retry (same principal, same state, same answers) of a `tools/call` whose
//!   claim recorded its result gets that result again, marked with [`REPLAYED_META_KEY`] in
//!   its `_meta`; any other reuse is refused.
//! - Answers of earlier rounds travel inside the signed state; later rounds get them back
//!   without the client resending them.
//! - An input request is only made in a mode this request's `clientCapabilities` declare;
//!   otherwise the call fails with `-32021` naming the missing capability.
//!
//! # A question cannot be lost, and an undeclared one fails loudly
//!
//! Two mistakes a handler can make with the input-required signal are caught by the runtime,
//! not left to the author:
//!
//! - **Swallowing the signal.** A handler that asked on this pass (`elicit`, `try_elicit`,
//!   `sample`, ... registered an input request) but then returned something else (a result, or
//!   a [`HandlerError::tool`] / [`HandlerError::invalid_arguments`]), for example with
//!   `if let Ok(..) = ctx.elicit(..).await` or `.unwrap_or(Elicitation::Declined)`, still
//!   gets its question sent: the runtime answers with the same `InputRequiredResult` it would
//!   have sent had the signal been propagated, and logs a warning naming the handler and the
//!   keys. What the handler returned is discarded. Only a [`HandlerError::protocol`] error
//!   (the server refusing the request) passes through. Propagate the signal with `?` all the
//!   same: the code after the ask then never runs on a pass that has no answer yet.
//! - **Asking without declaring.** A handler asks only in the modes it declares:
//!   `#[tool(requires(form_elicitation))]` and friends (or `optional(..)` for a mode used only
//!   when the client has it), or a hand-written handler's `required_capabilities()` /
//!   `optional_capabilities()`. Declared requirements are checked before the handler runs
//!   (`-32021`, nothing runs), and `#[tool]`, `#[prompt]` and `#[resource]` refuse at compile
//!   time a body that calls an asking method the attribute does not declare. An ask the
//!   macros cannot see (in a helper function, or a hand-written handler) in an undeclared mode
//!   fails the request with `-32603`, a server bug naming the handler and what to declare,
//!   whatever the client's capabilities, so it shows up in the first test rather than in
//!   production.
//!
//! The context is the tool-facing facade: the request's ledger (what the retry brought, what
//! this pass asked and took, the claim and its recorded outcome) lives in the crate's `mrtr`
//! module.

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::sync::Arc;

use mcp_types::{
    ClientCapabilities, CreateMessageRequest, CreateMessageRequestParams, CreateMessageResult,
    ElicitAction, ElicitRequest, ElicitResult, ElicitationCapability, ErrorObject, IncludeContext,
    InputRequest, InputResponses, JsonObject, ListRootsRequest, ListRootsResult, LoggingLevel,
    LoggingMessageNotificationParams, ProgressNotificationParams, RequestMeta, Root,
    SamplingCapability,
};
use serde::Deserialize as _;
use serde_json::{Number, Value, json};

use crate::Principal;
use crate::form::{ElicitForm, FormError};
use crate::handler_error::HandlerError;
pub(crate) use crate::mrtr::Mrtr;
pub use crate::mrtr::REPLAYED_META_KEY;
use crate::mrtr::{
    AskShape, FreshAnswer, KeyReuse, Lookup, Sealing, binding_digest, form_binding_digest, refused,
};
use crate::replay::ActionError;
use crate::replay::ClaimWork;
use crate::service::{CancellationToken, NotificationSink};
use crate::state::{ArgDigest, CorrelationId};
use crate::url_elicitation::{LinkCompletion, LinkStage, UrlLinks, UrlTarget};

mod ask_message;
mod cancellation;

pub use ask_message::AskMessage;

/// The user's answer to an elicitation.
#[derive(Debug, Clone, PartialEq, Eq)]
#[must_use = "the user answered: act on `Accepted`, and handle `Declined` and `Cancelled` (a dropped answer is a question asked for nothing)"]
pub enum Elicitation<T> {
    /// The user submitted the form; the content was validated into `T`.
    Accepted(T),
    /// The user explicitly declined.
    Declined,
    /// The user dismissed the request without choosing.
    Cancelled,
}

/// Application state registered with the server builder, by type.
#[derive(Default, Clone)]
pub(crate) struct StateMap(HashMap<TypeId, Arc<dyn Any + Send + Sync>>);

impl StateMap {
    pub(crate) fn insert<T: Clone + Send + Sync + 'static>(&mut self, value: T) {
        self.0.insert(TypeId::of::<T>(), Arc::new(value));
    }

    /// Whether state of the type `type_id` was registered.
    pub(crate) fn contains(&self, type_id: TypeId) -> bool {
        self.0.contains_key(&type_id)
    }

    fn get<T: Clone + Send + Sync + 'static>(&self) -> Option<T> {
        self.0
            .get(&TypeId::of::<T>())
            .and_then(|b| b.downcast_ref::<T>())
            .cloned()
    }
}

/// Everything a running handler (tool, prompt or resource) can see and ask for: the
/// principal, the request's `_meta`, application state, notifications, cancellation and the
/// MRTR input rounds.
pub struct RequestContext {
    principal: Principal,
    /// The request's `_meta` (capabilities, progress token, log level), shared with the
    /// reader that read it (at about 1 KiB it is not worth copying per request); a change
    /// makes this context's own copy.
    meta: Arc<RequestMeta>,
    app_state: Arc<StateMap>,
    notifications: NotificationSink,
    /// The transport's token for this request (see [`RequestContext::cancelled`]).
    cancel: CancellationToken,
    mrtr: Mrtr,
    /// The modes the running handler declared it asks in (see [`AskModes`]).
    declared: AskModes,
    /// The first ask of this pass in a mode the handler did not declare: a server bug the
    /// pass's outcome is replaced with (see [`RequestContext::settle_pass`]).
    undeclared: Option<AskMode>,
}

impl std::fmt::Debug for RequestContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RequestContext")
            .field("principal", &self.principal)
            .field("round", &self.mrtr.opened_round())
            .finish_non_exhaustive()
    }
}

impl Default for RequestContext {
    /// [`RequestContext::detached`] with the principal `local`.
    fn default() -> Self {
        Self::detached(Principal::new("local"))
    }
}

/// The request-scoped parts of a context, as the dispatcher read them from `_meta`.
pub(crate) struct ContextParts {
    pub(crate) principal: Principal,
    pub(crate) meta: Arc<RequestMeta>,
    pub(crate) app_state: Arc<StateMap>,
    pub(crate) notifications: NotificationSink,
    pub(crate) cancel: CancellationToken,
    pub(crate) mrtr: Mrtr,
    pub(crate) declared: AskModes,
}

impl RequestContext {
    pub(crate) fn new(parts: ContextParts) -> Self {
        Self {
            principal: parts.principal,
            meta: parts.meta,
            app_state: parts.app_state,
            notifications: parts.notifications,
            cancel: parts.cancel,
            mrtr: parts.mrtr,
            declared: parts.declared,
            undeclared: None,
        }
    }

    /// A context outside any request, for calling a tool directly (unit tests, one tool
    /// calling another): no client capabilities, no application state, no request state, an
    /// in-memory replay store, notifications dropped, and never cancelled. Add what the test
    /// needs with [`RequestContext::and_state`], [`RequestContext::with_capabilities`] and
    /// [`RequestContext::with_cancellation`]. There is no handler declaration to check asks
    /// against, so an ask in any mode is allowed (the client-capability check still applies).
    pub fn detached(principal: Principal) -> Self {
        Self::new(ContextParts {
            principal,
            meta: Arc::new(RequestMeta::new(
                mcp_types::LATEST_PROTOCOL_VERSION,
                ClientCapabilities::none(),
            )),
            app_state: Arc::new(StateMap::default()),
            notifications: NotificationSink::discard(),
            cancel: CancellationToken::new(),
            mrtr: Mrtr::first(Arc::new(crate::replay::MemoryReplayStore::new(1024))),
            // No handler declaration to check asks against; the capability checks still apply.
            declared: AskModes::ANY,
        })
    }

    /// A detached context (principal `local`) holding `state` (see [`RequestContext::detached`]).
    pub fn with_state<T: Clone + Send + Sync + 'static>(state: T) -> Self {
        Self::default().and_state(state)
    }

    /// Adds application state of type `T` (replacing any earlier value of that type) to this
    /// context only; the server's own state map is never changed.
    #[must_use]
    pub fn and_state<T: Clone + Send + Sync + 'static>(mut self, state: T) -> Self {
        Arc::make_mut(&mut self.app_state).insert(state);
        self
    }

    /// Replaces the client capabilities this context acts under.
    #[must_use]
    pub fn with_capabilities(mut self, capabilities: ClientCapabilities) -> Self {
        Arc::make_mut(&mut self.meta).client_capabilities = capabilities;
        self
    }

    /// The authenticated principal making this call (never derived from `clientInfo`).
    pub fn principal(&self) -> &Principal {
        &self.principal
    }

    /// The client capabilities declared by *this* request.
    pub fn client_capabilities(&self) -> &ClientCapabilities {
        &self.meta.client_capabilities
    }

    /// A clone of the application state of type `T` registered with `.state(..)`.
    pub fn state<T: Clone + Send + Sync + 'static>(&self) -> Result<T, HandlerError> {
        self.app_state.get::<T>().ok_or_else(|| {
            HandlerError::protocol(ErrorObject::internal_error(format!(
                "server misconfigured: no application state of type `{}`; register it with Server::builder(..).state(value)",
                std::any::type_name::<T>()
            )))
        })
    }

    /// The MRTR round of this pass: 0 on a first call, then 1, 2, ... per answered round.
    pub fn round(&self) -> u32 {
        self.mrtr.round()
    }

    // ---- elicitation -------------------------------------------------------------------

    /// Asks the user to fill in form `F` under `key`, or returns the validated answer on the
    /// retry. Propagate the error with `?`: on a first pass it is the input-required signal.
    ///
    /// ```
    /// # use mcp_runtime::prelude::*;
    /// # #[derive(ElicitForm)] struct Confirm { /// Really?
    /// #     yes: bool }
    /// #[tool(destructive, requires(form_elicitation))]
    /// async fn wipe(ctx: &mut RequestContext) -> ToolResult<String> {
    ///     match ctx.elicit::<Confirm>("confirm", "Wipe everything?", ()).await? {
    ///         Elicitation::Accepted(c) if c.yes => Ok("wiped".into()),
    ///         _ => Ok("nothing wiped".into()),
    ///     }
    /// }
    /// ```
    ///
    /// `message` is text, or a closure that builds it only on a pass that sends the question
    /// (never on the retry that brings the answer): see [`AskMessage`].
    ///
    /// Handling the signal instead of propagating it does not lose the question: when a
    /// pass registered an input request and the handler returns anything but the signal (a
    /// result, or a tool-level error), the runtime still answers with the input request and
    /// logs a warning saying to propagate it with `?`; what the handler returned is discarded
    /// (see [the module docs](self)). A protocol error ([`HandlerError::protocol`]) still
    /// passes through.
    ///
    /// A key names one question of the flow: asking another form (or a sampling or roots
    /// request) under a key the same pass already asked under fails the request with `-32603`,
    /// a server bug naming the handler and the key (a retry brings one answer per key; the
    /// tool runs from the top each round, so a key reused in a later round is found on the
    /// retry that reaches it). The same form under its key with other choices is no bug: the
    /// client is told to restart the call, and is asked again.
    ///
    /// The handler must declare form elicitation (`#[tool(requires(form_elicitation))]`,
    /// checked before it runs; `#[tool]` refuses an undeclared call at compile time); an
    /// undeclared ask fails the request with `-32603`, a server bug. Needs form-mode
    /// elicitation in this request's capabilities (else `-32021`, which a declared
    /// requirement already answered before the handler ran).
    pub fn elicit<F: ElicitForm>(
        &mut self,
        key: &str,
        message: impl AskMessage,
        choices: F::Choices,
    ) -> impl Future<Output = Result<Elicitation<F>, HandlerError>> {
        // Not an `async fn` (nor is `try_elicit`): this future sits inside every asking tool's,
        // and an `async fn` stores its arguments beside the copies it works on. Mapped rather
        // than awaited in an `async` block, which would hold `try_elicit`'s future twice.
        futures::FutureExt::map(self.try_elicit::<F>(key, message, choices), |answer| {
            answer?.ok_or_else(HandlerError::input_required)
        })
    }

    /// Like [`RequestContext::elicit`], but registers the request and returns `Ok(None)` when the
    /// answer is not there yet, so several inputs can be asked in one round. Call
    /// [`RequestContext::await_inputs`] after registering them all (a handler that returns
    /// without it still gets its registered questions sent, see [`RequestContext::elicit`]).
    #[allow(clippy::manual_async_fn)] // an `async fn` would store its arguments twice
    pub fn try_elicit<F: ElicitForm>(
        &mut self,
        key: &str,
        message: impl AskMessage,
        choices: F::Choices,
    ) -> impl Future<Output = Result<Option<Elicitation<F>>, HandlerError>> {
        async move {
            // Taken apart before the await, so only the answer and the claim's future live
            // across it (a `match` on the result would keep its temporaries there too).
            let (answer, record) = match self.resolve_elicit::<F>(key, message, &choices)? {
                Resolved::Ready(answer) => return Ok(Some(answer)),
                Resolved::Pending => return Ok(None),
                Resolved::Claim(answer, record) => (answer, record),
            };
            self.mrtr.take(&self.principal, key, record).await?;
            Ok(Some(answer))
        }
    }

    /// Like [`RequestContext::elicit`], but on acceptance runs `mutation` *while the one-time
    /// claim is held* ([`ClaimWork::During`], [`ClaimWith::During`](crate::replay::ClaimWith::During)): with a SQL replay
    /// store the claim and the mutation commit together or not at all; if the mutation fails,
    /// the claim is rolled back and the user's answer stays usable for another retry.
    ///
    /// `mutation` is synchronous and runs on a blocking thread for SQL stores; keep it short.
    /// Use this for the last input of a flow: an answer from an earlier round is not
    /// committed again (the call fails with a tool error instead).
    pub async fn elicit_with_commit<F, R, M>(
        &mut self,
        key: &str,
        message: impl AskMessage,
        choices: F::Choices,
        mutation: M,
    ) -> Result<Elicitation<R>, HandlerError>
    where
        F: ElicitForm,
        R: Send + 'static,
        M: FnOnce(F) -> Result<R, ActionError> + Send + 'static,
    {
        self.elicit_with_mutation::<F, R, _>(key, message, choices, move |value| {
            ClaimWork::During(Box::new(move || mutation(value)))
        })
        .await
    }

    /// Like [`RequestContext::elicit_with_commit`], but `mutation` returns the [`ClaimWork`]
    /// saying *how* the accepted answer changes the world: not at all ([`ClaimWork::Nothing`],
    /// the claim is still made), by standalone work while the claim is held
    /// ([`ClaimWork::During`], as `elicit_with_commit`), after the claim committed
    /// ([`ClaimWork::After`]: at most once; a failure leaves the confirmation used and says
    /// so), or inside the replay store's own transaction ([`ClaimWork::InTx`] with work from
    /// the store's constructor, e.g. `backend::sqlite::tx_work`): claim, work and `COMMIT` are
    /// one transaction, and any failure rolls back both.
    ///
    /// `mutation` itself runs before the claim and must not change anything; the change goes in
    /// the work it returns.
    pub async fn elicit_with_mutation<F, R, M>(
        &mut self,
        key: &str,
        message: impl AskMessage,
        choices: F::Choices,
        mutation: M,
    ) -> Result<Elicitation<R>, HandlerError>
    where
        F: ElicitForm,
        R: Send + 'static,
        M: FnOnce(F) -> ClaimWork<R> + Send + 'static,
    {
        match self.resolve_elicit::<F>(key, message, &choices)? {
            Resolved::Pending => Err(HandlerError::input_required()),
            Resolved::Ready(Elicitation::Accepted(_)) => Err(HandlerError::tool(
                "this confirmation was already carried out in an earlier round; restart the call",
            )),
            Resolved::Ready(Elicitation::Declined) => Ok(Elicitation::Declined),
            Resolved::Claim(Elicitation::Declined, record) => {
                self.mrtr.take(&self.principal, key, record).await?;
                Ok(Elicitation::Declined)
            }
            Resolved::Ready(Elicitation::Cancelled)
            | Resolved::Claim(Elicitation::Cancelled, _) => Ok(Elicitation::Cancelled),
            Resolved::Claim(Elicitation::Accepted(value), mut record) => {
                record.executed = true;
                let work = mutation(value);
                let out = self.mrtr.claim_work(&self.principal, work).await?;
                self.mrtr.record_fresh(key, record);
                Ok(Elicitation::Accepted(out))
            }
        }
    }

    fn resolve_elicit<F: ElicitForm>(
        &mut self,
        key: &str,
        message: impl AskMessage,
        choices: &F::Choices,
    ) -> Result<Resolved<Elicitation<F>>, HandlerError> {
        self.asks_in(AskMode::Form)?;
        if !self.meta.client_capabilities.supports_form() {
            return Err(missing(
                ClientCapabilities::none().with_elicitation(ElicitationCapability::form()),
            ));
        }
        self.mrtr.note_ask(key, AskShape::form::<F>())?;
        // A select with nothing to pick cannot be answered: refuse it here, with the field's
        // name, rather than send `"enum": []` and wait for an answer that cannot come.
        F::check_choices(choices).map_err(|e| {
            HandlerError::tool(format!("cannot ask for the form under `{key}`: {e}"))
        })?;
        // The binding comes from the form's declaration, not from a built schema: a retry
        // that only checks its answer never builds the schema at all.
        let digest = form_binding_digest::<F>(key, choices).map_err(|e| {
            HandlerError::protocol(ErrorObject::internal_error(format!(
                "form description failed to serialise: {e}"
            )))
        })?;
        // The schema is written as JSON straight from the form's declaration: it is sent, never
        // read, so no typed schema is built for it.
        let ask = |mrtr: &mut Mrtr, message: String| {
            let mut schema = Vec::with_capacity(512);
            F::write_requested_schema(choices, &mut schema);
            // A hand-written writer is read back before its bytes go out: one that breaks its
            // contract fails here, loudly, in every build, not in the client.
            if !F::SCHEMA_WRITER_IS_DERIVED
                && let Err(e) = serde_json::from_slice::<mcp_types::RequestedSchema>(&schema)
            {
                return Err(HandlerError::protocol(ErrorObject::internal_error(
                    format!(
                        "the form `{}` asked under `{key}` wrote a requestedSchema that is not one \
                     ({e}): its ElicitForm::write_requested_schema breaks the contract (server bug)",
                        std::any::type_name::<F>()
                    ),
                )));
            }
            mrtr.register_form(key, digest, message, schema);
            Ok(())
        };
        match self.mrtr.lookup(key, digest)? {
            Lookup::Earlier(record) => match decode_elicit::<F>(&record.response, choices) {
                Ok(Some(answer)) if !record.executed => Ok(Resolved::Ready(answer)),
                Ok(Some(Elicitation::Accepted(_))) => Err(HandlerError::tool(
                    "this confirmation was already carried out in an earlier round; restart the call",
                )),
                Ok(Some(answer)) => Ok(Resolved::Ready(answer)),
                Ok(None) | Err(_) => Err(refused(
                    "an answer from an earlier round no longer fits the form",
                )),
            },
            Lookup::Fresh => match decode_elicit::<F>(self.mrtr.response(key), choices) {
                Ok(Some(Elicitation::Cancelled)) => Ok(Resolved::Ready(Elicitation::Cancelled)),
                Ok(Some(answer)) => Ok(Resolved::Claim(answer, FreshAnswer::new(digest))),
                // Invalid content: ask again, saying what was wrong (the message is not part
                // of the binding, so the state stays retryable against the same form).
                Err(e) => {
                    let reason = F::explain(&e, choices);
                    let message = message.into_text();
                    ask(&mut self.mrtr, format!("{reason}\n\n{message}"))?;
                    Ok(Resolved::Pending)
                }
                // Malformed response: ask again as before.
                Ok(None) => {
                    ask(&mut self.mrtr, message.into_text())?;
                    Ok(Resolved::Pending)
                }
            },
            // The message is only built here, when the question is sent: a pass that reads
            // its answer never builds it (see `AskMessage`).
            Lookup::Missing => {
                ask(&mut self.mrtr, message.into_text())?;
                Ok(Resolved::Pending)
            }
        }
    }

    /// The runtime-minted [`CorrelationId`] of the out-of-band step under `key`: minted on
    /// the first pass that asks for it, sealed into the signed `requestState`, and returned
    /// unchanged on every later pass of the same flow (each flow gets its own).
    ///
    /// Use it to key your own record of the out-of-band step (e.g. "the user finished the
    /// page for this principal and this correlation id"), never as part of the URL: give the
    /// user an opaque link whose server-side record is bound to the principal and this id.
    ///
    /// # Errors
    /// `-32603` when the OS random source fails.
    pub fn correlation_id(&mut self, key: &str) -> Result<CorrelationId, HandlerError> {
        self.mrtr
            .correlation_id(key)
            .map_err(|e| HandlerError::protocol(ErrorObject::internal_error(e.to_string())))
    }

    /// Sends the user out of band (URL-mode elicitation) under `key`, to a URL or to a
    /// one-time link minted by [`UrlLinks`]; on the retry returns the user's answer.
    ///
    /// **With [`UrlLinks`]** (`ctx.elicit_url(key, message, &links)`, the way to write a
    /// URL-mode tool): the runtime mints a one-time link bound to the principal and this
    /// flow's [`CorrelationId`], sends it, and on the retry reads the link's record.
    /// `Accepted(completion)` means the page was completed (for this principal, this flow,
    /// this link: [`LinkCompletion`] carries what the page attached); an `accept` that came
    /// before the page was completed is answered by asking again with the same link and a
    /// message saying the step is not finished; `Declined` and `Cancelled` end as usual (the
    /// link is revoked). Calling it again on a later round of the same flow returns the same
    /// completion without asking. An expired, evicted or locked link, or a server without a
    /// usable public base URL, ends the call with a tool error that says what to do. See
    /// [`crate::url_elicitation`].
    ///
    /// ```
    /// # use mcp_runtime::prelude::*;
    /// # use mcp_runtime::url_elicitation::UrlLinks;
    /// #[tool(requires(url_elicitation))]
    /// async fn pay(ctx: &mut RequestContext, State(links): State<UrlLinks>) -> ToolResult<String> {
    ///     match ctx.elicit_url("pay", "Pay the invoice on our page", &links).await? {
    ///         Elicitation::Accepted(_) => Ok("paid".into()),
    ///         _ => Ok("not paid".into()),
    ///     }
    /// }
    /// ```
    ///
    /// **With a URL** (`String`, `&str`): `Accepted(())` means only that the user agreed to
    /// open the URL. It proves nothing about what happened there: check your own record of
    /// the out-of-band step (keyed by [`RequestContext::correlation_id`] and the principal)
    /// and, when it is not complete yet, ask again with
    /// [`RequestContext::elicit_url_again`]. Because an acceptance carries no data it is not
    /// carried into later rounds: on a later pass, check your record *before* calling this
    /// again. The URL must be `https://` or `http://`, must not be pre-authenticated (no
    /// credentials or session in it: whoever opens the link must still prove who they are),
    /// and must not contain a correlation id of this flow (`-32603` otherwise, a server bug).
    ///
    /// The handler must declare URL elicitation (`requires(url_elicitation)`; an undeclared
    /// ask is `-32603`, a server bug). Needs URL-mode elicitation in this request's
    /// capabilities (else `-32021` with `{"elicitation":{"url":{}}}`, and no link is minted).
    pub async fn elicit_url<U: UrlTarget>(
        &mut self,
        key: &str,
        message: impl AskMessage,
        target: U,
    ) -> Result<Elicitation<U::Done>, HandlerError> {
        target.ask(self, key, message.into_text()).await
    }

    /// [`RequestContext::elicit_url`] with a plain URL.
    pub(crate) async fn elicit_plain_url(
        &mut self,
        key: &str,
        message: String,
        url: String,
    ) -> Result<Elicitation<()>, HandlerError> {
        let (digest, request) = self.url_request(key, message, url)?;
        match self.mrtr.lookup(key, digest)? {
            Lookup::Earlier(record) => decode_url_answer(&record.response)
                .ok_or_else(|| refused("an answer from an earlier round is not understood")),
            Lookup::Fresh => match decode_url_answer(self.mrtr.response(key)) {
                Some(Elicitation::Cancelled) => Ok(Elicitation::Cancelled),
                Some(answer) => {
                    // One-time: a replayed acceptance is refused. Not recorded in the next
                    // state: the handler's own record is the truth about the step.
                    self.mrtr.claim(&self.principal).await?;
                    Ok(answer)
                }
                None => {
                    self.mrtr.register(key, digest, request);
                    Err(HandlerError::input_required())
                }
            },
            Lookup::Missing => {
                self.mrtr.register(key, digest, request);
                Err(HandlerError::input_required())
            }
        }
    }

    /// [`RequestContext::elicit_url`] with [`UrlLinks`]: the flow's one-time link, its
    /// completion read from the link store (never from the client).
    pub(crate) async fn elicit_link(
        &mut self,
        links: UrlLinks,
        key: &str,
        message: String,
    ) -> Result<Elicitation<LinkCompletion>, HandlerError> {
        // Declared and supported before anything is minted.
        self.url_mode()?;
        let correlation = self.correlation_id(key)?;
        // A key the verified state says was asked already had its link: a missing one
        // expired (or was revoked or evicted), and is not silently replaced.
        let may_mint = !self.mrtr.was_asked(key);
        let link = links
            .link_for_pass(&self.principal, correlation, key, may_mint)
            .await?;
        if link.stage == LinkStage::Locked {
            return Err(HandlerError::tool(
                "The page for this step was locked after too many failed attempts; nothing was completed. Call the tool again (without requestState) for a new link.",
            ));
        }
        let url = links.url_of(&link)?;
        let completed = crate::url_elicitation::completion_of(&link);
        let (digest, request) = self.url_request(key, message.clone(), url.clone())?;
        let answer = match self.mrtr.lookup(key, digest)? {
            Lookup::Fresh => decode_url_answer(self.mrtr.response(key)),
            Lookup::Earlier(_) | Lookup::Missing => None,
        };
        match (answer, completed) {
            (Some(Elicitation::Cancelled), _) => {
                links.revoke(&link).await;
                Ok(Elicitation::Cancelled)
            }
            (Some(Elicitation::Declined), _) => {
                self.mrtr.claim(&self.principal).await?;
                links.revoke(&link).await;
                Ok(Elicitation::Declined)
            }
            (Some(Elicitation::Accepted(())), Some(done)) => {
                // One-time: a replayed acceptance is refused.
                self.mrtr.claim(&self.principal).await?;
                Ok(Elicitation::Accepted(done))
            }
            (Some(Elicitation::Accepted(())), None) => {
                // Consent without the page: ask again, same link, saying why. The state is
                // used up, so only the new round's state goes on.
                self.mrtr.claim(&self.principal).await?;
                let (digest, request) = self.url_request(key, links.not_finished(&message), url)?;
                self.mrtr.register(key, digest, request);
                Err(HandlerError::input_required())
            }
            // Completed (on an earlier round, or before the client answered): done.
            (None, Some(done)) => Ok(Elicitation::Accepted(done)),
            (None, None) => {
                self.mrtr.register(key, digest, request);
                Err(HandlerError::input_required())
            }
        }
    }

    /// Asks under `key` once more after [`RequestContext::elicit_url`] returned `Accepted(())`
    /// but your record shows the out-of-band step is not finished. Return the result:
    /// `return Err(ctx.elicit_url_again(key, message, url)?)`.
    ///
    /// # Errors
    /// The same capability and URL checks as [`RequestContext::elicit_url`]; otherwise the
    /// returned value is the input-required signal.
    pub fn elicit_url_again(
        &mut self,
        key: &str,
        message: impl AskMessage,
        url: impl Into<String>,
    ) -> Result<HandlerError, HandlerError> {
        let (digest, request) = self.url_request(key, message.into_text(), url)?;
        self.mrtr.register(key, digest, request);
        Ok(HandlerError::input_required())
    }

    /// Checks that the handler declared URL mode and this request's client supports it.
    fn url_mode(&mut self) -> Result<(), HandlerError> {
        self.asks_in(AskMode::Url)?;
        if !self.meta.client_capabilities.supports_url() {
            return Err(missing(
                ClientCapabilities::none().with_elicitation(ElicitationCapability::url()),
            ));
        }
        Ok(())
    }

    fn url_request(
        &mut self,
        key: &str,
        message: impl Into<String>,
        url: impl Into<String>,
    ) -> Result<(ArgDigest, InputRequest), HandlerError> {
        self.url_mode()?;
        // One key, one question: a URL under a key a form already uses is the author's bug.
        self.mrtr.note_ask(
            key,
            AskShape::request::<mcp_types::ElicitRequestUrlParams>("a URL-mode elicitation"),
        )?;
        let url = url.into();
        check_url(&url, self.mrtr.correlations())?;
        let digest = binding_digest("elicitation/create#url", key, &url).map_err(|e| {
            HandlerError::protocol(ErrorObject::internal_error(format!(
                "URL failed to serialise: {e}"
            )))
        })?;
        Ok((
            digest,
            InputRequest::Elicit(ElicitRequest::url(message, url)),
        ))
    }

    /// The raw `inputResponses` of this retry, present only when its `requestState` verified.
    ///
    /// Escape hatch: the typed methods above check bindings, validate content and claim the
    /// one-time nonce; reading responses here does none of that.
    pub fn raw_input_responses(&self) -> &InputResponses {
        self.mrtr.responses()
    }

    // ---- sampling and roots ------------------------------------------------------------

    /// Asks the client to sample its model under `key` (`sampling/createMessage`), or returns
    /// the client's result on the retry.
    ///
    /// The handler must declare sampling (`requires(sampling)`; an undeclared ask is
    /// `-32603`, a server bug). Needs `sampling` in this request's capabilities, plus
    /// `sampling.tools` when `params` offers tools and `sampling.context` for an
    /// `includeContext` other than `none` (else `-32021` with exactly what is missing).
    pub async fn sample(
        &mut self,
        key: &str,
        params: CreateMessageRequestParams,
    ) -> Result<CreateMessageResult, HandlerError> {
        match self.try_sample(key, params).await? {
            Some(r) => Ok(r),
            None => Err(HandlerError::input_required()),
        }
    }

    /// Like [`RequestContext::sample`] but returns `Ok(None)` after registering the request (see
    /// [`RequestContext::await_inputs`]).
    pub async fn try_sample(
        &mut self,
        key: &str,
        params: CreateMessageRequestParams,
    ) -> Result<Option<CreateMessageResult>, HandlerError> {
        self.asks_in(AskMode::Sampling)?;
        let mut need = SamplingCapability::default();
        if params.tools.is_some() || params.tool_choice.is_some() {
            need.tools = Some(JsonObject::new());
        }
        if matches!(
            params.include_context,
            Some(IncludeContext::ThisServer | IncludeContext::AllServers)
        ) {
            need.context = Some(JsonObject::new());
        }
        let required = ClientCapabilities::none().with_sampling(need);
        if let Some(lacking) = required.missing_from(&self.meta.client_capabilities) {
            return Err(missing(lacking));
        }
        let digest = binding_digest(mcp_types::METHOD_SAMPLING_CREATE_MESSAGE, key, &params)
            .map_err(|e| {
                HandlerError::protocol(ErrorObject::internal_error(format!(
                    "sampling request failed to serialise: {e}"
                )))
            })?;
        self.resolve_typed::<CreateMessageResult>(key, digest, "a sampling request", || {
            InputRequest::CreateMessage(CreateMessageRequest::new(params))
        })
        .await
    }

    /// Asks the client for its roots under `key` (`roots/list`), or returns them on the retry.
    ///
    /// A root list describes what the client is looking at; it **never authorizes anything**.
    /// Check every path against the server's own [`crate::scope`] policy for the principal.
    ///
    /// The handler must declare roots (`requires(roots)`; an undeclared ask is `-32603`, a
    /// server bug). Needs `roots` in this request's capabilities (else `-32021`).
    pub async fn list_roots(&mut self, key: &str) -> Result<Vec<Root>, HandlerError> {
        match self.try_list_roots(key).await? {
            Some(r) => Ok(r),
            None => Err(HandlerError::input_required()),
        }
    }

    /// Like [`RequestContext::list_roots`] but returns `Ok(None)` after registering the request
    /// (see [`RequestContext::await_inputs`]).
    pub async fn try_list_roots(&mut self, key: &str) -> Result<Option<Vec<Root>>, HandlerError> {
        self.asks_in(AskMode::Roots)?;
        if !self.meta.client_capabilities.supports_roots() {
            return Err(missing(ClientCapabilities::none().with_roots()));
        }
        let digest = binding_digest(mcp_types::METHOD_ROOTS_LIST, key, &()).map_err(|e| {
            HandlerError::protocol(ErrorObject::internal_error(format!(
                "roots request failed to serialise: {e}"
            )))
        })?;
        Ok(self
            .resolve_typed::<ListRootsResult>(key, digest, "a roots request", || {
                InputRequest::ListRoots(ListRootsRequest::new())
            })
            .await?
            .map(|r| r.roots))
    }

    /// Fails with the input-required signal when any `try_*` call of this pass registered a
    /// request; otherwise every `try_*` call so far returned `Some`.
    pub fn await_inputs(&self) -> Result<(), HandlerError> {
        if self.mrtr.has_pending() {
            Err(HandlerError::input_required())
        } else {
            Ok(())
        }
    }

    /// Checks that the running handler declared `mode` before it asks in it. An undeclared ask
    /// is remembered, so the pass fails with the server-bug error even when the handler
    /// swallows this one ([`RequestContext::settle_pass`] names the handler).
    fn asks_in(&mut self, mode: AskMode) -> Result<(), HandlerError> {
        if self.declared.allows(mode) {
            return Ok(());
        }
        self.undeclared.get_or_insert(mode);
        Err(HandlerError::protocol(ErrorObject::internal_error(
            format!(
                "server bug: this handler {} without declaring `requires({})`",
                mode.how(),
                mode.requirement()
            ),
        )))
    }

    /// What the runtime answers for a handler's finished pass, given what the handler
    /// returned: every path that settles a handler's outcome (`tools/call`, task passes,
    /// `prompts/get`, `resources/read`) goes through here.
    ///
    /// - An ask in a mode the handler did not declare: the `-32603` server-bug error naming
    ///   the handler and what to declare (logged as an error), whatever the handler returned.
    /// - An input request registered on this pass but not propagated (the handler returned a
    ///   result or a tool-level error): the input-required signal, so the question is still
    ///   asked (logged as a warning). A protocol error passes through: the server refuses.
    /// - Otherwise `outcome`, untouched.
    #[inline]
    pub(crate) fn settle_pass<T>(
        &self,
        outcome: Result<T, HandlerError>,
        handler: HandlerId<'_>,
    ) -> Result<T, HandlerError> {
        // Three flag checks on the common path; the rest is out of line.
        if self.undeclared.is_none() && !self.mrtr.has_pending() && self.mrtr.key_reuse().is_none()
        {
            return outcome;
        }
        self.settle_unusual(outcome, handler)
    }

    #[cold]
    fn settle_unusual<T>(
        &self,
        outcome: Result<T, HandlerError>,
        handler: HandlerId<'_>,
    ) -> Result<T, HandlerError> {
        if let Some(mode) = self.undeclared {
            return Err(undeclared_ask(mode, handler));
        }
        if let Some(reuse) = self.mrtr.key_reuse() {
            return Err(key_reused(reuse, handler));
        }
        let returned = match &outcome {
            Err(e) if e.is_input_required() || e.as_protocol().is_some() => return outcome,
            Ok(_) => "a result",
            Err(_) => "a tool-level error",
        };
        let keys = self
            .mrtr
            .pending_keys()
            .map(|k| format!("`{}`", crate::log_safe::LogSafe(k)))
            .collect::<Vec<_>>()
            .join(", ");
        tracing::warn!(
            handler = %crate::log_safe::LogSafe(handler.name),
            keys = %keys,
            "{} `{}` asked for input (keys {keys}) but returned {returned} instead of the \
             input-required signal; the question is sent anyway and what it returned is \
             discarded. Propagate the asking call's error with `?` (`ctx.elicit(..).await?`)",
            handler.kind.noun(),
            crate::log_safe::LogSafe(handler.name),
        );
        Err(HandlerError::input_required())
    }

    async fn resolve_typed<T: serde::de::DeserializeOwned + 'static>(
        &mut self,
        key: &str,
        digest: ArgDigest,
        what: &'static str,
        request: impl FnOnce() -> InputRequest,
    ) -> Result<Option<T>, HandlerError> {
        self.mrtr.note_ask(key, AskShape::request::<T>(what))?;
        match self.mrtr.lookup(key, digest)? {
            Lookup::Earlier(record) => T::deserialize(&record.response)
                .map(Some)
                .map_err(|_| refused("an answer from an earlier round is not understood")),
            Lookup::Fresh => match T::deserialize(self.mrtr.response(key)) {
                Ok(parsed) => {
                    self.mrtr
                        .take(&self.principal, key, FreshAnswer::new(digest))
                        .await?;
                    Ok(Some(parsed))
                }
                Err(_) => {
                    self.mrtr.register(key, digest, request());
                    Ok(None)
                }
            },
            Lookup::Missing => {
                self.mrtr.register(key, digest, request());
                Ok(None)
            }
        }
    }

    /// Seals the next state for what this pass asked (see `Mrtr::seal_next`).
    pub(crate) fn seal_next(
        &mut self,
        sealing: Sealing<'_>,
    ) -> Result<crate::mrtr::SealedInput, ErrorObject> {
        self.mrtr.seal_next(&self.principal, sealing)
    }

    /// See `Mrtr::take_issued`.
    pub(crate) fn take_issued(&mut self) -> Option<crate::mrtr::Issued> {
        self.mrtr.take_issued()
    }

    /// See `Mrtr::flow_rounds`.
    pub(crate) fn flow_rounds(&self) -> Option<u32> {
        self.mrtr.flow_rounds()
    }

    /// Whether the pass must look for a recorded outcome first (see `Mrtr::may_have_recorded`).
    pub(crate) fn may_have_recorded(&self) -> bool {
        self.mrtr.may_have_recorded()
    }

    /// Recorded results first (see `Mrtr::recorded_first`).
    pub(crate) async fn recorded_first(&mut self) -> Result<bool, HandlerError> {
        self.mrtr.recorded_first(&self.principal).await
    }

    /// The final answer of a `tools/call` pass (see `Mrtr::finish_call`).
    /// See [`Mrtr::finish_is_plain`].
    pub(crate) fn finish_is_plain(&self) -> bool {
        self.mrtr.finish_is_plain()
    }

    pub(crate) async fn finish_call(
        &mut self,
        outcome: Result<mcp_types::CallToolResult, HandlerError>,
    ) -> Result<mcp_types::CallToolResult, HandlerError> {
        self.mrtr.finish_call(&self.principal, outcome).await
    }

    // ---- progress and logging ----------------------------------------------------------

    /// Sends `notifications/progress` when the request carried a `progressToken` (otherwise
    /// does nothing). Returns whether a notification was delivered.
    pub async fn progress(&self, progress: u64, total: Option<u64>, message: Option<&str>) -> bool {
        let Some(token) = &self.meta.progress_token else {
            return false;
        };
        let mut params = ProgressNotificationParams::new(
            token.clone(),
            Number::from(progress),
            total.map(Number::from),
        );
        params.message = message.map(str::to_owned);
        self.notify(mcp_types::METHOD_NOTIFICATION_PROGRESS, &params)
            .await
    }

    /// Sends `notifications/message` when the request set a `logLevel` at or below `level`
    /// (otherwise does nothing). Returns whether a notification was delivered.
    pub async fn log(&self, level: LoggingLevel, data: impl Into<Value>) -> bool {
        match self.meta.log_level {
            Some(min) if level >= min => {}
            _ => return false,
        }
        let params = LoggingMessageNotificationParams {
            level,
            logger: None,
            data: data.into(),
            meta: None,
            extra: JsonObject::new(),
        };
        self.notify(mcp_types::METHOD_NOTIFICATION_MESSAGE, &params)
            .await
    }

    async fn notify(&self, method: &str, params: &impl serde::Serialize) -> bool {
        let Ok(params) = serde_json::to_value(params) else {
            return false;
        };
        self.notifications
            .send_json(&json!({ "jsonrpc": "2.0", "method": method, "params": params }))
            .await
    }
}

/// A way a handler asks for input, declared with the `requires(..)` entry of the same name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AskMode {
    /// Form-mode elicitation (`elicit`, `try_elicit`, `elicit_with_commit`, ...).
    Form,
    /// URL-mode elicitation (`elicit_url`, `elicit_url_again`).
    Url,
    /// Sampling (`sample`, `try_sample`).
    Sampling,
    /// Roots (`list_roots`, `try_list_roots`).
    Roots,
}

impl AskMode {
    const ALL: [AskMode; 4] = [
        AskMode::Form,
        AskMode::Url,
        AskMode::Sampling,
        AskMode::Roots,
    ];

    fn bit(self) -> u8 {
        1 << self as u8
    }

    /// The `requires(..)` entry declaring it.
    fn requirement(self) -> &'static str {
        match self {
            AskMode::Form => "form_elicitation",
            AskMode::Url => "url_elicitation",
            AskMode::Sampling => "sampling",
            AskMode::Roots => "roots",
        }
    }

    /// What an ask in this mode does, for messages.
    fn how(self) -> &'static str {
        match self {
            AskMode::Form => "asks the user through form elicitation",
            AskMode::Url => "sends the user to a URL (URL-mode elicitation)",
            AskMode::Sampling => "asks the client's model (sampling)",
            AskMode::Roots => "asks the client for its roots",
        }
    }

    /// The capability a hand-written handler declares for it.
    fn capability(self) -> &'static str {
        match self {
            AskMode::Form => r#"{"elicitation":{"form":{}}}"#,
            AskMode::Url => r#"{"elicitation":{"url":{}}}"#,
            AskMode::Sampling => r#"{"sampling":{}}"#,
            AskMode::Roots => r#"{"roots":{}}"#,
        }
    }

    fn declared_in(self, caps: &ClientCapabilities) -> bool {
        match self {
            AskMode::Form => caps.supports_form(),
            AskMode::Url => caps.supports_url(),
            AskMode::Sampling => caps.supports_sampling(),
            AskMode::Roots => caps.supports_roots(),
        }
    }
}

/// The modes a running handler declared it asks in: its required capabilities and its
/// optional ones. A set of [`AskMode`] bits, so the context stays small and copying it is free.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct AskModes(u8);

impl AskModes {
    /// Every mode: a context with no handler declaration to check against (detached).
    pub(crate) const ANY: AskModes = AskModes(0b1111);

    /// The modes `required` and `optional` declare.
    pub(crate) fn declared(
        required: &ClientCapabilities,
        optional: Option<&ClientCapabilities>,
    ) -> Self {
        let mut bits = 0;
        for mode in AskMode::ALL {
            if mode.declared_in(required) || optional.is_some_and(|o| mode.declared_in(o)) {
                bits |= mode.bit();
            }
        }
        AskModes(bits)
    }

    fn allows(self, mode: AskMode) -> bool {
        self.0 & mode.bit() != 0
    }
}

/// Which handler a pass ran, for the messages of [`RequestContext::settle_pass`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct HandlerId<'a> {
    pub(crate) kind: HandlerKind,
    /// The tool's or prompt's name, or the resource's URI.
    pub(crate) name: &'a str,
}

/// The kinds of handler that run with a [`RequestContext`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum HandlerKind {
    Tool,
    Prompt,
    Resource,
}

impl HandlerKind {
    fn noun(self) -> &'static str {
        match self {
            HandlerKind::Tool => "tool",
            HandlerKind::Prompt => "prompt",
            HandlerKind::Resource => "resource",
        }
    }

    fn handler_trait(self) -> &'static str {
        match self {
            HandlerKind::Tool => "ToolHandler",
            HandlerKind::Prompt => "PromptHandler",
            HandlerKind::Resource => "ResourceHandler",
        }
    }
}

/// The server-bug error of an ask in an undeclared mode, logged as an error: it names the
/// handler and what to declare.
fn undeclared_ask(mode: AskMode, handler: HandlerId<'_>) -> HandlerError {
    let explain = |name: &dyn std::fmt::Display| {
        let (kind, req) = (handler.kind.noun(), mode.requirement());
        format!(
            "server bug: {kind} `{name}` {how} without declaring it. Declare it: \
             `#[{kind}(requires({req}))]`, so a client without it is refused before the {kind} \
             runs (or `optional({req})` when the {kind} checks the client's capabilities before \
             asking); a hand-written handler returns {caps} from `{handler_trait}::required_capabilities` \
             (or `optional_capabilities`)",
            how = mode.how(),
            caps = mode.capability(),
            handler_trait = handler.kind.handler_trait(),
        )
    };
    tracing::error!(
        handler = %crate::log_safe::LogSafe(handler.name),
        "{}",
        explain(&crate::log_safe::LogSafe(handler.name))
    );
    HandlerError::protocol(ErrorObject::internal_error(explain(&handler.name)))
}

/// The server-bug error of two different questions asked under one key in one pass, logged
/// as an error: it names the handler and the key (see `Mrtr::note_ask`).
fn key_reused(reuse: &KeyReuse, handler: HandlerId<'_>) -> HandlerError {
    let kind = handler.kind.noun();
    tracing::error!(
        handler = %crate::log_safe::LogSafe(handler.name),
        "{}",
        reuse.message(Some(&format_args!(
            "{kind} `{}`",
            crate::log_safe::LogSafe(handler.name)
        )))
    );
    HandlerError::protocol(ErrorObject::internal_error(
        reuse.message(Some(&format_args!("{kind} `{}`", handler.name))),
    ))
}

enum Resolved<T> {
    Ready(T),
    Claim(T, FreshAnswer),
    Pending,
}

/// The user's action as the flow metrics name it.
fn action_name(action: ElicitAction) -> &'static str {
    match action {
        ElicitAction::Accept => "accepted",
        ElicitAction::Decline => "declined",
        ElicitAction::Cancel => "cancelled",
    }
}

/// Decodes an elicitation response: `Ok(None)` when it is not a usable answer.
fn decode_elicit<F: ElicitForm>(
    response: &Value,
    choices: &F::Choices,
) -> Result<Option<Elicitation<F>>, FormError> {
    // Shape-checked in place: the content is read by the form below, not copied into a
    // typed `ElicitResult` first.
    let Some(action) = ElicitResult::action_of(response) else {
        return Ok(None);
    };
    crate::observe::answered(action_name(action));
    Ok(Some(match action {
        ElicitAction::Accept => {
            let empty = JsonObject::new();
            let content = match mcp_types::members::member_of(response, "content") {
                Some(Value::Object(map)) => map,
                None => &empty,
                Some(_) => return Ok(None),
            };
            Elicitation::Accepted(F::from_content(content, choices)?)
        }
        ElicitAction::Decline => Elicitation::Declined,
        ElicitAction::Cancel => Elicitation::Cancelled,
    }))
}

/// Decodes a URL-mode elicitation response: `None` when it is not a usable answer.
fn decode_url_answer(response: &Value) -> Option<Elicitation<()>> {
    ElicitResult::deserialize(response)
        .ok()
        .inspect(|r| crate::observe::answered(action_name(r.action)))
        .map(|r| match r.action {
            ElicitAction::Accept => Elicitation::Accepted(()),
            ElicitAction::Decline => Elicitation::Declined,
            ElicitAction::Cancel => Elicitation::Cancelled,
        })
}

/// Refuses URLs a client should not be sent: not http(s), or carrying a correlation id.
fn check_url<'a>(
    url: &str,
    mut correlations: impl Iterator<Item = &'a CorrelationId>,
) -> Result<(), HandlerError> {
    let scheme_ok = url.starts_with("https://") || url.starts_with("http://");
    if !scheme_ok || url.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(HandlerError::protocol(ErrorObject::internal_error(
            "URL elicitation needs an absolute https:// or http:// URL without spaces (server bug)",
        )));
    }
    if correlations.any(|c| url.contains(&c.to_string())) {
        return Err(HandlerError::protocol(ErrorObject::internal_error(
            "URL elicitation must not put the correlation id in the URL; link to an opaque id whose server-side record holds it (server bug)",
        )));
    }
    Ok(())
}

fn missing(required: ClientCapabilities) -> HandlerError {
    HandlerError::protocol(ErrorObject::missing_required_client_capability(&required))
}
