-- forceunlock deletes the lock whoever holds it and hands it on like a release.
-- ARGV[1] 'publish' or 'spublish'. Returns 1 when a lock existed, else 0.
local meta = rlock_meta()
if redis.call('del', KEYS[1]) == 1 then
  rlock_handoff(ARGV[1], '', meta)
  return 1
end
return 0
