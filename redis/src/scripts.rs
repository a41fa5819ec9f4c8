//! The Lua scripts that make each session step one atomic round trip: a script runs whole on
//! the Redis server, so a lookup reads the record and slides its expiry in one command, and
//! the live-session count and the insert it guards cannot interleave with another replica's.
//!
//! Keys: a hash per session (`state`, `rev`, `created` in ns, `idle` and `abs` deadlines in ms,
//! all since the Unix epoch) and one sorted set, the index, of the live sessions' ids scored by the time they
//! end. Every write sets the hash's expiry to that time and the index's to its latest score, so
//! Redis removes what no one deletes and, once every session has ended, no key is left.

use redis::Script;

/// Defined first in every script that moves a score: the index expires with its latest session.
const EXTEND_INDEX: &str = r"
local function extend_index(index)
  local latest = redis.call('ZRANGE', index, -1, -1, 'WITHSCORES')
  if latest[2] then redis.call('PEXPIREAT', index, latest[2]) end
end
";

/// KEYS: record, index. ARGV: id, now, max live, state, created, idle deadline, absolute
/// deadline. Answers 1 when stored, 0 when the live sessions (ending after now) are at the limit.
const INSERT: &str = r"
if redis.call('ZCOUNT', KEYS[2], '(' .. ARGV[2], '+inf') >= tonumber(ARGV[3]) then
  return 0
end
redis.call('HSET', KEYS[1], 'state', ARGV[4], 'rev', 0, 'created', ARGV[5], 'idle', ARGV[6], 'abs', ARGV[7])
redis.call('PEXPIREAT', KEYS[1], ARGV[6])
redis.call('ZADD', KEYS[2], ARGV[6], ARGV[1])
extend_index(KEYS[2])
return 1
";

/// KEYS: record, index. ARGV: id, now, idle limit, the revision the caller holds live (-1 for
/// none). Slides the idle deadline (never past the absolute one, never backwards) and answers
/// `{revision, created, idle deadline, absolute deadline, state}`, the state only when newer
/// than the caller's; nothing when the session is unknown or ended (then removed).
const GET: &str = r"
local held = redis.call('HMGET', KEYS[1], 'rev', 'created', 'idle', 'abs')
if not held[1] then
  redis.call('ZREM', KEYS[2], ARGV[1])
  return false
end
local now, idle, absolute = tonumber(ARGV[2]), tonumber(held[3]), tonumber(held[4])
if now >= idle or now >= absolute then
  redis.call('DEL', KEYS[1])
  redis.call('ZREM', KEYS[2], ARGV[1])
  return false
end
local slid = math.min(now + tonumber(ARGV[3]), absolute)
if slid > idle then
  redis.call('HSET', KEYS[1], 'idle', slid)
  redis.call('PEXPIREAT', KEYS[1], slid)
  redis.call('ZADD', KEYS[2], slid, ARGV[1])
  extend_index(KEYS[2])
  idle = slid
end
local state = false
if tonumber(held[1]) > tonumber(ARGV[4]) then
  state = redis.call('HGET', KEYS[1], 'state')
end
return {held[1], held[2], idle, held[4], state}
";

/// KEYS: record. ARGV: state. Answers the new revision, or nothing when the session is gone
/// (removed or expired meanwhile: nothing is recreated). The key keeps its expiry.
const SAVE: &str = r"
if redis.call('EXISTS', KEYS[1]) == 0 then return false end
redis.call('HSET', KEYS[1], 'state', ARGV[1])
return redis.call('HINCRBY', KEYS[1], 'rev', 1)
";

/// KEYS: record, index. ARGV: id. Answers 1 when the session was stored. An index left empty
/// is deleted by Redis.
const REMOVE: &str = r"
redis.call('ZREM', KEYS[2], ARGV[1])
return redis.call('DEL', KEYS[1])
";

/// KEYS: index. ARGV: now, batch size, the records' key prefix. Removes up to a batch of the
/// sessions ended by now and answers their ids. (The record keys are built here, which a
/// single Redis allows; a cluster would not.)
const REAP: &str = r"
local ids = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, tonumber(ARGV[2]))
for _, id in ipairs(ids) do
  redis.call('DEL', ARGV[3] .. id)
  redis.call('ZREM', KEYS[1], id)
end
return ids
";

/// The session store's scripts, hashed once.
pub(crate) struct Scripts {
    pub(crate) insert: Script,
    pub(crate) get: Script,
    pub(crate) save: Script,
    pub(crate) remove: Script,
    pub(crate) reap: Script,
}

impl Scripts {
    pub(crate) fn new() -> Self {
        let with_index = |body: &str| Script::new(&format!("{EXTEND_INDEX}{body}"));
        Self {
            insert: with_index(INSERT),
            get: with_index(GET),
            save: Script::new(SAVE),
            remove: Script::new(REMOVE),
            reap: Script::new(REAP),
        }
    }

    pub(crate) fn all(&self) -> [&Script; 5] {
        [
            &self.insert,
            &self.get,
            &self.save,
            &self.remove,
            &self.reap,
        ]
    }
}
