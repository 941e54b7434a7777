package lockmw_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/go-rlock/rlock/internal/redistest"
	"github.com/go-rlock/rlock/lockmw"
	"github.com/redis/go-redis/v9"
)

// Fuzz targets run their seed corpus with go test; make fuzz runs each one
// for $(FUZZTIME). Each starts one real redis-server per fuzz function (per
// fuzzing worker process) and empties it before every input.

// validName is the rule ErrInvalidName documents, written out independently.
func validName(name string) bool {
	return name != "" && len(name) <= lockmw.MaxNameLen && utf8.ValidString(name) &&
		strings.IndexFunc(name, unicode.IsControl) < 0
}

// FuzzMutexName checks that Client.Mutex never panics and that every call on
// the mutex returns nil or an error, matching ErrInvalidName exactly when the
// name is invalid; a valid name locks, re-enters, reports and unlocks, with
// the lock kept at the key that is the name. On a cluster client the rule is
// stricter (all keys of a name share a hash slot), never looser, and a name
// without braces is always accepted.
func FuzzMutexName(f *testing.F) {
	for _, s := range []string{"lock", "", " ", "注文:42", "{user}:7", "a{}b", "}{", "{", "}", "{{x}}", "a}b",
		"bad\xffutf8", "new\nline", "nul\x00", "\x7f", "\u0085", "\u2028", "🔒", "%.*[", "rlock:token",
		strings.Repeat("x", lockmw.MaxNameLen), strings.Repeat("x", lockmw.MaxNameLen+1), strings.Repeat("注", lockmw.MaxNameLen/3+1)} {
		f.Add(s)
	}
	srv := redistest.Start(f)
	rdb := srv.NewClient()
	c := lockmw.New(rdb)
	f.Cleanup(func() { _ = c.Close() })
	// A cluster client is enough for the name check, which needs no round
	// trip; no command is ever sent through it.
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{srv.Addr()}})
	cluster := lockmw.New(cc)
	f.Cleanup(func() { _ = cluster.Close(); _ = cc.Close() })

	f.Fuzz(func(t *testing.T, name string) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := rdb.FlushDB(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		m := c.Mutex(name, lockmw.WithFencing())
		if m.Name() != name {
			t.Fatalf("Name() = %q, want %q", m.Name(), name)
		}
		cm := cluster.Mutex(name)
		if !validName(name) {
			checkInvalid(t, ctx, m)
			if !errors.Is(cm.Err(), lockmw.ErrInvalidName) {
				t.Errorf("cluster Mutex(%q).Err() = %v, want ErrInvalidName", name, cm.Err())
			}
			return
		}
		if err := cm.Err(); err != nil && !errors.Is(err, lockmw.ErrInvalidName) {
			t.Errorf("cluster Mutex(%q).Err() = %v", name, err)
		}
		if !strings.ContainsAny(name, "{}") && cm.Err() != nil {
			t.Errorf("cluster Mutex(%q) refused a name without braces: %v", name, cm.Err())
		}
		checkValid(t, ctx, m, rdb)
	})
}

func deadline(ctx context.Context) time.Time {
	dl, _ := ctx.Deadline()
	return dl
}

func checkInvalid(t *testing.T, ctx context.Context, m *lockmw.Mutex) {
	t.Helper()
	second := func(_ any, err error) error { return err }
	for what, err := range map[string]error{
		"Err":         m.Err(),
		"Lock":        second(m.Lock(ctx)),
		"TryLock":     second(m.TryLock(ctx, time.Second, time.Second)),
		"Unlock":      m.Unlock(ctx),
		"UnlockAt":    m.UnlockAt(ctx, time.Now()),
		"ForceUnlock": second(m.ForceUnlock(ctx)),
		"IsLocked":    second(m.IsLocked(ctx)),
		"IsHeld":      second(m.IsHeld(ctx)),
		"HoldCount":   second(m.HoldCount(ctx)),
		"TTL":         second(m.TTL(ctx)),
		"WithLock":    lockmw.WithLock(ctx, m, func(context.Context) error { return nil }),
	} {
		if !errors.Is(err, lockmw.ErrInvalidName) {
			t.Errorf("%s on invalid name %q = %v, want ErrInvalidName", what, m.Name(), err)
		}
	}
	if _, ok := m.Token(ctx); ok {
		t.Errorf("Token on invalid name %q reports a token", m.Name())
	}
}

func checkValid(t *testing.T, ctx context.Context, m *lockmw.Mutex, rdb redis.UniversalClient) {
	t.Helper()
	name := m.Name()
	if err := m.Err(); err != nil {
		t.Fatalf("Mutex(%q).Err() = %v for a valid name", name, err)
	}
	h, err := m.TryLock(ctx, 0, 0)
	if err != nil {
		t.Fatalf("TryLock(%q) on a free lock: %v", name, err)
	}
	if tok, ok := m.Token(h); !ok || tok <= 0 {
		t.Errorf("Token(%q) = %d, %t", name, tok, ok)
	}
	if n, err := rdb.Exists(ctx, name).Result(); err != nil || n != 1 {
		t.Errorf("the lock %q is not at the key of its name: %d, %v", name, n, err)
	}
	in, err := m.Lock(h)
	if err != nil {
		t.Fatalf("re-entering %q: %v", name, err)
	}
	if n, err := m.HoldCount(in); err != nil || n != 2 {
		t.Errorf("HoldCount(%q) = %d, %v, want 2", name, n, err)
	}
	if d, err := m.TTL(ctx); err != nil || d <= 0 || d > lockmw.DefaultWatchdogTimeout {
		t.Errorf("TTL(%q) = %v, %v", name, d, err)
	}
	if err := m.Unlock(in); err != nil {
		t.Errorf("Unlock(%q) inner: %v", name, err)
	}
	if held, err := m.IsHeld(h); err != nil || !held {
		t.Errorf("IsHeld(%q) = %t, %v after the inner Unlock", name, held, err)
	}
	if err := m.Unlock(h); err != nil {
		t.Errorf("Unlock(%q): %v", name, err)
	}
	if locked, err := m.IsLocked(ctx); err != nil || locked {
		t.Errorf("IsLocked(%q) = %t, %v after Unlock", name, locked, err)
	}
	if existed, err := m.ForceUnlock(ctx); err != nil || existed {
		t.Errorf("ForceUnlock(%q) = %t, %v on a free lock", name, existed, err)
	}
}

// FuzzTryLockDurations checks TryLock's durations on a free lock: a negative
// wait or lease is ErrInvalidArgument and holds nothing; otherwise the lock
// is taken, and a leased hold's context ends no later than its key can
// expire (else the holder would go on while someone else holds the lock).
func FuzzTryLockDurations(f *testing.F) {
	for _, s := range [][2]int64{{0, 0}, {1, 1}, {-1, 0}, {0, -1}, {int64(time.Second), int64(time.Millisecond)},
		{0, int64(time.Millisecond) - 1}, {0, int64(time.Hour)}, {0, 1 << 62}, {int64(lockmw.Forever), 0},
		{0, int64(lockmw.Forever)}, {0, int64(lockmw.Forever) - 1}} {
		f.Add(s[0], s[1])
	}
	srv := redistest.Start(f)
	rdb := srv.NewClient()
	c := lockmw.New(rdb)
	f.Cleanup(func() { _ = c.Close() })

	f.Fuzz(func(t *testing.T, waitNS, leaseNS int64) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := rdb.FlushDB(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		wait, lease := time.Duration(waitNS), time.Duration(leaseNS)
		m := c.Mutex("durations")
		h, err := m.TryLock(ctx, wait, lease)
		if wait < 0 || lease < 0 {
			if !errors.Is(err, lockmw.ErrInvalidArgument) {
				t.Fatalf("TryLock(%v, %v) = %v, want ErrInvalidArgument", wait, lease, err)
			}
			if locked, err := m.IsLocked(ctx); err != nil || locked {
				t.Fatalf("TryLock(%v, %v) failed but left the lock held", wait, lease)
			}
			return
		}
		if err != nil {
			t.Fatalf("TryLock(%v, %v) on a free lock: %v", wait, lease, err)
		}
		pttl, err := rdb.PTTL(ctx, "durations").Result()
		if err != nil {
			t.Fatal(err)
		}
		now := time.Now()
		const tolerance = 5 * time.Millisecond
		if lease == 0 {
			if dl, _ := h.Deadline(); !dl.Equal(deadline(ctx)) {
				t.Errorf("a watchdog hold has a deadline of its own: %v", dl)
			}
			if pttl <= 0 || pttl > lockmw.DefaultWatchdogTimeout {
				t.Errorf("watchdog hold: PTTL %v", pttl)
			}
		} else {
			dl, ok := h.Deadline()
			if !ok {
				t.Fatalf("TryLock(%v, %v): a leased hold has no deadline", wait, lease)
			}
			expiry := now // the key is gone (PTTL -2) or has no TTL (-1)
			if pttl > 0 {
				expiry = now.Add(pttl)
			}
			if dl.After(expiry.Add(tolerance)) {
				t.Errorf("TryLock(%v, %v): the hold context lasts until %v, %v after the key expires (PTTL %v)",
					wait, lease, dl.Format(time.RFC3339Nano), dl.Sub(expiry), pttl)
			}
		}
		if err := m.Unlock(h); err != nil && !errors.Is(err, lockmw.ErrLockLost) {
			t.Errorf("Unlock: %v", err)
		}
	})
}
