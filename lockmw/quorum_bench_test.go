package lockmw_test

import (
	"slices"
	"testing"
	"time"

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
