package redisson

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/go-rlock/rlock/internal/redistest"
	"github.com/go-rlock/rlock/internal/testsupport"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A thread woken by "0" makes one round trip (PING) before its acquire with
// WithSlowWake, none without; woken by the holder's TTL it tries at once
// either way.
func TestSlowWake(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		opts  []Option
		lease time.Duration // the holder's: 0, it unlocks; else it lets the lease run out
		want  []string
	}{
		{"Redisson's waiter acquires at once on a \"0\"", nil, 0, []string{"acquire"}},
		{"a slow waiter pings first on a \"0\"", []Option{WithSlowWake()}, 0, []string{"ping", "acquire"}},
		{"a slow waiter woken by the TTL acquires at once", []Option{WithSlowWake()}, 300 * time.Millisecond, []string{"acquire"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := redistest.Start(t)
			ctx := testsupport.Ctx(t)
			holder := newProcess(t, srv)
			rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
			t.Cleanup(func() { _ = rdb.Close() })
			log := &commandLog{}
			rdb.AddHook(log)
			waiter := NewClient(rdb, tc.opts...)
			t.Cleanup(func() { _ = waiter.Close() })

			lh := holder.GetLock("slow")
			require.NoError(t, lh.Lock(ctx, 1, tc.lease))
			got := lockAsync(ctx, waiter.GetLock("slow"), 1)
			testsupport.Eventually(t, 5*time.Second, "the waiter tried again once subscribed", func() bool {
				return waiter.threads("slow") == 1 && len(log.take(false)) >= 2
			})
			log.take(true)
			if tc.lease == 0 {
				require.NoError(t, lh.Unlock(ctx, 1))
			}
			assert.Equal(t, int64(1), testsupport.Recv(t, got, notByTTL, "the waiter got the lock"))
			cmds := log.take(true)
			if tc.lease > 0 {
				// Woken by the TTL, a thread that wakes a little early on a
				// loaded machine finds the key still there and tries again:
				// only acquires, never a ping, is what "at once" means.
				require.NotEmpty(t, cmds)
				for _, c := range cmds {
					assert.Equal(t, "acquire", c, "%v", cmds)
				}
				return
			}
			assert.Equal(t, tc.want, cmds)
		})
	}
}

// A semaphore's waiter woken by a count makes one round trip (PING) before
// its acquire with WithSlowWake, none without.
func TestSlowWakeSemaphore(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		opts []Option
		want []string
	}{
		{"Redisson's waiter acquires at once on a count", nil, []string{"acquire"}},
		{"a slow waiter pings first on a count", []Option{WithSlowWake()}, []string{"ping", "acquire"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := redistest.Start(t)
			ctx := testsupport.Ctx(t)
			holder := newProcess(t, srv).GetPermitExpirableSemaphore("slow-sem")
			_, err := holder.TrySetPermits(ctx, 1)
			require.NoError(t, err)
			id, err := holder.Acquire(ctx, -1)
			require.NoError(t, err)
			rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
			t.Cleanup(func() { _ = rdb.Close() })
			log := &commandLog{}
			rdb.AddHook(log)
			waiter := NewClient(rdb, tc.opts...)
			t.Cleanup(func() { _ = waiter.Close() })
			got := make(chan error, 1)
			go func() {
				_, err := waiter.GetPermitExpirableSemaphore("slow-sem").Acquire(ctx, -1)
				got <- err
			}()
			testsupport.Eventually(t, 5*time.Second, "the waiter tried again once subscribed", func() bool {
				return waiter.threadsOn(SemaphoreChannel("slow-sem")) == 1 && len(log.take(false)) >= 2
			})
			log.take(true)
			require.NoError(t, holder.Release(ctx, id))
			require.NoError(t, testsupport.Recv(t, got, notByTTL, "the waiter got the permit"))
			assert.Equal(t, tc.want, log.take(true))
		})
	}
}

func TestNewClientRefusesANilOption(t *testing.T) {
	t.Parallel()
	assert.PanicsWithValue(t, "redisson: NewClient: nil Option", func() { NewClient(nil, nil) })
}

// commandLog is a go-redis hook that records the PINGs and acquire scripts
// a client sends, in order.
type commandLog struct {
	mu   sync.Mutex
	cmds []string
}

func (h *commandLog) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		return next(ctx, network, addr)
	}
}

func (h *commandLog) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		args := cmd.Args()
		name := ""
		switch {
		case cmd.Name() == "ping":
			name = "ping"
		case len(args) > 1 && (args[1] == acquireScript.Hash() || args[1] == acquireScriptSource ||
			args[1] == semAcquireScript.Hash() || args[1] == semAcquireScriptSource) && !redis.HasErrorPrefix(err, "NOSCRIPT"):
			name = "acquire"
		}
		if name != "" {
			h.mu.Lock()
			h.cmds = append(h.cmds, name)
			h.mu.Unlock()
		}
		return err
	}
}

func (h *commandLog) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// take returns the commands recorded so far, and forgets them when clear.
func (h *commandLog) take(clear bool) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := append([]string(nil), h.cmds...)
	if clear {
		h.cmds = nil
	}
	return out
}
