package lockmw_test

import (
	"context"
	"sync"
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
