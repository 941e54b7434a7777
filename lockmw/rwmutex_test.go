package lockmw_test

import (
	"context"
	"testing"
	"time"

	"github.com/go-rlock/rlock/internal/redisson"
	"github.com/go-rlock/rlock/internal/redistest"
	"github.com/go-rlock/rlock/internal/testsupport"
	"github.com/go-rlock/rlock/internal/testsupport/locktest"
	"github.com/go-rlock/rlock/lockmw"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// rwHash is what the hash of a read-write lock holds: its mode and fields.
func rwHash(t *testing.T, srv *redistest.Server, name string) map[string]string {
	t.Helper()
	h, err := srv.Client().HGetAll(context.Background(), name).Result()
	require.NoError(t, err)
	return h
}

func TestRWMutexReadersShareWritersExclude(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := testsupport.Ctx(t)
	a, b := locktest.NewOn(t, srv), locktest.NewOn(t, srv)
	ra, rb := a.RWMutex("rw-share"), b.RWMutex("rw-share")

	r1, err := ra.TryRLock(ctx, 0, 0)
	require.NoError(t, err)
	r2, err := rb.TryRLock(ctx, 0, 0)
	require.NoError(t, err, "readers of two clients share")
	r3, err := ra.TryRLock(ctx, 0, 0)
	require.NoError(t, err, "a second reader of one client shares too")

	h := rwHash(t, srv, "rw-share")
	assert.Equal(t, "read", h["mode"])
	assert.Len(t, h, 4, "mode and three reader fields: %v", h)

	_, err = rb.TryLock(ctx, 0, 0)
	var busy *lockmw.BusyError
	require.ErrorAs(t, err, &busy, "a writer waits for the readers")
	assert.ErrorIs(t, err, lockmw.ErrNotAcquired)

	for _, r := range []struct {
		rw   *lockmw.RWMutex
		hold context.Context
	}{{ra, r1}, {rb, r2}, {ra, r3}} {
		require.NoError(t, r.rw.RUnlock(r.hold))
	}
	assert.ErrorIs(t, ra.RUnlock(r1), lockmw.ErrNotHeld)
	assert.Empty(t, rwHash(t, srv, "rw-share"), "the last reader deletes the hash")

	w, err := ra.TryLock(ctx, 0, 0)
	require.NoError(t, err)
	h = rwHash(t, srv, "rw-share")
	assert.Equal(t, "write", h["mode"])
	_, err = rb.TryRLock(ctx, 0, 0)
	assert.ErrorIs(t, err, lockmw.ErrNotAcquired, "a writer excludes readers")
	_, err = rb.TryLock(ctx, 0, 0)
	assert.ErrorIs(t, err, lockmw.ErrNotAcquired, "and writers")
	_, err = ra.TryLock(ctx, 0, 0)
	assert.ErrorIs(t, err, lockmw.ErrNotAcquired, "a context without the hold is another owner")
	require.NoError(t, ra.Unlock(w))
	assert.ErrorIs(t, ra.Unlock(w), lockmw.ErrNotHeld)
	assert.Empty(t, rwHash(t, srv, "rw-share"))
}

func TestRWMutexWire(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := testsupport.Ctx(t)
	c := locktest.NewOn(t, srv)
	rw := c.RWMutex("rw-wire")
	rdb := srv.Client()

	r, err := rw.RLock(ctx)
	require.NoError(t, err)
	r2, err := rw.RLock(r)
	require.NoError(t, err)
	h := rwHash(t, srv, "rw-wire")
	require.Len(t, h, 2)
	var field string
	for f, v := range h {
		if f != "mode" {
			field = f
			assert.Equal(t, "2", v, "two read levels")
		}
	}
	assert.Regexp(t, "^"+c.ID()+`:\d+$`, field, "a reader's field is <clientID>:<ownerID>")
	// One transaction reads the TTLs at one instant: a renewal round of the
	// Client's between separate reads gave a level key read after it more
	// TTL than the hash read before it (a make stress run).
	var ttls [3]*redis.DurationCmd
	_, err = rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		ttls[0] = p.PTTL(ctx, "rw-wire")
		for n := 1; n <= 2; n++ {
			ttls[n] = p.PTTL(ctx, redisson.ReadTimeoutKey("rw-wire", field, n))
		}
		return nil
	})
	require.NoError(t, err)
	hashTTL := ttls[0].Val()
	for n := 1; n <= 2; n++ {
		ttl := ttls[n].Val()
		assert.Positive(t, ttl, "level %d has its timeout key", n)
		assert.LessOrEqual(t, ttl, hashTTL, "the hash lives at least as long as each level key")
	}
	require.NoError(t, rw.RUnlock(r2))
	n, err := rdb.Exists(ctx, redisson.ReadTimeoutKey("rw-wire", field, 2)).Result()
	require.NoError(t, err)
	assert.Zero(t, n, "a released level's key goes")

	// Redisson's waiters hear the last reader's "0".
	sub := rdb.Subscribe(ctx, redisson.RWChannel("rw-wire"))
	defer sub.Close()
	_, err = sub.Receive(ctx)
	require.NoError(t, err)
	require.NoError(t, rw.RUnlock(r))
	msg, err := sub.ReceiveMessage(ctx)
	require.NoError(t, err)
	assert.Equal(t, "0", msg.Payload, "a read release that deletes the hash publishes 0")
	n, err = rdb.Exists(ctx, redisson.ReadTimeoutKey("rw-wire", field, 1)).Result()
	require.NoError(t, err)
	assert.Zero(t, n)

	w, err := rw.Lock(ctx)
	require.NoError(t, err)
	h = rwHash(t, srv, "rw-wire")
	assert.Equal(t, "write", h["mode"])
	assert.Len(t, h, 2)
	for f := range h {
		if f != "mode" {
			assert.Regexp(t, "^"+c.ID()+`:\d+:write$`, f, "the writer's field")
		}
	}
	require.NoError(t, rw.Unlock(w))
	msg, err = sub.ReceiveMessage(ctx)
	require.NoError(t, err)
	assert.Equal(t, "1", msg.Payload, "a write release that deletes the hash publishes 1")
}

func TestRWMutexReentryAndDowngrade(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := testsupport.Ctx(t)
	c, other := locktest.NewOn(t, srv), locktest.NewOn(t, srv)
	rw := c.RWMutex("rw-reenter")

	t.Run("the writer re-enters both sides", func(t *testing.T) {
		w, err := rw.Lock(ctx)
		require.NoError(t, err)
		w2, err := c.RWMutex("rw-reenter").TryLock(w, 0, 0)
		require.NoError(t, err, "write re-entry")
		r, err := rw.TryRLock(w2, 0, 0)
		require.NoError(t, err, "the writer takes the read side")
		r2, err := rw.TryRLock(w, 0, 0)
		require.NoError(t, err, "again, from the write context: the same read hold")
		h := rwHash(t, srv, "rw-reenter")
		assert.Equal(t, "write", h["mode"])
		assert.Len(t, h, 3, "mode, the writer's field and its reader field: %v", h)

		_, err = other.RWMutex("rw-reenter").TryRLock(ctx, 0, 0)
		assert.ErrorIs(t, err, lockmw.ErrNotAcquired, "others' readers wait while the writer holds")

		require.NoError(t, rw.Unlock(w2))
		require.NoError(t, rw.Unlock(w), "the downgrade: the write side goes, the read side stays")
		require.ErrorIs(t, w.Err(), context.Canceled)
		require.NoError(t, r.Err(), "the read hold outlives the write hold")
		assert.Equal(t, "read", rwHash(t, srv, "rw-reenter")["mode"])

		or, err := other.RWMutex("rw-reenter").TryRLock(ctx, 0, 0)
		require.NoError(t, err, "another reader joins the downgraded lock")
		require.NoError(t, other.RWMutex("rw-reenter").RUnlock(or))

		require.NoError(t, rw.RUnlock(r2))
		require.NoError(t, r.Err())
		require.NoError(t, rw.RUnlock(r))
		assert.ErrorIs(t, r.Err(), context.Canceled)
		assert.Empty(t, rwHash(t, srv, "rw-reenter"))
	})

	t.Run("a reader re-enters and cannot upgrade", func(t *testing.T) {
		r, err := rw.RLock(ctx)
		require.NoError(t, err)
		r2, err := rw.RLock(r)
		require.NoError(t, err)
		_, err = rw.TryLock(r2, time.Second, 0)
		assert.ErrorIs(t, err, lockmw.ErrUpgrade, "at once, not after the wait")
		assert.ErrorIs(t, err, lockmw.ErrInvalidArgument)
		_, err = rw.Lock(r)
		assert.ErrorIs(t, err, lockmw.ErrUpgrade)
		require.NoError(t, rw.RUnlock(r2))
		require.NoError(t, rw.RUnlock(r))
		assert.Empty(t, rwHash(t, srv, "rw-reenter"))
	})
}

func TestRWMutexHandsOffWithoutPolling(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := testsupport.Ctx(t)
	// A watchdog of 10 minutes: a waiter that polled or slept on the TTL
	// would not get the lock within the test.
	a := locktest.NewOn(t, srv, lockmw.WithWatchdogTimeout(10*time.Minute))
	b := locktest.NewOn(t, srv, lockmw.WithWatchdogTimeout(10*time.Minute))
	rw := a.RWMutex("rw-handoff")

	w, err := rw.Lock(ctx)
	require.NoError(t, err)
	readers := make(chan context.Context, 3)
	errs := make(chan error, 4)
	for range 3 {
		go func() {
			h, err := b.RWMutex("rw-handoff").RLock(ctx)
			errs <- err
			readers <- h
		}()
	}
	rwWaitQueued(t, srv, "rw-handoff", 3)
	require.NoError(t, rw.Unlock(w))
	var hs []context.Context
	for range 3 {
		require.NoError(t, <-errs)
		hs = append(hs, <-readers)
	}
	assert.Len(t, rwHash(t, srv, "rw-handoff"), 4, "the three readers were let in together")

	writer := make(chan context.Context, 1)
	go func() {
		h, err := a.RWMutex("rw-handoff").Lock(ctx)
		errs <- err
		writer <- h
	}()
	rwWaitQueued(t, srv, "rw-handoff", 1)
	for _, h := range hs {
		require.NoError(t, b.RWMutex("rw-handoff").RUnlock(h))
	}
	require.NoError(t, <-errs)
	require.NoError(t, rw.Unlock(<-writer))
}

// rwWaitQueued waits until n waiters are queued for name.
func rwWaitQueued(t *testing.T, srv *redistest.Server, name string, n int64) {
	t.Helper()
	require.Eventually(t, func() bool {
		got, err := srv.Client().ZCard(context.Background(), "rlock_queue:{"+name+"}").Result()
		return err == nil && got == n
	}, 10*time.Second, 5*time.Millisecond, "%d waiters queued for %q", n, name)
}

func TestRWMutexRenewalAndLoss(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := testsupport.Ctx(t)
	renewed := make(chan lockmw.RenewalEvent, 16)
	// Renewed every second: a round may be 2 s late on a loaded machine (with
	// 1.5 s the hold was lost by its timer, no renewal came again, and the
	// loop below waited for ever).
	c := locktest.NewOn(t, srv, lockmw.WithWatchdogTimeout(3*time.Second), lockmw.WithHooks(lockmw.Hooks{
		Renewal: func(e lockmw.RenewalEvent) {
			select {
			case renewed <- e:
			default:
			}
		},
	}))
	rw := c.RWMutex("rw-renew")
	r, err := rw.RLock(ctx)
	require.NoError(t, err)
	r2, err := rw.RLock(r)
	require.NoError(t, err)
	w, err := c.RWMutex("rw-renew-w").Lock(ctx)
	require.NoError(t, err)

	// Two renewals of each: a reader level's key and the writer's hash
	// outlive the watchdog timeout only if renewed. A renewal that fails (a
	// loaded machine) is retried at the next tick; none finds a hold gone.
	ok := map[string]int{}
	for ok["read"] < 2 || ok["write"] < 2 {
		select {
		case e := <-renewed:
			for _, l := range e.Locks {
				require.NotEqual(t, lockmw.RenewalLost, l.Outcome, "%s %s", l.Name, l.Mode)
				if l.Outcome == lockmw.RenewalOK {
					ok[l.Mode]++
				}
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("renewals: %v", ok)
		}
	}
	require.NoError(t, r.Err())
	require.NoError(t, w.Err())
	var field string
	for f := range rwHash(t, srv, "rw-renew") {
		if f != "mode" {
			field = f
		}
	}
	for n := 1; n <= 2; n++ {
		ttl, err := srv.Client().PTTL(ctx, redisson.ReadTimeoutKey("rw-renew", field, n)).Result()
		require.NoError(t, err)
		assert.Positive(t, ttl, "level %d's key is renewed", n)
	}

	// Someone deletes the keys: both holds learn it at the next renewal.
	require.NoError(t, srv.Client().Del(ctx, "rw-renew", "rw-renew-w").Err())
	for _, h := range []context.Context{r, r2, w} {
		select {
		case <-h.Done():
		case <-time.After(10 * time.Second):
			t.Fatal("the hold context did not end")
		}
		assert.ErrorIs(t, context.Cause(h), lockmw.ErrLockLost)
	}
	assert.ErrorIs(t, rw.RUnlock(r2), lockmw.ErrLockLost)
	assert.ErrorIs(t, c.RWMutex("rw-renew-w").Unlock(w), lockmw.ErrLockLost)
}

func TestRWMutexFencing(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := testsupport.Ctx(t)
	a, b := locktest.NewOn(t, srv), locktest.NewOn(t, srv)
	rw := a.RWMutex("rw-fence", lockmw.WithFencing())
	w, err := rw.Lock(ctx)
	require.NoError(t, err)
	t1, ok := rw.Token(w)
	require.True(t, ok)
	assert.Positive(t, t1)
	inner, err := rw.Lock(w)
	require.NoError(t, err)
	ti, _ := rw.Token(inner)
	assert.Equal(t, t1, ti, "a re-entry has the token of its hold")
	r, err := rw.RLock(w)
	require.NoError(t, err)
	_, ok = rw.Token(r)
	assert.True(t, ok, "the read hold's context carries the write hold too")

	got := make(chan context.Context, 1)
	errs := make(chan error, 1)
	rb := b.RWMutex("rw-fence", lockmw.WithFencing())
	go func() {
		h, err := rb.Lock(ctx)
		errs <- err
		got <- h
	}()
	rwWaitQueued(t, srv, "rw-fence", 1)
	require.NoError(t, rw.RUnlock(r))
	require.NoError(t, rw.Unlock(inner))
	require.NoError(t, rw.Unlock(w))
	require.NoError(t, <-errs)
	h := <-got
	t2, ok := rb.Token(h)
	require.True(t, ok, "a writer handed the lock gets a token")
	assert.Greater(t, t2, t1, "tokens grow")
	require.NoError(t, rb.Unlock(h))

	_, ok = a.RWMutex("rw-fence").Token(w)
	assert.False(t, ok, "without WithFencing no token")
	assert.NotContains(t, rwHash(t, srv, "rw-fence"), "rlock:token", "the hash holds Redisson's fields only")
}

func TestRWMutexBadInput(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := testsupport.Ctx(t)
	c := locktest.NewOn(t, srv)
	bad := c.RWMutex("")
	assert.ErrorIs(t, bad.Err(), lockmw.ErrInvalidName)
	for name, call := range map[string]func() error{
		"RLock":   func() error { _, err := bad.RLock(ctx); return err },
		"Lock":    func() error { _, err := bad.Lock(ctx); return err },
		"RUnlock": func() error { return bad.RUnlock(ctx) },
		"Unlock":  func() error { return bad.Unlock(ctx) },
		"RLocker": func() error { _, err := bad.RLocker().TryLock(ctx, 0, 0); return err },
	} {
		assert.ErrorIs(t, call(), lockmw.ErrInvalidName, name)
	}
	assert.NotPanics(t, func() { c.RWMutex("rw-nil-option", nil) }, "a nil option is skipped")
	rw := c.RWMutex("rw-bad")
	_, err := rw.TryRLock(ctx, -time.Second, 0)
	assert.ErrorIs(t, err, lockmw.ErrInvalidArgument)
	_, err = rw.TryLock(ctx, 0, -time.Second)
	assert.ErrorIs(t, err, lockmw.ErrInvalidArgument)
	assert.ErrorIs(t, rw.RUnlock(ctx), lockmw.ErrNotHeld, "a context that holds nothing")
	assert.ErrorIs(t, rw.Unlock(ctx), lockmw.ErrNotHeld)
	var nilRW *lockmw.RWMutex
	err = lockmw.WithLock(ctx, nilRW, func(context.Context) error { return nil })
	assert.ErrorIs(t, err, lockmw.ErrInvalidArgument)

	r, err := rw.RLock(ctx)
	require.NoError(t, err)
	assert.ErrorIs(t, rw.Unlock(r), lockmw.ErrNotHeld, "the write side's Unlock of a read hold")
	w, err := c.RWMutex("rw-bad-w").Lock(ctx)
	require.NoError(t, err)
	assert.ErrorIs(t, c.RWMutex("rw-bad-w").RUnlock(w), lockmw.ErrNotHeld, "the read side's of a write hold")
	require.NoError(t, rw.RUnlock(r))
	require.NoError(t, c.RWMutex("rw-bad-w").Unlock(w))
}

func TestRWMutexUnlockAt(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := testsupport.Ctx(t)
	c := locktest.NewOn(t, srv)
	for _, write := range []bool{false, true} {
		rw := c.RWMutex("rw-unlockat")
		h, err := rwLockSide(ctx, rw, write)
		require.NoError(t, err)
		side := lockmw.Locker(rw)
		if !write {
			side = rw.RLocker()
		}
		at := time.Now().Add(300 * time.Millisecond)
		require.NoError(t, side.(interface {
			UnlockAt(context.Context, time.Time) error
		}).UnlockAt(h, at))
		require.Error(t, h.Err(), "the hold context ends at once")
		ttl, err := srv.Client().PTTL(ctx, "rw-unlockat").Result()
		require.NoError(t, err)
		assert.Positive(t, ttl, "write=%v: held until at", write)
		assert.LessOrEqual(t, ttl, 300*time.Millisecond, "write=%v: and no longer", write)
		_, err = c.RWMutex("rw-unlockat").TryLock(ctx, 0, 0)
		assert.ErrorIs(t, err, lockmw.ErrNotAcquired, "write=%v: still held", write)
		w, err := c.RWMutex("rw-unlockat").TryLock(ctx, 5*time.Second, 0)
		require.NoError(t, err, "write=%v: free once at has passed", write)
		require.NoError(t, c.RWMutex("rw-unlockat").Unlock(w))
	}
}

// A MultiLock takes an RWMutex's sides as members: the write side (the
// RWMutex) and the read side (RLocker), beside a mutex.
func TestRWMutexInMultiLock(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := testsupport.Ctx(t)
	a, b := locktest.NewOn(t, srv), locktest.NewOn(t, srv)
	ml := a.MultiLock(a.RWMutex("rw-multi-r").RLocker(), a.RWMutex("rw-multi-w"), a.Mutex("rw-multi-m"))
	require.NoError(t, ml.Err())
	h, err := ml.Lock(ctx)
	require.NoError(t, err)
	assert.Equal(t, "read", rwHash(t, srv, "rw-multi-r")["mode"])
	assert.Equal(t, "write", rwHash(t, srv, "rw-multi-w")["mode"])
	r, err := b.RWMutex("rw-multi-r").TryRLock(ctx, 0, 0)
	require.NoError(t, err, "another reader shares the multi-lock's read side")
	_, err = b.RWMutex("rw-multi-w").TryRLock(ctx, 0, 0)
	assert.ErrorIs(t, err, lockmw.ErrNotAcquired, "its write side excludes readers")
	require.NoError(t, b.RWMutex("rw-multi-r").RUnlock(r))
	require.NoError(t, ml.Unlock(h))
	assert.Empty(t, rwHash(t, srv, "rw-multi-r"))
	assert.Empty(t, rwHash(t, srv, "rw-multi-w"))
}
