package lockmw_test

import (
	"context"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-rlock/rlock/internal/redistest"
	"github.com/go-rlock/rlock/internal/testsupport/locktest"
	"github.com/go-rlock/rlock/lockmw"
	"github.com/redis/go-redis/v9"
)

// Run: go test -run '^$' -bench . -benchmem ./lockmw/

func BenchmarkLockUnlock(b *testing.B) {
	srv := redistest.Start(b)
	benchLockUnlock(b, locktest.NewOn(b, srv).Mutex("bench"), context.Background())
}

// BenchmarkSemaphoreLockUnlock is BenchmarkLockUnlock for one permit of a
// semaphore of 4: the uncontended take and give back.
func BenchmarkSemaphoreLockUnlock(b *testing.B) {
	srv := redistest.Start(b)
	benchLockUnlock(b, locktest.NewOn(b, srv).Semaphore("bench-sem", 4), context.Background())
}

// BenchmarkRWMutexRLockRUnlock and BenchmarkRWMutexLockUnlock are
// BenchmarkLockUnlock for a read-write lock's sides, uncontended: no fast
// path, and a reader's timeout key per level.
func BenchmarkRWMutexRLockRUnlock(b *testing.B) {
	srv := redistest.Start(b)
	benchLockUnlock(b, locktest.NewOn(b, srv).RWMutex("bench-rw").RLocker(), context.Background())
}

func BenchmarkRWMutexLockUnlock(b *testing.B) {
	srv := redistest.Start(b)
	benchLockUnlock(b, locktest.NewOn(b, srv).RWMutex("bench-rw"), context.Background())
}

// benchLockUnlock times Lock and Unlock of m with ctx.
func benchLockUnlock(b *testing.B, m lockmw.Locker, ctx context.Context) {
	b.ReportAllocs()
	for b.Loop() {
		h, err := m.Lock(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if err := m.Unlock(h); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLockUnlockDefaultOptions is BenchmarkLockUnlock as users
// configure: a go-redis client with default options (ContextTimeoutEnabled
// false) and a context with a deadline, so that each round trip runs on a
// goroutine of its own to return at the deadline (bounded.go).
func BenchmarkLockUnlockDefaultOptions(b *testing.B) {
	srv := redistest.Start(b)
	c := locktest.New(b, srv.NewClient(func(o *redis.Options) { o.ContextTimeoutEnabled = false }))
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	benchLockUnlock(b, c.Mutex("bench"), ctx)
}

// BenchmarkSetNXDel is the floor: a bare SET NX PX and DEL on the same client.
func BenchmarkSetNXDel(b *testing.B) {
	srv := redistest.Start(b)
	rdb := srv.NewClient()
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if err := rdb.SetNX(ctx, "bench-floor", "owner", 30*time.Second).Err(); err != nil {
			b.Fatal(err)
		}
		if err := rdb.Del(ctx, "bench-floor").Err(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkReenter(b *testing.B) {
	srv := redistest.Start(b)
	c := locktest.NewOn(b, srv)
	m := c.Mutex("bench-reenter")
	h, err := m.Lock(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		in, err := m.Lock(h)
		if err != nil {
			b.Fatal(err)
		}
		if err := m.Unlock(in); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	_ = m.Unlock(h)
}

func BenchmarkTryLockBusy(b *testing.B) {
	srv := redistest.Start(b)
	holder, c := locktest.NewOn(b, srv), locktest.NewOn(b, srv)
	ctx := context.Background()
	h, err := holder.Mutex("bench-busy").Lock(ctx)
	if err != nil {
		b.Fatal(err)
	}
	m := c.Mutex("bench-busy")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := m.TryLock(ctx, 0, 0); err == nil {
			b.Fatal("acquired a held lock")
		}
	}
	b.StopTimer()
	_ = holder.Mutex("bench-busy").Unlock(h)
}

// BenchmarkContended8 has 8 goroutines, each with its own Client (as 8
// processes would), take turns on one name; ns/op is per acquisition.
func BenchmarkContended8(b *testing.B) {
	srv := redistest.Start(b)
	const workers = 8
	ms := make([]*lockmw.Mutex, workers)
	for i := range ms {
		ms[i] = locktest.NewOn(b, srv).Mutex("bench-contended")
	}
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	var wg sync.WaitGroup
	per := b.N / workers
	for i, m := range ms {
		n := per
		if i == 0 {
			n += b.N % workers
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range n {
				h, err := m.Lock(ctx)
				if err != nil {
					b.Error(err)
					return
				}
				if err := m.Unlock(h); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
}

// BenchmarkLockUnlockParallel is the parallel scenario of examples/bench in
// small: 64 goroutines (32 per P on 2 cores) share one Client, each locking
// and unlocking a name of its own. Besides ns/op (per lock+unlock, all
// goroutines together) it reports the redis-server's CPU time per
// lock+unlock (INFO cpu, during the loop: the latches' expiry comes later)
// and its commands per lock+unlock (INFO commandstats).
func BenchmarkLockUnlockParallel(b *testing.B) { benchParallel(b) }

// BenchmarkLockUnlockParallelWithoutBatching is BenchmarkLockUnlockParallel
// with WithoutBatching: each round trip on a connection of its own.
func BenchmarkLockUnlockParallelWithoutBatching(b *testing.B) {
	benchParallel(b, lockmw.WithoutBatching())
}

// BenchmarkLockUnlockWithoutBatching is BenchmarkLockUnlock with
// WithoutBatching: a lone caller's latency is the same with batching on.
func BenchmarkLockUnlockWithoutBatching(b *testing.B) {
	srv := redistest.Start(b)
	benchLockUnlock(b, locktest.NewOn(b, srv, lockmw.WithoutBatching()).Mutex("bench"), context.Background())
}

// BenchmarkLockUnlockDeadline is BenchmarkLockUnlock as an HTTP handler
// calls it: with a context that has a deadline, on a go-redis client that
// honours it (ContextTimeoutEnabled, as the test helpers set it).
func BenchmarkLockUnlockDeadline(b *testing.B) {
	srv := redistest.Start(b)
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	benchLockUnlock(b, locktest.NewOn(b, srv).Mutex("bench"), ctx)
}

// benchParallel runs BenchmarkLockUnlockParallel on a Client with opts.
func benchParallel(b *testing.B, opts ...lockmw.Option) {
	srv := redistest.Start(b)
	c := locktest.NewOn(b, srv, opts...)
	ctx := context.Background()
	var names atomic.Int64
	cpu0, calls0 := serverCPU(b, srv), serverCalls(b, srv)
	b.SetParallelism(32)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		m := c.Mutex("bench-par-" + strconv.FormatInt(names.Add(1), 10))
		for pb.Next() {
			h, err := m.Lock(ctx)
			if err != nil {
				b.Error(err)
				return
			}
			if err := m.Unlock(h); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.StopTimer()
	b.ReportMetric(float64(serverCPU(b, srv)-cpu0)/1e3/float64(b.N), "redis-µs/op")
	b.ReportMetric(float64(serverCalls(b, srv)-calls0)/float64(b.N), "redis-cmds/op")
}

// serverCPU is the redis-server's CPU time so far (INFO cpu, system + user).
func serverCPU(b *testing.B, srv *redistest.Server) time.Duration {
	d, err := srv.CPUTime(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	return d
}

// serverCalls is the commands the redis-server ran so far, those inside
// scripts too, but for INFO.
func serverCalls(b *testing.B, srv *redistest.Server) int {
	n, err := srv.CommandsRun(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	return n
}

// BenchmarkLoneCallerBatchingOnOff times a lone caller's Lock+Unlock on two
// Clients of one server, one batching (the default) and one WithoutBatching,
// taking turns every 100 pairs so that both see the same machine, and
// reports each one's p50 and their ratio (on/off): batching adds no latency
// to a caller that has no company.
func BenchmarkLoneCallerBatchingOnOff(b *testing.B) {
	srv := redistest.Start(b)
	on := locktest.NewOn(b, srv).Mutex("lone-on")
	off := locktest.NewOn(b, srv, lockmw.WithoutBatching()).Mutex("lone-off")
	ctx := context.Background()
	var lat [2][]time.Duration
	pair := func(m *lockmw.Mutex) time.Duration {
		start := time.Now()
		h, err := m.Lock(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if err := m.Unlock(h); err != nil {
			b.Fatal(err)
		}
		return time.Since(start)
	}
	pair(on) // the RESTORE probes and the scripts loaded
	pair(off)
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		k := i / 100 % 2
		lat[k] = append(lat[k], pair([]*lockmw.Mutex{on, off}[k]))
	}
	b.StopTimer()
	p50 := func(d []time.Duration) float64 {
		if len(d) == 0 {
			return 0
		}
		slices.Sort(d)
		return float64(d[len(d)/2].Microseconds())
	}
	on50, off50 := p50(lat[0]), p50(lat[1])
	b.ReportMetric(on50, "p50-on-µs")
	b.ReportMetric(off50, "p50-off-µs")
	if off50 > 0 {
		b.ReportMetric(on50/off50, "on/off")
	}
}

// BenchmarkClusterParallel is BenchmarkLockUnlockParallel on a 3-master
// cluster (loopback, no replicas), one ClusterClient: batched per master
// (the default) and WithoutBatching, a mutex and a semaphore of 2 permits
// per goroutine; the servers' CPU is summed over the masters.
func BenchmarkClusterParallel(b *testing.B) {
	cl := redistest.StartCluster(b, 3, 0)
	for _, bc := range []struct {
		name string
		sem  bool
		opts []lockmw.Option
	}{
		{"mutex/batched", false, nil},
		{"mutex/unbatched", false, []lockmw.Option{lockmw.WithoutBatching()}},
		{"semaphore/batched", true, nil},
		{"semaphore/unbatched", true, []lockmw.Option{lockmw.WithoutBatching()}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			c := locktest.New(b, cl.NewClient(), bc.opts...)
			ctx := context.Background()
			var names atomic.Int64
			cpu0 := clusterCPU(b, cl)
			b.SetParallelism(32)
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				name := bc.name + "-" + strconv.FormatInt(names.Add(1), 10)
				var lk lockmw.Locker = c.Mutex(name)
				if bc.sem {
					lk = c.Semaphore(name, 2)
				}
				for pb.Next() {
					h, err := lk.Lock(ctx)
					if err != nil {
						b.Error(err)
						return
					}
					if err := lk.Unlock(h); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.StopTimer()
			b.ReportMetric(float64(clusterCPU(b, cl)-cpu0)/1e3/float64(b.N), "redis-µs/op")
		})
	}
}

// clusterCPU is the CPU time of every node of cl so far.
func clusterCPU(b *testing.B, cl *redistest.Cluster) time.Duration {
	var sum time.Duration
	for _, n := range cl.Nodes() {
		sum += serverCPU(b, n)
	}
	return sum
}
