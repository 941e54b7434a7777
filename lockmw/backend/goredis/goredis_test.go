package goredis_test

import (
	"testing"

	"github.com/go-rlock/rlock/internal/redistest"
	"github.com/go-rlock/rlock/lockmw/backend/backendtest"
	"github.com/go-rlock/rlock/lockmw/backend/goredis"
	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The go-redis back-end passes the conformance suite on every topology
// go-redis serves, built with default options as users build them.
func TestConformance(t *testing.T) {
	t.Run("single node", func(t *testing.T) {
		t.Parallel()
		srv := redistest.Start(t)
		rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
		t.Cleanup(func() { _ = rdb.Close() })
		backendtest.Run(t, goredis.New(rdb))
	})
	t.Run("single node, context deadlines", func(t *testing.T) {
		t.Parallel()
		srv := redistest.Start(t)
		backendtest.Run(t, goredis.New(srv.NewClient()))
	})
	t.Run("cluster", func(t *testing.T) {
		t.Parallel()
		cl := redistest.StartCluster(t, 3, 0)
		var addrs []string
		for _, m := range cl.Masters {
			addrs = append(addrs, m.Addr())
		}
		rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs})
		t.Cleanup(func() { _ = rdb.Close() })
		backendtest.Run(t, goredis.New(rdb))
	})
	t.Run("sentinel", func(t *testing.T) {
		t.Parallel()
		sg := redistest.StartSentinel(t, 1, 1)
		backendtest.Run(t, goredis.New(sg.Client()))
	})
}

// New refuses a nil client at once.
func TestNewNil(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("goredis.New(nil) did not panic")
		}
	}()
	goredis.New(nil)
}
