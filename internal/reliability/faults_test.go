//go:build unix

package reliability_test

import (
	"context"
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/stretchr/testify/require"
)

// faultKind is a fault the crash driver strikes a run with; each scenario
// draws its schedule of them from a seeded random source (see -seed).
type faultKind string

const (
	// killHolder SIGKILLs a worker that holds a lock: its key expires.
	killHolder faultKind = "kill holder"
	// killWaiter SIGKILLs a worker that holds nothing (its goroutines wait,
	// or are between holds): a dead waiter's queue entry may be handed the
	// lock, which then expires after its claim window.
	killWaiter faultKind = "kill waiter"
	// pauseHolder SIGSTOPs a worker that holds a lock for longer than the
	// watchdog timeout, then SIGCONTs it: its key expires while it cannot
	// notice, another process takes the name, and the woken worker's
	// holds are lost (its pause watch logs the pause; the checker cuts its
	// holds at their keys' earliest expiry, and only fencing protects a
	// write it makes on waking).
	pauseHolder faultKind = "pause holder past its TTL"
	// pauseRedis SIGSTOPs the run's redis-server (on a quorum, one master)
	// for a quarter to twice the watchdog timeout, then SIGCONTs it: a
	// frozen VM or a stalled host, not CLIENT PAUSE (which keeps answering
	// the connection that paused and holds expiry back: a milder fault).
	// Connections stay open and commands queue; keys whose TTL passed
	// expire when it runs again. A holder's renewals time out meanwhile,
	// and a hold whose key could expire is lost (ErrLockLost), before its
	// key could expire: lockmw's loss timer runs from the last renewal's
	// send.
	pauseRedis faultKind = "pause Redis"
	// restartRedis SIGKILLs the run's redis-server (on a quorum, one
	// master), keeps it down for up to half the watchdog timeout, and
	// starts it again with what it persisted (redistest.Server.StartAgain):
	// the crash scenarios run Redis with appendonly yes and appendfsync
	// always, so every lock, renewal and fencing counter it acknowledged is
	// back, with its absolute expiry. A hold survives when a renewal gets
	// through before its key could expire; a renewal that finds its hold
	// gone before then is a violation, as ever. A restart without
	// persistence loses every lock by design (redistest.Server.Restart,
	// server_test.go): not drawn.
	restartRedis faultKind = "restart Redis (persisted)"
	// proxyLatency raises one fault proxy's latency each way to 2–100 ms
	// for 0.5–3 s: renewals and hand-offs late, keys' TTLs starting later
	// than their requests were sent (the checkers count from the send).
	proxyLatency faultKind = "proxy latency"
	// proxyDrop makes one fault proxy lose the reply of one lock command in
	// ten for 0.5–2 s (each recorded: netFaults.dropsOn).
	proxyDrop faultKind = "proxy drop"
	// proxyBlackhole makes one fault proxy throw every reply and push away
	// for a quarter to twice the watchdog timeout, commands still reaching
	// the server: renewals run but their holders never hear, and a holder
	// is told its hold is lost (ErrLockLost) when its key could expire. A
	// hold taken after its key could expire is no violation: the checkers
	// count a lost hold until then (lossCut), not until its holder heard.
	proxyBlackhole faultKind = "proxy blackhole"
)

// allFaults is every fault kind, in the order the logs list them.
var allFaults = []faultKind{killHolder, killWaiter, pauseHolder, pauseRedis, restartRedis, proxyLatency, proxyDrop, proxyBlackhole}

// faultSchedule is what a scenario draws from, each fault as likely as its
// entries: kills of holders stay the most common, as the recovery bound is
// judged on them. Redis's own faults and the proxy's are drawn on one server
// (a quorum's master) at a time; with -faults, the proxies' base latency and
// lost replies (netfaults_test.go) last all along besides.
var faultSchedule = []faultKind{killHolder, killHolder, killWaiter, pauseHolder, pauseRedis, restartRedis, proxyLatency, proxyDrop, proxyBlackhole}

// faultScheduleShort is what a short run draws from (make test: neither
// -soak nor -faults): the faults of processes only. Under the faults of a
// server or a proxy, short runs under -race found what lockmw must settle
// first (docs/reliability.md, "Faults drawn per run"): an Unlock of a
// read-write lock that returned ErrLockLost before its key could expire, a
// quorum's Lock that returned a hold past its validity time, and a 15 s run
// left too few kills to measure a recovery. make soak draws every kind.
var faultScheduleShort = []faultKind{killHolder, killHolder, killWaiter, pauseHolder}

// faultGrace is how long a server's or a proxy's fault is taken to last
// after it ended: a command sent during it whose reply was lost or late
// times out go-redis's read timeout (3 s by default) after it was sent, and
// a key renewed or taken during it whose reply was lost outlives it by up
// to a watchdog timeout. The checkers excuse failed calls within a fault
// and its grace, and grow a recovery's bound by the time of the recovery
// they cover (faultedIn).
const faultGrace = 3*time.Second + crashWatchdog

// persistence is the redis.conf of a crash scenario's servers when it may
// draw restartRedis (a soak): a restart brings back every write they
// acknowledged. A short run, which never restarts them, runs without (an
// fsync per write is no part of what it judges).
func persistence() []string {
	if *soak == 0 && !*faults {
		return nil
	}
	return []string{"appendonly yes", "appendfsync always"}
}

// faultWindow is a fault of a server or a proxy, from when it was struck
// to when it ended plus faultGrace.
type faultWindow struct{ from, to time.Time }

// faultedInWindows returns how much of [from, to] the windows cover.
func faultedInWindows(ws []faultWindow, from, to time.Time) time.Duration {
	var d time.Duration
	for _, w := range ws {
		if b, e := later(from, w.from), earlier(to, w.to); e.After(b) {
			d += e.Sub(b)
		}
	}
	return d
}

// schedule is what the run's workload draws its faults from.
func (d *driver) schedule() []faultKind {
	switch {
	case d.wl.schedule != nil:
		return d.wl.schedule
	case *soak == 0 && !*faults:
		return faultScheduleShort
	}
	return faultSchedule
}

// unionWindows returns ws (in time order) with the overlapping windows
// joined.
func unionWindows(ws []faultWindow) []faultWindow {
	var out []faultWindow
	for _, w := range ws {
		if n := len(out); n > 0 && !w.from.After(out[n-1].to) {
			out[n-1].to = later(out[n-1].to, w.to)
			continue
		}
		out = append(out, w)
	}
	return out
}

// draw returns a duration in [lo, hi] from the schedule's source.
func (d *driver) draw(lo, hi time.Duration) time.Duration {
	return lo + time.Duration(d.rng.Int64N(int64(hi-lo)+1))
}

// scheduleStream is the second word of a scenario's random source: the
// test's name, so that one seed gives each scenario a schedule of its own.
func scheduleStream(name string) uint64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(name))
	return h.Sum64()
}

// strike strikes the run with one fault of kind k, if a process fits it.
// A fault of a server or a proxy picks one at random (a quorum's master) and
// lasts as long as drawn; its window is kept for the checkers.
func (d *driver) strike(k faultKind) {
	switch k {
	case pauseRedis, restartRedis, proxyLatency, proxyDrop, proxyBlackhole:
		i := d.rng.IntN(len(d.srvs))
		from := time.Now()
		d.strikeServer(k, i)
		to := time.Now()
		d.windows = append(d.windows, faultWindow{from, to.Add(faultGrace)})
		d.faults[k]++
		d.noteFault(k, i, from, to)
		return
	}
	switch k {
	case killHolder:
		if v := d.pickHolder(300 * time.Millisecond); v != nil {
			d.kill(v)
			d.spawn()
			d.faults[k]++
		}
	case killWaiter:
		if v := d.pickIdle(); v != nil {
			d.kill(v)
			d.spawn()
			d.faults[k]++
		}
	case pauseHolder:
		if v := d.pickHolder(300 * time.Millisecond); v != nil {
			require.NoError(d.t, v.cmd.Process.Signal(syscall.SIGSTOP))
			time.Sleep(crashWatchdog + crashWatchdog/2) // the length of the pause: past the TTL
			require.NoError(d.t, v.cmd.Process.Signal(syscall.SIGCONT))
			d.faults[k]++
		}
	}
}

// strikeServer strikes server i, or its proxy, with the fault k and
// returns when the fault is over.
func (d *driver) strikeServer(k faultKind, i int) {
	srv, net := d.srvs[i], d.net
	switch k {
	case pauseRedis:
		dur := d.draw(crashWatchdog/4, 2*crashWatchdog)
		require.NoError(d.t, srv.Pause())
		time.Sleep(dur) // the length of the pause
		require.NoError(d.t, srv.Resume())
	case restartRedis:
		down := d.draw(0, crashWatchdog/2)
		d.keepCalls(i)
		require.NoError(d.t, srv.Kill())
		time.Sleep(down) // the time it is down
		require.NoError(d.t, srv.StartAgain())
	case proxyLatency:
		lat, dur := d.draw(2*time.Millisecond, 100*time.Millisecond), d.draw(500*time.Millisecond, 3*time.Second)
		net.setLatency(i, lat)
		time.Sleep(dur) // the length of the spell
		net.setLatency(i, net.baseLatency())
	case proxyDrop:
		dur := d.draw(500*time.Millisecond, 2*time.Second)
		net.dropOneIn[i].Store(10)
		time.Sleep(dur) // the length of the spell
		net.dropOneIn[i].Store(net.baseDropOneIn())
	case proxyBlackhole:
		dur := d.draw(crashWatchdog/4, 2*crashWatchdog)
		net.ps[i].SetBlackhole(true)
		time.Sleep(dur) // the length of the black hole
		net.ps[i].SetBlackhole(false)
	}
}

// noteFault appends the fault k struck on server i from from to to to the
// run's faults.log (kept with -crashlogs), to read beside the records.
func (d *driver) noteFault(k faultKind, i int, from, to time.Time) {
	f, err := os.OpenFile(filepath.Join(d.dir, "faults.log"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	require.NoError(d.t, err)
	defer f.Close()
	_, err = fmt.Fprintf(f, "%s server %d from %d to %d (Unix ns, %v)\n", k, i, from.UnixNano(), to.UnixNano(), to.Sub(from).Round(time.Millisecond))
	require.NoError(d.t, err)
}

// keepCalls adds what server i ran so far to d.calls, before a restart
// resets its counters.
func (d *driver) keepCalls(i int) {
	calls, err := d.srvs[i].CommandCalls(context.Background())
	require.NoError(d.t, err)
	for cmd, n := range calls {
		d.calls[i][cmd] += n
	}
}

// commandCalls is how many times server i ran each command in the run,
// across its restarts.
func (d *driver) commandCalls(i int) map[string]int {
	calls, err := d.srvs[i].CommandCalls(context.Background())
	require.NoError(d.t, err)
	for cmd, n := range d.calls[i] {
		calls[cmd] += n
	}
	return calls
}

// fullAt is how many holds make a name of the run's workload full: its
// permits for a semaphore, one hold otherwise.
func (d *driver) fullAt() int {
	if d.wl.sem {
		return crashSemPermits
	}
	return 1
}

// killFullUnlessStruck makes sure the run killed a holder of a full name
// (for a semaphore, with every permit of it taken), which is what the
// checkers measure recoveries on (every crash scenario asserts a kill of a
// holder and a recovery): a schedule that drew few kills of holders (pauses
// take a watchdog and a half each) may have struck none; then one more kill
// strikes such a holder, waiting up to wait for one. It reports whether a
// kill of a full name was struck.
func (d *driver) killFullUnlessStruck(permits int, wait time.Duration) bool {
	if d.fullKills > 0 {
		return true
	}
	deadline := time.Now().Add(wait)
	for time.Now().Before(deadline) {
		if v := d.pickFull(permits); v != nil {
			d.kill(v)
			d.spawn()
			d.faults[killHolder]++
			return true
		}
		time.Sleep(5 * time.Millisecond) // poll interval for new log lines
	}
	return false
}

// pickFull returns a random live worker that holds a permit of a name whose
// permits the workers hold all of, or nil.
func (d *driver) pickFull(permits int) *proc {
	held := make(map[string]int)
	for _, p := range d.procs {
		p.scan()
		for _, name := range p.open {
			held[name]++
		}
	}
	var victims []*proc
	for _, p := range d.procs {
		for _, name := range p.open {
			if held[name] >= permits {
				victims = append(victims, p)
				break
			}
		}
	}
	if len(victims) == 0 {
		return nil
	}
	return victims[d.rng.IntN(len(victims))]
}

// holdsFull reports whether p holds a permit of a name whose permits the
// workers hold all of (p's log scanned just now).
func (d *driver) holdsFull(p *proc, permits int) bool {
	held := make(map[string]int)
	for _, q := range d.procs {
		q.scan()
		for _, name := range q.open {
			held[name]++
		}
	}
	for _, name := range p.open {
		if held[name] >= permits {
			return true
		}
	}
	return false
}

// pickIdle returns a random live worker that holds nothing, or nil. A
// worker that has not logged its Hello yet is not one: killed before it
// opened its log, it would leave no log to read, and it waited for nothing.
func (d *driver) pickIdle() *proc {
	var idle []*proc
	for _, p := range d.procs {
		p.scan()
		if p.hello && len(p.open) == 0 {
			idle = append(idle, p)
		}
	}
	if len(idle) == 0 {
		return nil
	}
	return idle[d.rng.IntN(len(idle))]
}
