package lockmw_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/go-rlock/rlock/internal/faultproxy"
	"github.com/go-rlock/rlock/internal/redistest"
	"github.com/go-rlock/rlock/internal/testsupport"
	"github.com/go-rlock/rlock/internal/testsupport/locktest"
	"github.com/go-rlock/rlock/lockmw"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A wait rides out a transient error on any attempt, its first included
// (lockmw/retrywait.go), for both lock kinds that wait in the queue; only
// what trying again cannot fix ends it at once. Every client here has
// go-redis's default options: MaxRetries 3, so a command is sent at most
// goRedisTries times before its error reaches lockmw.

// goRedisTries is how often go-redis (default options) sends one command
// whose reply it did not get: once, and MaxRetries (3) more times.
const goRedisTries = 4

// patience bounds the waits of these tests: far longer than they take,
// even on a loaded machine.
const patience = 30 * time.Second

// waitLock is a lock kind that waits in the queue, as these tests use it.
type waitLock interface {
	TryLock(ctx context.Context, wait, lease time.Duration) (context.Context, error)
	Unlock(ctx context.Context) error
}

// waitKind is one lock kind: how to make one, and how to store a value of
// the wrong type under its name.
type waitKind struct {
	name  string
	of    func(c *lockmw.Client, name string) waitLock
	spoil func(ctx context.Context, rdb redis.UniversalClient, name string) error
}

var waitKinds = []waitKind{
	{"a mutex", func(c *lockmw.Client, name string) waitLock { return c.Mutex(name) },
		func(ctx context.Context, rdb redis.UniversalClient, name string) error {
			return rdb.Set(ctx, name, "not a lock", 0).Err() // the lock is a hash
		}},
	{"a semaphore", func(c *lockmw.Client, name string) waitLock { return c.Semaphore(name, 1) },
		func(ctx context.Context, rdb redis.UniversalClient, name string) error {
			_, err := rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
				p.Del(ctx, name) // the count is a string
				p.RPush(ctx, name, "not a count")
				return nil
			})
			return err
		}},
}

// isAcquire reports whether cmd is an acquisition attempt on name: the
// mutex's RESTORE (the fast path) or the acquire script of either kind (5
// keys, the name first).
func isAcquire(cmd faultproxy.Command, name string) bool {
	switch cmd.Name {
	case "restore":
		return len(cmd.Args) > 0 && cmd.Args[0] == name
	case "evalsha", "eval":
		return isAcquireScript(cmd, name)
	}
	return false
}

// isAcquireScript reports whether cmd is the acquire script of either kind on name.
func isAcquireScript(cmd faultproxy.Command, name string) bool {
	return (cmd.Name == "evalsha" || cmd.Name == "eval") && len(cmd.Args) > 2 && cmd.Args[1] == "5" && cmd.Args[2] == name
}

// resetFirst is a rule that resets the connection in the middle of the
// replies of the first n commands that match accepts (the commands ran),
// counting them in fired and closing hit at the first.
func resetFirst(n int32, match func(faultproxy.Command) bool, fired *atomic.Int32, hit chan<- struct{}) faultproxy.Rule {
	var once sync.Once
	return func(c faultproxy.Command) faultproxy.Action {
		if !match(c) || fired.Add(1) > n {
			return faultproxy.Forward
		}
		if hit != nil {
			once.Do(func() { close(hit) })
		}
		return faultproxy.ResetMidReply
	}
}

// proxiedClient returns a fault proxy in front of srv and a lockmw Client
// whose go-redis client, with default options, connects through it.
func proxiedClient(t *testing.T, srv *redistest.Server) (*faultproxy.Proxy, *lockmw.Client) {
	t.Helper()
	p, err := faultproxy.Start(srv.Addr())
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Close() })
	rdb := redis.NewClient(&redis.Options{Addr: p.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	return p, locktest.New(t, rdb)
}

func TestWaitRidesOutConnectionResets(t *testing.T) {
	t.Parallel()
	for _, kind := range waitKinds {
		t.Run(kind.name, func(t *testing.T) {
			t.Parallel()
			srv := redistest.Start(t)
			ctx := testsupport.Ctx(t)
			for _, tc := range []struct {
				name   string
				resets int32
			}{
				// go-redis re-sends a command whose connection was reset: this
				// one never reaches lockmw.
				{"the first acquisition's reply is cut off once", 1},
				// More than go-redis's tries: the first attempt fails, and so
				// does the wait's first retry, once.
				{"the first 6 acquisitions' replies are cut off", goRedisTries + 2},
			} {
				t.Run(tc.name, func(t *testing.T) {
					p, c := proxiedClient(t, srv)
					name := "transient-reset-" + kind.name + "-" + tc.name
					var fired atomic.Int32
					p.SetRule(resetFirst(tc.resets, func(cmd faultproxy.Command) bool { return isAcquire(cmd, name) }, &fired, nil))
					l := kind.of(c, name)
					h, err := l.TryLock(ctx, patience, 0)
					require.NoError(t, err, "a reset does not end the wait")
					assert.Equal(t, tc.resets, min(fired.Load(), tc.resets), "every reset was made")
					require.NoError(t, l.Unlock(h))
				})
			}
			t.Run("a single attempt still fails at once", func(t *testing.T) {
				p, c := proxiedClient(t, srv)
				name := "transient-reset-single-" + kind.name
				var fired atomic.Int32
				p.SetRule(resetFirst(goRedisTries, func(cmd faultproxy.Command) bool { return isAcquire(cmd, name) }, &fired, nil))
				_, err := kind.of(c, name).TryLock(ctx, 0, 0)
				require.Error(t, err)
				assert.NotErrorIs(t, err, lockmw.ErrNotAcquired, "the Redis error, not a wait's end")
				assert.Equal(t, int32(goRedisTries), fired.Load(), "go-redis tried %d times, then gave up", goRedisTries)
			})
		})
	}
}

// A waiter whose first attempt queued it but lost its reply keeps that
// place: the lock goes to it before a waiter that came later.
func TestWaitKeepsItsPlaceAfterAFailedFirstAttempt(t *testing.T) {
	t.Parallel()
	for _, kind := range waitKinds {
		t.Run(kind.name, func(t *testing.T) {
			t.Parallel()
			srv := redistest.Start(t)
			ctx := testsupport.Ctx(t)
			name := "transient-place"
			holder := kind.of(locktest.NewOn(t, srv), name)
			h, err := holder.TryLock(ctx, 0, 0)
			require.NoError(t, err)
			// A single attempt on the busy lock loads the acquire script, so
			// that the one B sends runs (not NOSCRIPT).
			_, err = kind.of(locktest.NewOn(t, srv), name).TryLock(ctx, 0, 0)
			require.ErrorIs(t, err, lockmw.ErrNotAcquired)

			// B: every reply of its first acquire script is cut off, after
			// the script queued it.
			p, cb := proxiedClient(t, srv)
			var fired atomic.Int32
			queued := make(chan struct{})
			p.SetRule(resetFirst(goRedisTries, func(cmd faultproxy.Command) bool { return isAcquireScript(cmd, name) }, &fired, queued))
			type result struct {
				who string
				l   waitLock
				h   context.Context
				err error
			}
			got := make(chan result, 2)
			var wg sync.WaitGroup
			defer wg.Wait()
			wait := func(who string, l waitLock) {
				wg.Add(1)
				go func() {
					defer wg.Done()
					h, err := l.TryLock(ctx, patience, 0)
					got <- result{who, l, h, err}
				}()
			}
			wait("B", kind.of(cb, name))
			testsupport.Recv(t, queued, patience, "B's first attempt ran")
			// C comes after B.
			wait("C", kind.of(locktest.NewOn(t, srv), name))
			testsupport.Eventually(t, patience, "B and C are queued", func() bool {
				n, err := srv.Client().ZCard(ctx, "rlock_queue:{"+name+"}").Result()
				return err == nil && n == 2
			})
			require.NoError(t, holder.Unlock(h))
			for _, want := range []string{"B", "C"} {
				r := testsupport.Recv(t, got, patience, want+" acquires")
				require.NoError(t, r.err, r.who)
				assert.Equal(t, want, r.who, "the queue's order")
				require.NoError(t, r.l.Unlock(r.h))
			}
			assert.Equal(t, int32(goRedisTries), min(fired.Load(), goRedisTries), "B's first attempt failed")
		})
	}
}

// failureSignal is a go-redis hook that closes failed at the first command
// or pipeline that fails, as its caller sees it (after go-redis's retries).
type failureSignal struct {
	once   sync.Once
	failed chan struct{}
}

func newFailureSignal() *failureSignal { return &failureSignal{failed: make(chan struct{})} }

func (h *failureSignal) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *failureSignal) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if err != nil && !errors.Is(err, redis.Nil) {
			h.once.Do(func() { close(h.failed) })
		}
		return err
	}
}

func (h *failureSignal) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		if err != nil && !errors.Is(err, redis.Nil) {
			h.once.Do(func() { close(h.failed) })
		}
		return err
	}
}

// refusedClient is a go-redis client with default options on addr, a
// testsupport.ClosedAddr: every dial is refused, and no server a parallel
// test starts can take the port (one that took a stopped server's port
// once let a wait acquire there: make stress).
func refusedClient(t *testing.T, addr string) *redis.Client {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	t.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

// A server that is down when the wait starts and back a moment later: the
// wait goes on and acquires, for a fresh Client and for one whose
// subscription connection is already open.
func TestWaitRidesOutAServerRestart(t *testing.T) {
	t.Parallel()
	for _, kind := range waitKinds {
		for _, warm := range []bool{false, true} {
			what := kind.name + ", a fresh Client"
			if warm {
				what = kind.name + ", a Client already subscribed"
			}
			t.Run(what, func(t *testing.T) {
				t.Parallel()
				srv := redistest.Start(t)
				ctx := testsupport.Ctx(t)
				rdb := srv.NewClient(defaultOptions)
				c := locktest.New(t, rdb)
				if warm {
					warmUp(t, srv, kind, c)
				}
				sig := newFailureSignal()
				rdb.AddHook(sig)
				require.NoError(t, srv.Stop())
				restarted := make(chan error, 1)
				go func() {
					<-sig.failed // the first attempt failed: the server comes back
					restarted <- srv.Restart()
				}()
				l := kind.of(c, "transient-restart")
				h, err := l.TryLock(ctx, patience, 0)
				require.NoError(t, testsupport.Recv(t, restarted, patience, "the server restarted"))
				require.NoError(t, err, "the wait outlives the server's absence")
				require.NoError(t, l.Unlock(h))
			})
		}
	}
}

// warmUp has c wait for a lock once, so that its subscription connection
// is open (it lingers for a watchdog interval).
func warmUp(t *testing.T, srv *redistest.Server, kind waitKind, c *lockmw.Client) {
	t.Helper()
	ctx := testsupport.Ctx(t)
	const name = "transient-warm"
	holder := kind.of(locktest.NewOn(t, srv), name)
	h, err := holder.TryLock(ctx, 0, 0)
	require.NoError(t, err)
	w := kind.of(c, name)
	done := make(chan error, 1)
	go func() {
		hw, err := w.TryLock(ctx, patience, 0)
		if err == nil {
			err = w.Unlock(hw)
		}
		done <- err
	}()
	testsupport.Eventually(t, patience, "the warm-up waiter is queued", func() bool {
		n, err := srv.Client().ZCard(ctx, "rlock_queue:{"+name+"}").Result()
		return err == nil && n == 1
	})
	require.NoError(t, holder.Unlock(h))
	require.NoError(t, testsupport.Recv(t, done, patience, "the warm-up waiter acquired"))
}

// When the wait or the context ends while Redis fails, the error says both:
// not acquired, and the last Redis error (here, the refused dial).
func TestWaitEndedByRedisFailures(t *testing.T) {
	t.Parallel()
	for _, kind := range waitKinds {
		t.Run(kind.name, func(t *testing.T) {
			t.Parallel()
			down := testsupport.ClosedAddr(t)
			// go-redis takes over a second to give up on a refused dial
			// (5 dials per try, 4 tries): 300ms end before it, 3s after it.
			for _, wait := range []time.Duration{300 * time.Millisecond, 3 * time.Second} {
				l := kind.of(locktest.New(t, refusedClient(t, down)), "transient-down")
				start := time.Now()
				_, err := l.TryLock(testsupport.Ctx(t), wait, 0)
				assert.GreaterOrEqual(t, time.Since(start), wait, "the wait went on")
				assert.ErrorIs(t, err, lockmw.ErrNotAcquired, "wait %v", wait)
				assert.ErrorIs(t, err, syscall.ECONNREFUSED, "the last Redis error (wait %v)", wait)
				var busy *lockmw.BusyError
				assert.False(t, errors.As(err, &busy), "no holder was seen: %v", err)
			}

			// The context ends once an attempt has failed.
			rdb := refusedClient(t, down)
			sig := newFailureSignal()
			rdb.AddHook(sig)
			l := kind.of(locktest.New(t, rdb), "transient-down")
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			go func() {
				select {
				case <-sig.failed:
					cancel()
				case <-ctx.Done():
				}
			}()
			_, err := l.TryLock(ctx, lockmw.Forever, 0)
			assert.ErrorIs(t, err, lockmw.ErrNotAcquired)
			assert.ErrorIs(t, err, context.Canceled)
			assert.ErrorIs(t, err, syscall.ECONNREFUSED, "the last Redis error")
		})
	}
}

// What trying again cannot fix ends a wait at once, on its first attempt or
// a later one.
func TestWaitEndsAtOnceOnWhatRetryingCannotFix(t *testing.T) {
	t.Parallel()
	for _, kind := range waitKinds {
		t.Run(kind.name, func(t *testing.T) {
			t.Parallel()
			srv := redistest.Start(t)
			ctx := testsupport.Ctx(t)
			// A wait that ended would match ErrNotAcquired; one that
			// returned at once has the Redis error alone.
			endedAtOnce := func(t *testing.T, err error) {
				t.Helper()
				require.Error(t, err)
				assert.NotErrorIs(t, err, lockmw.ErrNotAcquired, "returned at once: %v", err)
			}

			t.Run("WRONGTYPE on the first attempt", func(t *testing.T) {
				name := "transient-wrongtype-first"
				require.NoError(t, kind.spoil(ctx, srv.Client(), name))
				_, err := kind.of(locktest.New(t, srv.NewClient(defaultOptions)), name).TryLock(ctx, patience, 0)
				endedAtOnce(t, err)
				assert.True(t, redis.HasErrorPrefix(err, "WRONGTYPE"), "%v", err)
			})

			t.Run("WRONGTYPE on a later attempt", func(t *testing.T) {
				name := "transient-wrongtype-later"
				holder := kind.of(locktest.NewOn(t, srv), name)
				_, err := holder.TryLock(ctx, 0, 0)
				require.NoError(t, err)
				waiter := kind.of(locktest.New(t, srv.NewClient(defaultOptions)), name)
				done := make(chan error, 1)
				go func() {
					_, err := waiter.TryLock(ctx, patience, 0)
					done <- err
				}()
				testsupport.Eventually(t, patience, "the waiter is queued", func() bool {
					n, err := srv.Client().ZCard(ctx, "rlock_queue:{"+name+"}").Result()
					return err == nil && n == 1
				})
				// The lock is replaced by a string (a list) and the
				// waiter woken, as an unlock would.
				require.NoError(t, kind.spoil(ctx, srv.Client(), name))
				channel, msg := "redisson_lock__channel:{"+name+"}", "0"
				if kind.name == "a semaphore" {
					channel, msg = "redisson_sc:{"+name+"}", "1"
				}
				require.NoError(t, srv.Client().Publish(ctx, channel, msg).Err())
				err = testsupport.Recv(t, done, patience, "the waiter returns")
				endedAtOnce(t, err)
				assert.True(t, redis.HasErrorPrefix(err, "WRONGTYPE"), "%v", err)
			})

			t.Run("a closed go-redis client", func(t *testing.T) {
				rdb := srv.NewClient(defaultOptions)
				c := locktest.New(t, rdb)
				require.NoError(t, rdb.Close())
				_, err := kind.of(c, "transient-closed-redis").TryLock(ctx, patience, 0)
				endedAtOnce(t, err)
				assert.ErrorIs(t, err, redis.ErrClosed)
			})
		})
	}
}

// Closing the Client ends a wait that is riding out a failing Redis: with
// ErrClosed, not the Redis error.
func TestWaitOnAFailingRedisEndsAtClose(t *testing.T) {
	t.Parallel()
	for _, kind := range waitKinds {
		t.Run(kind.name, func(t *testing.T) {
			t.Parallel()
			rdb := refusedClient(t, testsupport.ClosedAddr(t))
			sig := newFailureSignal()
			rdb.AddHook(sig)
			c := lockmw.New(rdb)
			done := make(chan error, 1)
			go func() {
				_, err := kind.of(c, "transient-close").TryLock(testsupport.Ctx(t), patience, 0)
				done <- err
			}()
			testsupport.Recv(t, sig.failed, patience, "the first attempt failed")
			require.NoError(t, c.Close())
			err := testsupport.Recv(t, done, patience, "the wait ends")
			assert.ErrorIs(t, err, lockmw.ErrClosed)
		})
	}
}
