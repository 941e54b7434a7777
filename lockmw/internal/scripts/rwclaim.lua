-- rwclaim takes over a hold of a read-write lock handed to a waiter: its full
-- TTL (rw_renew). KEYS[1] the hash, KEYS[2] the fencing counter; ARGV[1] hf,
-- ARGV[2] TTL in ms, ARGV[3] "1" when a writer takes fencing tokens.
-- Returns {1, token}, or {0} when the claim window passed.
if not rw_renew(KEYS[1], ARGV[1], ARGV[2]) then
  return {0}
end
return {1, rw_token(ARGV[1], ARGV[3], KEYS[2])}
