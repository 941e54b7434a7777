package locktest

import (
	"context"
	"errors"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

// ErrInjected is the error of every command that a [FailHook] fails.
var ErrInjected = errors.New("locktest: injected failure")

// FailHook is a go-redis hook that fails every command, alone or in a
// pipeline, with [ErrInjected] while On is set: Redis down for the client it
// is added to (rdb.AddHook), and only for that client.
type FailHook struct{ On atomic.Bool }

// DialHook dials as usual.
func (h *FailHook) DialHook(next redis.DialHook) redis.DialHook { return next }

// ProcessHook fails the command while h.On is set.
func (h *FailHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if h.On.Load() {
			cmd.SetErr(ErrInjected)
			return ErrInjected
		}
		return next(ctx, cmd)
	}
}

// ProcessPipelineHook fails every command of the pipeline while h.On is set.
func (h *FailHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if h.On.Load() {
			for _, cmd := range cmds {
				cmd.SetErr(ErrInjected)
			}
			return ErrInjected
		}
		return next(ctx, cmds)
	}
}
