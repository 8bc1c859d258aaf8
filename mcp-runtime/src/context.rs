//! [`ToolContext`]: what a running tool can see and ask for.
//!
//! # Multi round-trip requests (MRTR)
//!
//! A tool that needs the user (elicitation), the client's model (sampling) or the client's
//! roots asks through the context. On a pass where the answer is not there yet, the call
//! returns the hidden input-required [`ToolError`]; propagate it with `?` and the runtime
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
//!   [`ReplayStore`]. A second use of the same state, on any
//!   instance, is refused before the tool sees the answer, so the mutation that follows runs at
//!   most once. [`ToolContext::elicit_with_commit`] runs the mutation inside the claim.
//! - Answers of earlier rounds travel inside the signed state; later rounds get them back
//!   without the client resending them.
//! - An input request is only made in a mode this request's `clientCapabilities` declare;
//!   otherwise the call fails with `-32021` naming the missing capability.

use std::any::{Any, TypeId};
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use mcp_types::{
    ClientCapabilities, CreateMessageRequest, CreateMessageRequestParams, CreateMessageResult,
    ElicitAction, ElicitRequest, ElicitResult, ElicitationCapability, ErrorObject, IncludeContext,
    InputRequest, InputRequests, InputResponses, JsonObject, ListRootsRequest, ListRootsResult,
    LoggingLevel, LoggingMessageNotificationParams, ProgressNotificationParams, ProgressToken,
    Root, SamplingCapability,
};
use serde::Deserialize as _;
use serde_json::{Map, Number, Value, json};

use crate::Principal;
pub use crate::form::{ElicitForm, FormError};
#[cfg(feature = "postgres")]
use crate::replay::PgTxMutation;
#[cfg(feature = "sqlite")]
use crate::replay::SqliteTxAction;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
use crate::replay::TxAction;
use crate::replay::{ActionError, ClaimOutcome, ReplayError, ReplayStore};
use crate::state::{ArgDigest, CorrelationId, StatePayload};
use crate::tool::ToolError;
use crate::transport::{CancellationToken, NotificationSink};

mod cancellation;

/// The user's answer to an elicitation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Elicitation<T> {
    /// The user submitted the form; the content was validated into `T`.
    Accepted(T),
    /// The user explicitly declined.
    Declined,
    /// The user dismissed the request without choosing.
    Cancelled,
}

/// How an accepted answer changes the world, for [`ToolContext::elicit_with_mutation`].
pub enum ClaimMutation<R> {
    /// No change (e.g. the user did not tick "confirm"); the answer is still claimed once.
    Done(R),
    /// A standalone action run while the claim is held (see
    /// [`ReplayStore::claim_with`]); make it convergent. *At least once, converging to once*:
    /// a crash between the action and the claim's `COMMIT` leaves the confirmation usable.
    Standalone(Box<dyn FnOnce() -> Result<R, ActionError> + Send + 'static>),
    /// An action run only *after* the claim is durably committed, on Tokio's blocking pool:
    /// *at most once*. If the action fails (or the process dies before it finishes), the
    /// confirmation is used up and the failure is reported with that said, so the user asks
    /// again; a confirmation never acts twice, nor on something re-created after a crash.
    /// The right choice for a destructive effect outside the replay store's database.
    AfterClaim(Box<dyn FnOnce() -> Result<R, ActionError> + Send + 'static>),
    /// Runs in the SQLite replay store's claim transaction (feature `sqlite`).
    #[cfg(feature = "sqlite")]
    Sqlite(SqliteTxAction<R>),
    /// Runs in the PostgreSQL replay store's claim transaction (feature `postgres`).
    #[cfg(feature = "postgres")]
    Postgres(PgTxMutation<R>),
}

impl<R: Send + 'static> ClaimMutation<R> {
    /// The same mutation, its value passed through `f`.
    pub fn map<S: Send + 'static>(
        self,
        f: impl FnOnce(R) -> S + Send + 'static,
    ) -> ClaimMutation<S> {
        match self {
            Self::Done(value) => ClaimMutation::Done(f(value)),
            Self::Standalone(action) => {
                ClaimMutation::Standalone(Box::new(move || action().map(f)))
            }
            Self::AfterClaim(action) => {
                ClaimMutation::AfterClaim(Box::new(move || action().map(f)))
            }
            #[cfg(feature = "sqlite")]
            Self::Sqlite(action) => ClaimMutation::Sqlite(Box::new(move |tx| action(tx).map(f))),
            #[cfg(feature = "postgres")]
            Self::Postgres(action) => ClaimMutation::Postgres(Box::new(move |tx| {
                Box::pin(async move { action(tx).await.map(f) })
            })),
        }
    }
}

impl<R> std::fmt::Debug for ClaimMutation<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Done(_) => "ClaimMutation::Done",
            Self::Standalone(_) => "ClaimMutation::Standalone",
            Self::AfterClaim(_) => "ClaimMutation::AfterClaim",
            #[cfg(feature = "sqlite")]
            Self::Sqlite(_) => "ClaimMutation::Sqlite",
            #[cfg(feature = "postgres")]
            Self::Postgres(_) => "ClaimMutation::Postgres",
        })
    }
}

#[cfg(any(feature = "sqlite", feature = "postgres"))]
fn put<R>(slot: &Mutex<Option<R>>, value: R) {
    if let Ok(mut guard) = slot.lock() {
        *guard = Some(value);
    }
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

/// What a retry brought, and what this pass asked, for one `tools/call`.
pub(crate) struct Mrtr {
    pub(crate) store: Arc<dyn ReplayStore>,
    /// The verified state of this retry (None on a first call).
    pub(crate) opened: Option<StatePayload>,
    /// The retry's responses; only read under keys `opened` vouches for.
    pub(crate) responses: InputResponses,
    /// Input requests registered on this pass, in order.
    pub(crate) pending: InputRequests,
    /// Digest of what each pending request shows, sealed into the next state.
    pub(crate) pending_bindings: BTreeMap<String, ArgDigest>,
    /// Answers taken from this retry, in the order taken, carried into the next round's
    /// state. The responses themselves stay in `responses` under the same keys.
    pub(crate) fresh_answers: Vec<(String, FreshAnswer)>,
    /// Whether this pass claimed `opened`'s nonce.
    pub(crate) claimed: bool,
    /// Correlation ids minted on this pass (not yet in any sealed state).
    pub(crate) new_correlations: BTreeMap<String, CorrelationId>,
}

/// An answer taken from this retry on this pass. Its state record (`{"s", "r", "x"}`) is
/// only built when a later round needs it: most retries end the call.
#[derive(Debug, Clone, Copy)]
pub(crate) struct FreshAnswer {
    /// What was shown under the key.
    digest: ArgDigest,
    /// Whether the confirmation was carried out (`"x"`: not to be carried out again).
    executed: bool,
}

impl FreshAnswer {
    fn new(digest: ArgDigest) -> Self {
        FreshAnswer {
            digest,
            executed: false,
        }
    }
}

impl Mrtr {
    fn fresh(&self, key: &str) -> Option<FreshAnswer> {
        self.fresh_answers
            .iter()
            .find_map(|(k, a)| (k == key).then_some(*a))
    }

    fn record_fresh(&mut self, key: &str, answer: FreshAnswer) {
        match self.fresh_answers.iter_mut().find(|(k, _)| k == key) {
            Some((_, slot)) => *slot = answer,
            None => self.fresh_answers.push((key.to_owned(), answer)),
        }
    }

    /// The retry's response under `key` (`null` when absent).
    fn response(&self, key: &str) -> &Value {
        self.responses.get_raw(key).unwrap_or(&Value::Null)
    }

    /// The state record of the answer taken under `key` on this pass.
    pub(crate) fn fresh_record(&self, key: &str) -> Option<Value> {
        let answer = self.fresh(key)?;
        Some(answer_record(
            answer.digest,
            self.response(key).clone(),
            answer.executed,
        ))
    }
}

/// Where a keyed answer comes from.
enum Lookup {
    /// Accepted in an earlier round (inside the signed state).
    Earlier(Value),
    /// Sent with this retry (in `Mrtr::responses`) under a key the state says was asked.
    Fresh,
    /// Not answered yet.
    Missing,
}

/// Everything a running tool can see and ask for.
pub struct ToolContext {
    principal: Principal,
    capabilities: ClientCapabilities,
    progress_token: Option<ProgressToken>,
    log_level: Option<LoggingLevel>,
    app_state: Arc<StateMap>,
    notifications: NotificationSink,
    /// The transport's token for this request (see [`ToolContext::cancelled`]).
    cancel: CancellationToken,
    pub(crate) mrtr: Mrtr,
}

impl std::fmt::Debug for ToolContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolContext")
            .field("principal", &self.principal)
            .field("round", &self.mrtr.opened.as_ref().map(|p| p.round))
            .finish_non_exhaustive()
    }
}

impl Default for ToolContext {
    /// [`ToolContext::detached`] with the principal `local`.
    fn default() -> Self {
        Self::detached(Principal::new("local"))
    }
}

/// The request-scoped parts of a context, as the dispatcher read them from `_meta`.
pub(crate) struct ContextParts {
    pub(crate) principal: Principal,
    pub(crate) capabilities: ClientCapabilities,
    pub(crate) progress_token: Option<ProgressToken>,
    pub(crate) log_level: Option<LoggingLevel>,
    pub(crate) app_state: Arc<StateMap>,
    pub(crate) notifications: NotificationSink,
    pub(crate) cancel: CancellationToken,
    pub(crate) mrtr: Mrtr,
}

impl ToolContext {
    pub(crate) fn new(parts: ContextParts) -> Self {
        Self {
            principal: parts.principal,
            capabilities: parts.capabilities,
            progress_token: parts.progress_token,
            log_level: parts.log_level,
            app_state: parts.app_state,
            notifications: parts.notifications,
            cancel: parts.cancel,
            mrtr: parts.mrtr,
        }
    }

    /// A context outside any request, for calling a tool directly (unit tests, one tool
    /// calling another): no client capabilities, no application state, no request state, an
    /// in-memory replay store, notifications dropped, and never cancelled. Add what the test
    /// needs with [`ToolContext::and_state`], [`ToolContext::with_capabilities`] and
    /// [`ToolContext::with_cancellation`].
    pub fn detached(principal: Principal) -> Self {
        Self::new(ContextParts {
            principal,
            capabilities: ClientCapabilities::none(),
            progress_token: None,
            log_level: None,
            app_state: Arc::new(StateMap::default()),
            notifications: NotificationSink::discard(),
            cancel: CancellationToken::new(),
            mrtr: Mrtr {
                store: Arc::new(crate::replay::MemoryReplayStore::new(1024)),
                opened: None,
                responses: InputResponses::default(),
                pending: InputRequests::default(),
                pending_bindings: BTreeMap::new(),
                fresh_answers: Vec::new(),
                claimed: false,
                new_correlations: BTreeMap::new(),
            },
        })
    }

    /// A detached context (principal `local`) holding `state` (see [`ToolContext::detached`]).
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
        self.capabilities = capabilities;
        self
    }

    /// The authenticated principal making this call (never derived from `clientInfo`).
    pub fn principal(&self) -> &Principal {
        &self.principal
    }

    /// The client capabilities declared by *this* request.
    pub fn client_capabilities(&self) -> &ClientCapabilities {
        &self.capabilities
    }

    /// A clone of the application state of type `T` registered with `.state(..)`.
    pub fn state<T: Clone + Send + Sync + 'static>(&self) -> Result<T, ToolError> {
        self.app_state.get::<T>().ok_or_else(|| {
            ToolError::protocol(ErrorObject::internal_error(format!(
                "server misconfigured: no application state of type `{}`; register it with Server::builder(..).state(value)",
                std::any::type_name::<T>()
            )))
        })
    }

    /// The MRTR round of this pass: 0 on a first call, then 1, 2, ... per answered round.
    pub fn round(&self) -> u32 {
        self.mrtr.opened.as_ref().map_or(0, |p| {
            if self.mrtr.claimed {
                p.round.saturating_add(1)
            } else {
                p.round
            }
        })
    }

    // ---- elicitation -------------------------------------------------------------------

    /// Asks the user to fill in form `F` under `key`, or returns the validated answer on the
    /// retry. Propagate the error with `?`: on a first pass it is the input-required signal.
    ///
    /// Needs form-mode elicitation in this request's capabilities (else `-32021`).
    pub async fn elicit<F: ElicitForm>(
        &mut self,
        key: &str,
        message: impl Into<String>,
        choices: F::Choices,
    ) -> Result<Elicitation<F>, ToolError> {
        match self.try_elicit::<F>(key, message, choices).await? {
            Some(answer) => Ok(answer),
            None => Err(ToolError::input_required()),
        }
    }

    /// Like [`ToolContext::elicit`], but registers the request and returns `Ok(None)` when the
    /// answer is not there yet, so several inputs can be asked in one round. Call
    /// [`ToolContext::await_inputs`] after registering them all.
    pub async fn try_elicit<F: ElicitForm>(
        &mut self,
        key: &str,
        message: impl Into<String>,
        choices: F::Choices,
    ) -> Result<Option<Elicitation<F>>, ToolError> {
        match self.resolve_elicit::<F>(key, message, &choices)? {
            Resolved::Ready(answer) => Ok(Some(answer)),
            Resolved::Pending => Ok(None),
            Resolved::Claim(answer, record) => {
                self.claim().await?;
                self.mrtr.record_fresh(key, record);
                Ok(Some(answer))
            }
        }
    }

    /// Like [`ToolContext::elicit`], but on acceptance runs `mutation` *while the one-time
    /// claim is held* ([`ReplayStore::claim_with`]): with a SQL replay store the claim and the
    /// mutation commit together or not at all; if the mutation fails, the claim is rolled back
    /// and the user's answer stays usable for another retry.
    ///
    /// `mutation` is synchronous and runs on a blocking thread for SQL stores; keep it short.
    /// Use this for the last input of a flow: an answer from an earlier round is not
    /// committed again (the call fails with a tool error instead).
    pub async fn elicit_with_commit<F, R, M>(
        &mut self,
        key: &str,
        message: impl Into<String>,
        choices: F::Choices,
        mutation: M,
    ) -> Result<Elicitation<R>, ToolError>
    where
        F: ElicitForm,
        R: Send + 'static,
        M: FnOnce(F) -> Result<R, ActionError> + Send + 'static,
    {
        match self.resolve_elicit::<F>(key, message, &choices)? {
            Resolved::Pending => Err(ToolError::input_required()),
            Resolved::Ready(Elicitation::Accepted(_)) => Err(ToolError::tool(
                "this confirmation was already carried out in an earlier round; restart the call",
            )),
            Resolved::Ready(Elicitation::Declined) => Ok(Elicitation::Declined),
            Resolved::Claim(Elicitation::Declined, record) => {
                self.claim().await?;
                self.mrtr.record_fresh(key, record);
                Ok(Elicitation::Declined)
            }
            Resolved::Ready(Elicitation::Cancelled)
            | Resolved::Claim(Elicitation::Cancelled, _) => Ok(Elicitation::Cancelled),
            Resolved::Claim(Elicitation::Accepted(value), mut record) => {
                record.executed = true;
                let out = self.claim_with(move || mutation(value)).await?;
                self.mrtr.record_fresh(key, record);
                Ok(Elicitation::Accepted(out))
            }
        }
    }

    /// Like [`ToolContext::elicit_with_commit`], but `mutation` returns a [`ClaimMutation`]
    /// saying *how* the accepted answer changes the world: not at all ([`ClaimMutation::Done`],
    /// the claim is still made), by a standalone action under the claim
    /// ([`ClaimMutation::Standalone`], as `elicit_with_commit`), or inside the replay store's
    /// own database transaction ([`ClaimMutation::Sqlite`] / [`ClaimMutation::Postgres`]):
    /// claim, mutation and `COMMIT` are one transaction, and any failure rolls back both.
    ///
    /// `mutation` itself runs before the claim and must not change anything; the change goes in
    /// the closure it returns. With [`ClaimMutation::AfterClaim`] the claim is committed first
    /// and the action runs after it (at most once; a failure leaves the confirmation used and
    /// says so).
    pub async fn elicit_with_mutation<F, R, M>(
        &mut self,
        key: &str,
        message: impl Into<String>,
        choices: F::Choices,
        mutation: M,
    ) -> Result<Elicitation<R>, ToolError>
    where
        F: ElicitForm,
        R: Send + 'static,
        M: FnOnce(F) -> ClaimMutation<R> + Send + 'static,
    {
        match self.resolve_elicit::<F>(key, message, &choices)? {
            Resolved::Pending => Err(ToolError::input_required()),
            Resolved::Ready(Elicitation::Accepted(_)) => Err(ToolError::tool(
                "this confirmation was already carried out in an earlier round; restart the call",
            )),
            Resolved::Ready(Elicitation::Declined) => Ok(Elicitation::Declined),
            Resolved::Claim(Elicitation::Declined, record) => {
                self.claim().await?;
                self.mrtr.record_fresh(key, record);
                Ok(Elicitation::Declined)
            }
            Resolved::Ready(Elicitation::Cancelled)
            | Resolved::Claim(Elicitation::Cancelled, _) => Ok(Elicitation::Cancelled),
            Resolved::Claim(Elicitation::Accepted(value), mut record) => {
                record.executed = true;
                let out = match mutation(value) {
                    ClaimMutation::Done(out) => {
                        self.claim().await?;
                        out
                    }
                    ClaimMutation::Standalone(action) => self.claim_with(action).await?,
                    ClaimMutation::AfterClaim(action) => {
                        // Durable first: if the claim fails, nothing has been done.
                        self.claim().await?;
                        match tokio::task::spawn_blocking(action).await {
                            Ok(Ok(out)) => out,
                            Ok(Err(e)) => {
                                return Err(ToolError::tool(format!(
                                    "{e}. This confirmation is now used up; call the tool again to ask again."
                                )));
                            }
                            Err(e) => {
                                tracing::error!(error = %e, "action after a committed claim did not finish");
                                return Err(ToolError::tool(
                                    "The confirmed action stopped unexpectedly, so whether it took effect is unknown; check before asking again. This confirmation is now used up.",
                                ));
                            }
                        }
                    }
                    #[cfg(feature = "sqlite")]
                    ClaimMutation::Sqlite(action) => {
                        self.claim_in_tx(|slot| {
                            TxAction::Sqlite(Box::new(move |tx| {
                                let value = action(tx)?;
                                put(&slot, value);
                                Ok(())
                            }))
                        })
                        .await?
                    }
                    #[cfg(feature = "postgres")]
                    ClaimMutation::Postgres(action) => {
                        self.claim_in_tx(|slot| {
                            TxAction::Postgres(Box::new(move |tx| {
                                Box::pin(async move {
                                    let value = action(tx).await?;
                                    put(&slot, value);
                                    Ok(())
                                })
                            }))
                        })
                        .await?
                    }
                };
                self.mrtr.record_fresh(key, record);
                Ok(Elicitation::Accepted(out))
            }
        }
    }

    fn resolve_elicit<F: ElicitForm>(
        &mut self,
        key: &str,
        message: impl Into<String>,
        choices: &F::Choices,
    ) -> Result<Resolved<Elicitation<F>>, ToolError> {
        if !self.capabilities.supports_form() {
            return Err(missing(
                ClientCapabilities::none().with_elicitation(ElicitationCapability::form()),
            ));
        }
        // A select with nothing to pick cannot be answered: refuse it here, with the field's
        // name, rather than send `"enum": []` and wait for an answer that cannot come.
        F::check_choices(choices)
            .map_err(|e| ToolError::tool(format!("cannot ask for the form under `{key}`: {e}")))?;
        // The binding comes from the form's declaration, not from a built schema: a retry
        // that only checks its answer never builds the schema at all.
        let digest = form_binding_digest::<F>(key, choices).map_err(|e| {
            ToolError::protocol(ErrorObject::internal_error(format!(
                "form description failed to serialise: {e}"
            )))
        })?;
        let message = message.into();
        let request = |message: String| {
            InputRequest::Elicit(ElicitRequest::form(message, F::requested_schema(choices)))
        };
        match self.lookup(key, digest)? {
            Lookup::Earlier(record) => {
                let response = record.get("r").unwrap_or(&Value::Null);
                match decode_elicit::<F>(response, choices) {
                    Ok(Some(answer)) if record.get("x").is_none() => Ok(Resolved::Ready(answer)),
                    Ok(Some(Elicitation::Accepted(_))) => Err(ToolError::tool(
                        "this confirmation was already carried out in an earlier round; restart the call",
                    )),
                    Ok(Some(answer)) => Ok(Resolved::Ready(answer)),
                    Ok(None) | Err(_) => Err(refused(
                        "an answer from an earlier round no longer fits the form",
                    )),
                }
            }
            Lookup::Fresh => match decode_elicit::<F>(self.mrtr.response(key), choices) {
                Ok(Some(Elicitation::Cancelled)) => Ok(Resolved::Ready(Elicitation::Cancelled)),
                Ok(Some(answer)) => Ok(Resolved::Claim(answer, FreshAnswer::new(digest))),
                // Invalid content: ask again, saying what was wrong (the message is not part
                // of the binding, so the state stays retryable against the same form).
                Err(e) => {
                    let reason = F::explain(&e, choices);
                    self.register(key, digest, request(format!("{reason}\n\n{message}")));
                    Ok(Resolved::Pending)
                }
                // Malformed response: ask again as before.
                Ok(None) => {
                    self.register(key, digest, request(message));
                    Ok(Resolved::Pending)
                }
            },
            Lookup::Missing => {
                self.register(key, digest, request(message));
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
    pub fn correlation_id(&mut self, key: &str) -> Result<CorrelationId, ToolError> {
        if let Some(id) = self
            .mrtr
            .opened
            .as_ref()
            .and_then(|state| state.correlations.get(key))
        {
            return Ok(*id);
        }
        if let Some(id) = self.mrtr.new_correlations.get(key) {
            return Ok(*id);
        }
        let id = CorrelationId::random()
            .map_err(|e| ToolError::protocol(ErrorObject::internal_error(e.to_string())))?;
        self.mrtr.new_correlations.insert(key.to_owned(), id);
        Ok(id)
    }

    /// Sends the user to `url` out of band (URL-mode elicitation) under `key`; on the retry
    /// returns the user's answer.
    ///
    /// `Accepted(())` means only that the user agreed to open the URL. It proves nothing about
    /// what happened there: check your own record of the out-of-band step (keyed by
    /// [`ToolContext::correlation_id`] and the principal) and, when it is not complete yet, ask
    /// again with [`ToolContext::elicit_url_again`]. Because an acceptance carries no data it
    /// is not carried into later rounds: on a later pass, check your record *before* calling
    /// this again.
    ///
    /// The URL must be `https://` or `http://`, must not be pre-authenticated (no credentials
    /// or session in it: whoever opens the link must still prove who they are), and must not
    /// contain a correlation id of this flow (`-32603` otherwise, a server bug).
    ///
    /// Needs URL-mode elicitation in this request's capabilities (else `-32021` with
    /// `{"elicitation":{"url":{}}}`).
    pub async fn elicit_url(
        &mut self,
        key: &str,
        message: impl Into<String>,
        url: impl Into<String>,
    ) -> Result<Elicitation<()>, ToolError> {
        let (digest, request) = self.url_request(key, message, url)?;
        let decode = |v: &Value| {
            ElicitResult::deserialize(v).ok().map(|r| match r.action {
                ElicitAction::Accept => Elicitation::Accepted(()),
                ElicitAction::Decline => Elicitation::Declined,
                ElicitAction::Cancel => Elicitation::Cancelled,
            })
        };
        match self.lookup(key, digest)? {
            Lookup::Earlier(record) => record
                .get("r")
                .and_then(decode)
                .ok_or_else(|| refused("an answer from an earlier round is not understood")),
            Lookup::Fresh => match decode(self.mrtr.response(key)) {
                Some(Elicitation::Cancelled) => Ok(Elicitation::Cancelled),
                Some(answer) => {
                    // One-time: a replayed acceptance is refused. Not recorded in the next
                    // state: the handler's own record is the truth about the step.
                    self.claim().await?;
                    Ok(answer)
                }
                None => {
                    self.register(key, digest, request);
                    Err(ToolError::input_required())
                }
            },
            Lookup::Missing => {
                self.register(key, digest, request);
                Err(ToolError::input_required())
            }
        }
    }

    /// Asks under `key` once more after [`ToolContext::elicit_url`] returned `Accepted(())`
    /// but your record shows the out-of-band step is not finished. Return the result:
    /// `return Err(ctx.elicit_url_again(key, message, url)?)`.
    ///
    /// # Errors
    /// The same capability and URL checks as [`ToolContext::elicit_url`]; otherwise the
    /// returned value is the input-required signal.
    pub fn elicit_url_again(
        &mut self,
        key: &str,
        message: impl Into<String>,
        url: impl Into<String>,
    ) -> Result<ToolError, ToolError> {
        let (digest, request) = self.url_request(key, message, url)?;
        self.register(key, digest, request);
        Ok(ToolError::input_required())
    }

    fn url_request(
        &self,
        key: &str,
        message: impl Into<String>,
        url: impl Into<String>,
    ) -> Result<(ArgDigest, InputRequest), ToolError> {
        if !self.capabilities.supports_url() {
            return Err(missing(
                ClientCapabilities::none().with_elicitation(ElicitationCapability::url()),
            ));
        }
        let url = url.into();
        check_url(&url, self.known_correlations())?;
        let digest = binding_digest("elicitation/create#url", key, &url).map_err(|e| {
            ToolError::protocol(ErrorObject::internal_error(format!(
                "URL failed to serialise: {e}"
            )))
        })?;
        Ok((
            digest,
            InputRequest::Elicit(ElicitRequest::url(message, url)),
        ))
    }

    fn known_correlations(&self) -> impl Iterator<Item = &CorrelationId> {
        self.mrtr
            .opened
            .iter()
            .flat_map(|s| s.correlations.values())
            .chain(self.mrtr.new_correlations.values())
    }

    /// The raw `inputResponses` of this retry, present only when its `requestState` verified.
    ///
    /// Escape hatch: the typed methods above check bindings, validate content and claim the
    /// one-time nonce; reading responses here does none of that.
    pub fn raw_input_responses(&self) -> &InputResponses {
        &self.mrtr.responses
    }

    // ---- sampling and roots ------------------------------------------------------------

    /// Asks the client to sample its model under `key` (`sampling/createMessage`), or returns
    /// the client's result on the retry.
    ///
    /// Needs `sampling` in this request's capabilities, plus `sampling.tools` when `params`
    /// offers tools and `sampling.context` for an `includeContext` other than `none`
    /// (else `-32021` with exactly what is missing).
    pub async fn sample(
        &mut self,
        key: &str,
        params: CreateMessageRequestParams,
    ) -> Result<CreateMessageResult, ToolError> {
        match self.try_sample(key, params).await? {
            Some(r) => Ok(r),
            None => Err(ToolError::input_required()),
        }
    }

    /// Like [`ToolContext::sample`] but returns `Ok(None)` after registering the request (see
    /// [`ToolContext::await_inputs`]).
    pub async fn try_sample(
        &mut self,
        key: &str,
        params: CreateMessageRequestParams,
    ) -> Result<Option<CreateMessageResult>, ToolError> {
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
        if let Some(lacking) = required.missing_from(&self.capabilities) {
            return Err(missing(lacking));
        }
        let digest = binding_digest(mcp_types::METHOD_SAMPLING_CREATE_MESSAGE, key, &params)
            .map_err(|e| {
                ToolError::protocol(ErrorObject::internal_error(format!(
                    "sampling request failed to serialise: {e}"
                )))
            })?;
        self.resolve_typed::<CreateMessageResult>(key, digest, || {
            InputRequest::CreateMessage(CreateMessageRequest::new(params))
        })
        .await
    }

    /// Asks the client for its roots under `key` (`roots/list`), or returns them on the retry.
    ///
    /// A root list describes what the client is looking at; it **never authorizes anything**.
    /// Check every path against the server's own [`crate::scope`] policy for the principal.
    ///
    /// Needs `roots` in this request's capabilities (else `-32021`).
    pub async fn list_roots(&mut self, key: &str) -> Result<Vec<Root>, ToolError> {
        match self.try_list_roots(key).await? {
            Some(r) => Ok(r),
            None => Err(ToolError::input_required()),
        }
    }

    /// Like [`ToolContext::list_roots`] but returns `Ok(None)` after registering the request
    /// (see [`ToolContext::await_inputs`]).
    pub async fn try_list_roots(&mut self, key: &str) -> Result<Option<Vec<Root>>, ToolError> {
        if !self.capabilities.supports_roots() {
            return Err(missing(ClientCapabilities::none().with_roots()));
        }
        let digest = binding_digest(mcp_types::METHOD_ROOTS_LIST, key, &()).map_err(|e| {
            ToolError::protocol(ErrorObject::internal_error(format!(
                "roots request failed to serialise: {e}"
            )))
        })?;
        Ok(self
            .resolve_typed::<ListRootsResult>(key, digest, || {
                InputRequest::ListRoots(ListRootsRequest::new())
            })
            .await?
            .map(|r| r.roots))
    }

    /// Fails with the input-required signal when any `try_*` call of this pass registered a
    /// request; otherwise every `try_*` call so far returned `Some`.
    pub fn await_inputs(&self) -> Result<(), ToolError> {
        if self.mrtr.pending.is_empty() {
            Ok(())
        } else {
            Err(ToolError::input_required())
        }
    }

    async fn resolve_typed<T: serde::de::DeserializeOwned>(
        &mut self,
        key: &str,
        digest: ArgDigest,
        request: impl FnOnce() -> InputRequest,
    ) -> Result<Option<T>, ToolError> {
        match self.lookup(key, digest)? {
            Lookup::Earlier(record) => T::deserialize(record.get("r").unwrap_or(&Value::Null))
                .map(Some)
                .map_err(|_| refused("an answer from an earlier round is not understood")),
            Lookup::Fresh => match T::deserialize(self.mrtr.response(key)) {
                Ok(parsed) => {
                    self.claim().await?;
                    self.mrtr.record_fresh(key, FreshAnswer::new(digest));
                    Ok(Some(parsed))
                }
                Err(_) => {
                    self.register(key, digest, request());
                    Ok(None)
                }
            },
            Lookup::Missing => {
                self.register(key, digest, request());
                Ok(None)
            }
        }
    }

    fn register(&mut self, key: &str, digest: ArgDigest, request: InputRequest) {
        self.mrtr.pending.insert(key.to_owned(), request);
        self.mrtr.pending_bindings.insert(key.to_owned(), digest);
    }

    fn lookup(&self, key: &str, digest: ArgDigest) -> Result<Lookup, ToolError> {
        let Some(state) = &self.mrtr.opened else {
            // Without a verified state nothing was asked: responses are ignored.
            return Ok(Lookup::Missing);
        };
        if let Some(record) = state.answers.get(key) {
            if record_digest(record) != Some(digest) {
                return Err(refused(
                    "what this tool would show under that key changed since it was answered (for example, the list of choices)",
                ));
            }
            return Ok(Lookup::Earlier(record.clone()));
        }
        if let Some(fresh) = self.mrtr.fresh(key) {
            // Asked twice on one pass: hand back the same answer without a second claim.
            if fresh.digest == digest
                && let Some(record) = self.mrtr.fresh_record(key)
            {
                return Ok(Lookup::Earlier(record));
            }
        }
        match state.bindings.get(key) {
            None => Ok(Lookup::Missing),
            Some(bound) if *bound != digest => Err(refused(
                "what this tool would show under that key changed since it was asked (for example, the list of choices)",
            )),
            Some(_) => Ok(if self.mrtr.responses.contains_key(key) {
                Lookup::Fresh
            } else {
                Lookup::Missing
            }),
        }
    }

    /// Claims this retry's state nonce once per pass.
    async fn claim(&mut self) -> Result<(), ToolError> {
        if self.mrtr.claimed {
            return Ok(());
        }
        let Some(state) = &self.mrtr.opened else {
            return Err(ToolError::protocol(ErrorObject::internal_error(
                "claim without request state",
            )));
        };
        match self
            .mrtr
            .store
            .claim_for(&self.principal, state.nonce, state.expires_at_time())
            .await
        {
            Ok(ClaimOutcome::Claimed) => {
                self.mrtr.claimed = true;
                Ok(())
            }
            Ok(ClaimOutcome::AlreadyUsed) => Err(already_used()),
            Err(e) => Err(store_failed(&e)),
        }
    }

    async fn claim_with<R: Send + 'static>(
        &mut self,
        mutation: impl FnOnce() -> Result<R, ActionError> + Send + 'static,
    ) -> Result<R, ToolError> {
        if self.mrtr.claimed {
            // The claim is already held by this pass; run the mutation directly.
            return mutation().map_err(|e| ToolError::tool(e.to_string()));
        }
        let Some(state) = &self.mrtr.opened else {
            return Err(ToolError::protocol(ErrorObject::internal_error(
                "claim without request state",
            )));
        };
        let slot: Arc<Mutex<Option<R>>> = Arc::new(Mutex::new(None));
        let out = Arc::clone(&slot);
        let action = Box::new(move || {
            let value = mutation()?;
            if let Ok(mut guard) = out.lock() {
                *guard = Some(value);
            }
            Ok(())
        });
        let outcome = self
            .mrtr
            .store
            .claim_with_for(
                &self.principal,
                state.nonce,
                state.expires_at_time(),
                action,
            )
            .await;
        self.settle_claim(outcome, &slot)
    }

    #[cfg(any(feature = "sqlite", feature = "postgres"))]
    async fn claim_in_tx<R: Send + 'static>(
        &mut self,
        action: impl FnOnce(Arc<Mutex<Option<R>>>) -> TxAction,
    ) -> Result<R, ToolError> {
        if self.mrtr.claimed {
            // A claim made earlier in this pass has committed already; a second transaction
            // could not be atomic with it.
            return Err(ToolError::protocol(ErrorObject::internal_error(
                "a transactional mutation must be the first claim of its retry",
            )));
        }
        let Some(state) = &self.mrtr.opened else {
            return Err(ToolError::protocol(ErrorObject::internal_error(
                "claim without request state",
            )));
        };
        let slot: Arc<Mutex<Option<R>>> = Arc::new(Mutex::new(None));
        let action = action(Arc::clone(&slot));
        let outcome = self
            .mrtr
            .store
            .claim_in_tx(state.nonce, state.expires_at_time(), action)
            .await;
        self.settle_claim(outcome, &slot)
    }

    /// The value a claimed mutation left in `slot`, or the error its claim outcome means.
    fn settle_claim<R>(
        &mut self,
        outcome: Result<ClaimOutcome, ReplayError>,
        slot: &Mutex<Option<R>>,
    ) -> Result<R, ToolError> {
        match outcome {
            Ok(ClaimOutcome::Claimed) => {
                self.mrtr.claimed = true;
                let value = slot.lock().ok().and_then(|mut g| g.take());
                value.ok_or_else(|| {
                    ToolError::protocol(ErrorObject::internal_error(
                        "the committed mutation produced no value",
                    ))
                })
            }
            Ok(ClaimOutcome::AlreadyUsed) => Err(already_used()),
            Err(ReplayError::ActionFailed(e)) => Err(ToolError::tool(format!(
                "{e} (nothing was changed; the confirmation can be retried)"
            ))),
            // The change was made; only its record failed. Report what happened (the value),
            // and tell the operator the store is failing.
            Err(ReplayError::ActionUnrecorded { cause }) => {
                tracing::error!(
                    reason = cause.reason(),
                    error = %cause,
                    "the action under a claim was carried out but the claim could not be committed"
                );
                self.mrtr.claimed = true;
                let value = slot.lock().ok().and_then(|mut g| g.take());
                value.ok_or_else(|| {
                    ToolError::protocol(ErrorObject::internal_error(
                        "the action was carried out but produced no value",
                    ))
                })
            }
            Err(ReplayError::CommitOutcomeUnknown { cause }) => {
                tracing::error!(reason = cause.reason(), error = %cause, "claim commit outcome unknown");
                Err(ToolError::tool(
                    "The replay store lost its connection while committing, so whether the change was made is unknown; check before asking again.",
                ))
            }
            Err(e) => Err(store_failed(&e)),
        }
    }

    // ---- progress and logging ----------------------------------------------------------

    /// Sends `notifications/progress` when the request carried a `progressToken` (otherwise
    /// does nothing). Returns whether a notification was delivered.
    pub async fn progress(&self, progress: u64, total: Option<u64>, message: Option<&str>) -> bool {
        let Some(token) = &self.progress_token else {
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
        match self.log_level {
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

enum Resolved<T> {
    Ready(T),
    Claim(T, FreshAnswer),
    Pending,
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
    Ok(Some(match action {
        ElicitAction::Accept => {
            let empty = JsonObject::new();
            let content = match response.get("content") {
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

/// Refuses URLs a client should not be sent: not http(s), or carrying a correlation id.
fn check_url<'a>(
    url: &str,
    mut correlations: impl Iterator<Item = &'a CorrelationId>,
) -> Result<(), ToolError> {
    let scheme_ok = url.starts_with("https://") || url.starts_with("http://");
    if !scheme_ok || url.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(ToolError::protocol(ErrorObject::internal_error(
            "URL elicitation needs an absolute https:// or http:// URL without spaces (server bug)",
        )));
    }
    if correlations.any(|c| url.contains(&c.to_string())) {
        return Err(ToolError::protocol(ErrorObject::internal_error(
            "URL elicitation must not put the correlation id in the URL; link to an opaque id whose server-side record holds it (server bug)",
        )));
    }
    Ok(())
}

/// The record of an accepted answer kept for later rounds: `{"s": binding, "r": response}`,
/// plus `"x": true` once its confirmation was carried out.
fn answer_record(digest: ArgDigest, response: Value, executed: bool) -> Value {
    let mut record = Map::with_capacity(3);
    record.insert("s".to_owned(), Value::String(digest.to_string()));
    record.insert("r".to_owned(), response);
    if executed {
        record.insert("x".to_owned(), Value::Bool(true));
    }
    Value::Object(record)
}

fn record_digest(record: &Value) -> Option<ArgDigest> {
    record.get("s").and_then(|s| ArgDigest::deserialize(s).ok())
}

/// Prefix hashed before a binding (domain separation from argument digests and from any
/// other SHA-256 of the same bytes; bump the version whenever the layout below changes).
const BINDING_DOMAIN: &[u8] = b"mcp-runtime/input-binding/v3\0";

/// Digest binding what was shown under `key`: the method, the key and the request body.
///
/// The body's compact serde serialization is streamed straight into SHA-256: no `Value` tree,
/// no canonicalisation. It only has to be deterministic for one build (the same schema value
/// always serializes to the same bytes: struct fields in declaration order, maps in insertion
/// order) and to change whenever what the client is shown changes, which any change to the
/// serialized request does. Method and key are length-prefixed so no two (method, key, body)
/// triples share an input.
fn binding_digest<T: serde::Serialize + ?Sized>(
    method: &str,
    key: &str,
    body: &T,
) -> Result<ArgDigest, serde_json::Error> {
    use sha2::Digest as _;
    let mut hasher = binding_hasher(method, key);
    serde_json::to_writer(&mut hasher, body)?;
    Ok(ArgDigest::from_bytes(hasher.0.finalize().into()))
}

/// [`binding_digest`] of a form: what [`ElicitForm::write_binding`] writes for `choices`,
/// under the elicitation method and `key`.
fn form_binding_digest<F: ElicitForm>(
    key: &str,
    choices: &F::Choices,
) -> std::io::Result<ArgDigest> {
    use sha2::Digest as _;
    // Buffered: the description is written in many small pieces, and one hash update over
    // the whole buffer is much cheaper than one per piece.
    let mut buf = Vec::with_capacity(512);
    F::write_binding(choices, &mut buf)?;
    let mut hasher = binding_hasher(mcp_types::METHOD_ELICITATION_CREATE, key);
    hasher.0.update(&buf);
    Ok(ArgDigest::from_bytes(hasher.0.finalize().into()))
}

fn binding_hasher(method: &str, key: &str) -> HashWriter {
    use sha2::Digest as _;
    let mut hasher = HashWriter(sha2::Sha256::new());
    hasher.0.update(BINDING_DOMAIN);
    for part in [method, key] {
        hasher.0.update((part.len() as u64).to_le_bytes());
        hasher.0.update(part.as_bytes());
    }
    hasher
}

/// Feeds serializer output into a hasher without buffering it.
struct HashWriter(sha2::Sha256);

impl std::io::Write for HashWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        sha2::Digest::update(&mut self.0, buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn missing(required: ClientCapabilities) -> ToolError {
    ToolError::protocol(ErrorObject::missing_required_client_capability(&required))
}

/// The `-32602` for a retry whose state does not fit what the tool asks now.
pub(crate) fn refused(why: &str) -> ToolError {
    ToolError::protocol(ErrorObject::invalid_params(format!(
        "requestState is invalid: {why}; restart the call without requestState and inputResponses"
    )))
}

fn already_used() -> ToolError {
    ToolError::protocol(ErrorObject::invalid_params(
        "This confirmation was already used: its requestState was consumed by an earlier retry. Restart the call without requestState and inputResponses to ask again.",
    ))
}

fn store_failed(e: &ReplayError) -> ToolError {
    if let ReplayError::PrincipalShareExhausted { .. } = e {
        // The caller's own doing, and something it can act on: a tool error it can read.
        return ToolError::tool(format!("{e}; nothing was changed"));
    }
    ToolError::protocol(ErrorObject::internal_error(format!(
        "replay store unavailable ({}); nothing was changed, retry later",
        e.reason()
    )))
}

#[cfg(test)]
mod tests {
    use super::binding_digest;
    use serde_json::json;

    #[test]
    fn binding_digest_is_deterministic_and_separates_its_parts() {
        let schema = json!({"type": "object", "properties": {"id": {"enum": ["a", "b"]}}});
        let d = |m: &str, k: &str, b: &serde_json::Value| binding_digest(m, k, b).unwrap();
        let base = d("elicitation/create", "pick", &schema);
        assert_eq!(base, d("elicitation/create", "pick", &schema.clone()));
        // A changed choice list, key or method gives another digest.
        let fewer = json!({"type": "object", "properties": {"id": {"enum": ["a"]}}});
        assert_ne!(base, d("elicitation/create", "pick", &fewer));
        assert_ne!(base, d("elicitation/create", "pick2", &schema));
        assert_ne!(base, d("sampling/createMessage", "pick", &schema));
        // Length prefixes: moving a byte between method and key changes the digest.
        let null = serde_json::Value::Null;
        assert_ne!(d("ab", "c", &null), d("a", "bc", &null));
    }
}
