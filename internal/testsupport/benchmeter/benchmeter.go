// Package benchmeter reports what a load test is asked beside a parallel
// benchmark's ns/op: operations per second, the latency percentiles of one
// operation, the redis-server's CPU time and commands per operation, and the
// machine's load, so that each figure of a run carries its conditions.
//
//	m := benchmeter.New(srv)
//	m.Start(b)         // after the set-up, just before the timed part
//	... b.RunParallel, each goroutine timing its operations and calling m.Record ...
//	m.Report(b, "req") // after b.StopTimer
//
// Report adds these metrics to the benchmark's line: <unit>/s (b.N over the
// timed wall time), p50-µs and p99-µs (of the recorded latencies),
// redis-µs/op (the server's CPU time, INFO cpu, from Start to Report: the
// expiry of keys written meanwhile may come later), redis-cmds/op (INFO
// commandstats, commands inside scripts included; every client of the server
// counts, but for the meter's own INFO) and load1 (the 1-minute load average
// at Start, from /proc/loadavg; absent where there is none).
package benchmeter

import (
	"context"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-rlock/rlock/internal/redistest"
)

// A Meter measures one timed part of a benchmark on a redis-server. It is
// safe for concurrent use.
type Meter struct {
	srv *redistest.Server

	mu     sync.Mutex
	cpu0   time.Duration
	calls0 int
	load1  float64 // < 0: unknown
	lat    []time.Duration
}

// New returns a Meter of srv; [Meter.Start] starts it.
func New(srv *redistest.Server) *Meter { return &Meter{srv: srv} }

// Start reads the server's CPU time and command counts and the machine's
// load, and forgets the latencies recorded so far. Call it after the
// set-up, just before the timed part.
func (m *Meter) Start(b *testing.B) {
	b.Helper()
	load1 := loadAverage()
	cpu, calls := m.server(b)
	m.mu.Lock()
	m.cpu0, m.calls0, m.load1, m.lat = cpu, calls, load1, nil
	m.mu.Unlock()
}

// Record adds the latencies of one goroutine's operations.
func (m *Meter) Record(lat []time.Duration) {
	m.mu.Lock()
	m.lat = append(m.lat, lat...)
	m.mu.Unlock()
}

// Report adds the metrics (see the package documentation) for b.N
// operations named unit ("req", "tasks"). Call it after b.StopTimer.
func (m *Meter) Report(b *testing.B, unit string) {
	b.Helper()
	cpu, calls := m.server(b)
	n := float64(b.N)
	if s := b.Elapsed().Seconds(); s > 0 {
		b.ReportMetric(n/s, unit+"/s")
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	lat := m.lat
	if len(lat) > 0 {
		slices.Sort(lat)
		b.ReportMetric(micros(lat[len(lat)/2]), "p50-µs")
		b.ReportMetric(micros(lat[min(len(lat)-1, len(lat)*99/100)]), "p99-µs")
	}
	b.ReportMetric(micros(cpu-m.cpu0)/n, "redis-µs/op")
	b.ReportMetric(float64(calls-m.calls0)/n, "redis-cmds/op")
	if m.load1 >= 0 {
		b.ReportMetric(m.load1, "load1")
	}
}

// server reads the server's CPU time and its commands so far, but for INFO.
func (m *Meter) server(b *testing.B) (time.Duration, int) {
	b.Helper()
	ctx := context.Background()
	cpu, err := m.srv.CPUTime(ctx)
	if err != nil {
		b.Fatal(err)
	}
	calls, err := m.srv.CommandCalls(ctx)
	if err != nil {
		b.Fatal(err)
	}
	n := 0
	for name, k := range calls {
		if name != "info" {
			n += k
		}
	}
	return cpu, n
}

func micros(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

// loadAverage is the 1-minute load average, or -1 where /proc/loadavg is
// missing.
func loadAverage() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return -1
	}
	first, _, _ := strings.Cut(string(b), " ")
	f, err := strconv.ParseFloat(first, 64)
	if err != nil {
		return -1
	}
	return f
}
