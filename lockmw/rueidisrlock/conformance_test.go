package rueidisrlock_test

import (
	"testing"

	"github.com/go-rlock/rlock/internal/redistest"
	"github.com/go-rlock/rlock/lockmw/backend/backendtest"
	"github.com/go-rlock/rlock/lockmw/rueidisrlock"
	"github.com/redis/rueidis"
	"go.uber.org/goleak"
)

// rueidis closes the connections a cluster refresh replaced 5 s later, and
// after a failed connection delays its next try, each in a goroutine of its
// own that sleeps a bounded time.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		goleak.IgnoreAnyFunction("github.com/redis/rueidis.(*clusterClient)._refresh.func2"),
		goleak.IgnoreAnyFunction("github.com/redis/rueidis.(*call).DelayDo.func1"))
}

// newClient is a rueidis client with default options but the addresses,
// closed at the test's end.
func newClient(t *testing.T, opt rueidis.ClientOption) rueidis.Client {
	t.Helper()
	c, err := rueidis.NewClient(opt)
	if err != nil {
		t.Fatalf("rueidis.NewClient: %v", err)
	}
	t.Cleanup(c.Close)
	return c
}

// The rueidis back-end passes the conformance suite on every topology
// rueidis serves, built with default options as users build them.
func TestConformance(t *testing.T) {
	t.Run("single node", func(t *testing.T) {
		t.Parallel()
		srv := redistest.Start(t)
		backendtest.Run(t, rueidisrlock.Backend(newClient(t, rueidis.ClientOption{InitAddress: []string{srv.Addr()}})))
	})
	t.Run("single node, RESP2", func(t *testing.T) { // as on Redis 5 (DisableCache is then required)
		t.Parallel()
		srv := redistest.Start(t)
		backendtest.Run(t, rueidisrlock.Backend(newClient(t, rueidis.ClientOption{InitAddress: []string{srv.Addr()}, AlwaysRESP2: true, DisableCache: true})))
	})
	t.Run("cluster", func(t *testing.T) {
		t.Parallel()
		cl := redistest.StartCluster(t, 3, 0)
		var addrs []string
		for _, m := range cl.Masters {
			addrs = append(addrs, m.Addr())
		}
		backendtest.Run(t, rueidisrlock.Backend(newClient(t, rueidis.ClientOption{InitAddress: addrs})))
	})
	t.Run("sentinel", func(t *testing.T) {
		t.Parallel()
		sg := redistest.StartSentinel(t, 1, 1)
		c := newClient(t, rueidis.ClientOption{
			InitAddress: sg.SentinelAddrs(),
			Sentinel:    rueidis.SentinelOption{MasterSet: sg.MasterName},
		})
		backendtest.Run(t, rueidisrlock.Backend(c))
	})
}
