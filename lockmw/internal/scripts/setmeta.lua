-- setmeta stores a hook's metadata with locks that are still ours, so that
-- waiters read it back with their busy reply. KEYS are lock names; ARGV[2i-1]
-- is the field for KEYS[i] and ARGV[2i] the metadata.
for i = 1, #KEYS do
  if redis.call('hexists', KEYS[i], ARGV[2 * i - 1]) == 1 then
    redis.call('hset', KEYS[i], 'rlock:meta', ARGV[2 * i])
  end
end
return 0
