package main_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-rlock/rlock/internal/layout"
	"github.com/go-rlock/rlock/internal/redistest"
	"github.com/go-rlock/rlock/internal/testsupport"
	"github.com/go-rlock/rlock/lockmw"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// cliACL is the ACL rule docs/operators.md gives for rlock's user, before
// its key and channel patterns: the service's rule (unlock runs lockmw's
// force-unlock script), then the commands ls, show and watch add (they read
// and listen) and CLUSTER SLOTS for go-redis' slot map on a cluster.
const cliACL = redistest.MinimalACL + " +cluster|slots " +
	"+scan +hlen +strlen +getrange +multi +exec +psubscribe +punsubscribe"

// aclUser makes the ACL user name, with cliACL and patterns, on every node
// of the topology, and returns the connection flags that log in as it.
func aclUser(t *testing.T, topo, name string, patterns ...string) []string {
	t.Helper()
	nodes, conn := []*redistest.Server{single}, onSingle()
	if topo == "3-master cluster" {
		nodes, conn = cluster.Nodes(), onCluster()
	}
	require.NoError(t, redistest.SetUser(testsupport.Ctx(t), name, "pw-"+name, cliACL, patterns, nodes...))
	return append(conn, "-user", name, "-password", "pw-"+name)
}

// TestNamespaceUnderAPrefixACLUser: an operator confined to a service's
// prefix (~ns* &ns*) lists, shows and force-unlocks that service's
// namespaced locks of every kind, by the names the service gave them;
// the namespace's side keys are not listed, and neither are the locks of
// the same names outside it.
func TestNamespaceUnderAPrefixACLUser(t *testing.T) {
	for _, topo := range topologies {
		t.Run(topo.name, func(t *testing.T) {
			ctx := testsupport.Ctx(t)
			rdb := redisClient(t, topo.name)
			ns := unique("app") + ":"
			user := strings.NewReplacer("#", "", ":", "").Replace(ns)
			conn := aclUser(t, topo.name, user, "~"+ns+"*", "&"+ns+"*")
			svc := newClient(t, rdb, lockmw.WithNamespace(ns))
			plain := newClient(t, rdb)

			orders := svc.Mutex("orders:42", lockmw.WithFencing())
			h, err := orders.Lock(ctx)
			require.NoError(t, err)
			outside := plain.Mutex("orders:42") // the same name outside the namespace
			oh, err := outside.Lock(ctx)
			require.NoError(t, err)
			waiter := newClient(t, rdb, lockmw.WithNamespace(ns)).Mutex("orders:42")
			got := make(chan error, 1)
			go func() { // a waiter: the queue and the waiter table exist
				h2, err := waiter.Lock(ctx)
				if err == nil {
					err = waiter.Unlock(h2)
				}
				got <- err
			}()
			testsupport.Eventually(t, 10*time.Second, "the waiter is queued", func() bool {
				k := layout.Namespaced(ns, layout.Mutex(layout.InNamespace(ns, "orders:42")))
				return rdb.ZCard(ctx, k.Queue).Val() == 1
			})
			_, err = svc.Mutex("{tenant}:job").TryLock(ctx, 0, 0)
			require.NoError(t, err)
			_, err = svc.Semaphore("pool", 3).TryLock(ctx, 0, 0)
			require.NoError(t, err)
			_, err = svc.RWMutex("doc").TryRLock(ctx, 0, 0)
			require.NoError(t, err)
			_, err = svc.RWMutex("prices").TryLock(ctx, 0, 0)
			require.NoError(t, err)

			r := run(t, nil, args(conn, "-json", "ls", "-namespace", ns)...)
			require.Equal(t, 0, r.code, r.stderr)
			kinds := map[string]string{}
			for _, l := range lines(r.stdout) {
				var e listed
				decode(t, l, &e)
				kinds[e.Name] = e.Kind
				if e.Name == "orders:42" {
					assert.EqualValues(t, 1, e.Waiters, "the waiter queued in the namespace")
				}
			}
			assert.Equal(t, map[string]string{"orders:42": "lock", "{tenant}:job": "lock", "pool": "semaphore", "doc": "rwlock", "prices": "rwlock"}, kinds)

			assert.Empty(t, r.stderr, "nothing left out")
			r = run(t, nil, args(conn, "-json", "ls")...)
			require.Equal(t, 0, r.code, r.stderr)
			assert.Contains(t, r.stderr, "the ACL user may not read (NOPERM)", "without -namespace, the keys outside the user's patterns are left out, and ls says so")

			r = run(t, nil, args(conn, "-json", "-namespace", ns, "ls", "[op]*")...)
			require.Equal(t, 0, r.code, r.stderr)
			var names []string
			for _, l := range lines(r.stdout) {
				var e listed
				decode(t, l, &e)
				names = append(names, e.Name)
			}
			slices.Sort(names)
			assert.Equal(t, []string{"orders:42", "pool", "prices"}, names, "PATTERN matches the names as given")

			s := showJSON[shown](t, append(conn, "-namespace", ns), "orders:42")
			assert.Equal(t, "orders:42", s.Name)
			require.Len(t, s.Holders, 1)
			assert.Equal(t, holderOf(t, orders), s.Holders[0].Field)
			assert.NotEmpty(t, s.Token, "the fencing token, read from the namespace's counter")
			assert.Len(t, s.Waiters, 1)
			assert.Equal(t, "semaphore", showJSON[shown](t, append(conn, "-namespace", ns), "pool").Kind)
			assert.Equal(t, "rwlock", showJSON[shown](t, append(conn, "-namespace", ns), "doc").Kind)

			r = run(t, nil, args(conn, "-json", "-namespace", ns, "unlock", "-y", "{tenant}:job")...)
			require.Equal(t, 0, r.code, r.stderr)
			locked, err := svc.Mutex("{tenant}:job").IsLocked(ctx)
			require.NoError(t, err)
			assert.False(t, locked, "force-unlocked in the namespace")

			w := startWatch(t, append(conn, "-namespace", ns), "watched")
			m := svc.Mutex("watched")
			wh, err := m.Lock(ctx)
			require.NoError(t, err)
			assert.Equal(t, holderOf(t, m), w.next(t, "acquired", "held").Field)
			require.NoError(t, m.Unlock(wh))
			w.next(t, "released")
			assert.Equal(t, 0, w.interrupt(t), w.stderr.String())
			if topo.name == "single node" {
				assert.Contains(t, w.stderr.String(), "the ACL refused PSUBSCRIBE", "watch says what it listens to")
			}

			require.NoError(t, outside.Unlock(oh))
			require.NoError(t, orders.Unlock(h))
			require.NoError(t, testsupport.Recv(t, got, 20*time.Second, "the waiter's Lock"))
		})
	}
}

// TestNamespaceFlagIsChecked: -namespace takes lockmw.WithNamespace's
// values only.
func TestNamespaceFlagIsChecked(t *testing.T) {
	for _, v := range []string{"", "a{b", "a\tb"} {
		r := run(t, nil, args(onSingle(), "ls", "-namespace", v)...)
		assert.Equal(t, 2, r.code, "-namespace %q", v)
		assert.Contains(t, r.stderr, "-namespace", fmt.Sprintf("-namespace %q", v))
	}
}
