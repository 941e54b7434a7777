package lockmw_test

import (
	"context"
	"net"
	"strings"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

// countScripts is a go-redis hook that counts the lock commands sent:
// EVAL, EVALSHA and RESTORE.
type countScripts struct{ n *atomic.Int64 }

func (h countScripts) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) { return next(ctx, network, addr) }
}

func (h countScripts) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if strings.HasPrefix(cmd.Name(), "eval") || cmd.Name() == "restore" {
			h.n.Add(1)
		}
		return next(ctx, cmd)
	}
}

func (h countScripts) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, c := range cmds {
			if strings.HasPrefix(c.Name(), "eval") || c.Name() == "restore" {
				h.n.Add(1)
			}
		}
		return next(ctx, cmds)
	}
}
