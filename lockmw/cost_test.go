package lockmw_test

import (
	"context"
	"net"
	"sync"
	"testing"

	"github.com/go-rlock/rlock/internal/redistest"
	"github.com/go-rlock/rlock/lockmw"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// cmdLog records the names of the commands a go-redis client sends.
type cmdLog struct {
	mu    sync.Mutex
	names []string
}

func (l *cmdLog) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := l.names
	l.names = nil
	return n
}

func (l *cmdLog) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) { return next(ctx, network, addr) }
}

func (l *cmdLog) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		l.mu.Lock()
		l.names = append(l.names, cmd.Name())
		l.mu.Unlock()
		return next(ctx, cmd)
	}
}

func (l *cmdLog) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		l.mu.Lock()
		for _, c := range cmds {
			l.names = append(l.names, c.Name())
		}
		l.mu.Unlock()
		return next(ctx, cmds)
	}
}

func TestUncontendedCost(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := testCtx(t)
	var log cmdLog
	rdb := srv.NewClient()
	rdb.AddHook(&log)
	c := lockmw.New(rdb)
	t.Cleanup(func() { _ = c.Close() })
	m := c.Mutex("cost")
	h := mustLock(t, m, ctx) // loads the scripts (NOSCRIPT, then EVAL)
	require.NoError(t, m.Unlock(h))
	log.take()

	h = mustLock(t, m, ctx)
	assert.Equal(t, []string{"evalsha"}, log.take(), "an uncontended Lock is one EVALSHA")
	require.NoError(t, m.Unlock(h))
	assert.Equal(t, []string{"evalsha"}, log.take(), "an Unlock is one EVALSHA")
	h, err := m.TryLock(ctx, 0, 0)
	require.NoError(t, err)
	in := mustLock(t, m, h)
	require.NoError(t, m.Unlock(in))
	require.NoError(t, m.Unlock(h))
	log.take()

	// After a restart the server has no scripts: NOSCRIPT is handled.
	require.NoError(t, srv.Restart())
	h, err = m.TryLock(ctx, 0, 0)
	require.NoError(t, err, "NOSCRIPT after a restart")
	require.NoError(t, m.Unlock(h))
}
