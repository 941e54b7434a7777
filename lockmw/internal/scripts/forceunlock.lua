-- forceunlock deletes the lock whoever holds it and hands it on like a release.
-- ARGV[1] 'publish' or 'spublish', ARGV[2] the fencing counter's TTL in ms. Returns 1 when a lock existed, else 0.
if redis.call('exists', KEYS[1]) == 1 then
  rlock_handoff(ARGV[1], '', ARGV[2], nil, nil, rlockReserveWindow)
  return 1
end
return 0
