//! `prompts/get`, `resources/read` and `completion/complete`.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use futures::FutureExt as _;
use mcp_types::{
    CompleteRequestParams, CompleteResult, Completion, CompletionReference, ErrorObject,
    JsonObject, ReadResourceResult, RequestId, RequestMeta, ResultType,
};
use serde_json::Value;

use super::Server;
use super::reply::{error_reply, result_reply};
use super::request::{Needs, RetryParts, Target};
use crate::handler_error::{HandlerError, HandlerErrorKind};
use crate::resource::not_found_error;
use crate::service::{Reply, RequestScope};

/// The spec caps a completion at 100 values.
const MAX_COMPLETION_VALUES: usize = 100;

impl Server {
    pub(super) async fn get_prompt(
        &self,
        id: &RequestId,
        mut params: JsonObject,
        meta: Arc<RequestMeta>,
        rctx: RequestScope,
    ) -> Reply {
        let name = match params.remove("name") {
            Some(Value::String(n)) => n,
            _ => {
                return error_reply(
                    Some(id),
                    ErrorObject::invalid_params(
                        "Invalid params: prompts/get needs \"name\", a string naming the prompt",
                    ),
                );
            }
        };
        let mut arguments = match params.remove("arguments") {
            None | Some(Value::Null) => JsonObject::new(),
            Some(Value::Object(a)) if a.values().all(Value::is_string) => a,
            Some(_) => {
                return error_reply(
                    Some(id),
                    ErrorObject::invalid_params(
                        "Invalid params: prompt \"arguments\" must be an object of string values",
                    ),
                );
            }
        };
        let retry = match RetryParts::take(&mut params) {
            Ok(r) => r,
            Err(e) => return error_reply(Some(id), e),
        };
        let Some(prompt) = self.inner.prompts.get(&name) else {
            return error_reply(
                Some(id),
                ErrorObject::invalid_params(format!(
                    "Invalid params: unknown prompt {name:?}; call prompts/list for the available prompts"
                )),
            );
        };
        if let Some(refusal) = self.authorize(&rctx.grant, id, mcp_types::METHOD_PROMPTS_GET, &name)
        {
            return refusal;
        }
        let target = Target {
            method: mcp_types::METHOD_PROMPTS_GET,
            name: &name,
        };
        let opened = match self.open_request(
            target,
            Needs::asking(
                prompt.required_capabilities(),
                prompt.optional_capabilities(),
            ),
            &mut arguments,
            retry,
            meta,
            rctx,
        ) {
            Ok(o) => o,
            Err(e) => return error_reply(Some(id), e),
        };
        let (mut ctx, digest) = (opened.ctx, opened.arg_digest);
        let outcome = AssertUnwindSafe(prompt.get(&mut ctx, arguments))
            .catch_unwind()
            .await
            .map(|outcome| ctx.settle_pass(outcome, target.handler()));
        match outcome {
            Ok(Ok(mut result)) => {
                result.result_type = ResultType::Complete;
                result
                    .meta
                    .get_or_insert_with(|| self.inner.result_meta.clone());
                result_reply(id, &result)
            }
            Ok(Err(e)) => self.request_error(id, &mut ctx, target, digest, e),
            Err(_) => {
                tracing::error!(prompt = %crate::log_safe::LogSafe(&name), "prompt panicked");
                error_reply(
                    Some(id),
                    ErrorObject::internal_error(format!("prompt `{name}` failed unexpectedly")),
                )
            }
        }
    }

    pub(super) async fn read_resource(
        &self,
        id: &RequestId,
        mut params: JsonObject,
        meta: Arc<RequestMeta>,
        rctx: RequestScope,
    ) -> Reply {
        let uri = match params.remove("uri") {
            Some(Value::String(u)) => u,
            _ => {
                return error_reply(
                    Some(id),
                    ErrorObject::invalid_params(
                        "Invalid params: resources/read needs \"uri\", the resource URI string",
                    ),
                );
            }
        };
        let retry = match RetryParts::take(&mut params) {
            Ok(r) => r,
            Err(e) => return error_reply(Some(id), e),
        };
        let Some(found) = self.inner.resources.resolve(&uri) else {
            return error_reply(Some(id), not_found_error(&uri));
        };
        if let Some(refusal) =
            self.authorize(&rctx.grant, id, mcp_types::METHOD_RESOURCES_READ, &uri)
        {
            return refusal;
        }
        let handler = found.handler;
        let vars: JsonObject = found
            .vars
            .into_iter()
            .map(|(k, v)| (k, Value::String(v)))
            .collect();
        let target = Target {
            method: mcp_types::METHOD_RESOURCES_READ,
            name: &uri,
        };
        // The URI is the target; the digest covers nothing more.
        let mut bound = JsonObject::new();
        let opened = match self.open_request(
            target,
            Needs::asking(
                handler.required_capabilities(),
                handler.optional_capabilities(),
            ),
            &mut bound,
            retry,
            meta,
            rctx,
        ) {
            Ok(o) => o,
            Err(e) => return error_reply(Some(id), e),
        };
        let (mut ctx, digest) = (opened.ctx, opened.arg_digest);
        let outcome = AssertUnwindSafe(handler.read(&mut ctx, &uri, vars))
            .catch_unwind()
            .await
            .map(|outcome| ctx.settle_pass(outcome, target.handler()));
        match outcome {
            Ok(Ok(contents)) => {
                let (ttl_ms, cache_scope) = handler.cache_hints();
                let result = ReadResourceResult {
                    result_type: ResultType::Complete,
                    contents,
                    ttl_ms,
                    cache_scope,
                    meta: Some(self.inner.result_meta.clone()),
                    extra: JsonObject::new(),
                };
                result_reply(id, &result)
            }
            Ok(Err(e)) => self.request_error(id, &mut ctx, target, digest, e),
            Err(_) => {
                tracing::error!(uri = %crate::log_safe::LogSafe(&uri), "resource read panicked");
                error_reply(
                    Some(id),
                    ErrorObject::internal_error(format!("reading `{uri}` failed unexpectedly")),
                )
            }
        }
    }

    /// A prompt's or resource's error: there is no `isError` result outside tools, so
    /// invalid arguments are `-32602` and other failures `-32603`, both with the message.
    fn request_error(
        &self,
        id: &RequestId,
        ctx: &mut crate::context::RequestContext,
        target: Target<'_>,
        digest: Option<crate::state::ArgDigest>,
        e: HandlerError,
    ) -> Reply {
        match e.into_kind() {
            HandlerErrorKind::InputRequired => self.input_required_reply(id, ctx, target, digest),
            HandlerErrorKind::Protocol(e) => error_reply(Some(id), e),
            HandlerErrorKind::InvalidArguments(m) => error_reply(
                Some(id),
                ErrorObject::invalid_params(format!("Invalid params: {m}")),
            ),
            HandlerErrorKind::Tool(m) => error_reply(Some(id), ErrorObject::internal_error(m)),
        }
    }

    pub(super) fn complete(&self, id: &RequestId, params: JsonObject) -> Reply {
        let mut params = params;
        // `_meta` was validated by the dispatcher; the typed params need it present.
        params
            .entry("_meta")
            .or_insert_with(|| Value::Object(JsonObject::new()));
        let request: CompleteRequestParams = match serde_json::from_value(Value::Object(params)) {
            Ok(r) => r,
            Err(e) => {
                return error_reply(
                    Some(id),
                    ErrorObject::invalid_params(format!(
                        "Invalid params: {e}; completion/complete needs \"ref\" (ref/prompt or ref/resource) and \"argument\" {{name, value}}"
                    )),
                );
            }
        };
        let context = request.context.unwrap_or_default();
        let arg = &request.argument;
        let values = match &request.reference {
            CompletionReference::Prompt(p) => {
                let Some(prompt) = self.inner.prompts.get(&p.name) else {
                    return error_reply(
                        Some(id),
                        ErrorObject::invalid_params(format!(
                            "Invalid params: unknown prompt {:?}",
                            p.name
                        )),
                    );
                };
                let known = prompt
                    .descriptor()
                    .arguments
                    .as_ref()
                    .is_some_and(|a| a.iter().any(|x| x.name == arg.name));
                if !known {
                    return error_reply(
                        Some(id),
                        ErrorObject::invalid_params(format!(
                            "Invalid params: prompt {:?} has no argument {:?}",
                            p.name, arg.name
                        )),
                    );
                }
                prompt.complete(&arg.name, &arg.value, &context)
            }
            CompletionReference::ResourceTemplate(r) => {
                let Some(handler) = self.inner.resources.template(&r.uri) else {
                    return error_reply(
                        Some(id),
                        ErrorObject::invalid_params(format!(
                            "Invalid params: no resource template {:?}; call resources/templates/list",
                            r.uri
                        )),
                    );
                };
                handler.complete(&arg.name, &arg.value, &context)
            }
        };
        let mut values = values.unwrap_or_default();
        let total = values.len();
        values.truncate(MAX_COMPLETION_VALUES);
        let result = CompleteResult {
            result_type: ResultType::Complete,
            completion: Completion {
                has_more: Some(total > values.len()),
                total: u64::try_from(total).ok(),
                values,
                extra: JsonObject::new(),
            },
            meta: Some(self.inner.result_meta.clone()),
            extra: JsonObject::new(),
        };
        result_reply(id, &result)
    }
}
