//! [`RedisTaskStore`]: tasks in Redis, shared by a fleet that already runs one.

use std::time::Duration;

use futures::future::BoxFuture;
use redis::aio::MultiplexedConnection;

use super::store::{TaskRecord, TaskStore, TaskStoreError, now_ms};

/// Deadline of each Redis command (and of connecting).
const COMMAND_TIMEOUT: Duration = Duration::from_secs(5);

/// The conditional update, atomic in Redis: write only over a live, non-terminal task of the
/// same owner whose revision is one less than the new one.
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
return 1
";

/// Tasks in Redis, one key per task (`PREFIX:TASK_ID`, the record as JSON) that Redis itself
/// expires at the task's expiry (`PXAT`), so nothing outlives a task's TTL. Durable only as
/// far as Redis persists (run it with `appendonly yes`).
#[derive(Debug)]
pub struct RedisTaskStore {
    client: redis::Client,
    conn: tokio::sync::Mutex<Option<MultiplexedConnection>>,
    prefix: String,
}

fn failed(context: &'static str, e: &redis::RedisError) -> TaskStoreError {
    TaskStoreError::Backend(format!("Redis, {context}: {e}"))
}

fn timed_out(context: &'static str) -> TaskStoreError {
    TaskStoreError::Backend(format!(
        "Redis, {context}: no answer within {COMMAND_TIMEOUT:?}"
    ))
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
        if prefix.is_empty()
            || prefix.len() > 64
            || prefix.chars().any(|c| c.is_whitespace() || c.is_control())
        {
            return Err(TaskStoreError::Backend(
                "a Redis key prefix is 1 to 64 characters without whitespace".to_owned(),
            ));
        }
        let client = redis::Client::open(url).map_err(|_| {
            TaskStoreError::Backend(
                "invalid Redis URL: write `redis://HOST:PORT/DB`, e.g. `redis://127.0.0.1:6379/0`"
                    .to_owned(),
            )
        })?;
        let store = Self {
            client,
            conn: tokio::sync::Mutex::new(None),
            prefix: prefix.to_owned(),
        };
        let _: String = store
            .run("checking the connection", redis::cmd("PING"))
            .await?;
        Ok(store)
    }

    fn key(&self, task_id: &str) -> String {
        format!("{}:{task_id}", self.prefix)
    }

    async fn connection(&self) -> Result<MultiplexedConnection, TaskStoreError> {
        let mut slot = self.conn.lock().await;
        if let Some(conn) = slot.as_ref() {
            return Ok(conn.clone());
        }
        let conn = tokio::time::timeout(
            COMMAND_TIMEOUT,
            self.client.get_multiplexed_async_connection(),
        )
        .await
        .map_err(|_| timed_out("connecting"))?
        .map_err(|e| failed("connecting", &e))?;
        *slot = Some(conn.clone());
        Ok(conn)
    }

    /// Runs `cmd` with a deadline; a connection-level failure drops the connection so the
    /// next command reconnects.
    async fn run<T: redis::FromRedisValue>(
        &self,
        context: &'static str,
        cmd: redis::Cmd,
    ) -> Result<T, TaskStoreError> {
        let mut conn = self.connection().await?;
        match tokio::time::timeout(COMMAND_TIMEOUT, cmd.query_async::<T>(&mut conn)).await {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(e)) => {
                if e.is_io_error() || e.is_connection_dropped() || e.is_connection_refusal() {
                    *self.conn.lock().await = None;
                }
                Err(failed(context, &e))
            }
            Err(_) => {
                *self.conn.lock().await = None;
                Err(timed_out(context))
            }
        }
    }
}

impl TaskStore for RedisTaskStore {
    fn create(&self, record: TaskRecord) -> BoxFuture<'_, Result<(), TaskStoreError>> {
        Box::pin(async move {
            let json = encode(&record)?;
            let mut cmd = redis::cmd("SET");
            cmd.arg(self.key(&record.task_id))
                .arg(json)
                .arg("NX")
                .arg("PXAT")
                .arg(record.expires_ms.max(1));
            let set: Option<String> = self.run("storing a task", cmd).await?;
            match set {
                Some(_) => Ok(()),
                None => Err(TaskStoreError::Exists(record.task_id)),
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
                .arg(1)
                .arg(self.key(&record.task_id))
                .arg(json)
                .arg(&record.owner)
                .arg(record.revision)
                .arg(record.expires_ms.max(1));
            let wrote: i64 = self.run("updating a task", cmd).await?;
            Ok(wrote == 1)
        })
    }
}
