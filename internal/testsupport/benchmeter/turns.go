package benchmeter

import (
	"flag"
	"sync"
	"testing"
	"time"

	"github.com/go-rlock/rlock/internal/redistest"
)

// Turns measures two variants of an operation (say, a handler without and
// with a lock) that take turns within one timed part, so that both see the
// same machine: on a loaded machine the load moves by several times within
// seconds, and two variants timed one after the other measure the load as
// much as themselves.
//
// The caller passes the turn with [Turns.Switch] (by the clock, or where
// the work changes variant) and records each operation under the variant
// it ran as. Each turn's time, and the server's CPU time and commands
// during it, go to its variant. Operations bracketed by [Turns.Begin] and
// [Turns.End] never straddle two turns: Switch waits for those under way
// (their time goes to their turn) and holds new ones back until the next
// turn begins. That tail of a turn, its slowest operations finishing
// alone, counts in its time: with turns of 2 s it lowers the rate of a
// variant whose slowest operations take 200 ms by up to about 5 %, so turns
// should be long beside the p99. What happens outside them (a queue's dequeue of the task
// that then waits for its turn) counts in the turn it happens in. Report
// gives the metrics per variant (not ns/op, which is both together) and
// the ratio of their rates.
type Turns struct {
	srv   *redistest.Server
	names [2]string
	gate  sync.RWMutex // read-held by operations under way between Begin and End

	mu       sync.Mutex
	cur      int
	since    time.Time
	cpu0     time.Duration
	calls0   int
	load1    float64
	switches int
	spent    [2]time.Duration
	cpu      [2]time.Duration
	calls    [2]int
	lat      [2][]time.Duration
}

// NewTurns returns Turns of two variants named first and second on srv.
func NewTurns(srv *redistest.Server, first, second string) *Turns {
	return &Turns{srv: srv, names: [2]string{first, second}}
}

// Start begins the first variant's turn, and forgets everything measured
// before. Call it after the set-up, just before the timed part.
func (t *Turns) Start(b *testing.B) {
	b.Helper()
	load1 := loadAverage()
	cpu, calls := serverReading(b, t.srv)
	t.mu.Lock()
	defer t.mu.Unlock()
	t.cur, t.since, t.cpu0, t.calls0, t.load1, t.switches = 0, time.Now(), cpu, calls, load1, 0
	t.spent, t.cpu, t.calls, t.lat = [2]time.Duration{}, [2]time.Duration{}, [2]int{}, [2][]time.Duration{}
}

// Current is the variant whose turn it is.
func (t *Turns) Current() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.cur
}

// Begin starts an operation, waiting while a switch is under way, and
// returns the variant it must run as; End(v, its latency) ends it.
func (t *Turns) Begin() (v int) {
	t.gate.RLock()
	return t.Current()
}

// End ends an operation of variant v, begun with Begin, that took lat.
func (t *Turns) End(v int, lat time.Duration) {
	t.gate.RUnlock()
	t.Record(v, lat)
}

// Switch ends the current turn once the operations begun in it have ended,
// and gives the next to variant v (a switch to the current variant ends
// nothing).
func (t *Turns) Switch(b *testing.B, v int) {
	b.Helper()
	t.gate.Lock()
	defer t.gate.Unlock()
	if t.Current() != v {
		t.closeTurn(b, v)
	}
}

// closeTurn ends the current turn, reading the server, and hands the next
// to v.
func (t *Turns) closeTurn(b *testing.B, v int) {
	b.Helper()
	cpu, calls := serverReading(b, t.srv)
	now := time.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	c := t.cur
	t.spent[c] += now.Sub(t.since)
	t.cpu[c] += cpu - t.cpu0
	t.calls[c] += calls - t.calls0
	t.since, t.cpu0, t.calls0, t.cur = now, cpu, calls, v
	if c != v {
		t.switches++
	}
}

// TurnLength is how long a turn lasts for the -test.benchtime the
// benchmark runs with: a fifteenth of it, between 100 ms and 2 s (2 s from
// -benchtime 30s up); 250 ms for a count of iterations ("1000x").
func TurnLength() time.Duration {
	f := flag.Lookup("test.benchtime")
	if f == nil {
		return 2 * time.Second
	}
	d, err := time.ParseDuration(f.Value.String())
	if err != nil {
		return 250 * time.Millisecond
	}
	return min(max(d/15, 100*time.Millisecond), 2*time.Second)
}

// PassEvery passes the turn to the other variant every d, on a goroutine
// of its own, until the returned stop is called (once or more).
func (t *Turns) PassEvery(b *testing.B, d time.Duration) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(d)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				t.Switch(b, 1-t.Current())
			}
		}
	})
	var once sync.Once
	return func() { once.Do(func() { close(done); wg.Wait() }) }
}

// Record adds operations of variant v that took lat each.
func (t *Turns) Record(v int, lat ...time.Duration) {
	t.mu.Lock()
	t.lat[v] = append(t.lat[v], lat...)
	t.mu.Unlock()
}

// Report closes the last turn and adds, for each variant with operations,
// <name>-<unit>/s (its operations over its turns' time), <name>-p50-µs,
// <name>-p99-µs, <name>-redis-µs/op and <name>-redis-cmds/op; then
// <second>/<first> (the ratio of the rates), turns (how many) and load1.
// Call it after b.StopTimer.
func (t *Turns) Report(b *testing.B, unit string) {
	b.Helper()
	t.mu.Lock()
	cur := t.cur
	t.mu.Unlock()
	t.closeTurn(b, cur)
	t.mu.Lock()
	defer t.mu.Unlock()
	var rate [2]float64
	for v, name := range t.names {
		lat := t.lat[v]
		if len(lat) == 0 || t.spent[v] <= 0 {
			continue
		}
		n := float64(len(lat))
		rate[v] = n / t.spent[v].Seconds()
		b.ReportMetric(rate[v], name+"-"+unit+"/s")
		p50, p99 := percentiles(lat)
		b.ReportMetric(p50, name+"-p50-µs")
		b.ReportMetric(p99, name+"-p99-µs")
		b.ReportMetric(micros(t.cpu[v])/n, name+"-redis-µs/op")
		b.ReportMetric(float64(t.calls[v])/n, name+"-redis-cmds/op")
	}
	if rate[0] > 0 && rate[1] > 0 {
		b.ReportMetric(rate[1]/rate[0], t.names[1]+"/"+t.names[0])
	}
	b.ReportMetric(float64(t.switches+1), "turns")
	if t.load1 >= 0 {
		b.ReportMetric(t.load1, "load1")
	}
}
