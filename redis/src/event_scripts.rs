//! The Lua scripts of the Redis event store: each step of a stream is one script, so it is one
//! round trip and atomic against every other replica's steps.
//!
//! Keys of one session (under the prefix): `events:{id}`, a hash of the session's stream state
//! (`epoch`, a value fresh each time the hash is created, so a handle of a closed session never
//! writes into a new one; `abs`, the absolute deadline in ms since the epoch; `next`, the last
//! request stream number given; per stream `n`: `s:n` the last sequence issued, `g:n` the
//! current reader's generation, `h:n` the furthest sequence handed to a reader, `c:n` closed,
//! `r:n` a release `generation:after:retry-ms`); `events:{id}:{n}`, the Redis stream of stream
//! `n`'s events, the entry of sequence `s` having id `s-0`, capped at the tail's capacity;
//! `events:{id}:ctl`, a stream of one entry that every takeover, release and close replaces, so
//! blocked readers on any replica wake to look. Every step moves every key it touches to expire
//! at the idle limit from now, never past the absolute deadline (the session record's when it
//! is in Redis too), so a session no one closes leaves no key behind.

use redis::Script;

/// Defined first in every script.
const COMMON: &str = r"
local function deadline(meta, now, idle)
  local at = now + idle
  local abs = tonumber(redis.call('HGET', meta, 'abs'))
  if abs and abs < at then at = abs end
  return at
end
local function expire(at, keys)
  for _, key in ipairs(keys) do redis.call('PEXPIREAT', key, at) end
end
local function ensure(meta, record, candidate, now, absolute)
  if redis.call('HSETNX', meta, 'epoch', candidate) == 1 then
    local abs = redis.call('HGET', record, 'abs')
    if not abs then abs = now + absolute end
    redis.call('HSET', meta, 'abs', abs, 'next', 0)
  end
  return redis.call('HGET', meta, 'epoch')
end
local function wake(ctl, kind, n)
  redis.call('XADD', ctl, 'MAXLEN', 1, '*', kind, n)
end
local function seq_of(id)
  return tonumber(string.match(id, '^(%d+)'))
end
local function fetch(meta, data, ctl, epoch, n, gen, cursor, batch)
  local held = redis.call('HMGET', meta, 'epoch', 'g:' .. n, 'r:' .. n, 'c:' .. n, 's:' .. n, 'h:' .. n)
  if held[1] ~= epoch or not held[5] then return {'closed', '0-0', 0} end
  if tonumber(held[2]) ~= gen then return {'superseded', '0-0', 0} end
  local limit, retry = nil, 0
  if held[3] then
    local g, after, ms = string.match(held[3], '^(%d+):(%d+):(%d+)$')
    if tonumber(g) == gen then
      limit = tonumber(after)
      retry = tonumber(ms)
    end
  end
  local last = tonumber(held[5])
  local entries = redis.call('XRANGE', data, '(' .. cursor .. '-0', '+', 'COUNT', batch)
  if entries[1] then
    if seq_of(entries[1][1]) ~= cursor + 1 then return {'evicted', '0-0', 0} end
  elseif last > cursor then
    return {'evicted', '0-0', 0}
  end
  local reply = {'open', '0-0', retry}
  local reached = cursor
  for _, entry in ipairs(entries) do
    local seq = seq_of(entry[1])
    if limit and seq > limit then break end
    reply[#reply + 1] = seq
    reply[#reply + 1] = entry[2][2]
    reached = seq
  end
  if reached > (tonumber(held[6]) or 0) then redis.call('HSET', meta, 'h:' .. n, reached) end
  if limit and reached >= limit then
    reply[1] = 'released'
  elseif held[4] and reached >= last then
    reply[1] = 'closed'
  end
  local tip = redis.call('XREVRANGE', ctl, '+', '-', 'COUNT', 1)
  if tip[1] then reply[2] = tip[1][1] end
  return reply
end
";

/// KEYS: meta, session record, ctl, stream 0. ARGV: epoch candidate, now, idle, absolute.
/// Answers the epoch.
const STANDALONE: &str = r"
local now = tonumber(ARGV[2])
local epoch = ensure(KEYS[1], KEYS[2], ARGV[1], now, tonumber(ARGV[4]))
redis.call('HSETNX', KEYS[1], 's:0', 0)
redis.call('HSETNX', KEYS[1], 'g:0', 0)
expire(deadline(KEYS[1], now, tonumber(ARGV[3])), {KEYS[1], KEYS[3], KEYS[4]})
return epoch
";

/// KEYS: meta, session record, ctl, stream 0. ARGV: epoch candidate, now, idle, absolute,
/// streams' key prefix, streams kept, highest number. Allocates the next request stream number
/// (wrapping to 1, never 0), forgets the stream that many numbers back, answers `{epoch,
/// number}`. Stream 0's expiry moves too: a replica that knows the session's epoch opens the
/// standalone stream without a step.
const OPEN: &str = r"
local now = tonumber(ARGV[2])
local epoch = ensure(KEYS[1], KEYS[2], ARGV[1], now, tonumber(ARGV[4]))
local n = redis.call('HINCRBY', KEYS[1], 'next', 1)
if n > tonumber(ARGV[7]) then
  n = 1
  redis.call('HSET', KEYS[1], 'next', 1)
end
local function forget(m)
  redis.call('DEL', ARGV[5] .. m)
  redis.call('HDEL', KEYS[1], 's:' .. m, 'g:' .. m, 'h:' .. m, 'c:' .. m, 'r:' .. m)
end
forget(n)
local old = n - tonumber(ARGV[6])
if old >= 1 then forget(old) end
redis.call('HSET', KEYS[1], 's:' .. n, 0, 'g:' .. n, 0)
expire(deadline(KEYS[1], now, tonumber(ARGV[3])), {KEYS[1], KEYS[3], KEYS[4]})
return {epoch, n}
";

/// KEYS: meta, stream. ARGV: epoch, number, payload, capacity, now, idle. Answers `{sequence,
/// reader generation}` (generation 0: the opening handle's own reader still holds the stream),
/// or -1 when the stream is closed (or its session is).
const PUBLISH: &str = r"
local n = ARGV[2]
local held = redis.call('HMGET', KEYS[1], 'epoch', 'c:' .. n, 's:' .. n, 'g:' .. n)
if held[1] ~= ARGV[1] or held[2] or not held[3] then return -1 end
local seq = redis.call('HINCRBY', KEYS[1], 's:' .. n, 1)
redis.call('XADD', KEYS[2], 'MAXLEN', ARGV[4], seq .. '-0', 'd', ARGV[3])
expire(deadline(KEYS[1], tonumber(ARGV[5]), tonumber(ARGV[6])), {KEYS[1], KEYS[2]})
return {seq, tonumber(held[4]) or 0}
";

/// KEYS: meta, stream, ctl. ARGV: epoch ('' for any: a resume), number, where to start
/// (`beginning`, `unread`, `after`), the sequence after which (`after`), batch, now, idle.
/// Checks a resume's cursor, takes the stream over for a new reader generation (waking the
/// readers of every replica) and fetches the first batch: answers `{'taken', epoch,
/// generation, start, fetched}`, or `{'unknown'}`, `{'evicted'}`.
const TAKEOVER: &str = r"
local n = ARGV[2]
local held = redis.call('HMGET', KEYS[1], 'epoch', 's:' .. n, 'h:' .. n)
if not held[1] or not held[2] then return {'unknown'} end
if ARGV[1] ~= '' and held[1] ~= ARGV[1] then return {'unknown'} end
local start = 0
if ARGV[3] == 'unread' then
  start = tonumber(held[3]) or 0
elseif ARGV[3] == 'after' then
  start = tonumber(ARGV[4])
  local last = tonumber(held[2])
  if start > last then return {'unknown'} end
  local oldest = redis.call('XRANGE', KEYS[2], '-', '+', 'COUNT', 1)
  local first = last + 1
  if oldest[1] then first = seq_of(oldest[1][1]) end
  if start + 1 < first then return {'evicted'} end
end
local gen = redis.call('HINCRBY', KEYS[1], 'g:' .. n, 1)
wake(KEYS[3], 'g', n)
expire(deadline(KEYS[1], tonumber(ARGV[6]), tonumber(ARGV[7])), {KEYS[1], KEYS[2], KEYS[3]})
return {'taken', held[1], gen, start, fetch(KEYS[1], KEYS[2], KEYS[3], held[1], n, gen, start, tonumber(ARGV[5]))}
";

/// KEYS: meta, stream, ctl. ARGV: epoch, number, generation, cursor, batch, now, idle. What a
/// reader finds after its cursor (see `fetch`), its keys' expiry moved while the session's
/// streams are there: a live reader keeps them, and a closed session's stay gone.
const FETCH: &str = r"
if redis.call('HGET', KEYS[1], 'epoch') == ARGV[1] then
  expire(deadline(KEYS[1], tonumber(ARGV[6]), tonumber(ARGV[7])), {KEYS[1], KEYS[2], KEYS[3]})
end
return fetch(KEYS[1], KEYS[2], KEYS[3], ARGV[1], ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5]))
";

/// KEYS: meta, ctl. ARGV: epoch, number, retry ms, now, idle. Lets go of the current reader
/// after the last event issued; answers 0 when the stream is closed. Generation 0 is the
/// opening handle's own reader, told in process: only a reader on Redis needs waking.
const RELEASE: &str = r"
local n = ARGV[2]
local held = redis.call('HMGET', KEYS[1], 'epoch', 'c:' .. n, 's:' .. n, 'g:' .. n)
if held[1] ~= ARGV[1] or held[2] or not held[3] then return 0 end
redis.call('HSET', KEYS[1], 'r:' .. n, (held[4] or '0') .. ':' .. held[3] .. ':' .. ARGV[3])
if held[4] ~= '0' then wake(KEYS[2], 'r', n) end
expire(deadline(KEYS[1], tonumber(ARGV[4]), tonumber(ARGV[5])), {KEYS[1], KEYS[2]})
return 1
";

/// KEYS: meta, ctl. ARGV: epoch, number. Ends the stream; its readers drain it and finish
/// (only one on Redis needs waking, as for a release).
const CLOSE: &str = r"
local held = redis.call('HMGET', KEYS[1], 'epoch', 'g:' .. ARGV[2])
if held[1] ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[1], 'c:' .. ARGV[2], 1)
if held[2] ~= '0' then wake(KEYS[2], 'c', ARGV[2]) end
return 1
";

/// KEYS: meta, ctl. ARGV: streams' key prefix, grace ms. Deletes every key of the session but
/// the wake-up stream, which gets one more entry (a deleted key does not wake a blocked read)
/// and lives only the grace, long enough for blocked readers to be served.
const CLOSE_SESSION: &str = r"
for _, field in ipairs(redis.call('HKEYS', KEYS[1])) do
  local n = string.match(field, '^s:(%d+)$')
  if n then redis.call('DEL', ARGV[1] .. n) end
end
redis.call('DEL', KEYS[1])
if redis.call('EXISTS', KEYS[2]) == 1 then
  wake(KEYS[2], 'x', 0)
  redis.call('PEXPIRE', KEYS[2], ARGV[2])
end
return 1
";

/// The event store's scripts, hashed once.
pub(crate) struct EventScripts {
    pub(crate) standalone: Script,
    pub(crate) open: Script,
    pub(crate) publish: Script,
    pub(crate) takeover: Script,
    pub(crate) fetch: Script,
    pub(crate) release: Script,
    pub(crate) close: Script,
    pub(crate) close_session: Script,
}

impl EventScripts {
    pub(crate) fn new() -> Self {
        let script = |body: &str| Script::new(&format!("{COMMON}{body}"));
        Self {
            standalone: script(STANDALONE),
            open: script(OPEN),
            publish: script(PUBLISH),
            takeover: script(TAKEOVER),
            fetch: script(FETCH),
            release: script(RELEASE),
            close: script(CLOSE),
            close_session: script(CLOSE_SESSION),
        }
    }

    pub(crate) fn all(&self) -> [&Script; 8] {
        [
            &self.standalone,
            &self.open,
            &self.publish,
            &self.takeover,
            &self.fetch,
            &self.release,
            &self.close,
            &self.close_session,
        ]
    }
}
