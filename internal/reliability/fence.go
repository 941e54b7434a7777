package reliability

import (
	"context"
	"fmt"

	"github.com/go-rlock/rlock/lockmw/backend"
	"github.com/redis/go-redis/v9"
)

// guardedWriteSource is the resource a fenced lock protects, kept in one
// Redis hash: it takes a write only when the writer's token is not lower than
// the highest token it has seen, the check the fencing-token pattern asks of
// a storage service.
const guardedWriteSource = `
local high = tonumber(redis.call('hget', KEYS[1], 'token') or '0')
local tok = tonumber(ARGV[1])
if tok < high then
  return 0
end
redis.call('hset', KEYS[1], 'token', tok, 'value', ARGV[2])
return 1
`

var (
	guardedWriteScript = redis.NewScript(guardedWriteSource)
	guardedWriteLua    = backend.NewScript(guardedWriteSource)
)

// GuardedWrite stores value in the resource at key for the holder of token
// and reports whether the resource took it: false when it has already seen a
// higher token, that is a newer holder.
func GuardedWrite(ctx context.Context, rdb redis.Scripter, key string, token int64, value string) (bool, error) {
	n, err := guardedWriteScript.Run(ctx, rdb, []string{key}, token, value).Int()
	if err != nil {
		return false, fmt.Errorf("reliability: guarded write %q: %w", key, err)
	}
	return n == 1, nil
}

// GuardedWriteOn is GuardedWrite through a lockmw back-end, whatever its
// client: EVALSHA, then EVAL when Redis does not know the script, the
// commands go-redis's Script.Run sends.
func GuardedWriteOn(ctx context.Context, b backend.Backend, key string, token int64, value string) (bool, error) {
	cmd := backend.NewCmd("evalsha", guardedWriteLua.SHA(), 1, key, token, value)
	if err := b.Process(ctx, cmd); backend.IsNoScript(err) {
		cmd = backend.NewCmd("eval", guardedWriteLua.Source(), 1, key, token, value)
		_ = b.Process(ctx, cmd) // its error is cmd's
	}
	n, err := cmd.Int()
	if err != nil {
		return false, fmt.Errorf("reliability: guarded write %q: %w", key, err)
	}
	return n == 1, nil
}
