//! MCP's 2025-11-25 tasks in Redis: [`RedisTaskRecords`] implements the MCP crate's
//! [`TaskRecords`] seam, so a task created on one replica is read, listed, awaited and
//! cancelled through any replica on the same Redis. It owns the records' keys and the Lua
//! scripts that keep each step one atomic round trip.

use std::fmt;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use protocols_mcp::TaskLimits;
use protocols_mcp::tasks::shared::{
    Admission, Cancellation, Found, RecordPage, TaskRecord, TaskRecords,
};
use protocols_mcp::types::TaskStatus;
use protocols_runtime::session::{StoreError, StoreFuture};
use redis::Script;
use redis::aio::ConnectionManager;

use crate::config::RedisConfig;
use crate::connection::{ConnectError, ask, connect};

/// The fields every answer about a record reads, in this order.
const FIELDS: [&str; 6] = ["owner", "status", "msg", "created", "updated", "ttl"];

/// Defined first in every script: the terminal statuses, and how an index outlives its
/// members (its expiry only ever moves later, to the longest TTL of a task added to it).
const COMMON: &str = r"
local function terminal(status)
  return status == 'completed' or status == 'failed' or status == 'cancelled'
end
local function outlive(key, ttl)
  if redis.call('PTTL', key) < tonumber(ttl) then redis.call('PEXPIRE', key, ttl) end
end
";

/// KEYS: record, the owner's index, the live index. ARGV: id, now (ms), TTL (ms), max tasks,
/// max per owner, owner, 1 when there is an owner, the record key prefix. Answers `{0, 0}` when
/// stored, `{1, ms}` when the store is full and `{2, ms}` when the owner is, `ms` until the
/// first task counted expires. The live index scores ids by expiry (the global count); the
/// owner's scores them by list order, the creation time in ms made unique within the owner.
const CREATE: &str = r"
local now, ttl = tonumber(ARGV[2]), tonumber(ARGV[3])
redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', now)
if redis.call('ZCARD', KEYS[3]) >= tonumber(ARGV[4]) then
  local first = redis.call('ZRANGE', KEYS[3], 0, 0, 'WITHSCORES')
  return {1, math.max(tonumber(first[2]) - now, 0)}
end
local owned, soonest = 0, ttl
for _, member in ipairs(redis.call('ZRANGE', KEYS[2], 0, -1)) do
  local left = redis.call('PTTL', ARGV[8] .. member)
  if left < 0 then
    redis.call('ZREM', KEYS[2], member)
  else
    owned = owned + 1
    soonest = math.min(soonest, left)
  end
end
if owned >= tonumber(ARGV[5]) then return {2, soonest} end
local sequence = now
local last = redis.call('ZRANGE', KEYS[2], -1, -1, 'WITHSCORES')
if last[2] and tonumber(last[2]) >= sequence then sequence = tonumber(last[2]) + 1 end
redis.call('HSET', KEYS[1], 'status', 'working', 'created', now, 'updated', now, 'ttl', ttl)
if ARGV[7] == '1' then redis.call('HSET', KEYS[1], 'owner', ARGV[6]) end
redis.call('PEXPIRE', KEYS[1], ttl)
redis.call('ZADD', KEYS[2], sequence, ARGV[1])
outlive(KEYS[2], ttl)
redis.call('ZADD', KEYS[3], now + ttl, ARGV[1])
outlive(KEYS[3], ttl)
return {0, 0}
";

/// KEYS: the owner's index. ARGV: the sequence to continue after ('' from the first), the page
/// size, the record key prefix. Answers `{cursor, id, fields…, id, fields…}`: the cursor (the
/// page's last sequence) only when more follow. Ids whose record expired leave the index here.
const LIST: &str = r"
local min = '-inf'
if ARGV[1] ~= '' then min = '(' .. ARGV[1] end
local limit = tonumber(ARGV[2])
local page, count, last, more = {}, 0, false, false
while not more do
  local batch = redis.call('ZRANGEBYSCORE', KEYS[1], min, '+inf', 'WITHSCORES', 'LIMIT', 0, 64)
  if #batch == 0 then break end
  for i = 1, #batch, 2 do
    local id, sequence = batch[i], batch[i + 1]
    local fields = redis.call('HMGET', ARGV[3] .. id, 'owner', 'status', 'msg', 'created', 'updated', 'ttl')
    if not fields[2] then
      redis.call('ZREM', KEYS[1], id)
    elseif count == limit then
      more = true
      break
    else
      count = count + 1
      last = sequence
      table.insert(page, id)
      for j = 1, 6 do table.insert(page, fields[j]) end
    end
    min = '(' .. sequence
  end
end
local cursor = false
if more then cursor = last end
local answer = {cursor}
for _, value in ipairs(page) do table.insert(answer, value) end
return answer
";

/// KEYS: record. ARGV: status, message, 1 when there is a message, outcome, now (ms). Answers
/// the record's fields once finished; nothing when it is gone or already terminal (cancelled,
/// perhaps by another replica), and then writes nothing.
const FINISH: &str = r"
local status = redis.call('HGET', KEYS[1], 'status')
if not status or terminal(status) then return false end
redis.call('HSET', KEYS[1], 'status', ARGV[1], 'outcome', ARGV[4], 'updated', ARGV[5])
if ARGV[3] == '1' then redis.call('HSET', KEYS[1], 'msg', ARGV[2]) end
return redis.call('HMGET', KEYS[1], 'owner', 'status', 'msg', 'created', 'updated', 'ttl')
";

/// KEYS: record. ARGV: owner, 1 when there is an owner, message, now (ms). Answers
/// `{'missing'}` (gone, or another owner's), `{'terminal', status}`, or `{'cancelled',
/// fields…}` once cancelled.
const CANCEL: &str = r"
local held = redis.call('HMGET', KEYS[1], 'status', 'owner')
if not held[1] then return {'missing'} end
local mine
if ARGV[2] == '1' then mine = held[2] == ARGV[1] else mine = not held[2] end
if not mine then return {'missing'} end
if terminal(held[1]) then return {'terminal', held[1]} end
redis.call('HSET', KEYS[1], 'status', 'cancelled', 'msg', ARGV[3], 'updated', ARGV[4])
local answer = {'cancelled'}
for _, value in ipairs(redis.call('HMGET', KEYS[1], 'owner', 'status', 'msg', 'created', 'updated', 'ttl')) do
  table.insert(answer, value)
end
return answer
";

/// A record's fields as Redis answers them (`FIELDS` order; `None` for an absent one).
type Fields = Vec<Option<String>>;

/// The Lua scripts, each one atomic round trip.
struct Scripts {
    create: Script,
    list: Script,
    finish: Script,
    cancel: Script,
}

impl Scripts {
    fn new() -> Self {
        let script = |body: &str| Script::new(&format!("{COMMON}{body}"));
        Self {
            create: script(CREATE),
            list: script(LIST),
            finish: script(FINISH),
            cancel: script(CANCEL),
        }
    }
}

/// MCP tasks in Redis, shared by every replica on it: give it to
/// [`TaskStore::shared`](protocols_mcp::TaskStore::shared).
///
/// Keys (under [`RedisConfig::prefix`]): `task:{id}`, a hash of the task's owner, status,
/// message, creation and update times, TTL and (once terminal) outcome, expiring with the
/// task's TTL; `tasks-of:s:{owner}` (`tasks-of:anon` for anonymous callers), a sorted set of
/// the owner's task ids in creation order, which `tasks/list` pages through (its cursor is a
/// score); `tasks-live`, a sorted set of every live id by expiry, counting the store's bound.
/// Both sets expire with the longest-lived task added to them, so once every task has expired
/// no key is left.
///
/// Round trips: create, list, finish and cancel are one script call each; get is one `HMGET`.
/// Each is bounded by [`RedisConfig::timeout`]: past it the answer is
/// [`StoreError::Unavailable`], and the connection is re-established in the background.
pub struct RedisTaskRecords {
    connection: ConnectionManager,
    scripts: Scripts,
    /// What every record key starts with (`{prefix}task:`).
    record_prefix: String,
    /// What every owner's index key starts with (`{prefix}tasks-of:`).
    owner_prefix: String,
    /// The live index (`{prefix}tasks-live`).
    live: String,
    config: RedisConfig,
}

impl fmt::Debug for RedisTaskRecords {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisTaskRecords")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl RedisTaskRecords {
    /// Connects to the Redis `config` names and loads the scripts (its URL, prefix, timeout
    /// and reconnection delay count; its session limits do not). Fails, never hangs, when
    /// Redis cannot be reached within the configured timeout.
    pub async fn connect(config: RedisConfig) -> Result<Self, ConnectError> {
        let scripts = Scripts::new();
        let (_, connection) = connect(
            &config,
            &[
                &scripts.create,
                &scripts.list,
                &scripts.finish,
                &scripts.cancel,
            ],
        )
        .await?;
        Ok(Self {
            connection,
            scripts,
            record_prefix: format!("{}task:", config.prefix),
            owner_prefix: format!("{}tasks-of:", config.prefix),
            live: format!("{}tasks-live", config.prefix),
            config,
        })
    }

    /// The configuration the records were built with.
    pub fn config(&self) -> &RedisConfig {
        &self.config
    }

    fn record_key(&self, id: &str) -> String {
        format!("{}{id}", self.record_prefix)
    }

    fn owner_key(&self, owner: Option<&str>) -> String {
        match owner {
            Some(owner) => format!("{}s:{owner}", self.owner_prefix),
            None => format!("{}anon", self.owner_prefix),
        }
    }

    async fn run<T: redis::FromRedisValue>(
        &self,
        invocation: &redis::ScriptInvocation<'_>,
    ) -> Result<T, StoreError> {
        let mut connection = self.connection.clone();
        ask(
            self.config.timeout,
            invocation.invoke_async(&mut connection),
        )
        .await
    }

    async fn store(
        &self,
        record: &TaskRecord,
        limits: &TaskLimits,
    ) -> Result<Admission, StoreError> {
        let owner = record.owner.as_deref();
        let (kind, wait): (u8, u64) = self
            .run(
                self.scripts
                    .create
                    .key(self.record_key(&record.id))
                    .key(self.owner_key(owner))
                    .key(&self.live)
                    .arg(&record.id)
                    .arg(millis(record.created_at))
                    .arg(millis_of(record.ttl).max(1))
                    .arg(limits.max_tasks)
                    .arg(limits.max_tasks_per_owner)
                    .arg(owner.unwrap_or(""))
                    .arg(u8::from(owner.is_some()))
                    .arg(&self.record_prefix),
            )
            .await?;
        let wait = Duration::from_millis(wait);
        Ok(match kind {
            0 => Admission::Admitted,
            1 => Admission::ServerFull(wait),
            _ => Admission::OwnerFull(wait),
        })
    }

    async fn read(&self, id: &str, with_outcome: bool) -> Result<Option<Found>, StoreError> {
        let mut command = redis::cmd("HMGET");
        command.arg(self.record_key(id)).arg(&FIELDS[..]);
        if with_outcome {
            command.arg("outcome");
        }
        let mut connection = self.connection.clone();
        let mut fields: Fields =
            ask(self.config.timeout, command.query_async(&mut connection)).await?;
        let outcome = if with_outcome {
            fields.pop().flatten()
        } else {
            None
        };
        Ok(record_of(id.to_owned(), &fields)?.map(|record| (record, outcome)))
    }

    async fn page(
        &self,
        owner: Option<&str>,
        after: Option<u64>,
        limit: usize,
    ) -> Result<RecordPage, StoreError> {
        let answer: Fields = self
            .run(
                self.scripts
                    .list
                    .key(self.owner_key(owner))
                    .arg(after.map(|after| after.to_string()).unwrap_or_default())
                    .arg(limit)
                    .arg(&self.record_prefix),
            )
            .await?;
        let mut values = answer.into_iter();
        let next = match values.next().flatten() {
            Some(cursor) => Some(cursor.parse::<u64>().map_err(|_| malformed("a cursor"))?),
            None => None,
        };
        let rest: Fields = values.collect();
        let mut records = Vec::new();
        for chunk in rest.chunks(1 + FIELDS.len()) {
            let Some((Some(id), fields)) = chunk.split_first() else {
                return Err(malformed("a listed id"));
            };
            if let Some(record) = record_of(id.clone(), fields)? {
                records.push(record);
            }
        }
        Ok(RecordPage { records, next })
    }

    async fn end(
        &self,
        id: &str,
        status: TaskStatus,
        status_message: Option<&str>,
        outcome: &str,
        at: SystemTime,
    ) -> Result<Option<TaskRecord>, StoreError> {
        let fields: Option<Fields> = self
            .run(
                self.scripts
                    .finish
                    .key(self.record_key(id))
                    .arg(status_text(status)?)
                    .arg(status_message.unwrap_or(""))
                    .arg(u8::from(status_message.is_some()))
                    .arg(outcome)
                    .arg(millis(at)),
            )
            .await?;
        match fields {
            Some(fields) => record_of(id.to_owned(), &fields),
            None => Ok(None),
        }
    }

    async fn stop(
        &self,
        owner: Option<&str>,
        id: &str,
        message: &str,
        at: SystemTime,
    ) -> Result<Cancellation, StoreError> {
        let answer: Fields = self
            .run(
                self.scripts
                    .cancel
                    .key(self.record_key(id))
                    .arg(owner.unwrap_or(""))
                    .arg(u8::from(owner.is_some()))
                    .arg(message)
                    .arg(millis(at)),
            )
            .await?;
        let Some((Some(kind), rest)) = answer.split_first() else {
            return Err(malformed("a cancellation"));
        };
        match kind.as_str() {
            "cancelled" => record_of(id.to_owned(), rest)?
                .map(Cancellation::Cancelled)
                .ok_or_else(|| malformed("a cancelled record")),
            "terminal" => {
                let status = rest.first().cloned().flatten().unwrap_or_default();
                Ok(Cancellation::Terminal(status_of(&status)?))
            }
            _ => Ok(Cancellation::Missing),
        }
    }
}

impl TaskRecords for RedisTaskRecords {
    fn create<'a>(
        &'a self,
        record: &'a TaskRecord,
        limits: &'a TaskLimits,
    ) -> StoreFuture<'a, Result<Admission, StoreError>> {
        StoreFuture::boxed(self.store(record, limits))
    }

    fn get<'a>(
        &'a self,
        id: &'a str,
        with_outcome: bool,
    ) -> StoreFuture<'a, Result<Option<Found>, StoreError>> {
        StoreFuture::boxed(self.read(id, with_outcome))
    }

    fn list<'a>(
        &'a self,
        owner: Option<&'a str>,
        after: Option<u64>,
        limit: usize,
    ) -> StoreFuture<'a, Result<RecordPage, StoreError>> {
        StoreFuture::boxed(self.page(owner, after, limit))
    }

    fn finish<'a>(
        &'a self,
        id: &'a str,
        status: TaskStatus,
        status_message: Option<&'a str>,
        outcome: &'a str,
        at: SystemTime,
    ) -> StoreFuture<'a, Result<Option<TaskRecord>, StoreError>> {
        StoreFuture::boxed(self.end(id, status, status_message, outcome, at))
    }

    fn cancel<'a>(
        &'a self,
        owner: Option<&'a str>,
        id: &'a str,
        message: &'a str,
        at: SystemTime,
    ) -> StoreFuture<'a, Result<Cancellation, StoreError>> {
        StoreFuture::boxed(self.stop(owner, id, message, at))
    }
}

/// Redis answered something these scripts never write.
#[derive(Debug, thiserror::Error)]
#[error("redis holds a malformed task record ({0})")]
struct Malformed(&'static str);

fn malformed(what: &'static str) -> StoreError {
    StoreError::unavailable(Malformed(what))
}

/// The record `fields` (in `FIELDS` order) describe; `None` when it has no status (gone).
fn record_of(id: String, fields: &[Option<String>]) -> Result<Option<TaskRecord>, StoreError> {
    let [owner, status, message, created, updated, ttl] = fields else {
        return Err(malformed("its fields"));
    };
    let Some(status) = status else {
        return Ok(None);
    };
    let number = |field: &Option<String>| {
        field
            .as_deref()
            .and_then(|text| text.parse::<u64>().ok())
            .ok_or_else(|| malformed("a time"))
    };
    Ok(Some(TaskRecord::new(
        id,
        owner.clone(),
        status_of(status)?,
        message.clone(),
        (time_of(number(created)?), time_of(number(updated)?)),
        Duration::from_millis(number(ttl)?),
    )))
}

fn status_of(text: &str) -> Result<TaskStatus, StoreError> {
    serde_json::from_value(serde_json::Value::String(text.to_owned()))
        .map_err(|_| malformed("a status"))
}

fn status_text(status: TaskStatus) -> Result<String, StoreError> {
    match serde_json::to_value(status) {
        Ok(serde_json::Value::String(text)) => Ok(text),
        _ => Err(malformed("a status")),
    }
}

/// Milliseconds since the Unix epoch (0 before it), what the records count in.
fn millis(time: SystemTime) -> u64 {
    millis_of(time.duration_since(UNIX_EPOCH).unwrap_or(Duration::ZERO))
}

fn millis_of(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

fn time_of(millis: u64) -> SystemTime {
    UNIX_EPOCH
        .checked_add(Duration::from_millis(millis))
        .unwrap_or(UNIX_EPOCH)
}
