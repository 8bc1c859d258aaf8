//! [`RedisReplayStore`]: one-time claims and recorded outcomes in Redis.
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use futures::future::BoxFuture;
use redis::aio::MultiplexedConnection;

use super::NAME;
use super::conn::{
    Failure, Link, PREFIX_HINT, URL_HINT, connection_config, shown_prefix, valid_prefix,
};
use crate::replay::{
    Claim, ClaimOutcome, ClaimState, ClaimWith, DuringWork, FlowLedger, OutcomeStore, ReplayError,
    ReplayStore, Taken, redact,
};
use crate::state::Nonce;

/// The longest a claim that may have landed after its deadline is looked for, to release it.
const RELEASE_HORIZON: Duration = Duration::from_secs(600);
/// How long a [`ClaimWith::During`] action holds its lease before a retry may take over
/// (after a crash mid-action). Keep actions well below it.
pub(crate) const ACTION_LEASE: Duration = Duration::from_secs(60);

/// Turns our lease into the used claim: `KEYS[1]` the claim, `ARGV[1]` our lease token,
/// `ARGV[2]` the expiry in Unix milliseconds. 1 when recorded, 0 when the lease was lost.
const RECORD_SCRIPT: &str = "if redis.call('GET', KEYS[1]) == ARGV[1] then \
     redis.call('SET', KEYS[1], 'used', 'PXAT', ARGV[2]) return 1 else return 0 end";
/// Deletes our lease after a failed action: `KEYS[1]` the claim, `ARGV[1]` our lease token.
const RELEASE_SCRIPT: &str = "if redis.call('GET', KEYS[1]) == ARGV[1] then \
     return redis.call('DEL', KEYS[1]) else return 0 end";

/// Records an asked flow: `KEYS[1]` the pending set, `KEYS[2]` the answered set, `ARGV[1]`
/// the expiry (Unix milliseconds), `ARGV[2]` the member, `ARGV[3]` `1` when asked again. A
/// first record leaves an answer that came first alone; asking again clears it.
const ASK_SCRIPT: &str = "if ARGV[3] == '1' then redis.call('ZREM', KEYS[2], ARGV[2]) \
     elseif redis.call('ZSCORE', KEYS[2], ARGV[2]) then return 0 end \
     return redis.call('ZADD', KEYS[1], ARGV[1], ARGV[2])";
/// Records an answer: moves the member (or adds it) from the pending set `KEYS[1]` to the
/// answered set `KEYS[2]`, scored by the expiry `ARGV[1]`.
const ANSWER_SCRIPT: &str = "redis.call('ZREM', KEYS[1], ARGV[2]) \
     return redis.call('ZADD', KEYS[2], ARGV[1], ARGV[2])";
/// Takes up to `ARGV[2]` members of the pending set `KEYS[1]` scored below `ARGV[1]` (Unix
/// milliseconds), drops expired answer marks from `KEYS[2]`, and returns how many pending
/// members it removed. A script runs atomically, so concurrent sweepers never take the same
/// member.
const TAKE_SCRIPT: &str = "local m = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', '(' .. ARGV[1], \
     'LIMIT', 0, tonumber(ARGV[2])) \
     if #m > 0 then redis.call('ZREM', KEYS[1], unpack(m)) end \
     redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', '(' .. ARGV[1]) return #m";
/// Most members one take script removes (Lua's `unpack` has a bounded stack).
const TAKE_MAX: usize = 1000;

/// A replay store in Redis (no TLS: run it on a trusted network or a local socket).
///
/// # Keys
///
/// A claim is the key `PREFIX:HEX(nonce)` (prefix `mcp:replay` unless
/// [`with_prefix`](Self::with_prefix) says otherwise), set with `NX` (only if absent, so exactly
/// one caller wins across every instance) and `PXAT` (Redis deletes it when the token expires,
/// so there is nothing to prune).
///
/// # Outcomes and crashes
///
/// - [`ReplayStore::claim`]: one `SET key TOKEN NX PXAT expiry` (a random token per claim,
///   see below). Durable as Redis's persistence
///   is: with neither AOF nor RDB snapshots, a Redis restart forgets claims and an unexpired
///   confirmation could be used again; run Redis with `appendonly yes` (or accept that).
/// - [`ClaimWith::During`] (*at least once, converging to once*, like the SQL stores):
///   the key is first set to a random lease token with a short expiry (60 s),
///   the action runs, then a script turns the lease into the used claim (until the token's
///   expiry) only if the lease is still ours. An action failure deletes the lease (the nonce
///   stays claimable). A crash while the action runs leaves the lease to expire, after which a
///   retry re-claims and re-runs the (convergent) action. While the lease is held, concurrent
///   claims see `AlreadyUsed`. If recording the claim fails after the action succeeded, the
///   result is [`ReplayError::ActionUnrecorded`].
/// - [`ClaimWith::InTx`]: Redis holds no application tables, so
///   [`ReplayError::TxMismatch`] without claiming.
/// - [`OutcomeStore::record_outcome`]: the key `PREFIX:HEX(nonce):outcome`, expiring with the
///   claim (`PXAT`).
///
/// Every command has a deadline (5 s by default, or
/// [`with_command_timeout`](Self::with_command_timeout)); an unreachable or restarted Redis gives
/// [`ReplayError::Backend`] naming `redis` (nothing acted on), and the next operation
/// reconnects.
///
/// A claim whose `SET` was sent but not answered within the deadline may still land when Redis
/// resumes. Every claim therefore writes a token of its own, and after such a failure the store
/// deletes the claim *if it holds that token*, in the background, as soon as Redis answers
/// again (within the claim's lifetime). The caller was told "nothing was changed" and did
/// nothing, so the confirmation must stay usable: a retry claims it again instead of finding it
/// taken, with no outcome, forever.
pub struct RedisReplayStore {
    /// The connection, with every command's deadline.
    link: Link,
    prefix: String,
    /// The URL without its password, for `Debug`.
    shown: String,
}

impl std::fmt::Debug for RedisReplayStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisReplayStore")
            .field("url", &self.shown)
            .field("prefix", &self.prefix)
            .finish_non_exhaustive()
    }
}

fn failed(context: &'static str) -> impl FnOnce(Failure) -> ReplayError {
    move |e| ReplayError::backend(NAME, context, e)
}

/// A fresh random token naming one claim attempt (hex of 16 random bytes).
fn claim_token() -> Result<String, ReplayError> {
    let mut token = [0u8; 16];
    getrandom::fill(&mut token)
        .map_err(|e| ReplayError::Worker(format!("no randomness for a claim token: {e}")))?;
    Ok(token.iter().map(|b| format!("{b:02x}")).collect())
}

/// Deletes the claim `key` if it still holds `token`: a claim whose `SET` got no answer in
/// time (the caller was told it failed, and did nothing) but may land later. Tries with a
/// growing pause until Redis answers, then keeps looking for one more `deadline` (a `SET`
/// still queued on the abandoned connection may be applied after the first answer), and gives
/// up at `horizon`, after which the claim has expired anyway.
async fn release_if_landed(
    client: redis::Client,
    key: String,
    token: String,
    deadline: Duration,
    horizon: tokio::time::Instant,
) {
    let mut conn: Option<MultiplexedConnection> = None;
    let mut pause = Duration::from_millis(100);
    let mut answered_since: Option<tokio::time::Instant> = None;
    loop {
        let now = tokio::time::Instant::now();
        if now >= horizon {
            tracing::warn!(
                "a Redis claim that got no answer in time could not be checked before it expired"
            );
            return;
        }
        tokio::time::sleep(pause.min(horizon - now)).await;
        pause = (pause * 2).min(Duration::from_secs(2));
        if conn.is_none() {
            let opened = tokio::time::timeout(
                deadline,
                client.get_multiplexed_async_connection_with_config(&connection_config()),
            )
            .await;
            conn = match opened {
                Ok(Ok(c)) => Some(c),
                _ => continue,
            };
        }
        let Some(c) = conn.as_mut() else { continue };
        let mut cmd = redis::cmd("EVAL");
        cmd.arg(RELEASE_SCRIPT).arg(1).arg(&key).arg(&token);
        match tokio::time::timeout(deadline, cmd.query_async::<i64>(c)).await {
            Ok(Ok(1)) => {
                tracing::info!(
                    "released a claim that landed after its deadline; the confirmation can be retried"
                );
                return;
            }
            Ok(Ok(_)) => {
                let since = *answered_since.get_or_insert_with(tokio::time::Instant::now);
                if since.elapsed() >= deadline {
                    return;
                }
            }
            _ => conn = None,
        }
    }
}

/// Unix milliseconds of `t`, at least one second from now (Redis must hold the key at least
/// until the token expires; a past expiry would drop the key at once).
fn expiry_ms(t: SystemTime) -> u64 {
    let floor = SystemTime::now() + Duration::from_secs(1);
    let t = t.max(floor);
    t.duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

impl RedisReplayStore {
    /// Connects to `url` (`redis://[USER:PASSWORD@]HOST:PORT/DB`) and checks it answers `PING`.
    pub async fn connect(url: &str) -> Result<Self, ReplayError> {
        let shown = redact(url);
        let link = Link::open(url).ok_or_else(|| ReplayError::InvalidSpec {
            spec: shown.clone(),
            hint: URL_HINT,
        })?;
        let store = Self {
            link,
            prefix: "mcp:replay".to_owned(),
            shown,
        };
        let mut conn = store.connection().await?;
        store
            .run::<String>(&mut conn, "checking the connection", redis::cmd("PING"))
            .await?;
        Ok(store)
    }

    /// Uses `prefix` (1 to 64 characters, no whitespace) for this store's keys, so several
    /// servers can share one Redis database without sharing claims.
    pub fn with_prefix(mut self, prefix: &str) -> Result<Self, ReplayError> {
        if !valid_prefix(prefix) {
            return Err(ReplayError::InvalidSpec {
                spec: shown_prefix(prefix),
                hint: PREFIX_HINT,
            });
        }
        prefix.clone_into(&mut self.prefix);
        Ok(self)
    }

    /// Gives every command (and connecting) `timeout` instead of the default 5 s
    /// (at least 10 ms). Keep it above Redis's worst pauses (a fork for a snapshot, say):
    /// a command past it fails even though it may still land.
    #[must_use]
    pub fn with_command_timeout(mut self, timeout: Duration) -> Self {
        self.link = self.link.with_timeout(timeout);
        self
    }

    /// Looks for the claim `key` holding `token` in the background and deletes it (see
    /// [`release_if_landed`]), for a claim `SET` that failed after it was sent.
    fn release_later(&self, key: String, token: String, lifetime: Duration) {
        let horizon = tokio::time::Instant::now() + lifetime.min(RELEASE_HORIZON);
        tokio::spawn(release_if_landed(
            self.link.client().clone(),
            key,
            token,
            self.link.timeout(),
            horizon,
        ));
    }

    fn key(&self, nonce: &Nonce) -> String {
        let mut key = String::with_capacity(self.prefix.len() + 33);
        key.push_str(&self.prefix);
        key.push(':');
        for b in nonce.as_bytes() {
            key.push_str(&format!("{b:02x}"));
        }
        key
    }

    /// The sorted set of flows asked and not yet answered ([`FlowLedger`]).
    fn flows_key(&self) -> String {
        format!("{}:flows", self.prefix)
    }

    /// The sorted set of answer marks, each kept until its state's expiry ([`FlowLedger`]).
    fn answered_key(&self) -> String {
        format!("{}:flows:answered", self.prefix)
    }

    fn outcome_key(&self, nonce: &Nonce) -> String {
        let mut key = self.key(nonce);
        key.push_str(":outcome");
        key
    }

    /// The live connection, connecting if there is none.
    async fn connection(&self) -> Result<MultiplexedConnection, ReplayError> {
        self.link.get().await.map_err(failed("connecting"))
    }

    /// Runs `cmd` with the deadline (see [`Link::run`]).
    async fn run<T: redis::FromRedisValue>(
        &self,
        conn: &mut MultiplexedConnection,
        context: &'static str,
        cmd: redis::Cmd,
    ) -> Result<T, ReplayError> {
        self.link.run(conn, cmd).await.map_err(failed(context))
    }

    async fn claim_inner(
        &self,
        nonce: Nonce,
        expires_at: SystemTime,
    ) -> Result<ClaimOutcome, ReplayError> {
        let key = self.key(&nonce);
        let token = claim_token()?;
        // A failure to connect sent nothing; only a sent `SET` may land unanswered.
        let mut conn = self.connection().await?;
        let mut cmd = redis::cmd("SET");
        cmd.arg(&key)
            .arg(&token)
            .arg("NX")
            .arg("PXAT")
            .arg(expiry_ms(expires_at));
        match self.run::<Option<String>>(&mut conn, "claiming", cmd).await {
            Ok(Some(_)) => Ok(ClaimOutcome::Claimed),
            Ok(None) => Ok(ClaimOutcome::AlreadyUsed),
            Err(e) => {
                let lifetime = expires_at
                    .duration_since(SystemTime::now())
                    .unwrap_or(Duration::ZERO)
                    .max(Duration::from_secs(1));
                self.release_later(key, token, lifetime);
                Err(e)
            }
        }
    }

    async fn claim_with_inner(
        &self,
        nonce: Nonce,
        expires_at: SystemTime,
        action: DuringWork,
    ) -> Result<ClaimOutcome, ReplayError> {
        let key = self.key(&nonce);
        let token = claim_token()?;
        let mut conn = self.connection().await?;
        let lease_ms = u64::try_from(ACTION_LEASE.as_millis()).unwrap_or(u64::MAX);
        let mut cmd = redis::cmd("SET");
        cmd.arg(&key).arg(&token).arg("NX").arg("PX").arg(lease_ms);
        let set: Option<String> = match self.run(&mut conn, "claiming", cmd).await {
            Ok(set) => set,
            Err(e) => {
                // The action has not run; a lease that lands unanswered would block retries
                // until it expires.
                self.release_later(key, token, ACTION_LEASE);
                return Err(e);
            }
        };
        if set.is_none() {
            return Ok(ClaimOutcome::AlreadyUsed);
        }
        let outcome = tokio::task::spawn_blocking(action).await;
        match outcome {
            Ok(Ok(())) => {
                let mut cmd = redis::cmd("EVAL");
                cmd.arg(RECORD_SCRIPT)
                    .arg(1)
                    .arg(&key)
                    .arg(&token)
                    .arg(expiry_ms(expires_at));
                match self.run::<i64>(&mut conn, "recording the claim", cmd).await {
                    Ok(1) => Ok(ClaimOutcome::Claimed),
                    Ok(_) => Err(ReplayError::ActionUnrecorded {
                        cause: Box::new(ReplayError::backend(
                            NAME,
                            "recording the claim",
                            format!("the work outlasted its {}s lease", ACTION_LEASE.as_secs()),
                        )),
                    }),
                    Err(e) => Err(ReplayError::ActionUnrecorded { cause: Box::new(e) }),
                }
            }
            Ok(Err(e)) => {
                self.release(&mut conn, &key, &token).await?;
                Err(ReplayError::ActionFailed(e))
            }
            Err(join) => {
                self.release(&mut conn, &key, &token).await?;
                if join.is_panic() {
                    Err(ReplayError::ActionPanicked)
                } else {
                    Err(ReplayError::Worker(join.to_string()))
                }
            }
        }
    }

    /// Deletes our lease after a failed action so the nonce is claimable again. If that fails,
    /// the lease still expires within [`ACTION_LEASE`].
    async fn release(
        &self,
        conn: &mut MultiplexedConnection,
        key: &str,
        token: &str,
    ) -> Result<(), ReplayError> {
        let mut cmd = redis::cmd("EVAL");
        cmd.arg(RELEASE_SCRIPT).arg(1).arg(key).arg(token);
        self.run::<i64>(conn, "releasing the claim of a failed action", cmd)
            .await
            .map(|_| ())
    }
}

impl ReplayStore for RedisReplayStore {
    fn name(&self) -> &'static str {
        NAME
    }

    /// A [`RedisRateLimitStore`](crate::backend::redis::RedisRateLimitStore) on the same
    /// Redis server and database (a connection of its own, opened on first use): keys under
    /// `mcp:ratelimit` beside the default claims, `PREFIX:ratelimit` beside claims under a
    /// prefix `PREFIX` of your choice.
    fn rate_limit_store(&self) -> Option<Arc<dyn crate::rate_limit::RateLimitStore>> {
        use crate::backend::redis::RedisRateLimitStore;
        let store =
            RedisRateLimitStore::with_client(self.link.client().clone(), self.shown.clone());
        let store = if self.prefix == "mcp:replay" {
            store
        } else {
            // A prefix already checked for this store, plus a suffix of plain letters.
            store
                .with_prefix(&format!("{}:ratelimit", self.prefix))
                .unwrap_or_else(|_| {
                    RedisRateLimitStore::with_client(self.link.client().clone(), self.shown.clone())
                })
        };
        Some(Arc::new(store))
    }

    /// `InTx` work is [`ReplayError::TxMismatch`]: Redis holds no application tables.
    fn claim<'a>(&'a self, claim: Claim<'a>) -> BoxFuture<'a, Result<ClaimOutcome, ReplayError>> {
        let (nonce, expires_at) = (claim.nonce, claim.expires_at);
        match claim.work {
            ClaimWith::Nothing => Box::pin(self.claim_inner(nonce, expires_at)),
            ClaimWith::During(work) => Box::pin(self.claim_with_inner(nonce, expires_at, work)),
            ClaimWith::InTx(work) => {
                let err = work.mismatch(NAME);
                Box::pin(async move { Err(err) })
            }
        }
    }

    fn outcomes(&self) -> Option<&dyn OutcomeStore> {
        Some(self)
    }

    /// The sorted sets `PREFIX:flows` and `PREFIX:flows:answered` (members the claims' key
    /// names, scored by expiry).
    fn flow_ledger(&self) -> Option<&dyn FlowLedger> {
        Some(self)
    }

    fn ping(&self) -> BoxFuture<'_, Result<(), ReplayError>> {
        Box::pin(async move {
            let mut conn = self.connection().await?;
            let _pong: String = self
                .run(&mut conn, "pinging the server", redis::cmd("PING"))
                .await?;
            Ok(())
        })
    }

    /// Redis expires claims itself (`PXAT`); nothing to delete.
    fn prune_expired(&self) -> BoxFuture<'_, Result<u64, ReplayError>> {
        Box::pin(async { Ok(0) })
    }
}

impl OutcomeStore for RedisReplayStore {
    /// The outcome is its own key next to the claim's (`PREFIX:HEX(nonce):outcome`), expiring
    /// with it.
    fn record_outcome<'a>(
        &'a self,
        nonce: Nonce,
        expires_at: SystemTime,
        outcome: &'a [u8],
    ) -> BoxFuture<'a, Result<(), ReplayError>> {
        Box::pin(async move {
            let mut conn = self.connection().await?;
            let mut cmd = redis::cmd("SET");
            cmd.arg(self.outcome_key(&nonce))
                .arg(outcome)
                .arg("PXAT")
                .arg(expiry_ms(expires_at));
            self.run::<()>(&mut conn, "recording the outcome", cmd)
                .await
        })
    }

    fn claim_state(&self, nonce: Nonce) -> BoxFuture<'_, Result<ClaimState, ReplayError>> {
        Box::pin(async move {
            let mut conn = self.connection().await?;
            let mut cmd = redis::cmd("MGET");
            cmd.arg(self.key(&nonce)).arg(self.outcome_key(&nonce));
            let (claim, outcome): (Option<Vec<u8>>, Option<Vec<u8>>) =
                self.run(&mut conn, "reading the claim", cmd).await?;
            Ok(match (claim, outcome) {
                (_, Some(outcome)) => ClaimState::Recorded(outcome),
                (Some(_), None) => ClaimState::Claimed,
                (None, None) => ClaimState::Unclaimed,
            })
        })
    }
}

/// Sorted sets scored by expiry; a sweep is one script (`ZRANGEBYSCORE` then `ZREM`), run
/// atomically by Redis, so each member is taken by exactly one sweeper.
impl FlowLedger for RedisReplayStore {
    fn flow_asked(
        &self,
        nonce: Nonce,
        expires_at: SystemTime,
        again: bool,
    ) -> BoxFuture<'_, Result<(), ReplayError>> {
        Box::pin(async move {
            let mut conn = self.connection().await?;
            let mut cmd = redis::cmd("EVAL");
            cmd.arg(ASK_SCRIPT)
                .arg(2)
                .arg(self.flows_key())
                .arg(self.answered_key())
                .arg(unix_ms(expires_at))
                .arg(self.key(&nonce))
                .arg(if again { "1" } else { "0" });
            self.run::<i64>(&mut conn, "recording an asked flow", cmd)
                .await
                .map(|_| ())
        })
    }

    fn flow_answered(
        &self,
        nonce: Nonce,
        expires_at: SystemTime,
    ) -> BoxFuture<'_, Result<(), ReplayError>> {
        Box::pin(async move {
            let mut conn = self.connection().await?;
            let mut cmd = redis::cmd("EVAL");
            cmd.arg(ANSWER_SCRIPT)
                .arg(2)
                .arg(self.flows_key())
                .arg(self.answered_key())
                .arg(unix_ms(expires_at))
                .arg(self.key(&nonce));
            self.run::<i64>(&mut conn, "recording an answered flow", cmd)
                .await
                .map(|_| ())
        })
    }

    fn take_abandoned(
        &self,
        now: SystemTime,
        limit: usize,
    ) -> BoxFuture<'_, Result<Taken, ReplayError>> {
        Box::pin(async move {
            let mut conn = self.connection().await?;
            let mut cmd = redis::cmd("EVAL");
            cmd.arg(TAKE_SCRIPT)
                .arg(2)
                .arg(self.flows_key())
                .arg(self.answered_key())
                .arg(unix_ms(now))
                .arg(limit.clamp(1, TAKE_MAX));
            let taken: u64 = self.run(&mut conn, "taking abandoned flows", cmd).await?;
            // Answered flows are never in the pending set: every member taken was abandoned.
            Ok(Taken {
                removed: taken,
                abandoned: taken,
            })
        })
    }
}

/// Unix milliseconds of `t` (0 before the epoch).
fn unix_ms(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}
