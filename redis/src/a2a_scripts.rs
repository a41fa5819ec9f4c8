//! The Lua scripts that make each A2A task step one atomic round trip. A task is a hash
//! (`task` and `push` as JSON, `owner`, `rev` (how many writes), `last` (the id of its last
//! live event), `seq` (its place in listings), and copies of what listings filter on: `ctx`,
//! `state`, `at` (the status time in µs, -1 when unset), `settled` (1 when its work is at
//! rest)); its live events are a stream; each owner's tasks, and all tasks, are sorted sets
//! scored by `seq`. Every write sets the hash, the stream and both sets to expire a retention
//! after it, so Redis removes what no one deletes and no key outlives the last task.
//! (Keys built inside a script, as eviction does, are fine on one Redis, not on a cluster.)

use redis::Script;

/// Shared by the scripts that drop tasks: removes task `id` (record, stream, index entries).
/// ARGV[1..3] of every such script: record prefix, stream prefix, owner-set prefix.
const DROP: &str = r"
local function drop_task(id, all)
  local owner = redis.call('HGET', ARGV[1] .. id, 'owner')
  redis.call('DEL', ARGV[1] .. id, ARGV[2] .. id)
  if owner then redis.call('ZREM', ARGV[3] .. owner, id) end
  redis.call('ZREM', all, id)
end

-- Makes `index` hold fewer than `cap` tasks: forgets the expired, drops settled ones oldest
-- first; false when only unsettled work is left.
local function make_room(index, cap, all)
  if redis.call('ZCARD', index) < cap then return true end
  for _, id in ipairs(redis.call('ZRANGE', index, 0, -1)) do
    local settled = redis.call('HGET', ARGV[1] .. id, 'settled')
    if not settled then
      redis.call('ZREM', index, id)
    elseif settled == '1' then
      drop_task(id, all)
    end
    if redis.call('ZCARD', index) < cap then return true end
  end
  return false
end
";

/// KEYS: record, owner set, all set, sequence. ARGV: record prefix, stream prefix, owner-set
/// prefix, id, task, owner, ctx, state, at, settled, retention (ms), per-owner cap, total cap.
/// Answers 1 when stored, 0 when the owner's share is full of live work, -1 when the store is.
const INSERT: &str = r"
if not make_room(KEYS[2], tonumber(ARGV[12]), KEYS[3]) then return 0 end
if not make_room(KEYS[3], tonumber(ARGV[13]), KEYS[3]) then return -1 end
local seq = redis.call('INCR', KEYS[4])
redis.call('HSET', KEYS[1], 'task', ARGV[5], 'push', '[]', 'owner', ARGV[6], 'rev', 1,
  'last', '0-0', 'seq', seq, 'ctx', ARGV[7], 'state', ARGV[8], 'at', ARGV[9], 'settled', ARGV[10])
redis.call('ZADD', KEYS[2], seq, ARGV[4])
redis.call('ZADD', KEYS[3], seq, ARGV[4])
for i = 1, 4 do redis.call('PEXPIRE', KEYS[i], ARGV[11]) end
return 1
";

/// KEYS: record, stream, owner set, all set, sequence. ARGV: the revision read, task, push
/// ('' keeps it), ctx, state, at, settled, retention (ms), event ('' for none), whether the
/// task moves to the front of listings ('1'), the stream's cap, id. Answers 1 when written, 0 when
/// another write came first (read again and retry), -1 when the task is gone.
const UPDATE: &str = r"
local rev = redis.call('HGET', KEYS[1], 'rev')
if not rev then return -1 end
if rev ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[1], 'task', ARGV[2], 'ctx', ARGV[4], 'state', ARGV[5], 'at', ARGV[6],
  'settled', ARGV[7], 'rev', tonumber(rev) + 1)
if ARGV[3] ~= '' then redis.call('HSET', KEYS[1], 'push', ARGV[3]) end
if ARGV[9] ~= '' then
  local id = redis.call('XADD', KEYS[2], 'MAXLEN', '~', ARGV[11], '*', 'event', ARGV[9])
  redis.call('HSET', KEYS[1], 'last', id)
end
if ARGV[10] == '1' then
  local seq = redis.call('INCR', KEYS[5])
  redis.call('HSET', KEYS[1], 'seq', seq)
  redis.call('ZADD', KEYS[3], seq, ARGV[12])
  redis.call('ZADD', KEYS[4], seq, ARGV[12])
end
for i = 1, 5 do redis.call('PEXPIRE', KEYS[i], ARGV[8]) end
return 1
";

/// KEYS: the set listed (an owner's, or all). ARGV: record prefix, cursor (-1: from the
/// newest), page size, ctx, state, at ('' for no filter on each). Answers `{total, next cursor
/// (-1 on the last page), tasks…}`, forgetting expired tasks it meets.
const LIST: &str = r"
local entries = redis.call('ZREVRANGE', KEYS[1], 0, -1, 'WITHSCORES')
local cursor, size = tonumber(ARGV[2]), tonumber(ARGV[3])
local total, more, last, page = 0, -1, -1, {}
for i = 1, #entries, 2 do
  local id, seq = entries[i], tonumber(entries[i + 1])
  local f = redis.call('HMGET', ARGV[1] .. id, 'task', 'ctx', 'state', 'at')
  if not f[1] then
    redis.call('ZREM', KEYS[1], id)
  elseif (ARGV[4] == '' or f[2] == ARGV[4]) and (ARGV[5] == '' or f[3] == ARGV[5])
      and (ARGV[6] == '' or tonumber(f[4]) >= tonumber(ARGV[6])) then
    total = total + 1
    if cursor < 0 or seq < cursor then
      if #page < size then
        page[#page + 1] = f[1]
        last = seq
      elseif more < 0 then
        more = last
      end
    end
  end
end
local answer = {tostring(total), tostring(more)}
for _, task in ipairs(page) do answer[#answer + 1] = task end
return answer
";

/// The task store's scripts, hashed once.
pub(crate) struct TaskScripts {
    pub(crate) insert: Script,
    pub(crate) update: Script,
    pub(crate) list: Script,
}

impl TaskScripts {
    pub(crate) fn new() -> Self {
        Self {
            insert: Script::new(&format!("{DROP}{INSERT}")),
            update: Script::new(UPDATE),
            list: Script::new(LIST),
        }
    }

    pub(crate) fn all(&self) -> [&Script; 3] {
        [&self.insert, &self.update, &self.list]
    }
}
