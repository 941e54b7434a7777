package reliability_test

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/go-rlock/rlock/internal/redistest"
	"github.com/go-rlock/rlock/internal/testsupport"
	"github.com/go-rlock/rlock/internal/testsupport/locktest"
	"github.com/go-rlock/rlock/lockmw"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestBadInput is scenario 6: every public entry point of lockmw with input
// that is wrong or at an edge. Each case gets a clear error or works, never a
// panic. lockmw/badinput_test.go already covers empty, over-long, invalid
// UTF-8 and control-character names on every Mutex method, negative waits
// and leases, and the constructor panics; the cases here add the edges
// around those, contexts that do not belong, calls after Close and nil
// funcs. Bugs found this way are in regressions_test.go.
func TestBadInput(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	newClient := func(t *testing.T, opts ...lockmw.Option) *lockmw.Client {
		return locktest.NewOn(t, srv, opts...)
	}
	for _, tc := range []struct {
		name string
		run  func(t *testing.T, ctx context.Context, c, other *lockmw.Client)
	}{
		{"names at the length limit count bytes, not runes", func(t *testing.T, ctx context.Context, c, _ *lockmw.Client) {
			fits := strings.Repeat("注", lockmw.MaxNameLen/3) + strings.Repeat("x", lockmw.MaxNameLen%3)
			require.Len(t, fits, lockmw.MaxNameLen)
			lockUnlock(t, ctx, c.Mutex(fits))
			over := strings.Repeat("x", lockmw.MaxNameLen-1) + "é" // the last rune straddles the limit
			assert.ErrorIs(t, c.Mutex(over).Err(), lockmw.ErrInvalidName)
		}},
		{"a huge name is refused without a round trip", func(t *testing.T, ctx context.Context, c, _ *lockmw.Client) {
			m := c.Mutex(strings.Repeat("x", 1<<20))
			_, err := m.Lock(ctx)
			assert.ErrorIs(t, err, lockmw.ErrInvalidName)
			assert.NotContains(t, err.Error(), strings.Repeat("x", 2*lockmw.MaxNameLen), "the error does not carry the whole name")
		}},
		{"unicode, Lua pattern and glob characters are ordinary names", func(t *testing.T, ctx context.Context, c, other *lockmw.Client) {
			for _, name := range []string{"🔒", "e\u0301", "قفل", "👩\u200d💻", "\ufeffbom", "\ue000", "\uffff", " ", "line\u2028sep",
				`quote"back\slash`, "%.*+-?[^$]()", "*?[]", "a:b:c", "rlock:token"} {
				m := c.Mutex(name)
				require.NoError(t, m.Err(), "%q", name)
				h, err := m.TryLock(ctx, 0, 0)
				require.NoError(t, err, "%q", name)
				_, err = other.Mutex(name).TryLock(ctx, 0, 0)
				assert.ErrorIs(t, err, lockmw.ErrNotAcquired, "%q excludes another client", name)
				require.NoError(t, m.Unlock(h), "%q", name)
			}
		}},
		{"C1 controls, DEL and malformed UTF-8 are invalid", func(t *testing.T, ctx context.Context, c, _ *lockmw.Client) {
			for _, name := range []string{"\t", "\r", "\x7f", "nel\u0085", "\xc3", "\xc0\xaf", "\xed\xa0\x80", "\xff\xfe"} {
				m := c.Mutex(name)
				assert.ErrorIs(t, m.Err(), lockmw.ErrInvalidName, "%q", name)
				_, err := lockmw.Do(ctx, m, func(context.Context) (int, error) { return 0, nil })
				assert.ErrorIs(t, err, lockmw.ErrInvalidName, "%q", name)
			}
		}},
		{"names with braces work on a single node", func(t *testing.T, ctx context.Context, c, other *lockmw.Client) {
			for _, name := range []string{"{", "}", "{}", "}{", "{{x}}", "a{b}c{d}", "{user}:1"} {
				lockUnlock(t, ctx, c.Mutex(name))
			}
			// x and {x} are two locks that two clients hold at once (see
			// also TestRegressionNamesXAndBracedXShareTheirQueue).
			h1, err := c.Mutex("brace-pair").TryLock(ctx, 0, 0)
			require.NoError(t, err)
			h2, err := other.Mutex("{brace-pair}").TryLock(ctx, 0, 0)
			require.NoError(t, err)
			require.NoError(t, c.Mutex("brace-pair").Unlock(h1))
			require.NoError(t, other.Mutex("{brace-pair}").Unlock(h2))
		}},
		{"a lock named like the keys kept beside another lock is an invalid name", func(t *testing.T, ctx context.Context, c, other *lockmw.Client) {
			for _, name := range []string{"rlock_queue:{victim}", "rlock_waiters:{victim}", "redisson_lock_token:{victim}", "redisson_unlock_latch:{victim}:1"} {
				_, err := c.Mutex(name).Lock(ctx)
				assert.ErrorIs(t, err, lockmw.ErrInvalidName, name)
			}
			// So the lock whose keys those are works undisturbed.
			hv, err := c.Mutex("victim").Lock(ctx)
			require.NoError(t, err)
			_, err = other.Mutex("victim").TryLock(ctx, 50*time.Millisecond, 0)
			assert.ErrorIs(t, err, lockmw.ErrNotAcquired)
			require.NoError(t, c.Mutex("victim").Unlock(hv))
		}},
		{"a wait shorter than a round trip makes one attempt", func(t *testing.T, ctx context.Context, c, other *lockmw.Client) {
			h, err := c.Mutex("tiny-wait").Lock(ctx)
			require.NoError(t, err)
			start := time.Now()
			_, err = other.Mutex("tiny-wait").TryLock(ctx, time.Nanosecond, 0)
			assert.ErrorIs(t, err, lockmw.ErrNotAcquired)
			assert.Less(t, time.Since(start), time.Second)
			require.NoError(t, c.Mutex("tiny-wait").Unlock(h))
		}},
		{"a lease shorter than a millisecond is a lease of one", func(t *testing.T, ctx context.Context, c, other *lockmw.Client) {
			m := c.Mutex("tiny-lease")
			h, err := m.TryLock(ctx, 0, time.Nanosecond)
			require.NoError(t, err)
			testsupport.Recv(t, h.Done(), time.Second, "the hold context ends at the lease end")
			assert.ErrorIs(t, h.Err(), context.DeadlineExceeded)
			if err := m.Unlock(h); err != nil {
				assert.ErrorIs(t, err, lockmw.ErrLockLost)
			}
			h2, err := other.Mutex("tiny-lease").TryLock(ctx, time.Second, 0)
			require.NoError(t, err, "free again")
			require.NoError(t, other.Mutex("tiny-lease").Unlock(h2))
		}},
		{"a wait of nearly MaxInt64 is not mistaken for none", func(t *testing.T, ctx context.Context, c, other *lockmw.Client) {
			h, err := c.Mutex("huge-wait").Lock(ctx)
			require.NoError(t, err)
			wctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
			defer cancel()
			_, err = other.Mutex("huge-wait").TryLock(wctx, math.MaxInt64-1, 0)
			assert.ErrorIs(t, err, context.DeadlineExceeded, "it waited until the context ended")
			require.NoError(t, c.Mutex("huge-wait").Unlock(h))
		}},
		{"a context already cancelled acquires nothing", func(t *testing.T, ctx context.Context, c, _ *lockmw.Client) {
			cctx, cancel := context.WithCancel(ctx)
			cancel()
			m := c.Mutex("cancelled")
			for _, wait := range []time.Duration{0, time.Second, lockmw.Forever} {
				_, err := m.TryLock(cctx, wait, 0)
				assert.ErrorIs(t, err, lockmw.ErrNotAcquired)
				assert.ErrorIs(t, err, context.Canceled)
			}
			locked, err := m.IsLocked(ctx)
			require.NoError(t, err)
			assert.False(t, locked)
		}},
		{"UnlockAt a zero, past or tiny future time releases", func(t *testing.T, ctx context.Context, c, other *lockmw.Client) {
			for _, at := range []time.Time{{}, time.Unix(0, 0), time.Now().Add(-time.Hour), time.Now().Add(time.Nanosecond)} {
				m := c.Mutex("unlock-at")
				h, err := m.Lock(ctx)
				require.NoError(t, err)
				require.NoError(t, m.UnlockAt(h, at), "%v", at)
				h2, err := other.Mutex("unlock-at").TryLock(ctx, time.Second, 0)
				require.NoError(t, err, "free at once (%v)", at)
				require.NoError(t, other.Mutex("unlock-at").Unlock(h2))
			}
		}},
		{"UnlockAt through a context that holds nothing", func(t *testing.T, ctx context.Context, c, _ *lockmw.Client) {
			assert.ErrorIs(t, c.Mutex("unlock-at-nothing").UnlockAt(ctx, time.Now().Add(time.Hour)), lockmw.ErrNotHeld)
		}},
		{"Unlock through a child of the hold context, even a cancelled one", func(t *testing.T, ctx context.Context, c, _ *lockmw.Client) {
			m := c.Mutex("child-ctx")
			h, err := m.Lock(ctx)
			require.NoError(t, err)
			type key struct{}
			child, cancel := context.WithCancel(context.WithValue(h, key{}, 1))
			cancel()
			require.NoError(t, m.Unlock(child))
			assert.ErrorIs(t, m.Unlock(h), lockmw.ErrNotHeld, "the level was released through the child")
		}},
		{"a second Mutex value of the same Client and name unlocks", func(t *testing.T, ctx context.Context, c, _ *lockmw.Client) {
			h, err := c.Mutex("same-name").Lock(ctx)
			require.NoError(t, err)
			require.NoError(t, c.Mutex("same-name").Unlock(h))
		}},
		{"another client's hold context neither re-enters nor reports a hold", func(t *testing.T, ctx context.Context, c, other *lockmw.Client) {
			h, err := c.Mutex("foreign").Lock(ctx)
			require.NoError(t, err)
			om := other.Mutex("foreign", lockmw.WithFencing())
			_, err = om.TryLock(h, 0, 0)
			assert.ErrorIs(t, err, lockmw.ErrNotAcquired, "no re-entry across clients")
			n, err := om.HoldCount(h)
			require.NoError(t, err)
			assert.Zero(t, n)
			held, err := om.IsHeld(h)
			require.NoError(t, err)
			assert.False(t, held)
			_, ok := om.Token(h)
			assert.False(t, ok)
			require.NoError(t, c.Mutex("foreign").Unlock(h))
		}},
		{"re-entering a lost hold reports the loss", func(t *testing.T, ctx context.Context, c, other *lockmw.Client) {
			m := c.Mutex("reenter-lost")
			h, err := m.Lock(ctx)
			require.NoError(t, err)
			ok, err := other.Mutex("reenter-lost").ForceUnlock(ctx)
			require.NoError(t, err)
			require.True(t, ok)
			_, err = m.Lock(h)
			assert.ErrorIs(t, err, lockmw.ErrLockLost)
			assert.ErrorIs(t, m.Unlock(h), lockmw.ErrLockLost)
			assert.ErrorIs(t, m.Unlock(h), lockmw.ErrNotHeld, "and only once")
		}},
		{"calls after Close", func(t *testing.T, ctx context.Context, _, other *lockmw.Client) {
			c := newClient(t)
			m := c.Mutex("after-close", lockmw.WithFencing())
			h, err := m.Lock(ctx)
			require.NoError(t, err)
			tok, ok := m.Token(h)
			require.True(t, ok)
			require.NoError(t, c.Close())
			for what, err := range map[string]error{
				"TryLock":                  second(m.TryLock(ctx, 0, 0)),
				"TryLock with a lease":     second(m.TryLock(ctx, time.Second, time.Second)),
				"re-entering Lock":         second(m.Lock(h)),
				"a Mutex made after Close": second(c.Mutex("after-close-2").Lock(ctx)),
				"WithLock":                 lockmw.WithLock(ctx, m, func(context.Context) error { return nil }),
				"a wrapped call": second(lockmw.Wrap(c, func(s string) string { return s },
					func(context.Context, string) (int, error) { return 0, nil })(ctx, "after-close-3")),
			} {
				assert.ErrorIs(t, err, lockmw.ErrClosed, what)
			}
			// What still works: reading the hold, querying Redis, and
			// releasing what is held.
			got, ok := m.Token(h)
			assert.True(t, ok)
			assert.Equal(t, tok, got)
			locked, err := m.IsLocked(ctx)
			require.NoError(t, err)
			assert.True(t, locked)
			require.NoError(t, m.UnlockAt(h, time.Now()), "UnlockAt after Close releases")
			_, err = other.Mutex("after-close").TryLock(ctx, time.Second, 0)
			assert.NoError(t, err, "released")
			assert.NoError(t, c.Close(), "Close again")
		}},
		{"nil hook funcs and hooks that return nil contexts", func(t *testing.T, ctx context.Context, _, _ *lockmw.Client) {
			c := newClient(t, lockmw.WithHooks(lockmw.Hooks{}), lockmw.WithHooks(lockmw.CombineHooks()), lockmw.WithHooks(lockmw.Hooks{
				AcquireStart: func(context.Context, lockmw.AcquireStartEvent) context.Context { return nil },
				HoldStart:    func(context.Context, lockmw.HoldStartEvent) context.Context { return nil },
				Metadata:     func(context.Context, string) string { return strings.Repeat("m", lockmw.MaxMetadataLen+1) },
			}))
			m := c.Mutex("nil-hooks")
			h, err := m.Lock(ctx)
			require.NoError(t, err)
			in, err := m.Lock(h)
			require.NoError(t, err, "re-entry")
			require.NoError(t, m.Unlock(in))
			require.NoError(t, m.Unlock(h))
		}},
		{"nil call options and callbacks are ignored", func(t *testing.T, ctx context.Context, c, _ *lockmw.Client) {
			ran := false
			err := lockmw.WithLock(ctx, c.Mutex("nil-options"), func(context.Context) error { ran = true; return nil },
				nil, lockmw.WithOnAcquire(nil), lockmw.WithOnRelease(nil))
			require.NoError(t, err)
			assert.True(t, ran)
		}},
		{"a wrapped call whose key function panics panics in the caller, holding nothing", func(t *testing.T, ctx context.Context, c, _ *lockmw.Client) {
			f := lockmw.Wrap(c, func(string) string { panic("boom") }, func(context.Context, string) (int, error) { return 1, nil })
			assert.PanicsWithValue(t, "boom", func() { _, _ = f(ctx, "x") })
		}},
		{"errors name the lock and match their sentinel only", func(t *testing.T, ctx context.Context, c, other *lockmw.Client) {
			h, err := c.Mutex("sentinels").Lock(ctx)
			require.NoError(t, err)
			_, err = other.Mutex("sentinels").TryLock(ctx, 0, 0)
			var busy *lockmw.BusyError
			require.True(t, errors.As(err, &busy))
			assert.Equal(t, "sentinels", busy.Name)
			assert.Contains(t, err.Error(), `"sentinels"`)
			for _, s := range []error{lockmw.ErrNotHeld, lockmw.ErrLockLost, lockmw.ErrClosed, lockmw.ErrInvalidName, lockmw.ErrInvalidArgument} {
				assert.NotErrorIs(t, err, s)
			}
			require.NoError(t, c.Mutex("sentinels").Unlock(h))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := testsupport.CtxFor(t, 20*time.Second)
			tc.run(t, ctx, newClient(t), newClient(t))
		})
	}
}

func second[T any](_ T, err error) error { return err }

// lockUnlock takes m without waiting and releases it.
func lockUnlock(t *testing.T, ctx context.Context, m *lockmw.Mutex) {
	t.Helper()
	h, err := m.TryLock(ctx, 0, 0)
	require.NoError(t, err, "%.40q", m.Name())
	require.NoError(t, m.Unlock(h), "%.40q", m.Name())
}
