-- touch writes to a hold of ours without changing it, so that a WAIT right
-- after it on the same connection waits for the replicas to have everything
-- up to and including our acquisition. The write must be one the server
-- propagates to its replicas: since Redis 7.2 (and in Valkey) WAIT waits
-- for the connection's last write that was propagated, and a script's
-- effects are propagated command by command, only those that changed the
-- data set. HINCRBY by 0 of a lock's field (a hash) always counts as a
-- change; ZINCRBY by 0 of a sorted set's member does not (a no-op, not
-- propagated: WAIT then waited for nothing), so a permit's score is moved
-- by 1 and set back to the very value it had (ZSCORE's reply is exact).
-- ARGV[1] field. Returns 1 when held, else 0.
local kind = redis.call('type', KEYS[1])['ok']
if kind == 'hash' then -- a mutex's field, or an RWMutex writer's
  for _, f in ipairs({ARGV[1], ARGV[1] .. ':write'}) do
    if redis.call('hexists', KEYS[1], f) == 1 then
      redis.call('hincrby', KEYS[1], f, 0)
      return 1
    end
  end
end
if kind == 'zset' then
  local score = redis.call('zscore', KEYS[1], ARGV[1])
  if score then
    redis.call('zincrby', KEYS[1], 1, ARGV[1])
    redis.call('zadd', KEYS[1], score, ARGV[1])
    return 1
  end
end
return 0
