//! [`RedisTaskStore`](crate::backend::redis::RedisTaskStore): tasks in Redis, shared by a fleet
//! that already runs one.

use futures::future::BoxFuture;

use super::conn::{Failure, Link, PREFIX_HINT, URL_HINT, valid_prefix};
use crate::tasks::{TaskLimits, TaskRecord, TaskStore, TaskStoreError, now_ms};

/// The conditional update, atomic in Redis: write only over a live, non-terminal task of the
/// same owner whose revision is one less than the new one. A write that ends the task also
/// files it among its owner's finished tasks (KEYS[2], scored by expiry), the ones a create
/// may evict.
const UPDATE_SCRIPT: &str = r"
local cur = redis.call('GET', KEYS[1])
if not cur then return 0 end
local rec = cjson.decode(cur)
if rec.owner ~= ARGV[2] then return 0 end
if rec.status == 'completed' or rec.status == 'failed' or rec.status == 'cancelled' then
  return 0
end
if (tonumber(rec.revision) or 0) + 1 ~= tonumber(ARGV[3]) then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'PXAT', ARGV[4])
if ARGV[5] == '1' then
  redis.call('ZADD', KEYS[2], ARGV[4], ARGV[6])
  local top = redis.call('ZRANGE', KEYS[2], -1, -1, 'WITHSCORES')
  if tonumber(top[2]) <= tonumber(ARGV[4]) then redis.call('PEXPIREAT', KEYS[2], ARGV[4]) end
end
return 1
";

/// The create, atomic in Redis. KEYS: the task, its owner's tasks, its owner's finished tasks,
/// every task (sorted sets of task ids scored by expiry). ARGV: the record, its expiry, now, the
/// per-principal limit, the total limit, the key prefix with its `:`, the task id, whether it is
/// created finished (`1`). Returns 1 (stored), 0 (id taken), -1 (principal at its share), -2 (store
/// full).
const CREATE_SCRIPT: &str = r"
local now = tonumber(ARGV[3])
for i = 2, 4 do redis.call('ZREMRANGEBYSCORE', KEYS[i], '-inf', now) end
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
local own = redis.call('ZCARD', KEYS[2])
local need = math.max(own + 1 - tonumber(ARGV[4]), redis.call('ZCARD', KEYS[4]) + 1 - tonumber(ARGV[5]), 0)
if need > 0 then
  local done = redis.call('ZRANGE', KEYS[3], 0, need - 1)
  if #done < need then
    if own >= tonumber(ARGV[4]) then return -1 end
    return -2
  end
  for _, id in ipairs(done) do
    redis.call('DEL', ARGV[6] .. id)
    redis.call('ZREM', KEYS[2], id)
    redis.call('ZREM', KEYS[3], id)
    redis.call('ZREM', KEYS[4], id)
  end
end
redis.call('SET', KEYS[1], ARGV[1], 'PXAT', ARGV[2])
local sets = {2, 4}
if ARGV[8] == '1' then sets = {2, 3, 4} end
for _, i in ipairs(sets) do
  redis.call('ZADD', KEYS[i], ARGV[2], ARGV[7])
  -- A set lives as long as its latest task.
  local top = redis.call('ZRANGE', KEYS[i], -1, -1, 'WITHSCORES')
  if tonumber(top[2]) <= tonumber(ARGV[2]) then redis.call('PEXPIREAT', KEYS[i], ARGV[2]) end
end
return 1
";

/// Tasks in Redis, one key per task (`PREFIX:TASK_ID`, the record as JSON) that Redis itself
/// expires at the task's expiry (`PXAT`), so nothing outlives a task's TTL. Durable only as
/// far as Redis persists (run it with `appendonly yes`).
///
/// Bounds: [`TaskLimits`] (default [`TaskLimits::default`]: 10,000 tasks, 32 per principal;
/// [`with_limits`](Self::with_limits) changes them) hold for the whole fleet, checked and
/// applied by one Lua script per create. It keeps sorted sets of task ids by expiry beside
/// the tasks (`PREFIX:index`, `PREFIX:owner:OWNER`, `PREFIX:done:OWNER`), drops their expired
/// entries, and at a limit deletes the creating principal's own finished tasks closest to
/// expiry, or refuses ([`TaskStoreError::PrincipalFull`], [`TaskStoreError::Full`]) with
/// nothing written. The scripts touch keys they compute, so on Redis Cluster give a prefix
/// with a hash tag (`{mcp}:tasks`) to keep every key in one slot; and keep the instance at
/// `maxmemory-policy noeviction` (an evicted task would still count until its expiry).
/// Tasks stored by an older build are not in the sets: they do not count, and expire as
/// before.
#[derive(Debug)]
pub struct RedisTaskStore {
    link: Link,
    prefix: String,
    limits: TaskLimits,
}

fn failed(context: &'static str) -> impl FnOnce(Failure) -> TaskStoreError {
    move |e| TaskStoreError::Backend(format!("Redis, {context}: {e}"))
}

fn encode(record: &TaskRecord) -> Result<String, TaskStoreError> {
    serde_json::to_string(record)
        .map_err(|e| TaskStoreError::Backend(format!("cannot encode a task: {e}")))
}

impl RedisTaskStore {
    /// Connects to `url` (`redis://[USER:PASSWORD@]HOST:PORT/DB`), using key prefix
    /// `mcp:tasks`, and checks it answers `PING`.
    pub async fn connect(url: &str) -> Result<Self, TaskStoreError> {
        Self::connect_with_prefix(url, "mcp:tasks").await
    }

    /// Like [`Self::connect`] with another key prefix (1 to 64 characters, no whitespace).
    pub async fn connect_with_prefix(url: &str, prefix: &str) -> Result<Self, TaskStoreError> {
        if !valid_prefix(prefix) {
            return Err(TaskStoreError::Backend(format!("Redis: {PREFIX_HINT}")));
        }
        let link = Link::open(url)
            .ok_or_else(|| TaskStoreError::Backend(format!("invalid Redis URL: {URL_HINT}")))?;
        let store = Self {
            link,
            prefix: prefix.to_owned(),
            limits: TaskLimits::default(),
        };
        let _: String = store
            .run("checking the connection", redis::cmd("PING"))
            .await?;
        Ok(store)
    }

    /// The same store with these limits (clamped as [`TaskLimits`] says). Give every
    /// instance sharing the prefix the same limits: each enforces its own on the tasks it
    /// creates.
    #[must_use]
    pub fn with_limits(mut self, limits: TaskLimits) -> Self {
        self.limits = limits.clamped();
        self
    }

    /// The limits this store enforces.
    pub fn limits(&self) -> TaskLimits {
        self.limits
    }

    fn key(&self, task_id: &str) -> String {
        format!("{}:{task_id}", self.prefix)
    }

    /// The sorted set of `owner`'s tasks (`which` = `owner`) or finished tasks (`done`).
    fn owner_key(&self, which: &str, owner: &str) -> String {
        format!("{}:{which}:{owner}", self.prefix)
    }

    /// Runs `cmd` with the deadline, connecting if needed (see [`Link::query`]).
    async fn run<T: redis::FromRedisValue>(
        &self,
        context: &'static str,
        cmd: redis::Cmd,
    ) -> Result<T, TaskStoreError> {
        self.link.query(cmd).await.map_err(failed(context))
    }
}

impl TaskStore for RedisTaskStore {
    fn create(&self, record: TaskRecord) -> BoxFuture<'_, Result<(), TaskStoreError>> {
        Box::pin(async move {
            let json = encode(&record)?;
            let limits = self.limits;
            let mut cmd = redis::cmd("EVAL");
            cmd.arg(CREATE_SCRIPT)
                .arg(4)
                .arg(self.key(&record.task_id))
                .arg(self.owner_key("owner", &record.owner))
                .arg(self.owner_key("done", &record.owner))
                .arg(format!("{}:index", self.prefix))
                .arg(json)
                .arg(record.expires_ms.max(1))
                .arg(now_ms())
                .arg(limits.max_tasks_per_principal)
                .arg(limits.max_tasks)
                .arg(format!("{}:", self.prefix))
                .arg(&record.task_id)
                .arg(if record.status.is_terminal() {
                    "1"
                } else {
                    "0"
                });
            let outcome: i64 = self.run("storing a task", cmd).await?;
            match outcome {
                1 => Ok(()),
                0 => Err(TaskStoreError::Exists(record.task_id)),
                -1 => Err(TaskStoreError::PrincipalFull(
                    limits.max_tasks_per_principal,
                )),
                _ => Err(TaskStoreError::Full(limits.max_tasks)),
            }
        })
    }

    fn get<'a>(
        &'a self,
        task_id: &'a str,
        owner: &'a str,
    ) -> BoxFuture<'a, Result<Option<TaskRecord>, TaskStoreError>> {
        Box::pin(async move {
            let mut cmd = redis::cmd("GET");
            cmd.arg(self.key(task_id));
            let json: Option<String> = self.run("reading a task", cmd).await?;
            let Some(json) = json else { return Ok(None) };
            let record: TaskRecord = serde_json::from_str(&json).map_err(|e| {
                TaskStoreError::Backend(format!("task `{task_id}` has a corrupt value: {e}"))
            })?;
            Ok((record.owner == owner && !record.expired_at(now_ms())).then_some(record))
        })
    }

    fn update(&self, record: TaskRecord) -> BoxFuture<'_, Result<bool, TaskStoreError>> {
        Box::pin(async move {
            let json = encode(&record)?;
            let mut cmd = redis::cmd("EVAL");
            cmd.arg(UPDATE_SCRIPT)
                .arg(2)
                .arg(self.key(&record.task_id))
                .arg(self.owner_key("done", &record.owner))
                .arg(json)
                .arg(&record.owner)
                .arg(record.revision)
                .arg(record.expires_ms.max(1))
                .arg(if record.status.is_terminal() {
                    "1"
                } else {
                    "0"
                })
                .arg(&record.task_id);
            let wrote: i64 = self.run("updating a task", cmd).await?;
            Ok(wrote == 1)
        })
    }
}
