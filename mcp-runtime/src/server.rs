//! The server core: [`Server`], built with [`Server::builder`], dispatches one JSON-RPC message
//! at a time, statelessly.
//!
//! Nothing about a client is remembered between requests: capabilities come from each
//! request's `_meta`, and a multi round-trip flow lives in the signed `requestState` plus the
//! shared [`ReplayStore`]. Any instance sharing the signing keys and the replay store can finish
//! a flow another instance began.
//!
//! Validation order (each step answers with the spec's code and shape): size and depth limits
//! (`-32600`), parse (`-32700`), JSON-RPC shape (`-32600`), `_meta` (`-32602`, message names the
//! member), protocol version (`-32022`), method (`-32601`), params (`-32602`), required client
//! capabilities (`-32021`), request state (`-32602`), then the tool. A `tools/call` is
//! authorized (scopes, `-32600`) before anything of the tool is looked at, and a first call
//! (no `requestState`) of a tool with a rate limit is counted against it (`-32023`, see
//! [`rate_limit`](crate::rate_limit)) right before the tool runs or its task is created.
//!
//! Where `Server`'s methods live, one file per step of a request: building and the public
//! accessors here; the entry points and the method table in `server/dispatch.rs`; opening a
//! request (`_meta`, the retry's state) in `server/request.rs`; prompts, resources and
//! completion in `server/catalog.rs`; the tasks extension in `server/tasks.rs`. Sealing the
//! next `requestState` belongs to the MRTR ledger (`crate::mrtr`), and every `StateKeyring`
//! method (`seal`, `open`, rotation) is in `state/keys.rs`.

mod abandoned;
mod catalog;
mod discover;
mod dispatch;
mod json_writer;
pub(crate) mod limits;
mod listen;
mod listing;
mod mrtr;
mod param_headers;
mod rate;
mod reply;
mod request;
mod scopes;
mod task_progress;
mod task_watch;
mod tasks;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use mcp_types::{CacheScope, Implementation, ResultMeta};

use crate::context::StateMap;
use crate::rate_limit::{RateLimit, RateLimitStore, StoreFailure};
use crate::replay::{MemoryReplayStore, ReplayStore};
use crate::router::{PromptRouter, ResourceRouter, ToolRouter};
use crate::service::ParamHeader;
use crate::state::{KeyError, StateKeyring};
use crate::tasks::TaskStore;

pub use limits::{InvalidLimit, Limits};
pub use listen::{MAX_LISTEN_TASKS, MAX_LISTENS_PER_PRINCIPAL, STORE_POLL};

/// Protocol versions this server speaks.
pub const SUPPORTED_VERSIONS: &[&str] = &[mcp_types::LATEST_PROTOCOL_VERSION];

/// A stateless MCP server: cheap to clone (shared inside), safe to call concurrently.
#[derive(Clone)]
pub struct Server {
    inner: Arc<Inner>,
}

/// A server as the transports hold it, so that everything taking
/// `impl Into<Arc<dyn McpService>>` (the 2025-11-25 adapter) takes a [`Server`] as it is.
impl From<Server> for Arc<dyn crate::service::McpService> {
    fn from(server: Server) -> Self {
        Arc::new(server)
    }
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("info", &self.inner.info.name)
            .field("tools", &self.inner.router)
            .finish_non_exhaustive()
    }
}

struct Inner {
    info: Implementation,
    router: ToolRouter,
    prompts: PromptRouter,
    resources: ResourceRouter,
    offered: discover::Offered,
    app_state: Arc<StateMap>,
    keyring: StateKeyring,
    store: Arc<dyn ReplayStore>,
    state_ttl: Duration,
    limits: Limits,
    result_meta: ResultMeta,
    /// `result_meta` serialised once, appended to tool results that carry no `_meta` of their
    /// own.
    result_meta_json: Box<[u8]>,
    /// `server/discover` result, serialised once.
    discover_json: Vec<u8>,
    /// List results, serialised once per page (byte-identical on every call).
    tools_list: listing::Pages,
    prompts_list: listing::Pages,
    resources_list: listing::Pages,
    templates_list: listing::Pages,
    /// `x-mcp-header` rules by tool name.
    param_headers: HashMap<String, Vec<ParamHeader>>,
    /// The tasks extension: store, lifetimes, tasks running here.
    tasks: tasks::Tasks,
    /// OAuth scopes tools, prompts and resources require.
    scopes: scopes::RequiredScopes,
    /// Rate limits on `tools/call`; `None` when no tool has one.
    rate: Option<rate::Limiter>,
    /// The ledger of abandoned flows, when counting them
    /// ([`ServerBuilder::count_abandoned_flows`]).
    abandoned: Option<Arc<abandoned::AbandonedFlows>>,
}

/// Why [`ServerBuilder::build`](crate::server::ServerBuilder::build) failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BuildError {
    /// Two tools share a name.
    #[error("two tools are named `{0}`; tool names must be unique, rename one")]
    DuplicateTool(String),
    /// Two prompts share a name.
    #[error("two prompts are named `{0}`; prompt names must be unique, rename one")]
    DuplicatePrompt(String),
    /// A resource could not be registered (duplicate URI, invalid URI template).
    #[error("resource registration failed: {0}")]
    Resource(String),
    /// No state keyring was given and a random one could not be generated.
    #[error("cannot generate a request-state key: {0}")]
    Keys(#[from] KeyError),
    /// A tool's `x-mcp-header` annotation breaks the spec's rules.
    #[error("invalid x-mcp-header: {0}")]
    ParamHeader(String),
    /// A tool cannot be served as declared (e.g. its arguments' schema root is not an object).
    #[error("{0}")]
    ToolDeclaration(String),
    /// A prompt or resource cannot be served as declared (e.g. a prompt argument that is not
    /// a string).
    #[error("{0}")]
    Declaration(String),
    /// The server accepts scoped credentials
    /// ([`ServerBuilder::scoped_authorization`](crate::server::ServerBuilder::scoped_authorization))
    /// but these tools, prompts or resources declare neither scopes nor public access.
    #[error(
        "the server accepts scoped credentials (scoped_authorization), so every tool, prompt \
         and resource must declare its OAuth scopes or be declared public; these declare \
         neither: {}",
        .0.join("; ")
    )]
    Unscoped(Vec<String>),
    /// A tool extracts `State<T>` of a type never registered with `.state(..)`.
    #[error(
        "tool `{tool}` takes `State<{type_name}>`, but no state of that type was registered; \
         add `.state(value)` of type `{type_name}` to the server builder"
    )]
    MissingState {
        /// The tool.
        tool: String,
        /// The state type it needs.
        type_name: &'static str,
    },
    /// [`ServerBuilder::count_abandoned_flows`] was asked for, but the replay store keeps no
    /// [`FlowLedger`](crate::replay::FlowLedger).
    #[error(
        "counting abandoned flows needs a replay store with a flow ledger; the `{0}` store has none (use a memory, SQLite, PostgreSQL or Redis store, or drop count_abandoned_flows)"
    )]
    NoFlowLedger(&'static str),
    /// A cached result failed to serialise.
    #[error("cannot serialise the {0} result: {1}")]
    Serialize(&'static str, serde_json::Error),
}

/// Configures a [`Server`].
pub struct ServerBuilder {
    info: Implementation,
    router: ToolRouter,
    prompts: PromptRouter,
    resources: ResourceRouter,
    page_size: usize,
    app_state: StateMap,
    keyring: Option<StateKeyring>,
    store: Option<Arc<dyn ReplayStore>>,
    state_ttl: Duration,
    instructions: Option<String>,
    limits: Limits,
    cache_ttl: Duration,
    cache_scope: CacheScope,
    task_store: Option<Arc<dyn TaskStore>>,
    task_ttl: Duration,
    max_task_result: usize,
    task_cancel_check: Duration,
    max_listen: Duration,
    scopes: scopes::RequiredScopes,
    rate: rate::RateConfig,
    abandoned_sweep: Option<Duration>,
}

impl Server {
    /// Starts configuring a server that reports `info` as its `serverInfo`.
    pub fn builder(info: Implementation) -> ServerBuilder {
        ServerBuilder {
            info,
            router: ToolRouter::new(),
            prompts: PromptRouter::new(),
            resources: ResourceRouter::new(),
            page_size: ServerBuilder::DEFAULT_PAGE_SIZE,
            app_state: StateMap::default(),
            keyring: None,
            store: None,
            state_ttl: Duration::from_secs(600),
            instructions: None,
            limits: Limits::default(),
            cache_ttl: Duration::from_secs(300),
            cache_scope: CacheScope::Public,
            task_store: None,
            task_ttl: ServerBuilder::DEFAULT_TASK_TTL,
            max_task_result: ServerBuilder::DEFAULT_MAX_TASK_RESULT_BYTES,
            task_cancel_check: ServerBuilder::DEFAULT_TASK_CANCEL_CHECK,
            max_listen: ServerBuilder::DEFAULT_MAX_LISTEN,
            scopes: scopes::RequiredScopes::default(),
            rate: rate::RateConfig::default(),
            abandoned_sweep: None,
        }
    }

    /// The tools this server offers.
    pub fn tools(&self) -> &ToolRouter {
        &self.inner.router
    }

    /// The configured limits.
    pub fn limits(&self) -> Limits {
        self.inner.limits
    }

    /// The prompts this server offers.
    pub fn prompts(&self) -> &PromptRouter {
        &self.inner.prompts
    }

    /// The resources this server offers.
    pub fn resources(&self) -> &ResourceRouter {
        &self.inner.resources
    }

    /// Handles one raw message sent under `grant` (a `&Principal` is a local grant without
    /// scopes); returns the serialised response, or `None` for a notification. Notifications
    /// emitted by tools are dropped. The grant is authorized like any transport's.
    ///
    /// The entry point for embedding and tests. A transport, which authenticates the sender,
    /// routes notifications and cancels, goes through
    /// [`McpService::handle`](crate::service::McpService::handle) instead.
    pub async fn handle_bytes(
        &self,
        bytes: &[u8],
        grant: impl Into<crate::service::Grant>,
    ) -> Option<Vec<u8>> {
        let ctx = crate::service::RequestScope::new(
            grant,
            crate::service::NotificationSink::discard(),
            crate::service::CancellationToken::new(),
        );
        self.handle_raw(bytes, ctx).await.map(|r| r.body.to_vec())
    }

    /// Sweeps the ledger of abandoned flows now, as the periodic sweep does
    /// ([`ServerBuilder::count_abandoned_flows`]): takes the expired entries this instance
    /// wins, counts them, and returns how many. `Ok(0)` when abandoned flows are not counted.
    pub async fn sweep_abandoned_flows(&self) -> Result<u64, crate::replay::ReplayError> {
        match &self.inner.abandoned {
            Some(flows) => flows.sweep().await,
            None => Ok(0),
        }
    }

    /// Ends every open `subscriptions/listen` stream with its complete result (call it when
    /// shutting down, before the transport stops). Listens opened afterwards end at once.
    pub fn close_listens(&self) {
        self.inner.tasks.closing.cancel();
    }
}

impl ServerBuilder {
    /// Items per page of `tools/list`, `prompts/list`, `resources/list` and
    /// `resources/templates/list` unless
    /// [`ServerBuilder::page_size`](crate::server::ServerBuilder::page_size) says otherwise.
    pub const DEFAULT_PAGE_SIZE: usize = 100;

    /// The prompts to offer (e.g. `prompts![a, b]`); replaces earlier calls. The `prompts`
    /// capability is advertised only when at least one prompt is registered.
    #[must_use]
    pub fn prompts(mut self, router: PromptRouter) -> Self {
        self.prompts = router;
        self
    }

    /// The resources and resource templates to offer (e.g. `resources![a, b]`); replaces
    /// earlier calls. The `resources` capability is advertised only when one is registered.
    #[must_use]
    pub fn resources(mut self, router: ResourceRouter) -> Self {
        self.resources = router;
        self
    }

    /// Items per list page (at least 1; default [`ServerBuilder::DEFAULT_PAGE_SIZE`]).
    #[must_use]
    pub fn page_size(mut self, size: usize) -> Self {
        self.page_size = size.max(1);
        self
    }

    /// The tools to offer (e.g. `tools![a, b]`); replaces earlier calls.
    #[must_use]
    pub fn tools(mut self, router: ToolRouter) -> Self {
        self.router = router;
        self
    }

    /// Registers application state of type `T` for `State<T>` / `ctx.state::<T>()`. One value
    /// per type; a later call for the same type replaces the earlier value.
    #[must_use]
    pub fn state<T: Clone + Send + Sync + 'static>(mut self, value: T) -> Self {
        self.app_state.insert(value);
        self
    }

    /// The keys that seal and open `requestState`. Default: one random key, which only works
    /// for a single process; give every instance the same keyring (key file) otherwise.
    #[must_use]
    pub fn state_keys(mut self, keyring: StateKeyring) -> Self {
        self.keyring = Some(keyring);
        self
    }

    /// Where one-time nonces are claimed. Default: in memory (single process only); share a
    /// SQLite or PostgreSQL store between instances.
    #[must_use]
    pub fn replay_store(mut self, store: Arc<dyn ReplayStore>) -> Self {
        self.store = Some(store);
        self
    }

    /// How long an issued `requestState` stays valid (default 10 minutes).
    #[must_use]
    pub fn state_ttl(mut self, ttl: Duration) -> Self {
        self.state_ttl = ttl;
        self
    }

    /// `instructions` returned by `server/discover`.
    #[must_use]
    pub fn instructions(mut self, text: impl Into<String>) -> Self {
        self.instructions = Some(text.into());
        self
    }

    /// Message size and depth limits.
    #[must_use]
    pub fn limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// Caching hints (`ttlMs`, `cacheScope`) of the `server/discover` and list results, the
    /// same on every page (default 5 minutes, public: the lists do not depend on who asks).
    #[must_use]
    pub fn cache_hints(mut self, ttl: Duration, scope: CacheScope) -> Self {
        self.cache_ttl = ttl;
        self.cache_scope = scope;
        self
    }

    /// How long a task stays retrievable after creation unless
    /// [`ServerBuilder::task_ttl`](crate::server::ServerBuilder::task_ttl) says otherwise (1 hour).
    pub const DEFAULT_TASK_TTL: Duration = Duration::from_secs(3600);
    /// The longest task lifetime
    /// [`ServerBuilder::task_ttl`](crate::server::ServerBuilder::task_ttl) accepts (7 days).
    pub const MAX_TASK_TTL: Duration = Duration::from_secs(7 * 24 * 3600);

    /// Where tasks (the tasks extension) are kept. Default: in memory
    /// ([`MemoryTaskStore`](crate::tasks::MemoryTaskStore), single process); share a SQLite
    /// store between processes so that any of them can answer for a task.
    #[must_use]
    pub fn task_store(mut self, store: Arc<dyn TaskStore>) -> Self {
        self.task_store = Some(store);
        self
    }

    /// How long a task stays retrievable after creation, reported as its `ttlMs` (default
    /// [`ServerBuilder::DEFAULT_TASK_TTL`], clamped to 1 second ..=
    /// [`ServerBuilder::MAX_TASK_TTL`]).
    #[must_use]
    pub fn task_ttl(mut self, ttl: Duration) -> Self {
        self.task_ttl = ttl.clamp(Duration::from_secs(1), Self::MAX_TASK_TTL);
        self
    }

    /// The largest task result kept unless
    /// [`ServerBuilder::max_task_result_bytes`](crate::server::ServerBuilder::max_task_result_bytes)
    /// says otherwise: 4 MiB, the default largest request (`Limits::max_message_bytes`).
    pub const DEFAULT_MAX_TASK_RESULT_BYTES: usize = 4 * 1024 * 1024;

    /// The largest tool result a task keeps, in bytes of its JSON encoding (default
    /// [`ServerBuilder::DEFAULT_MAX_TASK_RESULT_BYTES`], at least 1 KiB). A task whose tool
    /// returns more ends `failed` with a `-32603` error naming the result's size and this
    /// limit (`data: {"reason": "task_result_too_large", "size", "limit"}`), and nothing of
    /// the result is stored. The task store holds at most its task limit times this
    /// (see [`TaskLimits`](crate::tasks::TaskLimits)).
    #[must_use]
    pub fn max_task_result_bytes(mut self, max: usize) -> Self {
        self.max_task_result = max.max(1024);
        self
    }

    /// How often a running task is checked for a cancellation made through another instance unless
    /// [`ServerBuilder::task_cancel_check`](crate::server::ServerBuilder::task_cancel_check) says
    /// otherwise (1 second).
    pub const DEFAULT_TASK_CANCEL_CHECK: Duration = Duration::from_secs(1);

    /// How often each task running on this instance reads its record, so that a
    /// `tasks/cancel` answered by another instance sharing the task store (or the task's
    /// expiry) reaches its handler within about this long (default
    /// [`ServerBuilder::DEFAULT_TASK_CANCEL_CHECK`], clamped to 50 ms ..= 1 minute). Its
    /// handler sees `ctx.cancelled()` fire and is dropped after a 2 s grace, as with a local
    /// cancel (which reaches it at once). Each check is one task-store read per running task.
    #[must_use]
    pub fn task_cancel_check(mut self, every: Duration) -> Self {
        self.task_cancel_check = every.clamp(Duration::from_millis(50), Duration::from_secs(60));
        self
    }

    /// How long one `subscriptions/listen` stays open unless
    /// [`ServerBuilder::max_listen_duration`](crate::server::ServerBuilder::max_listen_duration)
    /// says otherwise (30 minutes).
    pub const DEFAULT_MAX_LISTEN: Duration = Duration::from_secs(30 * 60);
    /// The longest listen
    /// [`ServerBuilder::max_listen_duration`](crate::server::ServerBuilder::max_listen_duration)
    /// accepts (24 hours).
    pub const MAX_LISTEN: Duration = Duration::from_secs(24 * 3600);

    /// How long one `subscriptions/listen` stream may stay open (default
    /// [`ServerBuilder::DEFAULT_MAX_LISTEN`], clamped to 1 second ..=
    /// [`ServerBuilder::MAX_LISTEN`]). At the limit the stream ends gracefully with its
    /// complete result; the client listens again if it still cares. Over HTTP, keep
    /// [`HttpConfig::listen_timeout`](crate::transport::HttpConfig::listen_timeout) above it.
    #[must_use]
    pub fn max_listen_duration(mut self, max: Duration) -> Self {
        self.max_listen = max.clamp(Duration::from_secs(1), Self::MAX_LISTEN);
        self
    }

    /// The rate limit of every tool without one of its own
    /// ([`tool_rate_limit`](Self::tool_rate_limit)): at most `limit.limit()` first calls per
    /// window, per principal and tool. Default: none (nothing is limited). Replaces earlier
    /// calls.
    ///
    /// Only a call without `requestState` counts (the first round of a flow; its later rounds
    /// and replayed retries do not); a refused call gets `-32023` with `retryAfter`, HTTP
    /// 429 with `Retry-After`. See [`rate_limit`](crate::rate_limit) for every rule.
    ///
    /// ```
    /// use mcp_runtime::prelude::*;
    /// use mcp_runtime::rate_limit::RateLimit;
    ///
    /// /// Pings.
    /// #[tool]
    /// async fn ping() -> ToolResult<String> {
    ///     Ok("pong".into())
    /// }
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let server = Server::builder(Implementation::new("s", "1.0"))
    ///     .tools(tools![ping])
    ///     .rate_limit(RateLimit::per_minute(60))
    ///     .build()?;
    /// # let _ = server;
    /// # Ok(())
    /// # }
    /// ```
    #[must_use]
    pub fn rate_limit(mut self, limit: RateLimit) -> Self {
        self.rate.default = Some(limit);
        self
    }

    /// The rate limit of `tool`, instead of the default ([`rate_limit`](Self::rate_limit)),
    /// per principal. The tool must be registered ([`build`](Self::build) fails naming it
    /// otherwise). A later call for the same tool replaces the earlier one.
    ///
    /// ```
    /// use std::time::Duration;
    /// use mcp_runtime::prelude::*;
    /// use mcp_runtime::rate_limit::RateLimit;
    ///
    /// /// Deletes something.
    /// #[tool(destructive)]
    /// async fn remove() -> ToolResult<String> {
    ///     Ok("removed".into())
    /// }
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let server = Server::builder(Implementation::new("s", "1.0"))
    ///     .tools(tools![remove])
    ///     .tool_rate_limit("remove", RateLimit::new(10, Duration::from_secs(60)))
    ///     .build()?;
    /// # let _ = server;
    /// # Ok(())
    /// # }
    /// ```
    #[must_use]
    pub fn tool_rate_limit(mut self, tool: impl Into<String>, limit: RateLimit) -> Self {
        self.rate.tools.insert(tool.into(), Some(limit));
        self
    }

    /// Exempts `tool` from the default rate limit ([`rate_limit`](Self::rate_limit)): it is
    /// never counted. The tool must be registered.
    #[must_use]
    pub fn tool_without_rate_limit(mut self, tool: impl Into<String>) -> Self {
        self.rate.tools.insert(tool.into(), None);
        self
    }

    /// Where rate-limit counters are kept. Default: the replay store's own
    /// ([`ReplayStore::rate_limit_store`]: the same backend, sharing its connection or pool),
    /// else memory (this process only). Give every instance of a fleet the same shared store
    /// so that they enforce one limit; see [`rate_limit`](crate::rate_limit) and
    /// [`open_rate_limit_store`](crate::rate_limit::open_rate_limit_store).
    #[must_use]
    pub fn rate_limit_store(mut self, store: Arc<dyn RateLimitStore>) -> Self {
        self.rate.store = Some(store);
        self
    }

    /// How long one rate-limit check may wait for its store (default
    /// [`DEFAULT_DEADLINE`](crate::rate_limit::DEFAULT_DEADLINE), 2 s; clamped to 10 ms ..=
    /// 30 s). Past it the check counts as a store failure
    /// ([`rate_limit_on_store_failure`](Self::rate_limit_on_store_failure)).
    #[must_use]
    pub fn rate_limit_deadline(mut self, deadline: Duration) -> Self {
        self.rate.deadline = deadline.clamp(Duration::from_millis(10), Duration::from_secs(30));
        self
    }

    /// What a rate-limited call gets when the store fails or misses the deadline: refused
    /// with a retryable `-32603` ([`StoreFailure::Refuse`], the default: fail closed) or run
    /// unlimited ([`StoreFailure::Allow`]: fail open). Either way the failure is logged.
    #[must_use]
    pub fn rate_limit_on_store_failure(mut self, failure: StoreFailure) -> Self {
        self.rate.on_failure = failure;
        self
    }

    /// Builds the server, serialising the discover and tool-list results once.
    pub fn build(self) -> Result<Server, BuildError> {
        if let Some(name) = self.router.duplicates().first() {
            return Err(BuildError::DuplicateTool(name.clone()));
        }
        if let Some(name) = self.router.unknown_tasks().first() {
            return Err(BuildError::ToolDeclaration(format!(
                "`.task(\"{name}\", ..)` names no registered tool; register the tool before marking it as a task"
            )));
        }
        if let Some(name) = self.prompts.duplicates().first() {
            return Err(BuildError::DuplicatePrompt(name.clone()));
        }
        if let Some(problem) = self.resources.problems().first() {
            return Err(BuildError::Resource(problem.clone()));
        }
        // Mistakes in a declaration fail here, at start-up, not on every call.
        let declared = self
            .prompts
            .iter()
            .filter_map(|p| p.declaration_error())
            .chain(
                self.resources
                    .statics()
                    .chain(self.resources.templates())
                    .filter_map(|r| r.declaration_error()),
            )
            .next();
        if let Some(e) = declared {
            return Err(BuildError::Declaration(e.to_owned()));
        }
        for tool in self.router.iter() {
            if let Some(e) = tool.declaration_error() {
                return Err(BuildError::ToolDeclaration(e.to_owned()));
            }
            if let Some(need) = tool
                .state_needs()
                .iter()
                .find(|need| !self.app_state.contains(need.type_id))
            {
                return Err(BuildError::MissingState {
                    tool: tool.descriptor().name.clone(),
                    type_name: need.type_name,
                });
            }
        }
        let mut scopes = self.scopes;
        scopes.declared_by(&self.router, &self.prompts, &self.resources);
        scopes.check(&self.router, &self.prompts, &self.resources)?;
        let keyring = match self.keyring {
            Some(k) => k,
            None => StateKeyring::generate()?,
        };
        let store = self.store.unwrap_or_else(|| {
            Arc::new(MemoryReplayStore::new(MemoryReplayStore::DEFAULT_CAPACITY))
        });
        let abandoned = match self.abandoned_sweep {
            Some(every) if store.flow_ledger().is_some() => {
                Some(abandoned::AbandonedFlows::new(store.clone(), every))
            }
            Some(_) => return Err(BuildError::NoFlowLedger(store.name())),
            None => None,
        };
        let rate = self
            .rate
            .build(&self.router, &*store)
            .map_err(BuildError::ToolDeclaration)?;
        let param_headers =
            param_headers::collect(&self.router).map_err(BuildError::ParamHeader)?;
        let result_meta = ResultMeta::with_server_info(self.info.clone());
        let result_meta_json = serde_json::to_vec(&result_meta)
            .map_err(|e| BuildError::Serialize("tools/call", e))?
            .into_boxed_slice();
        let ttl_ms = u64::try_from(self.cache_ttl.as_millis()).unwrap_or(u64::MAX);
        let offered = discover::Offered::of(&self.router, &self.prompts, &self.resources);
        let discover_json = discover::discover_json(
            self.instructions,
            &offered,
            ttl_ms,
            self.cache_scope,
            &result_meta,
        )
        .map_err(|e| BuildError::Serialize("server/discover", e))?;
        let hints = discover::ListHints {
            ttl_ms,
            scope: self.cache_scope,
            page_size: self.page_size,
            meta: &result_meta,
        };
        let tools_list = discover::tools_pages(&self.router, hints)
            .map_err(|e| BuildError::Serialize("tools/list", e))?;
        let prompts_list = discover::prompts_pages(&self.prompts, hints)
            .map_err(|e| BuildError::Serialize("prompts/list", e))?;
        let resources_list = discover::resources_pages(&self.resources, hints)
            .map_err(|e| BuildError::Serialize("resources/list", e))?;
        let templates_list = discover::templates_pages(&self.resources, hints)
            .map_err(|e| BuildError::Serialize("resources/templates/list", e))?;
        Ok(Server {
            inner: Arc::new(Inner {
                info: self.info,
                router: self.router,
                prompts: self.prompts,
                resources: self.resources,
                offered,
                app_state: Arc::new(self.app_state),
                keyring,
                store,
                state_ttl: self.state_ttl,
                limits: self.limits,
                result_meta,
                result_meta_json,
                discover_json,
                tools_list,
                prompts_list,
                resources_list,
                templates_list,
                param_headers,
                tasks: tasks::Tasks::new(
                    self.task_store
                        .unwrap_or_else(|| Arc::new(crate::tasks::MemoryTaskStore::default())),
                    self.task_ttl,
                    Duration::from_millis(500),
                    self.max_listen,
                )
                .with_max_result(self.max_task_result)
                .with_cancel_check(self.task_cancel_check),
                scopes,
                rate,
                abandoned,
            }),
        })
    }

    /// How often [`count_abandoned_flows`](Self::count_abandoned_flows) sweeps unless told
    /// otherwise (30 s).
    pub const DEFAULT_ABANDONED_SWEEP: Duration = Duration::from_secs(30);

    /// Counts abandoned flows (asked with an input-required reply, never answered before the
    /// `requestState` expired) in `mcp_flows_abandoned_total` and `mcp_runtime.flows.abandoned`,
    /// once across every instance sharing the replay store. Off by default: each
    /// input-required reply then costs one more store write (its state's nonce and expiry, in
    /// the store's [`FlowLedger`](crate::replay::FlowLedger)), and a retry one delete, both in
    /// the background, off the reply's path.
    ///
    /// Every `sweep_every` (clamped to 100 ms ..= 1 hour; see
    /// [`DEFAULT_ABANDONED_SWEEP`](Self::DEFAULT_ABANDONED_SWEEP)) each instance takes the
    /// expired entries in bounded batches (at most 5 s per sweep); the store hands each entry
    /// to exactly one taker. A flow is thus counted between its expiry and one interval later.
    /// [`build`](Self::build) fails with [`BuildError::NoFlowLedger`] for a replay store
    /// without a ledger. The sweep starts when the server is built inside a Tokio runtime
    /// (else on the first input-required reply) and stops when the server is dropped.
    ///
    /// The ledger is written in the background, after the reply is made: a failed write is
    /// logged and loses that flow's count (never the reply). At most 1,024 writes are in
    /// flight, each for at most 5 s: past that (a stalled store) writes are skipped and logged
    /// rather than queued. An answer that reaches the store
    /// before the record of the state it answers leaves a mark the late record does not
    /// overwrite, so an answered flow is not counted (unless the record comes later than the
    /// state's expiry).
    #[must_use]
    pub fn count_abandoned_flows(mut self, sweep_every: Duration) -> Self {
        self.abandoned_sweep =
            Some(sweep_every.clamp(Duration::from_millis(100), Duration::from_secs(3600)));
        self
    }

    /// Declares that this server accepts scoped credentials (OAuth access tokens): every tool,
    /// prompt and resource must then declare the scopes it requires (`#[tool(scopes = [..])]`,
    /// [`ServerBuilder::tool_scopes`](crate::server::ServerBuilder::tool_scopes) and the like) or
    /// be declared public
    /// ([`ServerBuilder::public_tool`](crate::server::ServerBuilder::public_tool) and the like),
    /// and [`ServerBuilder::build`](crate::server::ServerBuilder::build) fails naming every one
    /// that does neither.
    ///
    /// Without it the core still refuses a scoped grant anything undeclared (deny by
    /// default) when such a request arrives, and a transport set up with an OAuth
    /// authenticator refuses to start
    /// ([`McpService::check_grants`](crate::service::McpService::check_grants)): call this
    /// wherever OAuth is configured.
    #[must_use]
    pub fn scoped_authorization(mut self) -> Self {
        self.scopes.scoped = true;
        self
    }

    /// Declares the tool `name` callable with any credentials, scoped or not (see
    /// [`ServerBuilder::scoped_authorization`](crate::server::ServerBuilder::scoped_authorization)).
    /// [`ServerBuilder::build`](crate::server::ServerBuilder::build) fails if no such tool is
    /// registered, or if it also requires scopes.
    #[must_use]
    pub fn public_tool(mut self, name: &str) -> Self {
        self.scopes.public_tools.insert(name.to_owned());
        self
    }

    /// Declares the prompt `name` public (see
    /// [`ServerBuilder::public_tool`](crate::server::ServerBuilder::public_tool)).
    #[must_use]
    pub fn public_prompt(mut self, name: &str) -> Self {
        self.scopes.public_prompts.insert(name.to_owned());
        self
    }

    /// Declares the resource registered with this URI or URI template public (see
    /// [`ServerBuilder::public_tool`](crate::server::ServerBuilder::public_tool)).
    #[must_use]
    pub fn public_resource(mut self, uri_or_template: &str) -> Self {
        self.scopes
            .public_resources
            .insert(uri_or_template.to_owned());
        self
    }

    /// Requires OAuth `scopes` for `tools/call` of the tool `name` (added to earlier calls), and
    /// for every `tasks/*` operation on a task of that tool. A scoped grant lacking one is refused
    /// before the tool runs, on every transport (over HTTP: 403 `insufficient_scope` naming them
    /// all). [`ServerBuilder::build`](crate::server::ServerBuilder::build) fails if no such tool is
    /// registered or a scope is malformed.
    #[must_use]
    pub fn tool_scopes(
        mut self,
        name: &str,
        scopes: impl IntoIterator<Item = impl Into<String>>,
    ) -> Self {
        scopes::add(&mut self.scopes.tools, name, scopes);
        self
    }

    /// Requires OAuth `scopes` for `prompts/get` of the prompt `name` (see
    /// [`ServerBuilder::tool_scopes`](crate::server::ServerBuilder::tool_scopes)).
    #[must_use]
    pub fn prompt_scopes(
        mut self,
        name: &str,
        scopes: impl IntoIterator<Item = impl Into<String>>,
    ) -> Self {
        scopes::add(&mut self.scopes.prompts, name, scopes);
        self
    }

    /// Requires OAuth `scopes` for `resources/read` of the resource registered with this URI,
    /// or of every URI the resource template `uri_or_template` serves (see
    /// [`ServerBuilder::tool_scopes`](crate::server::ServerBuilder::tool_scopes)).
    #[must_use]
    pub fn resource_scopes(
        mut self,
        uri_or_template: &str,
        scopes: impl IntoIterator<Item = impl Into<String>>,
    ) -> Self {
        scopes::add(&mut self.scopes.resources, uri_or_template, scopes);
        self
    }
}
