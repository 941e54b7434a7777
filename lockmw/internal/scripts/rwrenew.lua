-- rwrenew renews every read-write hold of a batch still there (the
-- watchdog, and the claim of a hold handed over): a reader's level keys and
-- the hash, a writer's hash (rw_renew). KEYS are hashes (one hash slot on a
-- cluster); ARGV[1] the TTL in ms and ARGV[1+i] the field for KEYS[i].
-- Returns one entry per key: 1 renewed, 0 gone.
local out = {}
for i = 1, #KEYS do
  if rw_renew(KEYS[i], ARGV[i + 1], ARGV[1]) then
    out[i] = 1
  else
    out[i] = 0
  end
end
return out
