package redistest

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// sentinelTimeout bounds the bring-up of a sentinel group after the
// processes are up: replicas in sync, sentinels aware of each other (they
// announce themselves every 2 s).
const sentinelTimeout = 30 * time.Second

// Sentinel settings of every monitored master; see the package comment.
const (
	// SentinelMasterName is the name the sentinels monitor the master under.
	SentinelMasterName = "redistest"
	// sentinelDownAfter is sentinel down-after-milliseconds: how long the
	// master may not answer before a sentinel deems it down.
	sentinelDownAfter = 500
	// sentinelFailoverTimeout is sentinel failover-timeout, in milliseconds.
	sentinelFailoverTimeout = 3000
)

// Sentinel is a master, its replicas and the sentinels that monitor them,
// all redis-server child processes on loopback. Master, Replicas and
// Sentinels are the nodes as they were started; after a fail-over the master
// is another node: ask CurrentMaster. Its methods are safe for concurrent
// use.
type Sentinel struct {
	Master     *Server
	Replicas   []*Server
	Sentinels  []*Server
	MasterName string // the name the sentinels know the master by

	mu      sync.Mutex
	closed  bool
	clients []*redis.Client
	sc      []*redis.SentinelClient // one per element of Sentinels
}

// StartSentinel starts a master with replicas replicas and sentinels
// sentinels monitoring it for the test, and waits until the group is formed
// (see the package comment). The group and its clients are closed by
// t.Cleanup; if the test failed, the log tails of all processes are printed
// with t.Log first.
func StartSentinel(t testing.TB, replicas, sentinels int) *Sentinel {
	t.Helper()
	s, err := LaunchSentinel(replicas, sentinels)
	if err != nil {
		t.Fatal(err)
	}
	closeAtCleanup(t, "sentinel group", s.nodes, s.Close)
	return s
}

// closeAtCleanup closes a group of servers at the end of the test, after
// printing every node's log tail if the test failed.
func closeAtCleanup(t testing.TB, what string, nodes func() []*Server, closeAll func() error) {
	t.Cleanup(func() {
		if t.Failed() {
			for _, n := range nodes() {
				t.Logf("redistest: log tail of %s node %s (pid %d):\n%s", what, n.Addr(), n.Pid(), n.LogTail(20))
			}
		}
		if err := closeAll(); err != nil {
			t.Errorf("redistest: closing %s: %v", what, err)
		}
	})
}

// LaunchSentinel is StartSentinel without a testing.TB. The caller must Close
// the group.
func LaunchSentinel(replicas, sentinels int) (*Sentinel, error) {
	if replicas < 0 || sentinels < 1 {
		return nil, fmt.Errorf("redistest: sentinel group of %d replicas and %d sentinels", replicas, sentinels)
	}
	s := &Sentinel{MasterName: SentinelMasterName}
	fail := func(err error) (*Sentinel, error) {
		_ = s.Close()
		if errors.Is(err, ErrNotFound) {
			return nil, ErrNotFound
		}
		return nil, err
	}
	m, err := launch(kindStandalone, nil)
	if err != nil {
		return fail(err)
	}
	s.Master = m
	if s.Replicas, err = launchN(replicas, kindStandalone, "replicaof 127.0.0.1 "+strconv.Itoa(m.Port())); err != nil {
		return fail(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), sentinelTimeout)
	defer cancel()
	if err := s.waitReplicas(ctx); err != nil {
		return fail(fmt.Errorf("redistest: starting %d replicas: %w", replicas, err))
	}
	quorum := sentinels/2 + 1
	if s.Sentinels, err = launchN(sentinels, kindSentinel,
		fmt.Sprintf("sentinel monitor %s 127.0.0.1 %d %d", s.MasterName, m.Port(), quorum),
		fmt.Sprintf("sentinel down-after-milliseconds %s %d", s.MasterName, sentinelDownAfter),
		fmt.Sprintf("sentinel failover-timeout %s %d", s.MasterName, sentinelFailoverTimeout),
	); err != nil {
		return fail(err)
	}
	for _, n := range s.Sentinels {
		s.sc = append(s.sc, redis.NewSentinelClient(&redis.Options{Addr: n.Addr(), ContextTimeoutEnabled: true}))
	}
	if err := s.waitSentinels(ctx); err != nil {
		return fail(fmt.Errorf("redistest: starting %d sentinels: %w", sentinels, err))
	}
	return s, nil
}

// launchN starts n servers of a kind at once.
func launchN(n int, kind nodeKind, args ...string) ([]*Server, error) {
	nodes := make([]*Server, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range nodes {
		wg.Go(func() { nodes[i], errs[i] = launch(kind, args) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		for _, s := range nodes {
			if s != nil {
				_ = s.Close()
			}
		}
		if errors.Is(err, ErrNotFound) {
			return nil, ErrNotFound
		}
		return nil, err
	}
	return nodes, nil
}

// waitReplicas waits until the master sees every replica online and every
// replica's link to the master is up.
func (s *Sentinel) waitReplicas(ctx context.Context) error {
	return poll(ctx, "replicas in sync", func() (bool, string) {
		if ok, why := mastersSeeReplicas(ctx, []*Server{s.Master}, len(s.Replicas)); !ok {
			return false, why
		}
		return linksUp(ctx, s.Replicas)
	})
}

// linksUp reports whether every replica's link to its master is up, or why
// not, for poll.
func linksUp(ctx context.Context, replicas []*Server) (bool, string) {
	for _, r := range replicas {
		info, err := r.Client().Info(ctx, "replication").Result()
		if err != nil {
			return false, fmt.Sprintf("INFO replication on %s: %v", r.Addr(), err)
		}
		if !strings.Contains(info, "master_link_status:up") {
			return false, fmt.Sprintf("replication link of %s is not up", r.Addr())
		}
	}
	return true, ""
}

// waitSentinels waits until every sentinel sees the master up, all the
// replicas with their link up and all the other sentinels.
func (s *Sentinel) waitSentinels(ctx context.Context) error {
	return poll(ctx, "sentinels to know the master, the replicas and each other", func() (bool, string) {
		for i, sc := range s.sc {
			addr := s.Sentinels[i].Addr()
			m, err := sc.Master(ctx, s.MasterName).Result()
			if err != nil {
				return false, fmt.Sprintf("SENTINEL MASTER on %s: %v", addr, err)
			}
			if m["flags"] != "master" {
				return false, fmt.Sprintf("sentinel %s sees the master with flags %s", addr, m["flags"])
			}
			if want := strconv.Itoa(len(s.Sentinels) - 1); m["num-other-sentinels"] != want {
				return false, fmt.Sprintf("sentinel %s knows %s of %s other sentinels", addr, m["num-other-sentinels"], want)
			}
			reps, err := sc.Replicas(ctx, s.MasterName).Result()
			if err != nil {
				return false, fmt.Sprintf("SENTINEL REPLICAS on %s: %v", addr, err)
			}
			if len(reps) != len(s.Replicas) {
				return false, fmt.Sprintf("sentinel %s knows %d of %d replicas", addr, len(reps), len(s.Replicas))
			}
			for _, r := range reps {
				if r["flags"] != "slave" || r["master-link-status"] != "ok" {
					return false, fmt.Sprintf("sentinel %s sees replica %s:%s with flags %s, link %s", addr, r["ip"], r["port"], r["flags"], r["master-link-status"])
				}
			}
		}
		return true, ""
	})
}

// SentinelAddrs returns the sentinels' addresses, for FailoverOptions.
func (s *Sentinel) SentinelAddrs() []string {
	addrs := make([]string, len(s.Sentinels))
	for i, n := range s.Sentinels {
		addrs[i] = n.Addr()
	}
	return addrs
}

// Client returns a new go-redis failover client (redis.NewFailoverClient)
// for the group: it asks the sentinels for the master and follows a
// fail-over. The mod functions may change the options (MasterName,
// SentinelAddrs and ContextTimeoutEnabled are preset). Unlike Server.Client,
// every call returns a new client; the caller may close it, and Close closes
// it anyway (after Close, Client returns a closed client).
func (s *Sentinel) Client(mod ...func(*redis.FailoverOptions)) *redis.Client {
	opt := &redis.FailoverOptions{
		MasterName:            s.MasterName,
		SentinelAddrs:         s.SentinelAddrs(),
		ContextTimeoutEnabled: true,
	}
	for _, m := range mod {
		m(opt)
	}
	c := redis.NewFailoverClient(opt)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		_ = c.Close() // its commands fail with redis.ErrClosed
	}
	s.clients = append(s.clients, c)
	return c
}

// CurrentMaster returns the node that the first sentinel that answers
// (SENTINEL GET-MASTER-ADDR-BY-NAME) names as the master. During a fail-over
// the sentinels may disagree for a moment; WaitFailover waits until they
// agree.
func (s *Sentinel) CurrentMaster(ctx context.Context) (*Server, error) {
	var errs []error
	for i, sc := range s.sc {
		if !s.Sentinels[i].Running() {
			continue
		}
		m, err := s.masterOf(ctx, sc)
		if err == nil {
			return m, nil
		}
		errs = append(errs, fmt.Errorf("sentinel %s: %w", s.Sentinels[i].Addr(), err))
	}
	return nil, fmt.Errorf("redistest: no sentinel named the master: %w", errors.Join(errs...))
}

// masterOf asks one sentinel for the master's address and maps it to the
// node.
func (s *Sentinel) masterOf(ctx context.Context, sc *redis.SentinelClient) (*Server, error) {
	addr, err := sc.GetMasterAddrByName(ctx, s.MasterName).Result()
	if err != nil {
		return nil, fmt.Errorf("SENTINEL GET-MASTER-ADDR-BY-NAME: %w", err)
	}
	if len(addr) != 2 {
		return nil, fmt.Errorf("SENTINEL GET-MASTER-ADDR-BY-NAME: %q", addr)
	}
	for _, n := range s.dataNodes() {
		if strconv.Itoa(n.Port()) == addr[1] {
			return n, nil
		}
	}
	return nil, fmt.Errorf("master %s:%s is not a node of this group", addr[0], addr[1])
}

// KillMaster kills the current master (see CurrentMaster) with SIGKILL, a
// crash (see Server.Kill), and returns it. It does not wait for the
// fail-over: call WaitFailover.
func (s *Sentinel) KillMaster(ctx context.Context) (*Server, error) {
	m, err := s.CurrentMaster(ctx)
	if err != nil {
		return nil, err
	}
	if err := m.Kill(); err != nil {
		return nil, err
	}
	return m, nil
}

// WaitFailover waits until every running sentinel names the same master,
// other than old, and that node reports role master (ROLE). It returns the
// new master. With down-after-milliseconds 500 a fail-over after a crash
// takes a few seconds.
func (s *Sentinel) WaitFailover(ctx context.Context, old *Server) (*Server, error) {
	var cur *Server
	err := poll(ctx, "the sentinels to promote a replica of "+old.Addr(), func() (bool, string) {
		cur = nil
		for i, sc := range s.sc {
			if !s.Sentinels[i].Running() {
				continue
			}
			m, err := s.masterOf(ctx, sc)
			if err != nil {
				return false, fmt.Sprintf("sentinel %s: %v", s.Sentinels[i].Addr(), err)
			}
			if m == old {
				return false, fmt.Sprintf("sentinel %s still names %s", s.Sentinels[i].Addr(), old.Addr())
			}
			if cur != nil && m != cur {
				return false, fmt.Sprintf("the sentinels name %s and %s", cur.Addr(), m.Addr())
			}
			cur = m
		}
		if cur == nil {
			return false, "no sentinel is running"
		}
		role, err := cur.Client().Do(ctx, "ROLE").Slice()
		if err != nil {
			return false, fmt.Sprintf("ROLE on %s: %v", cur.Addr(), err)
		}
		if len(role) == 0 || role[0] != "master" {
			return false, fmt.Sprintf("%s is named master but has ROLE %v", cur.Addr(), role)
		}
		return true, ""
	})
	if err != nil {
		return nil, fmt.Errorf("redistest: %w", err)
	}
	return cur, nil
}

// dataNodes returns the master and the replicas as started.
func (s *Sentinel) dataNodes() []*Server {
	var nodes []*Server
	if s.Master != nil {
		nodes = append(nodes, s.Master)
	}
	return append(nodes, s.Replicas...)
}

// nodes returns all processes of the group: data nodes, then sentinels.
func (s *Sentinel) nodes() []*Server {
	return append(s.dataNodes(), s.Sentinels...)
}

// Close closes the group's clients and all its processes (sentinels first,
// so that they start no fail-over, then replicas, then the master). It is
// idempotent.
func (s *Sentinel) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	for _, c := range s.clients {
		_ = c.Close()
	}
	for _, c := range s.sc {
		_ = c.Close()
	}
	var errs []error
	for _, n := range s.Sentinels {
		errs = append(errs, n.Close())
	}
	for _, n := range s.Replicas {
		errs = append(errs, n.Close())
	}
	if s.Master != nil {
		errs = append(errs, s.Master.Close())
	}
	return errors.Join(errs...)
}
