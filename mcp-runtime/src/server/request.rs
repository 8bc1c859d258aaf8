//! What every request that can need input shares (`tools/call`, `prompts/get`,
//! `resources/read`): capability checks, opening a retry's sealed state bound to method +
//! target + arguments, building the request context, and answering the input-required signal.

use std::sync::Arc;
use std::time::SystemTime;

use mcp_types::{ClientCapabilities, ErrorObject, InputResponses, JsonObject, RequestMeta};
use serde_json::Value;

use super::{Server, mrtr};
use crate::context::{AskModes, ContextParts, HandlerId, HandlerKind, Mrtr, RequestContext};
use crate::service::{Reply, RequestScope};
use crate::state::{ArgDigest, Expectation, canonical_digest};

/// A `tools/call` taken apart: what a task run needs of it.
pub(super) struct CallParts {
    pub(super) name: String,
    pub(super) arguments: JsonObject,
    pub(super) retry: RetryParts,
}

/// The MRTR members of a request's params.
#[derive(Default)]
pub(super) struct RetryParts {
    pub(super) input_responses: InputResponses,
    pub(super) request_state: Option<String>,
}

impl RetryParts {
    /// Takes `inputResponses` and `requestState` out of `params`.
    pub(super) fn take(params: &mut JsonObject) -> Result<Self, ErrorObject> {
        Self::from_members(
            params.remove("inputResponses"),
            params.remove("requestState"),
        )
    }

    /// Checks the `inputResponses` and `requestState` members (each absent or present).
    pub(super) fn from_members(
        input_responses: Option<Value>,
        request_state: Option<Value>,
    ) -> Result<Self, ErrorObject> {
        let input_responses = match input_responses {
            None => InputResponses::default(),
            Some(Value::Object(r)) => InputResponses(r),
            Some(_) => {
                return Err(ErrorObject::invalid_params(
                    "Invalid params: \"inputResponses\" must be an object keyed by the inputRequests keys",
                ));
            }
        };
        let request_state = match request_state {
            None => None,
            Some(Value::String(s)) => Some(s),
            Some(_) => {
                return Err(ErrorObject::invalid_params(
                    "Invalid params: \"requestState\" must be the string received, echoed unchanged",
                ));
            }
        };
        Ok(Self {
            input_responses,
            request_state,
        })
    }
}

/// What a sealed state is bound to besides the principal: the method and its target (tool
/// name, prompt name or resource URI).
#[derive(Clone, Copy)]
pub(super) struct Target<'a> {
    pub(super) method: &'static str,
    pub(super) name: &'a str,
}

impl<'a> Target<'a> {
    /// The handler this target runs, for [`RequestContext::settle_pass`].
    pub(super) fn handler(self) -> HandlerId<'a> {
        let kind = match self.method {
            mcp_types::METHOD_PROMPTS_GET => HandlerKind::Prompt,
            mcp_types::METHOD_RESOURCES_READ => HandlerKind::Resource,
            _ => HandlerKind::Tool,
        };
        HandlerId {
            kind,
            name: self.name,
        }
    }
}

/// What the handler about to run needs of its request.
#[derive(Clone, Copy)]
pub(super) struct Needs<'a> {
    /// The client capabilities it requires.
    pub(super) capabilities: &'a ClientCapabilities,
    /// The client capabilities it uses only when the request declares them.
    pub(super) optional: Option<&'a ClientCapabilities>,
    /// Whether it may end in an input request ([`ToolHandler::may_request_input`]
    /// (crate::tool::ToolHandler::may_request_input)): a first call needs the argument digest
    /// only then.
    pub(super) may_ask: bool,
}

impl<'a> Needs<'a> {
    /// A handler that may ask for input (prompts, resources, tasks, hand-written tools).
    pub(super) fn asking(
        capabilities: &'a ClientCapabilities,
        optional: Option<&'a ClientCapabilities>,
    ) -> Self {
        Self {
            capabilities,
            optional,
            may_ask: true,
        }
    }
}

/// A request context ready to run a handler, and the argument digest its state binds.
pub(super) struct Opened {
    pub(super) ctx: RequestContext,
    pub(super) arg_digest: Option<ArgDigest>,
}

impl Server {
    /// Checks capabilities, opens the retry's state (if any) against `target` and `args`, and
    /// builds the context the handler runs with.
    pub(super) fn open_request(
        &self,
        target: Target<'_>,
        needs: Needs<'_>,
        args: &mut JsonObject,
        retry: RetryParts,
        meta: Arc<RequestMeta>,
        rctx: RequestScope,
    ) -> Result<Opened, ErrorObject> {
        let caps = &meta.client_capabilities;
        if let Some(lacking) = needs.capabilities.missing_from(caps) {
            return Err(ErrorObject::missing_required_client_capability(&lacking));
        }
        // The argument digest binds a state to its request. Without any capability that can
        // carry an input request, or from a handler that cannot ask, no state can be issued,
        // so skip hashing on that fast path. A state that arrives anyway is checked in full.
        let may_ask = needs.may_ask
            && (caps.elicitation.is_some() || caps.sampling.is_some() || caps.roots.is_some());
        let arg_digest: Option<ArgDigest> =
            (may_ask || retry.request_state.is_some()).then(|| canonical_digest_of_map(args));
        let transport_trace = rctx.trace_context().cloned();
        let transport_baggage = rctx.baggage().cloned();
        let principal = rctx.grant.principal;
        let mrtr = match (&retry.request_state, arg_digest) {
            (Some(token), Some(digest)) => {
                let expect = Expectation {
                    principal: principal.as_str(),
                    method: target.method,
                    target: target.name,
                    arg_digest: digest,
                };
                match Mrtr::open(
                    self.inner.store.clone(),
                    &self.inner.keyring,
                    token,
                    &expect,
                    SystemTime::now(),
                    retry.input_responses,
                ) {
                    Ok(mut mrtr) => {
                        if let Some(round) = mrtr.opened_round() {
                            crate::observe::retry_accepted(target.method, round);
                        }
                        // The flow is answered: off the ledger of abandoned flows.
                        if let Some(flows) = &self.inner.abandoned
                            && let Some((nonce, expires)) = mrtr.opened_nonce()
                            && let Some(answering) = flows.answered(nonce, expires)
                        {
                            mrtr.set_answering(answering);
                        }
                        if target.method == mcp_types::METHOD_TOOLS_CALL {
                            mrtr.with_duplicate_wait(self.inner.limits.duplicate_wait)
                        } else {
                            mrtr
                        }
                    }
                    Err(e) => {
                        crate::observe::refused(e.reason());
                        return Err(mrtr::state_refused(&e));
                    }
                }
            }
            _ => Mrtr::first(self.inner.store.clone()),
        };
        crate::observe::trace_in(
            &meta.extra,
            transport_trace.as_ref(),
            transport_baggage.as_ref(),
            mrtr.flow_trace(),
        );
        let ctx = RequestContext::new(ContextParts {
            principal,
            meta,
            app_state: self.inner.app_state.clone(),
            notifications: rctx.notifications,
            cancel: rctx.cancel,
            mrtr,
            declared: AskModes::declared(needs.capabilities, needs.optional),
        });
        Ok(Opened { ctx, arg_digest })
    }

    /// The reply to a handler's input-required signal: an `InputRequiredResult` whose new
    /// state is bound to the same target.
    pub(super) fn input_required_reply(
        &self,
        id: &mcp_types::RequestId,
        ctx: &mut RequestContext,
        target: Target<'_>,
        arg_digest: Option<ArgDigest>,
    ) -> Reply {
        match mrtr::input_required(&self.inner, ctx, target.method, target.name, arg_digest) {
            Ok(sealed) => {
                crate::observe::round_issued(target.method);
                if let Some(flows) = &self.inner.abandoned
                    && let Some(issued) = ctx.take_issued()
                {
                    flows.asked(issued);
                }
                let mut reply = super::reply::input_required_reply_with_meta(
                    id,
                    &sealed,
                    &self.inner.result_meta_json,
                );
                reply.input_required = true;
                reply
            }
            Err(e) => super::reply::error_reply(Some(id), e),
        }
    }
}

pub(super) fn canonical_digest_of_map(map: &mut JsonObject) -> ArgDigest {
    // `canonical_digest` takes a Value: move the map in and back out instead of cloning it.
    let value = Value::Object(std::mem::take(map));
    let digest = canonical_digest(&value);
    if let Value::Object(inner) = value {
        *map = inner;
    }
    digest
}
