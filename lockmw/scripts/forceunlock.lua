-- forceunlock deletes the lock whoever holds it and hands it on like a release.
-- ARGV[1] 'publish' or 'spublish'. Returns 1 when a lock existed, else 0.
if redis.call('exists', KEYS[1]) == 1 then
  rlock_handoff(ARGV[1], '')
  return 1
end
return 0
