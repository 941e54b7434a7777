package lockmw

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/go-rlock/rlock/internal/redistest"
	"github.com/go-rlock/rlock/internal/testsupport"
	"github.com/go-rlock/rlock/lockmw/backend"
	"github.com/go-rlock/rlock/lockmw/internal/scripts"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// mergedRuns records the short releases the pipelines carried: the number
// of locks of each EVALSHA of fastrelease.lua.
type mergedRuns struct {
	mu      sync.Mutex
	locks   []int
	args    [][]any  // the command lines of the runs of more than one lock
	badArgs []string // arguments of any command that the seam cannot carry (backend.ArgString)
}

func (m *mergedRuns) DialHook(next redis.DialHook) redis.DialHook { return next }

func (m *mergedRuns) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		m.mu.Lock()
		m.checkArgs(cmd)
		m.mu.Unlock()
		return next(ctx, cmd)
	}
}

// checkArgs notes every argument of cmd that a back-end other than
// go-redis's could not send: lockmw's commands must keep to the types
// backend.Cmd's arguments promise (rueidis's back-end encodes with
// backend.ArgString), which go-redis, encoding more, does not check.
func (m *mergedRuns) checkArgs(cmd redis.Cmder) {
	for _, a := range cmd.Args() {
		if _, err := backend.ArgString(a); err != nil {
			m.badArgs = append(m.badArgs, fmt.Sprintf("%v: %v", cmd.Args()[1], err))
		}
	}
}

func (m *mergedRuns) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		m.mu.Lock()
		for _, c := range cmds {
			m.checkArgs(c)
			if a := c.Args(); len(a) > 3 && a[0] == "evalsha" && a[1] == scripts.FastReleaseSHA {
				n := (len(a[3:]) - 3) / 5 // the run's latch, 4 keys per lock, 2 arguments, a field per lock
				m.locks = append(m.locks, n)
				if n > 1 {
					m.args = append(m.args, a)
				}
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
			// names[1] has an rlock client subscribed (both channels, as
			// every rlock client subscribes): freed, and it hears the "0";
			// names[3] a Redisson waiter (its channel alone): the lock is
			// reserved for it (release.lua), not freed to whoever comes.
			rlockSub := srv.NewClient().Subscribe(ctx, c.Mutex(names[1]).k.channel, c.Mutex(names[1]).k.handoff)
			defer rlockSub.Close()
			redissonSub := srv.NewClient().Subscribe(ctx, c.Mutex(names[3]).k.channel)
			defer redissonSub.Close()
			// A reservation lasts a window of 8 round trips (20 ms here),
			// which a loaded machine outlasts before the test reads the
			// waiter table; a watcher subscribed as an rlock client is (both
			// channels: 2 subscribers of names[3]'s channel, 1 of its roll
			// call, so the Redisson waiter still counts) hears the
			// reservation's generation on the roll-call channel instead.
			k3 := c.Mutex(names[3]).k
			watcher := srv.NewClient().Subscribe(ctx, k3.channel, k3.handoff)
			defer watcher.Close()
			for _, sub := range []*redis.PubSub{rlockSub, redissonSub, watcher} {
				_, err := sub.Receive(ctx) // the subscription confirmed
				require.NoError(t, err)
			}
			if flush {
				require.NoError(t, srv.Client().ScriptFlush(ctx).Err())
			}

			errs := queuedBehind(t, srv, c, n, func(i int) error { return c.Mutex(names[i]).Unlock(holds[i]) })

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
				if i == 3 {
					continue // the watcher below
				}
				open, err := srv.Client().HExists(ctx, c.Mutex(names[i]).k.waiters, "rlock:open").Result()
				require.NoError(t, err)
				assert.False(t, open, "%s reserved for a Redisson waiter", names[i])
			}
			for {
				msg, err := watcher.ReceiveMessage(ctx)
				require.NoError(t, err, "%s reserved for a Redisson waiter: its generation on the roll call", names[3])
				if msg.Channel == k3.handoff {
					break
				}
			}
			for _, sub := range []*redis.PubSub{rlockSub, redissonSub} {
				msg, err := sub.ReceiveMessage(ctx)
				require.NoError(t, err)
				assert.Equal(t, "0", msg.Payload)
			}
			runs.mu.Lock()
			defer runs.mu.Unlock()
			assert.Contains(t, runs.locks, n, "one run of the script for the %d queued releases", n)
		})
	}
}

// queuedBehind runs call(0..n-1) on n goroutines once c's batcher has every
// round trip under way (TryLocks sent to a paused server), so that the n
// calls queue and go out in one pipeline when the server resumes, and
// returns their errors.
func queuedBehind(t *testing.T, srv *redistest.Server, c *Client, n int, call func(i int) error) []error {
	t.Helper()
	ctx := testsupport.Ctx(t)
	require.NoError(t, srv.Pause())
	ahead := make(chan error, maxInFlight)
	for i := range maxInFlight {
		go func() {
			_, err := c.Mutex(fmt.Sprint("ahead-", t.Name(), i)).TryLock(ctx, 0, time.Minute)
			ahead <- err
		}()
	}
	waitFull(t, c)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { errs[i] = call(i) })
	}
	testsupport.Eventually(t, 10*time.Second, "every call queued", func() bool {
		c.batch.mu.Lock()
		defer c.batch.mu.Unlock()
		return len(c.batch.queue) == n
	})
	require.NoError(t, srv.Resume())
	wg.Wait()
	for range maxInFlight {
		require.NoError(t, <-ahead)
	}
	return errs
}

// fastReleasesQueued locks n names (prefix and a number) on c, then sends
// their short releases queued behind round trips under way (queuedBehind),
// so that they go out in one pipeline; it returns the mutexes, their
// levels and the releases' errors (a release not done is one).
func fastReleasesQueued(t *testing.T, srv *redistest.Server, c *Client, prefix string, n int) ([]*Mutex, []*level, []error) {
	t.Helper()
	ctx := testsupport.Ctx(t)
	require.NoError(t, redis.NewScript(scripts.FastRelease.Source()).Load(ctx, srv.Client()).Err(), "the runs find their script")
	mxs := make([]*Mutex, n)
	lvls := make([]*level, n)
	for i := range n {
		mxs[i] = c.Mutex(fmt.Sprint(prefix, i))
		h, err := mxs[i].Lock(ctx)
		require.NoError(t, err)
		lvls[i] = mxs[i].findLevel(h)
	}
	errs := queuedBehind(t, srv, c, n, func(i int) error {
		done, err := mxs[i].fastRelease(ctx, lvls[i].h, lvls[i])
		if err == nil && !done {
			err = fmt.Errorf("release %d not done", i)
		}
		return err
	})
	return mxs, lvls, errs
}

// TestMergedRunLatch: a merged run of short releases sets one latch for
// all its locks, and each caller's level notes its place in it. A re-sent
// run (go-redis re-sends a pipeline whose reply it lost) answers 1 for the
// locks its first copy freed and frees nothing of a later holder; a caller
// that calls Unlock again (its reply lost) learns from release.lua that its
// lock was released, not lost. A level without the note finds nothing.
func TestMergedRunLatch(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := testsupport.Ctx(t)
	var runs mergedRuns
	c := hookedClient(t, srv, &runs)
	const n = 4
	mxs, lvls, errs := fastReleasesQueued(t, srv, c, "run-latch-", n)
	places := map[int32]bool{}
	for i, err := range errs {
		require.NoError(t, err, i)
		run, at := lvls[i].ran.of()
		assert.NotEmpty(t, run, "release %d noted its run", i)
		places[at] = true
	}
	assert.Equal(t, map[int32]bool{1: true, 2: true, 3: true, 4: true}, places, "each release has its own place in the run")
	runs.mu.Lock()
	require.Len(t, runs.args, 1, "one run of the %d releases", n)
	resend := runs.args[0]
	runs.mu.Unlock()

	// A later holder of the first name: a re-sent run must not free it.
	other := New(srv.NewClient())
	defer other.Close()
	later, err := other.Mutex(mxs[0].name).Lock(ctx)
	require.NoError(t, err)
	replies, err := srv.Client().Do(ctx, resend...).Slice()
	require.NoError(t, err)
	assert.Equal(t, []any{int64(1), int64(1), int64(1), int64(1)}, replies, "the re-sent run answers from its latch")
	held, err := srv.Client().Exists(ctx, mxs[0].name).Result()
	require.NoError(t, err)
	assert.Equal(t, int64(1), held, "the later holder keeps the lock")
	require.NoError(t, other.Mutex(mxs[0].name).Unlock(later))

	for i := range n {
		done, err := mxs[i].fastRelease(ctx, lvls[i].h, lvls[i])
		require.NoError(t, err)
		assert.False(t, done, "a second try of release %d changes nothing", i)
		r, err := c.store.release(ctx, mxs[i], releaseReq{h: lvls[i].h, lvl: lvls[i], last: true})
		require.NoError(t, err)
		assert.Equal(t, int64(1), r, "release %d: release.lua finds its place in the run's latch", i)
	}
	runs.mu.Lock()
	assert.Empty(t, runs.badArgs, "every argument is one the back-end seam carries")
	runs.mu.Unlock()
	bare := &level{h: lvls[1].h, reqID: lvls[1].reqID, latch: lvls[1].latch}
	bare.latchArg = argOf(&bare.latch)
	r, err := c.store.release(ctx, mxs[1], releaseReq{h: lvls[1].h, lvl: bare, last: true})
	require.NoError(t, err)
	assert.Equal(t, int64(-1), r, "without the note the field is just gone")
	for _, l := range lvls {
		l.h.end(endReleased, nil)
	}
}

// TestMergedRunsOfMoreThanMergeMax: releases queued beyond mergeMax go out
// in more than one run; one left over after the full runs goes alone, with
// its own reply, and every caller's lock is freed.
func TestMergedRunsOfMoreThanMergeMax(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := testsupport.Ctx(t)
	var runs mergedRuns
	c := hookedClient(t, srv, &runs)
	const n = mergeMax + 1
	mxs, lvls, errs := fastReleasesQueued(t, srv, c, "over-merge-max-", n)
	for i, err := range errs {
		assert.NoError(t, err, "release %d", i)
	}
	names := make([]string, n)
	for i, m := range mxs {
		names[i] = m.name
	}
	k, err := srv.Client().Exists(ctx, names...).Result()
	require.NoError(t, err)
	assert.Zero(t, k, "every lock freed")
	runs.mu.Lock()
	assert.Contains(t, runs.locks, mergeMax, "a full run")
	assert.Contains(t, runs.locks, 1, "the release left over, alone")
	runs.mu.Unlock()
	for _, l := range lvls {
		l.h.end(endReleased, nil)
	}
}
