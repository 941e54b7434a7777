-- touch writes to a lock we hold without changing it (HINCRBY by 0), so that
-- a WAIT right after it on the same connection waits for the replicas to
-- have everything up to and including our acquisition.
-- ARGV[1] field. Returns 1 when held, else 0.
if redis.call('hexists', KEYS[1], ARGV[1]) == 1 then
  redis.call('hincrby', KEYS[1], ARGV[1], 0)
  return 1
end
return 0
