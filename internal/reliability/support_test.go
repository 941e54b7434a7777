package reliability_test

import (
	"context"
	"testing"
	"time"

	"github.com/go-rlock/rlock/internal/redistest"
	"github.com/go-rlock/rlock/internal/reliability"
	"github.com/go-rlock/rlock/internal/testsupport"
	"github.com/go-rlock/rlock/internal/testsupport/locktest"
	"github.com/go-rlock/rlock/lockmw"
	"github.com/go-rlock/rlock/lockmw/backend/goredis"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// GuardedWrite (a go-redis client) and GuardedWriteOn (a lockmw back-end,
// as a worker on any client writes) take the same writes.
func TestGuardedWriteRejectsOlderTokens(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := testsupport.CtxFor(t, 10*time.Second)
	rdb := srv.Client()
	for _, w := range []struct {
		name  string
		write func(ctx context.Context, key string, token int64, value string) (bool, error)
	}{
		{"through go-redis", func(ctx context.Context, key string, token int64, value string) (bool, error) {
			return reliability.GuardedWrite(ctx, rdb, key, token, value)
		}},
		{"through a back-end", func(ctx context.Context, key string, token int64, value string) (bool, error) {
			return reliability.GuardedWriteOn(ctx, goredis.New(rdb), key, token, value)
		}},
	} {
		t.Run(w.name, func(t *testing.T) {
			require.NoError(t, rdb.ScriptFlush(ctx).Err()) // EVALSHA finds no script: EVAL
			key := "resource " + w.name
			for _, step := range []struct {
				token int64
				value string
				taken bool
			}{
				{3, "a", true},
				{3, "b", true}, // the same holder writes again
				{5, "c", true},
				{4, "stale", false},
				{1, "older", false},
				{6, "d", true},
			} {
				ok, err := w.write(ctx, key, step.token, step.value)
				require.NoError(t, err)
				assert.Equal(t, step.taken, ok, "token %d", step.token)
			}
			v, err := rdb.HGet(ctx, key, "value").Result()
			require.NoError(t, err)
			assert.Equal(t, "d", v)
		})
	}
}

func TestSendHookRecordsScriptsOnly(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := testsupport.CtxFor(t, 10*time.Second)
	rdb := srv.NewClient()
	rdb.AddHook(reliability.SendHook{})
	c := lockmw.New(rdb, lockmw.WithHooks(lockmw.Hooks{
		HoldStart: func(ctx context.Context, e lockmw.HoldStartEvent) context.Context {
			return reliability.WithToken(ctx, e.Token)
		},
	}))
	defer c.Close()

	sctx, st := reliability.WithSendTimes(ctx)
	assert.True(t, st.Last().IsZero())
	require.NoError(t, rdb.Ping(sctx).Err())
	assert.True(t, st.Last().IsZero(), "a PING is not a script")

	before := time.Now()
	m := c.Mutex("send-times", lockmw.WithFencing())
	h, err := m.Lock(sctx)
	require.NoError(t, err)
	after := time.Now()
	last := st.Last()
	assert.False(t, last.Before(before) || last.After(after), "the acquire was sent during Lock")
	tok, _ := m.Token(h)
	assert.Equal(t, tok, reliability.TokenOf(h), "HoldStart's context is the hold context's parent")
	assert.Zero(t, reliability.TokenOf(ctx))

	_, err = rdb.Pipelined(sctx, func(p redis.Pipeliner) error {
		p.Eval(sctx, "return 1", nil)
		return nil
	})
	require.NoError(t, err)
	assert.True(t, st.Last().After(last), "a pipeline with a script")
	require.NoError(t, m.Unlock(h))
}

// ScriptSends records the scripts sent without a SendTimes context (lockmw's
// background calls) by their string arguments, per client, and bounds a
// renewal's send by the latest of them: the earliest over the clients.
func TestScriptSendsRecordsBackgroundScripts(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := testsupport.CtxFor(t, 10*time.Second)
	sends := new(reliability.ScriptSends)
	one, two := srv.NewClient(), srv.NewClient()
	one.AddHook(sends.Hook())
	two.AddHook(sends.Hook())
	late := time.Now().Add(time.Hour)

	before := time.Now()
	require.NoError(t, one.Eval(ctx, "return 1", []string{"k"}, "field-1").Err())
	after := time.Now()
	got := sends.RenewalSent(late, "field-1")
	assert.False(t, got.Before(before) || got.After(after), "sent during Eval")
	early := before.Add(-time.Second)
	assert.Equal(t, early, sends.RenewalSent(early, "field-1"), "an estimate before the send stands")
	assert.Equal(t, late, sends.RenewalSent(late, "field-2"), "nothing recorded: the estimate")

	require.NoError(t, two.Eval(ctx, "return 1", []string{"k"}, "field-1").Err())
	assert.Equal(t, got, sends.RenewalSent(late, "field-1"), "the earliest of the clients' latest sends")

	sctx, _ := reliability.WithSendTimes(ctx)
	_, err := one.Pipelined(sctx, func(p redis.Pipeliner) error {
		p.Eval(sctx, "return 1", nil, "field-3")
		return nil
	})
	require.NoError(t, err)
	assert.Equal(t, late, sends.RenewalSent(late, "field-3"), "a call's script (SendTimes) is not a background one")
	_, err = one.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.Eval(ctx, "return 1", nil, "field-3")
		return nil
	})
	require.NoError(t, err)
	assert.True(t, sends.RenewalSent(late, "field-3").Before(time.Now()), "a pipeline's script")
}

// The Renewal hook's now minus the script's duration is late by however
// long the renewing goroutine did not run between the reply and the hook;
// here an earlier hook sleeps there, as a loaded machine or a pause would.
// The reply was in when the first hook ran, so the renewal reached the key
// before that: the bound ScriptSends gives is never later, the estimate is.
// The worker names a hold's script argument by its field, and a writer's by
// Redisson's ":write" after it: every kind is found.
func TestScriptSendsBoundALateRenewalHook(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		lock func(c *lockmw.Client) lockmw.Locker
	}{
		{"a mutex", func(c *lockmw.Client) lockmw.Locker { return c.Mutex("late-renewal-hook") }},
		{"a permit", func(c *lockmw.Client) lockmw.Locker { return c.Semaphore("late-renewal-hook", 2) }},
		{"a read hold", func(c *lockmw.Client) lockmw.Locker { return c.RWMutex("late-renewal-hook").RLocker() }},
		{"a write hold", func(c *lockmw.Client) lockmw.Locker { return c.RWMutex("late-renewal-hook") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s, locked := lateRenewal(t, tc.lock)
			assert.False(t, s.bound.After(s.replied), "the bound (%v before the first hook) is no later than the reply", s.replied.Sub(s.bound))
			assert.True(t, s.bound.After(locked), "the bound is the renewal's, after the acquisition")
			t.Logf("the estimate was %v after the first hook ran, the bound %v before", s.estimate.Sub(s.replied), s.replied.Sub(s.bound))
		})
	}
}

// lateRenewal holds lock's Locker until its first renewal that succeeds
// (taking it again when a hold ends first: locktest.FirstRenewal), whose
// Renewal hook runs 50ms late, and returns what the worker's hook would see: when
// the first hook ran (the reply was in), the estimate, and ScriptSends'
// bound; and when the lock was taken.
func lateRenewal(t *testing.T, lock func(c *lockmw.Client) lockmw.Locker) (lateSeen, time.Time) {
	srv := redistest.Start(t)
	ctx := testsupport.CtxFor(t, 20*time.Second)
	sends := new(reliability.ScriptSends)
	rdb := srv.NewClient()
	rdb.AddHook(sends.Hook())
	got := make(chan lateSeen, 1)
	var replied time.Time
	// A watchdog of 3s: renewals every second, each given a second; the
	// first one that succeeds is the one looked at.
	c := lockmw.New(rdb, lockmw.WithWatchdogTimeout(3*time.Second), lockmw.WithHooks(lockmw.Hooks{
		HoldStart: func(ctx context.Context, e lockmw.HoldStartEvent) context.Context {
			return reliability.WithField(ctx, e.Field)
		},
		Renewal: func(lockmw.RenewalEvent) {
			replied = time.Now()
			time.Sleep(50 * time.Millisecond) // the goroutine does not run
		},
	}), lockmw.WithHooks(lockmw.Hooks{Renewal: func(e lockmw.RenewalEvent) {
		estimate := time.Now().Add(-e.Duration)
		for _, l := range e.Locks {
			arg := reliability.FieldOf(l.Context)
			if l.Mode == "write" {
				arg += ":write" // as the worker names it
			}
			if l.Outcome == lockmw.RenewalOK {
				select {
				case got <- lateSeen{replied, estimate, sends.RenewalSent(estimate, arg)}:
				default:
				}
			}
		}
	}}))
	defer c.Close()
	m := lock(c)
	var locked time.Time
	s, _, h := locktest.FirstRenewal(t, ctx, got, func(int) (lockmw.Locker, context.Context) {
		locked = time.Now()
		h, err := m.Lock(ctx)
		require.NoError(t, err)
		return m, h
	}, nil)
	require.NoError(t, m.Unlock(h))
	return s, locked
}

// lateSeen is what a late Renewal hook saw.
type lateSeen struct{ replied, estimate, bound time.Time }

// On a quorum's masters, each hooked as a client of its own, Last is the
// earliest of their last sends: a bound for every master's key.
func TestSendTimesEarliestOfTheClients(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := testsupport.CtxFor(t, 10*time.Second)
	one, two := srv.NewClient(), srv.NewClient()
	one.AddHook(reliability.SendHook{Client: 0})
	two.AddHook(reliability.SendHook{Client: 1})
	sctx, st := reliability.WithSendTimes(ctx)
	require.NoError(t, one.Eval(sctx, "return 1", nil).Err())
	between := time.Now()
	require.NoError(t, two.Eval(sctx, "return 1", nil).Err())
	assert.False(t, st.Last().After(between), "the first client's send, not the second's")
	require.NoError(t, one.Eval(sctx, "return 1", nil).Err())
	assert.True(t, st.Last().After(between), "each client's last send")
}
