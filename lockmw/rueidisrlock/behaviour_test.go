package rueidisrlock_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/go-rlock/rlock/internal/faultproxy"
	"github.com/go-rlock/rlock/internal/layout"
	"github.com/go-rlock/rlock/internal/redistest"
	"github.com/go-rlock/rlock/lockmw"
	"github.com/go-rlock/rlock/lockmw/backend"
	"github.com/go-rlock/rlock/lockmw/rueidisrlock"
	"github.com/redis/rueidis"
)

func ctxOf(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// A rueidis-backed Client and a go-redis one on the same name exclude each
// other and hand over to each other: a waiter of either is woken by the
// other's release.
func TestMixedWithGoRedis(t *testing.T) {
	t.Parallel()
	ctx := ctxOf(t)
	srv := redistest.Start(t)
	rc := rueidisrlock.New(newClient(t, rueidis.ClientOption{InitAddress: []string{srv.Addr()}}))
	gc := lockmw.New(srv.NewClient())
	t.Cleanup(func() { _ = rc.Close(); _ = gc.Close() })

	for _, pair := range []struct {
		name          string
		first, second *lockmw.Client
	}{{"rueidis then go-redis", rc, gc}, {"go-redis then rueidis", gc, rc}} {
		t.Run(pair.name, func(t *testing.T) {
			m1, m2 := pair.first.Mutex("mixed"), pair.second.Mutex("mixed")
			h1, err := m1.Lock(ctx)
			if err != nil {
				t.Fatalf("Lock: %v", err)
			}
			if _, err := m2.TryLock(ctx, 0, 0); !errors.Is(err, lockmw.ErrNotAcquired) {
				t.Fatalf("the other client's TryLock of a held mutex: %v, want ErrNotAcquired", err)
			}
			got := make(chan error, 1)
			go func() {
				h2, err := m2.Lock(ctx)
				if err == nil {
					err = m2.Unlock(h2)
				}
				got <- err
			}()
			waitQueued(t, ctx, srv, "mixed")
			if err := m1.Unlock(h1); err != nil {
				t.Fatalf("Unlock: %v", err)
			}
			if err := <-got; err != nil {
				t.Fatalf("the waiter of the other client: %v", err)
			}
		})
	}
}

// waitQueued polls until a waiter subscribed to the mutex's channel, so
// that the hand-off, not a first try, takes the lock.
func waitQueued(t *testing.T, ctx context.Context, srv *redistest.Server, name string) {
	t.Helper()
	ch := layout.Mutex(name).Channel
	for ctx.Err() == nil {
		if n, _ := srv.Client().PubSubNumSub(ctx, ch).Result(); n[ch] > 0 {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("no waiter on %q", name)
}

// A closed rueidis client fails a Lock with an error matching
// backend.ErrClosed and rueidis.ErrClosing, at once (no retrying).
func TestClosedClient(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{srv.Addr()}})
	if err != nil {
		t.Fatal(err)
	}
	lc := rueidisrlock.New(c)
	defer func() { _ = lc.Close() }()
	c.Close()
	_, err = lc.Mutex("closed").Lock(ctxOf(t))
	t.Logf("Lock on a closed client: %v (lockmw.ErrClosed: %v)", err, errors.Is(err, lockmw.ErrClosed))
	if !errors.Is(err, backend.ErrClosed) || !errors.Is(err, rueidis.ErrClosing) {
		t.Fatalf("Lock on a closed rueidis client: %v, want backend.ErrClosed and rueidis.ErrClosing", err)
	}
}

// A wrong-type key under a lock's name is a clear error, and the lock held
// beside it is kept.
func TestWrongType(t *testing.T) {
	t.Parallel()
	ctx := ctxOf(t)
	srv := redistest.Start(t)
	lc := rueidisrlock.New(newClient(t, rueidis.ClientOption{InitAddress: []string{srv.Addr()}}))
	defer func() { _ = lc.Close() }()
	held, err := lc.Mutex("kept").Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Client().Set(ctx, "wrong", "a string", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := lc.Mutex("wrong").TryLock(ctx, 0, 0); !backend.IsWrongType(err) {
		t.Errorf("TryLock on a string key: %v, want WRONGTYPE", err)
	}
	if err := held.Err(); err != nil {
		t.Errorf("the lock held beside it: %v", err)
	}
	if err := lc.Mutex("kept").Unlock(held); err != nil {
		t.Errorf("Unlock: %v", err)
	}
}

// With default options, every call returns at its context's end on a
// paused server: a deadline, a context that is only cancelled, and
// WithAcquireContext.
func TestPausedServer(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	lc := rueidisrlock.New(newClient(t, rueidis.ClientOption{InitAddress: []string{srv.Addr()}}))
	defer func() { _ = lc.Close() }()
	m := lc.Mutex("paused")
	if _, err := m.TryLock(ctxOf(t), 0, time.Second); err != nil { // connected, scripts loaded
		t.Fatal(err)
	}
	if err := srv.Pause(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = srv.Resume() }()
	callsEndWithTheirContext(t, m)
}

// The same on an unreachable server: the fault proxy before it black-holes
// every byte both ways (a partition; the connections stay open).
func TestUnreachableServer(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	p, err := faultproxy.Start(srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = p.Close() }()
	lc := rueidisrlock.New(newClient(t, rueidis.ClientOption{InitAddress: []string{p.Addr()}}))
	defer func() { _ = lc.Close() }()
	m := lc.Mutex("unreachable")
	if _, err := m.TryLock(ctxOf(t), 0, time.Second); err != nil { // connected, scripts loaded
		t.Fatal(err)
	}
	p.SetBlackhole(true)
	defer p.SetBlackhole(false)
	callsEndWithTheirContext(t, m)
}

// callsEndWithTheirContext checks that Lock of m returns at its context's
// end, with a deadline, a context that is only cancelled, and
// WithAcquireContext, on a server that does not answer.
func callsEndWithTheirContext(t *testing.T, m *lockmw.Mutex) {
	t.Run("deadline", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		if _, err := m.Lock(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Lock on a server that does not answer: %v, want context.DeadlineExceeded", err)
		}
	})
	t.Run("cancelled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		stop := time.AfterFunc(200*time.Millisecond, cancel)
		defer stop.Stop()
		if _, err := m.Lock(ctx); !errors.Is(err, context.Canceled) {
			t.Errorf("Lock on a server that does not answer: %v, want context.Canceled", err)
		}
	})
	t.Run("WithAcquireContext", func(t *testing.T) {
		actx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		err := lockmw.WithLock(context.Background(), m, func(context.Context) error {
			t.Error("fn ran without the lock")
			return nil
		}, lockmw.WithAcquireContext(actx))
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Do on a server that does not answer: %v, want context.DeadlineExceeded", err)
		}
	})
}

// WithReplicaSync's WAIT runs on the connection of the acquisition: with
// the replica paused it is not acknowledged (a WAIT on another connection,
// which wrote nothing, would count the replica at once). The live replica
// has a generous timeout (a loaded machine's replica may lag); the paused
// one cannot acknowledge, whatever the timeout.
func TestReplicaSyncLagging(t *testing.T) {
	t.Parallel()
	ctx := ctxOf(t)
	sg := redistest.StartSentinel(t, 1, 1)
	rc := newClient(t, rueidis.ClientOption{InitAddress: []string{sg.Master.Addr()}})
	live := rueidisrlock.New(rc, lockmw.WithReplicaSync(1, 20*time.Second))
	short := rueidisrlock.New(rc, lockmw.WithReplicaSync(1, 300*time.Millisecond))
	defer func() { _ = live.Close(); _ = short.Close() }()
	h, err := live.Mutex("synced").Lock(ctx)
	if err != nil {
		t.Fatalf("Lock with a live replica: %v", err)
	}
	if err := live.Mutex("synced").Unlock(h); err != nil {
		t.Fatal(err)
	}
	if err := sg.Replicas[0].Pause(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sg.Replicas[0].Resume() }()
	if _, err := short.Mutex("lagging").Lock(ctx); !errors.Is(err, lockmw.ErrNotReplicated) {
		t.Fatalf("Lock with the replica paused: %v, want ErrNotReplicated", err)
	}
}

// A plain subscription comes back after its connection is killed,
// confirming its channels again.
func TestSubscriptionReconnects(t *testing.T) {
	t.Parallel()
	ctx := ctxOf(t)
	srv := redistest.Start(t)
	b := rueidisrlock.Backend(newClient(t, rueidis.ClientOption{InitAddress: []string{srv.Addr()}}))
	sub, err := b.Subscribe(ctx, false, "a", "b")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sub.Close() }()
	confirmed := func() {
		t.Helper()
		got := map[string]bool{}
		for len(got) < 2 {
			m, err := sub.Receive(ctx)
			if err != nil {
				t.Fatalf("Receive: %v", err)
			}
			if m.Kind == backend.Subscribed {
				got[m.Channel] = true
			}
		}
	}
	confirmed()
	if err := srv.Client().Do(ctx, "client", "kill", "type", "pubsub").Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := sub.Receive(ctx); err == nil {
		t.Fatal("Receive after the connection was killed: no error")
	}
	confirmed()
	if err := srv.Client().Publish(ctx, "b", "after").Err(); err != nil {
		t.Fatal(err)
	}
	if m, err := sub.Receive(ctx); err != nil || m.Kind != backend.Published || m.Payload != "after" {
		t.Fatalf("Receive = %+v, %v; want the message published after the reconnection", m, err)
	}
}

// A sharded subscription (a Redis 7 cluster) ends with its connection: the
// engine opens another on the slot's master now.
func TestShardedSubscriptionEnds(t *testing.T) {
	t.Parallel()
	ctx := ctxOf(t)
	cl := redistest.StartCluster(t, 3, 0)
	if v, _ := cl.Masters[0].Client().Info(ctx, "server").Result(); !strings.Contains(v, "redis_version:7") && !strings.Contains(v, "redis_version:8") {
		t.Skip("sharded pub/sub needs Redis 7")
	}
	var addrs []string
	for _, m := range cl.Masters {
		addrs = append(addrs, m.Addr())
	}
	b := rueidisrlock.Backend(newClient(t, rueidis.ClientOption{InitAddress: addrs}))
	sub, err := b.Subscribe(ctx, true, "{sharded}a")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sub.Close() }()
	if m, err := sub.Receive(ctx); err != nil || m.Kind != backend.Subscribed {
		t.Fatalf("Receive = %+v, %v; want the confirmation", m, err)
	}
	for _, m := range cl.Masters {
		if err := m.Client().Do(ctx, "client", "kill", "type", "pubsub").Err(); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 2 {
		if m, err := sub.Receive(ctx); err == nil {
			t.Fatalf("Receive %d after the connection was killed = %+v, want an error", i+1, m)
		}
	}
}

// A quorum of three masters on rueidis clients locks and unlocks with one
// master paused.
func TestQuorumOneMasterPaused(t *testing.T) {
	t.Parallel()
	ctx := ctxOf(t)
	var members []backend.Backend
	var servers []*redistest.Server
	for range 3 {
		srv := redistest.Start(t)
		servers = append(servers, srv)
		members = append(members, rueidisrlock.Backend(newClient(t, rueidis.ClientOption{InitAddress: []string{srv.Addr()}})))
	}
	q := lockmw.NewQuorumOf(members)
	defer func() { _ = q.Close() }()
	if err := servers[2].Pause(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = servers[2].Resume() }()
	h, err := q.Mutex("quorum").Lock(ctx)
	if err != nil {
		t.Fatalf("Lock with one master of three paused: %v", err)
	}
	again, err := q.Mutex("quorum").TryLock(h, 0, 0)
	if err != nil {
		t.Fatalf("re-entering: %v", err)
	}
	if err := q.Mutex("quorum").Unlock(again); err != nil {
		t.Fatalf("Unlock of the inner level: %v", err)
	}
	if err := q.Mutex("quorum").Unlock(h); err != nil {
		t.Fatalf("Unlock: %v", err)
	}
}

// On a RESP2 connection (Redis 5, or AlwaysRESP2) rueidis refuses a client
// with client-side caching at NewClient, before rlock is involved: the
// clear error the user sees names DisableCache.
func TestRESP2NeedsDisableCache(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{srv.Addr()}, AlwaysRESP2: true})
	if err == nil {
		c.Close()
	}
	if !errors.Is(err, rueidis.ErrNoCache) {
		t.Fatalf("rueidis.NewClient on RESP2 with caching: %v, want rueidis.ErrNoCache", err)
	}
}
