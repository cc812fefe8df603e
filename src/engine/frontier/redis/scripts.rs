//! The Lua scripts that change the shared frontier. Each runs atomically in
//! Redis, so no worker ever acts on a state it read before another changed it.
//!
//! Keys (P is `crawldeck:{crawl}:`): `q:HOST` (sorted set of encoded entries
//! by `level * 2^40 + sequence`), `inflight:HOST` (hash: entry → its score),
//! `lease:HOST` (the worker holding the host, with a TTL), `held` (hash:
//! host → worker, what the reaper walks), `sched:LEVEL` (hosts nobody holds,
//! by the time they may be fetched), `nb` (hash: host → not-before), `holds`
//! (hash: host → hold bits every worker obeys), `hosts` (hosts with URLs),
//! `seen` (set of URL fingerprints), `claims:WORKER` (fingerprints the
//! worker claimed and has not queued yet), `owner` (host → the worker with
//! first call on it), `owned` (worker → hosts it owns), `asking` (worker →
//! when it last claimed), `handed` (hosts handed over once, see `spread`),
//! `n` (hash of counters), `seq`,
//! `parked:WORKER:ALERT` (sorted sets), `parked_keys`, `parked_hosts`,
//! `alert-seq`, `alert-raisers` (trap alert number → the worker that
//! raised it), `alerts` (number → the alert as raised, JSON), `alert-traps`
//! (a trap's signature → its alert's number), `alert-decisions` (number →
//! the decision, JSON), `alert-changes` (counts raises and decisions),
//! `breakers` (host → its breaker as last shared, JSON), `breaker-seq` and
//! `breaker-log` (hosts by the number of their last breaker change).
//!
//! Scores and times travel as strings: Lua would print a number with 14
//! digits only.

use redis::Script;

/// Shared helpers, prepended to every script.
const PRELUDE: &str = r#"
local P = ARGV[1]
local LEVEL = 1099511627776
-- The not-before of a host that never had one: due at any time.
local NEVER = '-1000000000000000000'
local function level_of(score) return math.floor(tonumber(score) / LEVEL) end
local function count(field, by) redis.call('HINCRBY', P .. 'n', field, by) end
-- Host affinity: the worker that last claimed a host (`owner`) keeps first
-- call on it, so what it learns of the host (trap evidence, breaker counts,
-- response times, connections) stays whole. `owned` counts each worker's.
local function disown(owner)
  if redis.call('HINCRBY', P .. 'owned', owner, -1) <= 0 then redis.call('HDEL', P .. 'owned', owner) end
end
local function own(host, worker)
  local old = redis.call('HGET', P .. 'owner', host)
  if old == worker then return end
  if old then disown(old) end
  redis.call('HSET', P .. 'owner', host, worker)
  redis.call('HINCRBY', P .. 'owned', worker, 1)
end
local function unown(host)
  local old = redis.call('HGET', P .. 'owner', host)
  if old then
    redis.call('HDEL', P .. 'owner', host)
    redis.call('SREM', P .. 'handed', host)
    disown(old)
  end
end
-- What `worker` may take of the hosts others own: a due host at once if
-- its owner holds more than an even share and the worker less (so a crawl
-- whose hosts all went to one worker spreads), else once it has waited
-- `grace` past its time (its owner is busy or gone).
local function affinity(worker, grace)
  return {worker = worker, grace = tonumber(grace), counts = {}}
end
-- The even share, read once a claim and only if another worker owns a due
-- host: most claims take a host of their own or nobody's.
local function share_of(a)
  if a.share == nil then
    local owners = redis.call('HLEN', P .. 'owned')
    local mine = tonumber(redis.call('HGET', P .. 'owned', a.worker) or '0')
    if mine == 0 then owners = owners + 1 end
    a.share = redis.call('HLEN', P .. 'owner') / owners
    a.under = mine + 1 <= a.share
  end
  return a.share
end
-- The score from which `a`'s worker may take `host`, due at `score`.
local function due_for(a, host, score)
  -- Never fetched (no not-before yet): nothing learnt of it to keep.
  if score <= tonumber(NEVER) then return score end
  local owner = redis.call('HGET', P .. 'owner', host)
  if not owner or owner == a.worker then return score end
  local share = share_of(a)
  if a.under then
    local theirs = a.counts[owner]
    if not theirs then
      theirs = tonumber(redis.call('HGET', P .. 'owned', owner) or '0')
      a.counts[owner] = theirs
    end
    if theirs - 1 >= share then return score end
  end
  return score + a.grace
end
-- Hosts of a level looked at for one this worker may take.
local AFFINITY_SCAN = 32
-- A worker that claimed within this long (ns on the crawl's clock) wants hosts.
local ASKING = 2000000000
-- The hosts `worker` just gave back (ARGV[first..last]) go, while it owns
-- two or more hosts than a worker that asked lately, to the one owning
-- fewest: first call passes to it. Else an owner that keeps asking first
-- would keep a crawl's hosts that all went to it at the start. A host is handed over once
-- (`handed`): a receiver too slow to claim it within the grace would
-- otherwise see it taken back and handed again, each worker seeing every
-- other batch of its pages, and a trap's evidence never adding up.
local function spread(worker, now, first, last)
  if first > last then return end
  local asking, others, counts = redis.call('HGETALL', P .. 'asking'), {}, {}
  for i = 1, #asking, 2 do
    if tonumber(asking[i + 1]) < now - ASKING then
      redis.call('HDEL', P .. 'asking', asking[i])
    elseif asking[i] ~= worker then
      others[#others + 1] = asking[i]
    end
  end
  if #others == 0 then return end
  for j, n in ipairs(redis.call('HMGET', P .. 'owned', unpack(others))) do counts[j] = tonumber(n or '0') end
  local mine = tonumber(redis.call('HGET', P .. 'owned', worker) or '0')
  for i = first, last do
    local host, least = ARGV[i], 1
    for j = 2, #others do if counts[j] < counts[least] then least = j end end
    if mine - counts[least] < 2 then return end
    local mine_still = redis.call('HGET', P .. 'owner', host) == worker
    if mine_still and redis.call('SADD', P .. 'handed', host) == 1 then
      own(host, others[least])
      mine, counts[least] = mine - 1, counts[least] + 1
    end
  end
end
-- unscheduled: the caller knows the host is in no sched set (it just ended
-- a live lease).
local function resched(host, unscheduled)
  -- A leased host is in no sched set (leasing takes it out), so only an
  -- unleased one needs the five ZREMs.
  local leased = redis.call('EXISTS', P .. 'lease:' .. host) == 1
  if not leased and not unscheduled then
    for l = 0, 4 do redis.call('ZREM', P .. 'sched:' .. l, host) end
  end
  local head = redis.call('ZRANGE', P .. 'q:' .. host, 0, 0, 'WITHSCORES')
  if #head == 0 then
    if redis.call('EXISTS', P .. 'inflight:' .. host) == 0 then
      redis.call('SREM', P .. 'hosts', host)
      unown(host)
    end
    return
  end
  redis.call('SADD', P .. 'hosts', host)
  if leased then return end
  if tonumber(redis.call('HGET', P .. 'holds', host) or '0') ~= 0 then return end
  redis.call('ZADD', P .. 'sched:' .. level_of(head[2]), redis.call('HGET', P .. 'nb', host) or NEVER, host)
end
local function enqueue(host, member, level, score)
  if not score then score = level * LEVEL + redis.call('INCR', P .. 'seq') end
  if redis.call('ZADD', P .. 'q:' .. host, 'NX', score, member) == 1 then
    count('queued', 1)
    count('l' .. level_of(score), 1)
    return 1
  end
  return 0
end
local function dequeue(host, member)
  local score = redis.call('ZSCORE', P .. 'q:' .. host, member)
  if not score then return nil end
  redis.call('ZREM', P .. 'q:' .. host, member)
  count('queued', -1)
  count('l' .. level_of(score), -1)
  return score
end
-- checked: queue only links new to the seen set or claimed by the worker (a
-- page's links, whose seen check may have been answered while Redis was
-- out of reach); else queue every entry not queued yet.
local function push_entries(first, worker, ttl, checked)
  local added, touched, order, fresh = 0, {}, {}, {}
  for i = first, #ARGV, 4 do
    local member, level, fp, host = ARGV[i], tonumber(ARGV[i + 1]), ARGV[i + 2], ARGV[i + 3]
    if not touched[host] then
      touched[host] = true
      order[#order + 1] = host
      fresh[host] = redis.call('EXISTS', P .. 'q:' .. host, P .. 'inflight:' .. host, P .. 'lease:' .. host) == 0
    end
    local new = redis.call('SADD', P .. 'seen', fp)
    local mine = redis.call('SREM', P .. 'claims:' .. worker, fp)
    if not checked or new + mine > 0 then
      added = added + enqueue(host, member, level, nil)
    end
  end
  local out = {tostring(added)}
  for _, host in ipairs(order) do
    if fresh[host] and redis.call('SET', P .. 'lease:' .. host, worker, 'NX', 'PX', ttl) then
      redis.call('HSET', P .. 'held', host, worker)
      own(host, worker)
      out[#out + 1] = host
    end
    resched(host)
  end
  return out
end
-- cmd key list[i..] in chunks (unpack is bounded by Lua's stack); the
-- replies of a command answering per member, concatenated.
local function each_chunk(cmd, key, list)
  local out = {}
  for i = 1, #list, 1000 do
    local r = redis.call(cmd, key, unpack(list, i, math.min(i + 999, #list)))
    if type(r) == 'table' then for _, v in ipairs(r) do out[#out + 1] = v end end
  end
  return out
end
local function unsee_claims(worker)
  local key = P .. 'claims:' .. worker
  each_chunk('SREM', P .. 'seen', redis.call('SMEMBERS', key))
  redis.call('DEL', key)
end
local function requeue_inflight(host)
  local inflight = redis.call('HGETALL', P .. 'inflight:' .. host)
  if #inflight == 0 then return 0 end
  for j = 1, #inflight, 2 do
    enqueue(host, inflight[j], 0, inflight[j + 1])
    count('inflight', -1)
  end
  redis.call('DEL', P .. 'inflight:' .. host)
  return #inflight / 2
end
-- The worker gives back a host it has nothing of in flight: URLs recorded
-- in flight are takes whose answer was lost, and go back to the queue.
local function give_back(host, worker)
  local mine = redis.call('GET', P .. 'lease:' .. host) == worker
  if mine then
    requeue_inflight(host)
    redis.call('DEL', P .. 'lease:' .. host)
    redis.call('HDEL', P .. 'held', host)
  end
  resched(host, mine)
end
-- Pops a leased host's head into inflight and reads up to batch - 1 more of
-- its level, left queued: the leaseholder serves them without a round trip
-- (nobody else may take them while it holds the lease). Answers `verdict
-- host` if the queue is empty, else `verdict host member score next_score
-- (member score)…`, next_score being the first entry not read.
local function take_head(host, verdict, batch)
  local head = redis.call('ZPOPMIN', P .. 'q:' .. host)
  if #head == 0 then
    resched(host)
    return {verdict, host}
  end
  local level = level_of(head[2])
  count('queued', -1)
  count('l' .. level, -1)
  count('inflight', 1)
  redis.call('HSET', P .. 'inflight:' .. host, head[1], head[2])
  local ahead = redis.call('ZRANGE', P .. 'q:' .. host, 0, batch - 1, 'WITHSCORES')
  -- A claim reads the host's shared breaker: the new holder follows it.
  local breaker = verdict == 'claimed' and redis.call('HGET', P .. 'breakers', host) or ''
  local out, i = {verdict, host, head[1], head[2], '', breaker}, 1
  while i < #ahead and (i + 1) / 2 < batch and level_of(ahead[i + 1]) == level do
    out[#out + 1] = ahead[i]
    out[#out + 1] = ahead[i + 1]
    i = i + 2
  end
  out[5] = ahead[i + 1] or ''
  return out
end
"#;

fn script(body: &str) -> Script {
    Script::new(&format!("{PRELUDE}{body}"))
}

/// Every script the frontier runs, loaded once per connection.
pub(super) struct Scripts {
    /// `P worker ttl (member level fp host)…` → `added, hosts leased…`.
    /// A host new to the crawl is leased to the pusher, which settles its robots.txt.
    pub push: Script,
    /// `P worker host fp…` → `1` or `0` each: new to the seen set (then
    /// claimed by the worker until it queues or parks it, unless `host` is
    /// a page's host whose lease the worker no longer holds).
    pub claim_unseen: Script,
    /// `P worker ttl now r w0..w4 batch n grace idle… (level since host)…` →
    /// `[]`, `retry`, `lost HOST`, or `local|claimed HOST [member score
    /// next_score breaker (member score)…]`: gives back the caller's n idle
    /// hosts (as `release_hosts`, handing some to a worker that owns fewer,
    /// see `spread`), picks the level by weight, then the host
    /// waiting longest, among the unheld hosts due for the caller (another
    /// worker's own `grace` later, see `due_for`) and the caller's own, takes its
    /// head and reads the next batch - 1 of its level (see `take_head`); a
    /// claimed host's shared breaker comes with it (`''` if none).
    pub claim: Script,
    /// `P worker ttl host member mode nb (member level fp host)…` →
    /// `added, hosts leased…`; mode is complete, release or requeue; nb (unless
    /// empty) is the host's next not-before, set before it is rescheduled. A URL
    /// not recorded in flight is no error (the worker checks its own leases):
    /// it was served from a take's batch and is still queued (complete takes
    /// it out, requeue moves it to the back, release leaves it), or its lease
    /// expired and the reaper queued it again, or another worker has it, or
    /// this end was applied before its answer was lost. The links are queued
    /// checked (see `push_entries`).
    pub end_lease: Script,
    /// `P worker host…`: gives up the caller's leases of idle hosts (the
    /// caller has nothing of them in flight: URLs recorded in flight are
    /// takes whose answer was lost, and go back to the queue).
    pub release_hosts: Script,
    /// `P host on off`: sets and clears hold bits every worker obeys.
    pub hold: Script,
    /// `P host score worker`: the host's not-before; the worker (unless
    /// empty) gives the host back in the same step, so nobody sees it idle
    /// with its old time.
    pub not_before: Script,
    /// `P worker`: hosts whose lease expired (and, at start, the caller's
    /// own) get their in-flight URLs back in their queues → how many.
    pub reap: Script,
    /// `P worker ttl host…` → the hosts whose lease the caller lost.
    pub renew: Script,
    /// `P worker grace` → `earliest score at which the worker may claim a
    /// host or '', hosts held by other workers` (see `due_for`).
    pub wakeup: Script,
    /// `P host target member…` → removed members; moved into the parked
    /// set `target` unless it is empty.
    pub remove: Script,
    /// `P key claims (member level fp host)…` → parked count.
    pub park_new: Script,
    /// `P key mode (member host)…` → count; mode unpark or drop.
    pub unpark: Script,
    /// `P worker at_least signature alert` → `new N`, a trap alert number
    /// new to the crawl and at least `at_least` (`alert-raisers` records
    /// that the worker raised it, `alerts` the alert), or `joined N alert`
    /// when another worker alerted on the same trap first.
    pub raise_alert: Script,
    /// `P number decision` → `[]`: the first decision on an alert stands.
    pub decide_alert: Script,
    /// `P host breaker` → `[n]`: the host's breaker for every worker,
    /// logged under the crawl's next breaker change number `n`.
    pub share_breaker: Script,
}

impl Scripts {
    pub(super) fn new() -> Scripts {
        Scripts {
            push: script("return push_entries(4, ARGV[2], ARGV[3], false)"),
            claim: script(CLAIM),
            claim_unseen: script(CLAIM_UNSEEN),
            end_lease: script(END_LEASE),
            release_hosts: script(RELEASE_HOSTS),
            hold: script(HOLD),
            not_before: script(NOT_BEFORE),
            reap: script(REAP),
            renew: script(RENEW),
            wakeup: script(WAKEUP),
            remove: script(REMOVE),
            park_new: script(PARK_NEW),
            unpark: script(UNPARK),
            raise_alert: script(RAISE_ALERT),
            decide_alert: script(DECIDE_ALERT),
            share_breaker: script(SHARE_BREAKER),
        }
    }
}

const RAISE_ALERT: &str = r#"
local known = redis.call('HGET', P .. 'alert-traps', ARGV[4])
if known then
  return {'joined', known, redis.call('HGET', P .. 'alerts', known) or ''}
end
local n = redis.call('INCR', P .. 'alert-seq')
local floor = tonumber(ARGV[3])
if n < floor then
  redis.call('SET', P .. 'alert-seq', floor)
  n = floor
end
redis.call('HSET', P .. 'alert-raisers', n, ARGV[2])
redis.call('HSET', P .. 'alert-traps', ARGV[4], n)
redis.call('HSET', P .. 'alerts', n, ARGV[5])
redis.call('INCR', P .. 'alert-changes')
return {'new', tostring(n)}
"#;

const DECIDE_ALERT: &str = r#"
if redis.call('HSETNX', P .. 'alert-decisions', ARGV[2], ARGV[3]) == 1 then
  redis.call('INCR', P .. 'alert-changes')
end
return {}
"#;

const SHARE_BREAKER: &str = r#"
redis.call('HSET', P .. 'breakers', ARGV[2], ARGV[3])
local n = redis.call('INCR', P .. 'breaker-seq')
redis.call('ZADD', P .. 'breaker-log', n, ARGV[2])
return {tostring(n)}
"#;

const CLAIM_UNSEEN: &str = r#"
-- One SMISMEMBER and two SADDs for the page, not one SADD per link.
local fps, out, fresh, firsts = {}, {}, {}, {}
for i = 4, #ARGV do fps[#fps + 1] = ARGV[i] end
if #fps == 0 then return out end
local known = each_chunk('SMISMEMBER', P .. 'seen', fps)
for i, fp in ipairs(fps) do
  if known[i] == 0 and not firsts[fp] then
    firsts[fp] = true
    fresh[#fresh + 1] = fp
    out[i] = '1'
  else
    out[i] = '0'
  end
end
-- A page whose host's lease lapsed (its worker stalled) is queued again:
-- its links are not claimed, so whoever fetches it again finds them even
-- if this worker dies before its lease end, which would leave them seen
-- with no lease of its left for the reaper to find. Its lease end queues
-- those still unseen.
local host = ARGV[3]
if host ~= '' and redis.call('GET', P .. 'lease:' .. host) ~= ARGV[2] then return out end
each_chunk('SADD', P .. 'seen', fresh)
each_chunk('SADD', P .. 'claims:' .. ARGV[2], fresh)
return out
"#;

const CLAIM: &str = r#"
local worker, ttl, now, r = ARGV[2], ARGV[3], ARGV[4], tonumber(ARGV[5])
local batch = tonumber(ARGV[11])
local first = 14 + tonumber(ARGV[12])
local a, due_by, best = affinity(worker, ARGV[13]), tonumber(now), {}
for i = 14, first - 1 do give_back(ARGV[i], worker) end
if a.grace > 0 then
  redis.call('HSET', P .. 'asking', worker, now)
  spread(worker, due_by, 14, first - 1)
end
for l = 0, 4 do
  local due = redis.call('ZRANGEBYSCORE', P .. 'sched:' .. l, '-inf', now, 'WITHSCORES', 'LIMIT', 0, AFFINITY_SCAN)
  for i = 1, #due, 2 do
    local since = tonumber(due[i + 1])
    if due_for(a, due[i], since) <= due_by then
      best[l] = {due[i], since, false}
      break
    end
  end
end
for i = first, #ARGV, 3 do
  local l, since, host = tonumber(ARGV[i]), tonumber(ARGV[i + 1]), ARGV[i + 2]
  local b = best[l]
  if b == nil or since < b[2] or (since == b[2] and not b[3]) then best[l] = {host, since, true} end
end
local total = 0
for l = 0, 4 do if best[l] then total = total + tonumber(ARGV[6 + l]) end end
if total == 0 then return {} end
local x, pick = r * total, nil
for l = 0, 4 do
  if best[l] then
    pick = l
    x = x - tonumber(ARGV[6 + l])
    if x < 0 then break end
  end
end
local host, is_local = best[pick][1], best[pick][3]
if is_local then
  if redis.call('GET', P .. 'lease:' .. host) ~= worker then return {'lost', host} end
  redis.call('PEXPIRE', P .. 'lease:' .. host, ttl)
  return take_head(host, 'local', batch)
end
-- Out of sched before resched, which skips the ZREMs of a leased host.
redis.call('ZREM', P .. 'sched:' .. pick, host)
if not redis.call('SET', P .. 'lease:' .. host, worker, 'NX', 'PX', ttl) then
  resched(host)
  return {'retry'}
end
redis.call('HSET', P .. 'held', host, worker)
own(host, worker)
return take_head(host, 'claimed', batch)
"#;

const END_LEASE: &str = r#"
local host, member, mode = ARGV[4], ARGV[5], ARGV[6]
if ARGV[7] ~= '' then redis.call('HSET', P .. 'nb', host, ARGV[7]) end
-- A completed URL's score is not needed: HDEL alone says it was in flight.
local score = mode == 'complete' or redis.call('HGET', P .. 'inflight:' .. host, member)
if score and redis.call('HDEL', P .. 'inflight:' .. host, member) == 1 then
  count('inflight', -1)
  if mode == 'release' then
    enqueue(host, member, 0, score)
  elseif mode == 'requeue' then
    enqueue(host, member, level_of(score), nil)
  end
elseif mode == 'complete' then
  -- Served from the worker's batch (still queued), or queued again by the
  -- reaper after the lease expired: done all the same.
  dequeue(host, member)
elseif mode == 'requeue' then
  local queued_at = dequeue(host, member)
  if queued_at then enqueue(host, member, level_of(queued_at), nil) end
end
local out = {'0'}
if mode == 'complete' then out = push_entries(8, ARGV[2], ARGV[3], true) end
resched(host)
return out
"#;

const NOT_BEFORE: &str = r#"
local host = ARGV[2]
redis.call('HSET', P .. 'nb', host, ARGV[3])
if ARGV[4] ~= '' then
  -- The worker has nothing of the host out: anything in flight is a take
  -- whose answer the connection lost.
  give_back(host, ARGV[4])
else
  resched(host)
end
return {}
"#;

const RELEASE_HOSTS: &str = r#"
for i = 3, #ARGV do give_back(ARGV[i], ARGV[2]) end
return {}
"#;

const HOLD: &str = r#"
local host = ARGV[2]
local bits = tonumber(redis.call('HGET', P .. 'holds', host) or '0')
bits = bit.band(bit.bor(bits, tonumber(ARGV[3])), bit.bnot(tonumber(ARGV[4])))
if bits == 0 then redis.call('HDEL', P .. 'holds', host) else redis.call('HSET', P .. 'holds', host, bits) end
resched(host)
return {}
"#;

const REAP: &str = r#"
local held = redis.call('HGETALL', P .. 'held')
local n, dead = 0, {}
for i = 1, #held, 2 do
  local host, owner = held[i], held[i + 1]
  local lease = redis.call('GET', P .. 'lease:' .. host)
  if not lease or (owner == ARGV[2] and lease == owner) then
    if lease then
      redis.call('DEL', P .. 'lease:' .. host)
    else
      -- Its owner is gone or stalled: anyone may take it when it is due.
      unown(host)
    end
    n = n + requeue_inflight(host)
    redis.call('HDEL', P .. 'held', host)
    -- An expired lease may have been rescheduled meanwhile; a live one not.
    resched(host, lease ~= false)
    dead[owner] = true
  end
end
-- Links a lost worker claimed but never queued are unseen again: the pages
-- that had them are fetched again and find them anew.
if ARGV[2] ~= '' then dead[ARGV[2]] = true end
for owner, _ in pairs(dead) do unsee_claims(owner) end
return {tostring(n)}
"#;

const RENEW: &str = r#"
local lost = {}
for i = 4, #ARGV do
  local host = ARGV[i]
  if redis.call('GET', P .. 'lease:' .. host) == ARGV[2] then
    redis.call('PEXPIRE', P .. 'lease:' .. host, ARGV[3])
  else
    lost[#lost + 1] = host
  end
end
return lost
"#;

const WAKEUP: &str = r#"
local a, min = affinity(ARGV[2], ARGV[3]), nil
for l = 0, 4 do
  local top = redis.call('ZRANGE', P .. 'sched:' .. l, 0, AFFINITY_SCAN - 1, 'WITHSCORES')
  for i = 1, #top, 2 do
    local since = tonumber(top[i + 1])
    -- Scores ascend: nothing further down is due sooner.
    if min ~= nil and since >= min then break end
    local due = due_for(a, top[i], since)
    if min == nil or due < min then min = due end
  end
end
if min ~= nil then min = string.format('%.0f', min) end
local others = 0
for _, w in ipairs(redis.call('HVALS', P .. 'held')) do
  if w ~= ARGV[2] then others = others + 1 end
end
return {min or '', tostring(others)}
"#;

const REMOVE: &str = r#"
local host, target, out = ARGV[2], ARGV[3], {}
for i = 4, #ARGV do
  local score = dequeue(host, ARGV[i])
  if score then
    if target ~= '' then
      redis.call('ZADD', target, score, ARGV[i])
      redis.call('SADD', P .. 'parked_keys', target)
      redis.call('HINCRBY', P .. 'parked_hosts', host, 1)
      count('parked', 1)
    end
    out[#out + 1] = ARGV[i]
  end
end
resched(host)
return out
"#;

const PARK_NEW: &str = r#"
local key, claims, n = ARGV[2], ARGV[3], 0
for i = 4, #ARGV, 4 do
  local member, level, host = ARGV[i], tonumber(ARGV[i + 1]), ARGV[i + 3]
  redis.call('SADD', P .. 'seen', ARGV[i + 2])
  redis.call('SREM', claims, ARGV[i + 2])
  local score = level * LEVEL + redis.call('INCR', P .. 'seq')
  if redis.call('ZADD', key, 'NX', score, member) == 1 then
    redis.call('HINCRBY', P .. 'parked_hosts', host, 1)
    count('parked', 1)
    n = n + 1
  end
end
redis.call('SADD', P .. 'parked_keys', key)
return {tostring(n)}
"#;

const UNPARK: &str = r#"
local key, mode, n, touched = ARGV[2], ARGV[3], 0, {}
for i = 4, #ARGV, 2 do
  local member, host = ARGV[i], ARGV[i + 1]
  local score = redis.call('ZSCORE', key, member)
  if score then
    redis.call('ZREM', key, member)
    redis.call('HINCRBY', P .. 'parked_hosts', host, -1)
    count('parked', -1)
    if mode == 'unpark' then
      enqueue(host, member, 0, score)
      touched[host] = true
    end
    n = n + 1
  end
end
for host, _ in pairs(touched) do resched(host) end
if redis.call('EXISTS', key) == 0 then redis.call('SREM', P .. 'parked_keys', key) end
return {tostring(n)}
"#;
