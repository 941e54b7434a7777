package lockmw_test

import (
	"slices"
	"testing"
	"time"

	"github.com/go-rlock/rlock/internal/faultproxy"
	"github.com/go-rlock/rlock/internal/redistest"
	"github.com/go-rlock/rlock/internal/testsupport"
	"github.com/go-rlock/rlock/lockmw"
	"github.com/redis/go-redis/v9"
)

// BenchmarkQuorumPausedMaster times what a user feels from a quorum of three
// masters with one of them paused (SIGSTOP): Lock from the call to its
// return, Unlock likewise, through go-redis clients with default options (a
// 5 s read timeout) whose connections one Lock and Unlock warmed before the
// pause. It reports the median and the longest of each (ms).
//
//	go test -run '^$' -bench QuorumPausedMaster -benchtime 20x ./lockmw
func BenchmarkQuorumPausedMaster(b *testing.B) {
	srvs := make([]*redistest.Server, 3)
	rdbs := make([]redis.UniversalClient, 3)
	for i := range srvs {
		srvs[i] = redistest.Start(b)
		rdbs[i] = srvs[i].NewClient()
	}
	c := lockmw.NewQuorum(rdbs)
	b.Cleanup(func() { _ = c.Close() })
	m := c.Mutex("bench-paused")
	ctx := testsupport.Ctx(b)
	h, err := m.Lock(ctx) // every connection warm
	if err != nil {
		b.Fatal(err)
	}
	if err := m.Unlock(h); err != nil {
		b.Fatal(err)
	}
	if err := srvs[2].Pause(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = srvs[2].Resume() })
	var locks, unlocks []time.Duration
	for b.Loop() {
		t0 := time.Now()
		h, err := m.Lock(ctx)
		if err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		if err := m.Unlock(h); err != nil {
			b.Fatal(err)
		}
		locks, unlocks = append(locks, t1.Sub(t0)), append(unlocks, time.Since(t1))
	}
	report := func(ds []time.Duration, unit string) {
		slices.Sort(ds)
		b.ReportMetric(float64(ds[len(ds)/2])/float64(time.Millisecond), unit+"-p50-ms")
		b.ReportMetric(float64(ds[len(ds)-1])/float64(time.Millisecond), unit+"-max-ms")
	}
	report(locks, "lock")
	report(unlocks, "unlock")
}

// BenchmarkQuorumKinds times what a user feels of each kind on a quorum of
// three masters, each reached through the fault proxy 500µs each way (a
// network's 1 ms round trip) with go-redis's default options, side by side
// in one run: Lock from the call to its return and Unlock likewise, median
// (ms), for a mutex; a semaphore of three permits all free, and with two of
// them held by another Client (a TryLock asks a permit a round until one is
// free, from a random one); the read and the write side of an RWMutex.
//
//	go test -run '^$' -bench QuorumKinds -benchtime 200x ./lockmw
func BenchmarkQuorumKinds(b *testing.B) {
	rdbs := make([]redis.UniversalClient, 3)
	for i := range rdbs {
		srv := redistest.Start(b)
		p, err := faultproxy.Start(srv.Addr())
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = p.Close() })
		p.SetLatency(500 * time.Microsecond)
		p.SetRequestLatency(500 * time.Microsecond)
		rdb := redis.NewClient(&redis.Options{Addr: p.Addr()})
		b.Cleanup(func() { _ = rdb.Close() })
		rdbs[i] = rdb
	}
	c, other := lockmw.NewQuorum(rdbs), lockmw.NewQuorum(rdbs)
	b.Cleanup(func() { _ = c.Close(); _ = other.Close() })
	ctx := testsupport.Ctx(b)
	rw := c.RWMutex("bench-kinds-rw")
	busySem := c.Semaphore("bench-kinds-busy", 3)
	for range 2 { // two of its three permits held by another Client
		if _, err := other.Semaphore("bench-kinds-busy", 3).Lock(ctx); err != nil {
			b.Fatal(err)
		}
	}
	for _, k := range []struct {
		name string
		l    lockmw.Locker
	}{
		{"mutex", c.Mutex("bench-kinds-m")},
		{"semaphore-3-free", c.Semaphore("bench-kinds-free", 3)},
		{"semaphore-3-two-held", busySem},
		{"rw-read", rw.RLocker()},
		{"rw-write", rw},
	} {
		b.Run(k.name, func(b *testing.B) {
			var locks, unlocks []time.Duration
			for b.Loop() {
				t0 := time.Now()
				h, err := k.l.Lock(ctx)
				if err != nil {
					b.Fatal(err)
				}
				t1 := time.Now()
				if err := k.l.Unlock(h); err != nil {
					b.Fatal(err)
				}
				locks, unlocks = append(locks, t1.Sub(t0)), append(unlocks, time.Since(t1))
			}
			slices.Sort(locks)
			slices.Sort(unlocks)
			b.ReportMetric(float64(locks[len(locks)/2])/float64(time.Millisecond), "lock-p50-ms")
			b.ReportMetric(float64(unlocks[len(unlocks)/2])/float64(time.Millisecond), "unlock-p50-ms")
		})
	}
}
