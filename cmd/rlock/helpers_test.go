package main_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-rlock/rlock/internal/layout"
	"github.com/go-rlock/rlock/internal/testsupport"
	"github.com/go-rlock/rlock/internal/testsupport/locktest"
	"github.com/go-rlock/rlock/lockmw"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// traceparent is the metadata the tests store, as otelhooks would.
const traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

// withTrace is a lockmw option storing traceparent with every hold.
func withTrace() lockmw.Option {
	return lockmw.WithHooks(lockmw.Hooks{Metadata: func(context.Context, string) string { return traceparent }})
}

// seq numbers the names of one test binary's runs (go test -count=N reuses
// the servers).
var seq atomic.Int64

// unique returns name with a suffix of its own, so that a test run again
// on the same servers does not find what an earlier run left.
func unique(name string) string {
	return fmt.Sprintf("%s#%d", name, seq.Add(1))
}

// redisClient returns a new go-redis client of the topology, closed at the
// end of the test.
func redisClient(t *testing.T, topo string) redis.UniversalClient {
	t.Helper()
	var rdb redis.UniversalClient
	if topo == "3-master cluster" {
		rdb = cluster.NewClient()
	} else {
		rdb = single.NewClient()
	}
	t.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

// queue returns the fields queued for name, in order.
func queue(t *testing.T, rdb redis.UniversalClient, name string) []string {
	t.Helper()
	q, err := rdb.ZRange(testsupport.Ctx(t), layout.Mutex(name).Queue, 0, -1).Result()
	require.NoError(t, err)
	return q
}

// waitLock starts m.Lock in a goroutine and returns the channel its hold
// context arrives on, once the waiter is queued (the queue has n entries).
func waitLock(t *testing.T, rdb redis.UniversalClient, m *lockmw.Mutex, n int) <-chan context.Context {
	t.Helper()
	got := make(chan context.Context, 1)
	go func() {
		h, err := m.Lock(testsupport.Ctx(t))
		if err != nil {
			h = nil
		}
		got <- h
	}()
	testsupport.Eventually(t, 10*time.Second, fmt.Sprintf("%d waiters queued on %s", n, m.Name()), func() bool {
		return len(queue(t, rdb, m.Name())) == n
	})
	return got
}

// newClient returns an rlock client on rdb, closed at the end of the test.
func newClient(t *testing.T, rdb redis.UniversalClient, opts ...lockmw.Option) *lockmw.Client {
	t.Helper()
	return locktest.New(t, rdb, opts...)
}

// decode parses one JSON line into v.
func decode(t *testing.T, line string, v any) {
	t.Helper()
	require.NoError(t, json.Unmarshal([]byte(line), v), "JSON line %q", line)
}

// holderOf returns the field holding m.
func holderOf(t *testing.T, m *lockmw.Mutex) string {
	t.Helper()
	h, ok, err := m.Holder(testsupport.Ctx(t))
	require.NoError(t, err)
	require.True(t, ok, "%s is held", m.Name())
	return h.Field
}
