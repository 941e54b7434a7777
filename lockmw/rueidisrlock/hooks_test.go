package rueidisrlock_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-rlock/rlock/internal/redistest"
	"github.com/go-rlock/rlock/lockmw"
	"github.com/go-rlock/rlock/lockmw/rueidisrlock"
	"github.com/redis/rueidis"
)

// A client wrapped as rueidishook.WithHook wraps one, given to New or to
// Backend, shows its hook every command of a Lock and an Unlock, on the
// caller's context (what rueidisotel starts its spans from): the
// acquisition (RESTORE, the fast path, or the script) and the release's
// script; and a waiter's SUBSCRIBE, sent on a connection of the client's
// Dedicate (of a node client of its Nodes, SSUBSCRIBE, on a Redis 7
// cluster), on the waiter's. The client's pub/sub messages reach rlock
// through the connection's pub/sub hooks, which no hook sees.
func TestHookedClient(t *testing.T) {
	t.Parallel()
	single := func(t *testing.T) []string { return []string{redistest.Start(t).Addr()} }
	cluster := func(t *testing.T) []string {
		var addrs []string
		for _, m := range redistest.StartCluster(t, 3, 0).Masters {
			addrs = append(addrs, m.Addr())
		}
		return addrs
	}
	withNew := func(c rueidis.Client) *lockmw.Client { return rueidisrlock.New(c) }
	withBackend := func(c rueidis.Client) *lockmw.Client { return lockmw.NewFromBackend(rueidisrlock.Backend(c)) }
	for _, tc := range []struct {
		name  string
		addrs func(*testing.T) []string
		new   func(rueidis.Client) *lockmw.Client
	}{
		{"New on a single node", single, withNew},
		{"Backend and NewFromBackend on a single node", single, withBackend},
		{"New on a 3-master cluster", cluster, withNew},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := ctxOf(t)
			rec := newRecorder()
			lc := tc.new(withHook(newClient(t, rueidis.ClientOption{InitAddress: tc.addrs(t)}), rec))
			defer func() { _ = lc.Close() }()
			m := lc.Mutex("hooked")
			holder := context.WithValue(ctx, callerKey{}, "holder")

			n := rec.count()
			h, err := m.Lock(holder)
			if err != nil {
				t.Fatalf("Lock: %v", err)
			}
			onCaller(t, "Lock", rec.since(n), "holder", "restore", "evalsha", "eval")
			n = rec.count()
			if err := m.Unlock(h); err != nil {
				t.Fatalf("Unlock: %v", err)
			}
			onCaller(t, "Unlock", rec.since(n), "holder", "evalsha", "eval")

			if h, err = m.Lock(holder); err != nil {
				t.Fatalf("Lock: %v", err)
			}
			got := make(chan error, 1)
			go func() {
				w, err := m.Lock(context.WithValue(ctx, callerKey{}, "waiter"))
				if err == nil {
					err = m.Unlock(w)
				}
				got <- err
			}()
			sub, err := rec.waitFor(ctx, "waiter", "subscribe", "ssubscribe")
			if err != nil {
				t.Errorf("no SUBSCRIBE on the waiter's context (%v); the hook saw %v", err, rec.since(0))
			}
			if err := m.Unlock(h); err != nil {
				t.Fatalf("Unlock: %v", err)
			}
			if err := <-got; err != nil {
				t.Fatalf("the waiter: %v", err)
			}
			t.Logf("the waiter's subscription: %s", sub)
		})
	}
}

// onCaller checks that what a call made the hook see includes one of
// names, and all of it on the caller's context.
func onCaller(t *testing.T, call string, seen []seenCmd, caller string, names ...string) {
	t.Helper()
	found := false
	for _, s := range seen {
		found = found || slices.Contains(names, s.name)
		if s.caller != caller {
			t.Errorf("%s: the hook saw %s on the context of %q, want %q's", call, s.name, s.caller, caller)
		}
	}
	if !found {
		t.Errorf("%s: the hook saw %v, want one of %v", call, seen, names)
	}
}

// callerKey marks a caller's context: the hook reads it to tell whose
// context a command ran on.
type callerKey struct{}

// seenCmd is one command a hook saw: its name, lowercased, and the caller
// whose context it ran on ("" for none).
type seenCmd struct{ name, caller string }

// recorder is a hook that records the commands it sees, then passes them
// on.
type recorder struct {
	mu      sync.Mutex
	seen    []seenCmd
	changed chan struct{} // closed, and replaced, at each command seen
}

func newRecorder() *recorder { return &recorder{changed: make(chan struct{})} }

func (r *recorder) see(ctx context.Context, cmds ...rueidis.Completed) {
	caller, _ := ctx.Value(callerKey{}).(string)
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range cmds {
		r.seen = append(r.seen, seenCmd{strings.ToLower(c.Commands()[0]), caller})
	}
	close(r.changed)
	r.changed = make(chan struct{})
}

func (r *recorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.seen)
}

// since returns the commands seen after the first n.
func (r *recorder) since(n int) []seenCmd {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.seen[n:])
}

// waitFor returns the first command seen named one of names on caller's
// context, waiting for it until ctx ends.
func (r *recorder) waitFor(ctx context.Context, caller string, names ...string) (string, error) {
	for {
		r.mu.Lock()
		for _, s := range r.seen {
			if s.caller == caller && slices.Contains(names, s.name) {
				r.mu.Unlock()
				return s.name, nil
			}
		}
		changed := r.changed
		r.mu.Unlock()
		select {
		case <-changed:
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
}

func (r *recorder) Do(c rueidis.Client, ctx context.Context, cmd rueidis.Completed) rueidis.RedisResult {
	r.see(ctx, cmd)
	return c.Do(ctx, cmd)
}

func (r *recorder) DoMulti(c rueidis.Client, ctx context.Context, multi ...rueidis.Completed) []rueidis.RedisResult {
	r.see(ctx, multi...)
	return c.DoMulti(ctx, multi...)
}

func (r *recorder) DoCache(c rueidis.Client, ctx context.Context, cmd rueidis.Cacheable, ttl time.Duration) rueidis.RedisResult {
	r.see(ctx, rueidis.Completed(cmd))
	return c.DoCache(ctx, cmd, ttl)
}

func (r *recorder) DoMultiCache(c rueidis.Client, ctx context.Context, multi ...rueidis.CacheableTTL) []rueidis.RedisResult {
	for _, m := range multi {
		r.see(ctx, rueidis.Completed(m.Cmd))
	}
	return c.DoMultiCache(ctx, multi...)
}

func (r *recorder) Receive(c rueidis.Client, ctx context.Context, subscribe rueidis.Completed, fn func(rueidis.PubSubMessage)) error {
	r.see(ctx, subscribe)
	return c.Receive(ctx, subscribe, fn)
}

func (r *recorder) DoStream(c rueidis.Client, ctx context.Context, cmd rueidis.Completed) rueidis.RedisResultStream {
	r.see(ctx, cmd)
	return c.DoStream(ctx, cmd)
}

func (r *recorder) DoMultiStream(c rueidis.Client, ctx context.Context, multi ...rueidis.Completed) rueidis.MultiRedisResultStream {
	r.see(ctx, multi...)
	return c.DoMultiStream(ctx, multi...)
}
