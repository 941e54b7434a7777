-- touch writes to a hold of ours without changing it, so that a WAIT right
-- after it on the same connection waits for the replicas to have everything
-- up to and including our acquisition: HINCRBY by 0 of a lock's field (a
-- hash), ZINCRBY by 0 of a permit (a semaphore's sorted set of permits).
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
if kind == 'zset' and redis.call('zscore', KEYS[1], ARGV[1]) then
  redis.call('zincrby', KEYS[1], 0, ARGV[1])
  return 1
end
return 0
