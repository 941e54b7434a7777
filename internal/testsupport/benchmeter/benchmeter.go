// Package benchmeter reports what a load test is asked beside a parallel
// benchmark's ns/op, for two variants of an operation that take turns (see
// [Turns]): operations per second, the latency percentiles of one
// operation, the redis-server's CPU time and commands per operation, and
// the machine's load, so that each figure of a run carries its conditions.
//
//	turns := benchmeter.NewTurns(srv, "none", "lock")
//	turns.Start(b) // after the set-up, just before the timed part
//	stop := turns.PassEvery(b, 250*time.Millisecond)
//	... b.RunParallel: v := turns.Begin(); the operation as variant v; turns.End(v, its latency) ...
//	b.StopTimer()
//	stop()
//	turns.Report(b, "req")
//
// The server's CPU time is INFO cpu's (system and user): the expiry of keys
// written during a turn may come later. Its commands are INFO
// commandstats', commands inside scripts included, of every client of the
// server but for the meter's own INFO. The load is the 1-minute load
// average at Start, from /proc/loadavg (absent where there is none).
// [Grounds] are the networks the adapters' benchmarks run on.
package benchmeter

import (
	"context"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-rlock/rlock/internal/redistest"
)

// serverReading is srv's CPU time and its commands so far, but for INFO.
func serverReading(b *testing.B, srv *redistest.Server) (time.Duration, int) {
	b.Helper()
	ctx := context.Background()
	cpu, err := srv.CPUTime(ctx)
	if err != nil {
		b.Error(err) // not Fatal: Turns.Switch may run on a goroutine of its own
	}
	n, err := srv.CommandsRun(ctx)
	if err != nil {
		b.Error(err)
	}
	return cpu, n
}

func micros(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

// percentiles are the p50 and p99 of lat in µs; lat gets sorted.
func percentiles(lat []time.Duration) (p50, p99 float64) {
	slices.Sort(lat)
	return micros(lat[len(lat)/2]), micros(lat[min(len(lat)-1, len(lat)*99/100)])
}

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
