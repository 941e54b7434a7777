package redistest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// clusterTimeout bounds the whole cluster bring-up after the nodes are up.
const clusterTimeout = 30 * time.Second

// numSlots is the number of hash slots of a Redis Cluster.
const numSlots = 16384

// Cluster is a Redis Cluster of redis-server child processes on loopback.
// Replicas[i] replicates Masters[i/replicasPerMaster].
type Cluster struct {
	Masters  []*Server
	Replicas []*Server

	ids map[*Server]string // node IDs, set while forming, read-only after

	mu      sync.Mutex
	closed  bool
	client  *redis.ClusterClient
	clients []*redis.ClusterClient
}

// StartCluster starts a cluster of masters masters with replicasPerMaster
// replicas each for the test, and waits until it is fully formed (see the
// package comment). The cluster and its clients are closed by t.Cleanup; if
// the test failed, the log tails of all nodes are printed with t.Log first.
func StartCluster(t testing.TB, masters, replicasPerMaster int) *Cluster {
	t.Helper()
	c, err := LaunchCluster(masters, replicasPerMaster)
	if err != nil {
		t.Fatal(err)
	}
	closeAtCleanup(t, "cluster", c.Nodes, c.Close)
	return c
}

// LaunchCluster is StartCluster without a testing.TB. The caller must Close
// the cluster.
func LaunchCluster(masters, replicasPerMaster int) (*Cluster, error) {
	if masters < 1 || replicasPerMaster < 0 {
		return nil, fmt.Errorf("redistest: cluster of %d masters with %d replicas each", masters, replicasPerMaster)
	}
	nodes, err := launchN(masters*(1+replicasPerMaster), kindCluster)
	if err != nil {
		return nil, err
	}
	c := &Cluster{Masters: nodes[:masters], Replicas: nodes[masters:]}
	ctx, cancel := context.WithTimeout(context.Background(), clusterTimeout)
	defer cancel()
	if err := c.form(ctx, replicasPerMaster); err != nil {
		_ = c.Close()
		return nil, fmt.Errorf("redistest: forming a cluster of %d masters and %d replicas: %w", masters, len(c.Replicas), err)
	}
	return c, nil
}

// Nodes returns the masters followed by the replicas.
func (c *Cluster) Nodes() []*Server {
	return append(append([]*Server(nil), c.Masters...), c.Replicas...)
}

// Client returns a go-redis *redis.ClusterClient seeded with the masters'
// addresses, created on first use and closed by Close.
func (c *Cluster) Client() *redis.ClusterClient {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.client == nil {
		c.client = redis.NewClusterClient(c.options())
	}
	return c.client
}

// NewClient returns a new go-redis cluster client. The mod functions may
// change the options (Addrs and ContextTimeoutEnabled are preset). The caller
// closes it; Close closes it too.
func (c *Cluster) NewClient(mod ...func(*redis.ClusterOptions)) *redis.ClusterClient {
	c.mu.Lock()
	defer c.mu.Unlock()
	opt := c.options()
	for _, m := range mod {
		m(opt)
	}
	cl := redis.NewClusterClient(opt)
	c.clients = append(c.clients, cl)
	return cl
}

func (c *Cluster) options() *redis.ClusterOptions {
	addrs := make([]string, len(c.Masters))
	for i, s := range c.Masters {
		addrs[i] = s.Addr()
	}
	return &redis.ClusterOptions{Addrs: addrs, ContextTimeoutEnabled: true}
}

// Close closes the cluster's clients and all its nodes (replicas first). It
// is idempotent.
func (c *Cluster) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	c.closed = true
	if c.client != nil {
		_ = c.client.Close()
	}
	for _, cl := range c.clients {
		_ = cl.Close()
	}
	var errs []error
	for _, s := range c.Replicas {
		errs = append(errs, s.Close())
	}
	for _, s := range c.Masters {
		errs = append(errs, s.Close())
	}
	return errors.Join(errs...)
}

// form assigns the slots, joins the nodes and attaches the replicas, then
// waits until the cluster is formed.
func (c *Cluster) form(ctx context.Context, replicasPerMaster int) error {
	nodes := c.Nodes()
	ids := make(map[*Server]string, len(nodes))
	c.ids = ids
	for _, s := range nodes {
		id, err := s.Client().Do(ctx, "CLUSTER", "MYID").Text()
		if err != nil {
			return fmt.Errorf("CLUSTER MYID on %s: %w", s.Addr(), err)
		}
		ids[s] = id
	}
	for i, s := range c.Masters {
		lo := i * numSlots / len(c.Masters)
		hi := (i+1)*numSlots/len(c.Masters) - 1
		if err := s.Client().Do(ctx, "CLUSTER", "ADDSLOTSRANGE", lo, hi).Err(); err != nil {
			return fmt.Errorf("CLUSTER ADDSLOTSRANGE %d %d on %s: %w", lo, hi, s.Addr(), err)
		}
	}
	// Distinct config epochs, as redis-cli --cluster create gives: nodes that
	// all start at 0 resolve the collisions by gossip, one bump at a time,
	// and a slot moved meanwhile can go back to its old owner.
	for i, s := range nodes {
		if err := s.Client().Do(ctx, "CLUSTER", "SET-CONFIG-EPOCH", i+1).Err(); err != nil {
			return fmt.Errorf("CLUSTER SET-CONFIG-EPOCH %d on %s: %w", i+1, s.Addr(), err)
		}
	}
	first := nodes[0]
	for _, s := range nodes[1:] {
		if err := first.Client().Do(ctx, "CLUSTER", "MEET", "127.0.0.1", s.Port(), s.BusPort()).Err(); err != nil {
			return fmt.Errorf("CLUSTER MEET %s on %s: %w", s.Addr(), first.Addr(), err)
		}
	}
	// A replica can only replicate a master it knows.
	if err := poll(ctx, "every node knows every other node", func() (bool, string) {
		for _, s := range nodes {
			view, err := clusterNodes(ctx, s)
			if err != nil {
				return false, err.Error()
			}
			if len(view) != len(nodes) {
				return false, fmt.Sprintf("%s knows %d of %d nodes", s.Addr(), len(view), len(nodes))
			}
			for _, e := range view {
				if e.has("handshake") || e.has("noaddr") {
					return false, fmt.Sprintf("%s sees %s as %s", s.Addr(), e.addr, strings.Join(e.flags, ","))
				}
			}
		}
		return true, ""
	}); err != nil {
		return err
	}
	masterOf := func(i int) *Server { return c.Masters[i/replicasPerMaster] }
	for i, r := range c.Replicas {
		m := masterOf(i)
		if err := r.Client().Do(ctx, "CLUSTER", "REPLICATE", ids[m]).Err(); err != nil {
			return fmt.Errorf("CLUSTER REPLICATE %s (%s) on %s: %w", ids[m], m.Addr(), r.Addr(), err)
		}
	}
	return poll(ctx, "cluster_state:ok on every node, replicas attached", func() (bool, string) {
		for _, s := range nodes {
			info, err := s.Client().Do(ctx, "CLUSTER", "INFO").Text()
			if err != nil {
				return false, fmt.Sprintf("CLUSTER INFO on %s: %v", s.Addr(), err)
			}
			if !strings.Contains(info, "cluster_state:ok") {
				return false, s.Addr() + " is not cluster_state:ok"
			}
			view, err := clusterNodes(ctx, s)
			if err != nil {
				return false, err.Error()
			}
			byID := make(map[string]nodeEntry, len(view))
			for _, e := range view {
				byID[e.id] = e
			}
			for i, r := range c.Replicas {
				e, m := byID[ids[r]], masterOf(i)
				if !e.has("slave") || e.master != ids[m] {
					return false, fmt.Sprintf("%s does not see %s as a replica of %s yet", s.Addr(), r.Addr(), m.Addr())
				}
			}
		}
		if ok, why := mastersSeeReplicas(ctx, c.Masters, replicasPerMaster); !ok {
			return false, why
		}
		return linksUp(ctx, c.Replicas)
	})
}

// mastersSeeReplicas reports whether every master counts n replicas online,
// or why not, for poll. A replica's link is up once it loaded the master's
// data set, but with diskless sync the master puts it online only when its
// cron sees the transfer's child done, or at the replica's first ACK: until
// then the master's ROLE lists no replica and WAIT counts none.
func mastersSeeReplicas(ctx context.Context, masters []*Server, n int) (bool, string) {
	for _, m := range masters {
		info, err := m.Client().Info(ctx, "replication").Result()
		if err != nil {
			return false, fmt.Sprintf("INFO replication on %s: %v", m.Addr(), err)
		}
		if got := strings.Count(info, ",state=online,"); got != n {
			return false, fmt.Sprintf("%s has %d of %d replicas online", m.Addr(), got, n)
		}
	}
	return true, ""
}

// poll calls cond every pollInterval until it returns true or ctx is done;
// then the error names what was awaited and the last reason cond gave.
func poll(ctx context.Context, what string, cond func() (bool, string)) error {
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	for {
		ok, why := cond()
		if ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w (last: %s)", what, ctx.Err(), why)
		case <-tick.C:
		}
	}
}

// nodeEntry is one line of CLUSTER NODES.
type nodeEntry struct {
	id, addr, master string
	flags            []string
	slots            string // the slot ranges, "0-5460 6000", without migration marks
}

func (e nodeEntry) has(flag string) bool { return slices.Contains(e.flags, flag) }

func clusterNodes(ctx context.Context, s *Server) ([]nodeEntry, error) {
	out, err := s.Client().Do(ctx, "CLUSTER", "NODES").Text()
	if err != nil {
		return nil, fmt.Errorf("CLUSTER NODES on %s: %w", s.Addr(), err)
	}
	var entries []nodeEntry
	for line := range strings.Lines(out) {
		f := strings.Fields(line)
		if len(f) < 8 {
			continue
		}
		var slots []string
		for _, r := range f[8:] {
			if !strings.HasPrefix(r, "[") { // "[slot->-id]" and "[slot-<-id]" are migrations
				slots = append(slots, r)
			}
		}
		entries = append(entries, nodeEntry{
			id: f[0], addr: f[1], flags: strings.Split(f[2], ","), master: f[3],
			slots: strings.Join(slots, " "),
		})
	}
	return entries, nil
}
