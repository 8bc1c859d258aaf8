//! Rate limits in the core: which limit a tool has, and the check of one first call against
//! the shared store (see [`crate::rate_limit`] for the rules).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use mcp_types::{ErrorObject, RateLimitedData, RequestId};
use serde_json::json;

use super::Server;
use super::reply::{error_reply, rate_limited_reply};
use crate::Principal;
use crate::rate_limit::{
    MemoryRateLimitStore, RateKey, RateLimit, RateLimitError, RateLimitStore, StoreFailure,
};
use crate::replay::ReplayStore;
use crate::router::ToolRouter;
use crate::service::Reply;

/// What the builder collected; [`RateConfig::build`] turns it into the server's [`Limiter`].
pub(super) struct RateConfig {
    pub(super) default: Option<RateLimit>,
    /// Per-tool overrides; `None`: the tool is exempt from the default.
    pub(super) tools: HashMap<String, Option<RateLimit>>,
    pub(super) store: Option<Arc<dyn RateLimitStore>>,
    pub(super) deadline: Duration,
    pub(super) on_failure: StoreFailure,
}

impl Default for RateConfig {
    fn default() -> Self {
        Self {
            default: None,
            tools: HashMap::new(),
            store: None,
            deadline: crate::rate_limit::DEFAULT_DEADLINE,
            on_failure: StoreFailure::Refuse,
        }
    }
}

impl RateConfig {
    /// The server's limiter, or `None` when no tool has a limit (nothing is ever checked).
    /// An override naming no registered tool is an error (a typo would silently leave the
    /// tool unlimited).
    pub(super) fn build(
        self,
        router: &ToolRouter,
        replay: &dyn ReplayStore,
    ) -> Result<Option<Limiter>, String> {
        let mut unknown: Vec<&str> = self
            .tools
            .keys()
            .filter(|name| router.get(name).is_none())
            .map(String::as_str)
            .collect();
        unknown.sort_unstable();
        if let Some(name) = unknown.first() {
            return Err(format!(
                "`.tool_rate_limit(\"{name}\", ..)` (or `.tool_without_rate_limit`) names no registered tool; register the tool or fix the name"
            ));
        }
        let any = (self.default.is_some() && router.iter().next().is_some())
            || self.tools.values().any(Option::is_some);
        if !any {
            return Ok(None);
        }
        let store = match self.store {
            Some(store) => store,
            None => replay.rate_limit_store().unwrap_or_else(|| {
                tracing::warn!(
                    replay_store = replay.name(),
                    "rate limits are counted in memory, per process: the replay store offers no \
                     rate-limit store; give every instance a shared one with \
                     ServerBuilder::rate_limit_store"
                );
                Arc::new(MemoryRateLimitStore::default())
            }),
        };
        Ok(Some(Limiter {
            default: self.default,
            tools: self.tools,
            store,
            deadline: self.deadline,
            on_failure: self.on_failure,
        }))
    }
}

/// The limits of a server that has any, and the store counting them.
pub(super) struct Limiter {
    default: Option<RateLimit>,
    tools: HashMap<String, Option<RateLimit>>,
    pub(super) store: Arc<dyn RateLimitStore>,
    deadline: Duration,
    on_failure: StoreFailure,
}

/// One first call to count before its tool runs.
pub(super) struct RateCheck {
    key: RateKey,
    limit: RateLimit,
}

/// Why a call was not let through.
enum Refusal {
    /// Over its limit: retry after this many whole seconds.
    Limited { retry_after_secs: u32 },
    /// The store failed or missed the deadline (logged), and the server fails closed.
    Unavailable,
}

impl Limiter {
    /// The limit `tool` has: its override, else the default.
    fn limit_for(&self, tool: &str) -> Option<RateLimit> {
        match self.tools.get(tool) {
            Some(limit) => *limit,
            None => self.default,
        }
    }

    /// The check a first call of `tool` by `principal` needs, if the tool has a limit.
    pub(super) fn check_for(&self, principal: &Principal, tool: &str) -> Option<RateCheck> {
        let limit = self.limit_for(tool)?;
        Some(RateCheck {
            key: RateKey::new(principal.as_str(), tool, limit.window()),
            limit,
        })
    }

    /// Whether `tool` has a limit (its first calls are counted).
    pub(super) fn limits(&self, tool: &str) -> bool {
        self.limit_for(tool).is_some()
    }

    /// How long a check may take at most: the store's deadline.
    pub(super) fn deadline(&self) -> Duration {
        self.deadline
    }

    /// Counts the call; `Ok` lets it through.
    async fn count(&self, check: &RateCheck) -> Result<(), Refusal> {
        let hit = match tokio::time::timeout(
            self.deadline,
            self.store.hit(&check.key, check.limit.window()),
        )
        .await
        {
            Ok(Ok(hit)) => hit,
            Ok(Err(e)) => return self.failed(e),
            Err(_) => return self.failed(RateLimitError::Timeout(self.deadline)),
        };
        if hit.count <= u64::from(check.limit.limit()) {
            crate::observe::rate_limit("allowed");
            return Ok(());
        }
        crate::observe::rate_limit("limited");
        Err(Refusal::Limited {
            retry_after_secs: retry_after_secs(hit.resets_in, check.limit.window()),
        })
    }

    /// A store failure: logged, then refused or let through as configured.
    fn failed(&self, e: RateLimitError) -> Result<(), Refusal> {
        crate::observe::rate_limit("store_error");
        tracing::warn!(
            store = self.store.name(),
            reason = e.reason(),
            error = %e,
            fail_open = self.on_failure == StoreFailure::Allow,
            "rate-limit check failed"
        );
        match self.on_failure {
            StoreFailure::Allow => Ok(()),
            StoreFailure::Refuse => Err(Refusal::Unavailable),
        }
    }
}

/// The wait a refused call is told: the time left in its window in whole seconds, rounded
/// up, at least 1 and at most the window.
fn retry_after_secs(resets_in: Duration, window: Duration) -> u32 {
    let mut secs = resets_in.as_secs();
    if resets_in.subsec_nanos() > 0 {
        secs += 1;
    }
    let secs = secs.clamp(1, window.as_secs().max(1));
    u32::try_from(secs).unwrap_or(u32::MAX)
}

impl Server {
    /// Counts a first call of `tool` against its limit: `None` lets it run, `Some` is the
    /// reply refusing it (`-32023` over the limit; `-32603`, retryable, when the store cannot
    /// say and the server fails closed).
    pub(super) async fn admit(
        &self,
        id: &RequestId,
        check: &RateCheck,
        tool: &str,
    ) -> Option<Reply> {
        let limiter = self.inner.rate.as_ref()?;
        match limiter.count(check).await {
            Ok(()) => None,
            Err(Refusal::Limited { retry_after_secs }) => {
                let limit = check.limit;
                let window = limit.window().as_secs();
                let data = RateLimitedData::after_secs(u64::from(retry_after_secs))
                    .with_quota(u64::from(limit.limit()), window);
                let error = ErrorObject::rate_limited(
                    &data,
                    format_args!(
                        "at most {} calls of `{tool}` per {window} s; retry in {retry_after_secs} s",
                        limit.limit()
                    ),
                );
                Some(rate_limited_reply(
                    id,
                    error,
                    retry_after_secs,
                    Some(limit.limit()),
                ))
            }
            // What failed is in the log; the client learns only that it may retry.
            Err(Refusal::Unavailable) => Some(error_reply(
                Some(id),
                ErrorObject::internal_error(
                    "Rate limits cannot be checked right now (the rate-limit store is unavailable); \
                     nothing was run. Retry in a few seconds.",
                )
                .with_data(json!({
                    "reason": "rate_limit_store_unavailable",
                    "retryable": true,
                })),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_round_up_to_whole_seconds_within_the_window() {
        let min = Duration::from_secs(60);
        assert_eq!(retry_after_secs(Duration::from_millis(29_001), min), 30);
        assert_eq!(retry_after_secs(Duration::from_secs(30), min), 30);
        assert_eq!(retry_after_secs(Duration::ZERO, min), 1);
        assert_eq!(retry_after_secs(Duration::from_millis(1), min), 1);
        assert_eq!(retry_after_secs(Duration::from_secs(3600), min), 60);
    }
}
