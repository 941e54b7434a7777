package lockmw

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/go-rlock/rlock/internal/redistest"
	"github.com/go-rlock/rlock/internal/testsupport"
	"github.com/go-rlock/rlock/lockmw/internal/scripts"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// mergedRuns records the short releases the pipelines carried: the number
// of locks of each EVALSHA of fastrelease.lua.
type mergedRuns struct {
	mu    sync.Mutex
	locks []int
}

func (m *mergedRuns) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (m *mergedRuns) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }

func (m *mergedRuns) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		m.mu.Lock()
		for _, c := range cmds {
			if a := c.Args(); len(a) > 3 && a[0] == "evalsha" && a[1] == scripts.FastReleaseSHA {
				m.locks = append(m.locks, len(a[3:])/8)
			}
		}
		m.mu.Unlock()
		return next(ctx, cmds)
	}
}

// TestMergedReleasesAnswerEachCaller: the Unlocks queued behind a round
// trip go out as one run of fastrelease.lua over all their locks, and each
// caller gets its own answer: the lock freed (or handed to its waiter), or
// the error of its own lock (a key someone made a string) while the others
// are freed. When the server
// lost its scripts, each caller's own EVAL answers it.
func TestMergedReleasesAnswerEachCaller(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := testsupport.Ctx(t)
	for _, flush := range []bool{false, true} {
		t.Run(fmt.Sprintf("scripts flushed %t", flush), func(t *testing.T) {
			var runs mergedRuns
			rdb := srv.NewClient()
			rdb.AddHook(&runs)
			c := New(rdb)
			defer c.Close()
			const n = 6
			names := make([]string, n)
			holds := make([]context.Context, n)
			for i := range n {
				names[i] = fmt.Sprintf("merge-%t-%d", flush, i)
				h, err := c.Mutex(names[i]).Lock(ctx)
				require.NoError(t, err)
				holds[i] = h
			}
			spoilt := names[2] // a string now: its release fails, alone
			require.NoError(t, srv.Client().Set(ctx, spoilt, "x", time.Minute).Err())
			// names[4] has a waiter queued: its release hands it over (release.lua).
			other := New(srv.NewClient())
			defer other.Close()
			waiter := make(chan error, 1)
			go func() {
				m := other.Mutex(names[4])
				h, err := m.Lock(ctx)
				if err == nil {
					err = m.Unlock(h)
				}
				waiter <- err
			}()
			queue := c.Mutex(names[4]).keyArgs[2].(string)
			testsupport.Eventually(t, 10*time.Second, "a waiter queued", func() bool {
				n, err := srv.Client().Exists(ctx, queue).Result()
				return err == nil && n == 1
			})
			if flush {
				require.NoError(t, srv.Client().ScriptFlush(ctx).Err())
			}

			require.NoError(t, srv.Pause())
			ahead := make(chan error, maxInFlight)
			for i := range maxInFlight {
				go func() {
					_, err := c.Mutex(fmt.Sprint("ahead-", names[i])).TryLock(ctx, 0, time.Minute)
					ahead <- err
				}()
			}
			waitFull(t, c)
			errs := make([]error, n)
			var wg sync.WaitGroup
			for i := range n {
				wg.Go(func() { errs[i] = c.Mutex(names[i]).Unlock(holds[i]) })
			}
			testsupport.Eventually(t, 10*time.Second, "every Unlock queued", func() bool {
				c.batch.mu.Lock()
				defer c.batch.mu.Unlock()
				return len(c.batch.queue) == n
			})
			require.NoError(t, srv.Resume())
			wg.Wait()
			for range maxInFlight {
				require.NoError(t, <-ahead)
			}

			require.NoError(t, <-waiter, "the waiter got the lock handed over, and released it")
			for i, err := range errs {
				if names[i] == spoilt {
					assert.ErrorContains(t, err, "WRONGTYPE", "the spoilt lock's own error")
					continue
				}
				assert.NoError(t, err, names[i])
				k, err := srv.Client().Exists(ctx, names[i]).Result()
				require.NoError(t, err)
				assert.Zero(t, k, "%s freed", names[i])
			}
			runs.mu.Lock()
			defer runs.mu.Unlock()
			assert.Contains(t, runs.locks, n, "one run of the script for the %d queued releases", n)
		})
	}
}
