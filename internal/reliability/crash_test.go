//go:build unix

package reliability_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/go-rlock/rlock/internal/redistest"
	"github.com/go-rlock/rlock/internal/reliability"
	"github.com/go-rlock/rlock/lockmw"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const (
	crashWatchdog   = time.Second
	crashProcs      = 4
	crashGoroutines = 4
	crashShort      = 20 * time.Second
)

var crashNames = []string{"crash-a", "crash-b", "crash-c", "crash-d"}

// workload is what the processes of a crash scenario contend for.
type workload struct {
	mode  string   // the worker's mode
	names []string // -names
	args  []string // the mode's own flags
	sem   bool     // the names are semaphores
	// schedule is what the faults are drawn from (nil: faultSchedule).
	schedule []faultKind
	// permits, for semaphores, is how many each has.
	permits int
	// locker gives the driver's waiters their Locker of a name.
	locker func(c *lockmw.Client, name string) lockmw.Locker
}

var mutexWorkload = workload{
	mode:   "crash",
	names:  crashNames,
	locker: func(c *lockmw.Client, name string) lockmw.Locker { return c.Mutex(name, lockmw.WithFencing()) },
}

// TestCrashMutualExclusion is scenario 1: worker processes contend on a few
// names while the driver SIGKILLs holders and starts replacements; the
// checker then proves from every process's log that no two holds of a name
// overlapped, that fencing tokens increased, and that a dead holder's lock
// was free again within the watchdog timeout plus one renewal interval.
func TestCrashMutualExclusion(t *testing.T) {
	t.Parallel()
	dur := crashShort
	if *soak > 0 {
		dur = *soak
	}
	srv := redistest.Start(t, persistence()...)
	d := newDriver(t, workerBinary(t), []*redistest.Server{srv}, time.Now().Add(dur), mutexWorkload)
	recs := d.run()
	rep := check(recs, d.kills, crashWatchdog, d.until, d.observed())
	t.Logf("crash: %v run, %d processes (%d at a time, %d goroutines each, plus the driver), %d names, watchdog %v",
		dur.Round(time.Second), rep.Processes-1, crashProcs, crashGoroutines, len(d.wl.names), crashWatchdog)
	t.Logf("crash: %d acquisitions, %d renewals, %d kills (%d of holders), %d recoveries (%d after a lost reply, %d across a stall), worst recovery %v (bound %v), min slack after a killed hold's expiry %v, %d lost holds (%d noticed late), %d holds outlived their key's earliest expiry (paused, or lost at Unlock), %d holds acquired in flight by a killed process, %d violations",
		rep.Acquisitions, rep.Renewals, rep.Kills, rep.KillsHolding, rep.Recoveries, rep.LostReplies, rep.Stalled, rep.WorstRecovery.Round(time.Millisecond),
		recoveryBound(crashWatchdog, 0, 0), rep.MinSlack.Round(100*time.Microsecond), rep.Lost, rep.LateNotices, rep.OutlivedHolds, rep.Phantoms, len(rep.Violations))
	d.logFaults("crash", rep.UnlockTimeouts, rep.FaultFails)
	d.logTotal("crash", rep.Acquisitions)
	if n := len(rep.Handoffs); n > 0 {
		t.Logf("crash: release -> next acquisition of the name by a waiter (Lock called before the release): median %v, p99 %v, max %v",
			rep.Handoffs[n/2].Round(10*time.Microsecond), rep.Handoffs[n*99/100].Round(10*time.Microsecond), rep.Handoffs[n-1].Round(10*time.Microsecond))
		t.Logf("crash: %d of %d hand-offs took more than half the watchdog timeout, each within %v after a kill", rep.SlowHandoffs, n, rep.SlowAfterKill.Round(time.Millisecond))
	}
	d.logSlowest("crash", rep.run, rep.recovered)
	d.logSlowHandoffs("crash", rep.run, rep.slow)
	checkLinearizable(t, "crash", history{run: rep.run, recs: recs, kills: d.kills, timeout: crashWatchdog, spec: reliability.Spec{Kind: reliability.MutexKind}, today: rep.Violations})
	for i, v := range rep.Violations {
		if i == 20 {
			t.Errorf("... and %d more", len(rep.Violations)-i)
			break
		}
		t.Errorf("violation: %s", v)
	}
	// The run must have exercised what it proves, the fast acquisition of
	// the unfenced goroutines (RESTORE) and the acquire script included.
	calls := d.commandCalls(0)
	restores, scripts := calls["restore"], calls["evalsha"]
	t.Logf("crash: redis-server ran %d RESTOREs and %d EVALSHAs", restores, scripts)
	assert.Positive(t, restores, "no lock was taken with RESTORE")
	assert.Positive(t, scripts, "no script ran")
	assert.Positive(t, rep.KillsHolding, "no holder was killed")
	assert.Positive(t, rep.Recoveries, "no recovery was measured")
	assert.Positive(t, rep.Renewals, "no lock was renewed")
	assertRan(t, rep.Acquisitions)
}

// soakNamesPer is how many names a soak runs on for each name of its
// scenario's short run: its acquisitions spread over more names, with
// contention left on each (16 goroutines and the driver's waiters on at
// most 8 names).
const soakNamesPer = 2

// soakNames returns names and soakNamesPer-1 more of each ("crash-a",
// "crash-a-2", ...).
func soakNames(names []string) []string {
	out := slices.Clone(names)
	for i := 2; i <= soakNamesPer; i++ {
		for _, n := range names {
			out = append(out, fmt.Sprintf("%s-%d", n, i))
		}
	}
	return out
}

// assertRan checks that a short run acquired something. Its volume is not
// judged: a short run on a loaded machine acquires what the machine lets it
// (26 member acquisitions in TestCrashMultiLock's 15 s beside a make lint,
// where the floor was 50), its kills, recoveries and renewals prove what it
// exercised, and volume is the soak's (make soak: over 100,000).
func assertRan(t *testing.T, acquisitions int) {
	t.Helper()
	assert.Positive(t, acquisitions, "no acquisition")
}

// observed is what the driver saw of the run besides the records: the
// replies the fault proxy lost and the sampler's stalls.
func (d *driver) observed() observed { return driverObserved{d} }

type driverObserved struct{ d *driver }

func (o driverObserved) dropsOn(name string, from, to time.Time) int {
	return o.d.net.dropsOn(name, from, to) // nil-safe: 0 without faults
}

func (o driverObserved) stalledIn(from, to time.Time) time.Duration {
	return o.d.smp.stalledIn(from, to)
}

func (o driverObserved) starvedIn(from, to time.Time) time.Duration {
	return o.d.smp.starvedIn(from, to)
}

func (o driverObserved) faultedIn(from, to time.Time) time.Duration {
	return faultedInWindows(unionWindows(o.d.windows), from, to) // overlapping faults count once
}

func (o driverObserved) holders(name string) []seenHolder {
	return o.d.smp.holders(name)
}

// logFaults logs what the fault proxies did, the windows of the servers'
// and proxies' faults, and the calls that failed in them.
func (d *driver) logFaults(prefix string, unlockTimeouts, faultFails int) {
	st := d.net.stats()
	base := "no latency, no lost replies but the drawn faults'"
	if d.net.base {
		base = fmt.Sprintf("%v each way, one lock command's reply in %d lost, besides the drawn faults", faultLatency, faultDropOneIn)
	}
	covered := faultedInWindows(unionWindows(d.windows), d.started, d.until)
	d.t.Logf("%s: through the fault proxies (%s): %d commands, %d replies thrown away (%d of lock commands recorded as lost), %d Unlocks timed out on a lost reply; %d faults of a server or a proxy, which with their grace of %v cover %v of the run (%.0f%%: liveness judged against bounds they extend there), %d calls failed in them (not violations)",
		prefix, base, st.Commands, st.Dropped, d.net.count(), unlockTimeouts, len(d.windows), faultGrace, covered.Round(time.Millisecond),
		100*covered.Seconds()/d.until.Sub(d.started).Seconds(), faultFails)
}

// logTotal logs the run's acquisitions on one line of its own, which the
// soak's figures are read from.
func (d *driver) logTotal(prefix string, acquisitions int) {
	took := time.Since(d.started)
	d.t.Logf("%s: total: %d acquisitions on %d names in %v, %.1f a second", prefix, acquisitions, len(d.wl.names), took.Round(time.Second), float64(acquisitions)/took.Seconds())
}

// slowestShown is how many of the slowest recoveries a crash test explains.
const slowestShown = 5

// logSlowest logs how loaded the machine was, and the causes of the
// slowest recoveries, slowest first.
func (d *driver) logSlowest(prefix string, r *run, recovered []recovery) {
	stalled, stalls := d.smp.stalled()
	took := time.Since(d.started)
	d.t.Logf("%s: the sampler heard nothing from Redis for over %v %d times, %v in all", prefix, stallAfter, stalls, stalled.Round(time.Millisecond))
	if w, ok := cpuWaited(); ok {
		d.t.Logf("%s: some process of the machine waited for a CPU %.0f%% of the run (/proc/pressure/cpu)", prefix, 100*float64(w-d.cpuStart)/float64(took))
	}
	e := newExplainer(r, d.kills, d.smp, driverProc, crashWatchdog)
	for i, rc := range recovered[:min(slowestShown, len(recovered))] {
		d.t.Logf("%s: slow recovery %d of %d:\n%s", prefix, i+1, len(recovered), strings.Join(e.explain(rc), "\n"))
	}
}

// logSlowHandoffs logs where the time of the hand-offs longer than a claim
// window went (a dead waiter's costs that much, and no more): the
// total of each kind of span (explainer.spans) over all of them, and in how
// many it was the longest.
func (d *driver) logSlowHandoffs(prefix string, r *run, slow []handoff) {
	if len(slow) == 0 {
		return
	}
	e := newExplainer(r, d.kills, d.smp, driverProc, crashWatchdog)
	total := make(map[string]time.Duration)
	longest := make(map[string]int)
	for _, h := range slow {
		states := d.smp.between(h.name, h.prev.end, h.next.start)
		var top waitSpan
		for _, s := range e.spans(h.prev.pid, h.prev.end, h.next, states, d.smp.stallsIn(h.prev.end, h.next.start)) {
			total[s.kind] += s.d
			if s.d > top.d {
				top = s
			}
		}
		longest[top.kind]++
	}
	kinds := make([]string, 0, len(total))
	for k := range total {
		kinds = append(kinds, k)
	}
	sort.Slice(kinds, func(i, j int) bool { return total[kinds[i]] > total[kinds[j]] })
	var parts []string
	for _, k := range kinds {
		if total[k] >= time.Millisecond {
			parts = append(parts, fmt.Sprintf("%s %v (the longest in %d)", k, total[k].Round(time.Millisecond), longest[k]))
		}
	}
	d.t.Logf("%s: where the time of the %d hand-offs longer than a claim window (%v) went: %s", prefix, len(slow), claimWindow(crashWatchdog), strings.Join(parts, "; "))
}

// driver runs the worker processes of the crash scenario.
type driver struct {
	t     *testing.T
	bin   string
	addr  string
	dir   string
	until time.Time
	wl    workload

	procs []*proc // alive
	logs  []string
	kills []kill

	// rng draws the schedule of faults (faultSchedule); faults counts
	// the faults struck, per kind.
	rng    *rand.Rand
	seed   uint64
	faults map[faultKind]int
	// fullKills counts the kills of a holder of a full name (fullAt), as
	// the driver saw them.
	fullKills int

	// The driver also waits for every name a victim held, so that a
	// waiter is always there to measure recovery; its holds are logged
	// and checked like the workers'.
	c       *lockmw.Client
	rdb     *redis.Client
	log     *reliability.Log
	logFile *os.File
	waiters sync.WaitGroup

	// srvs are the run's redis-servers (a quorum's masters), which the
	// driver pauses and restarts; calls, per server, what it ran before
	// its restarts (keepCalls).
	srvs  []*redistest.Server
	calls []map[string]int
	// net is the fault proxies every client but the sampler's reaches
	// the servers through, one before each.
	net *netFaults
	// windows are the faults of the servers and proxies struck, each
	// with its grace (faultGrace).
	windows []faultWindow
	// smp samples what Redis holds for the names, to explain slow
	// recoveries, on a client of its own that reaches Redis directly.
	smp      *sampler
	smpRDB   *redis.Client
	smpRest  []*redis.Client // a quorum's other masters, for the sampler
	started  time.Time
	cpuStart time.Duration // cpuWaited at the start
}

type proc struct {
	cmd    *exec.Cmd
	pid    int
	log    string
	stderr string
	done   chan struct{} // closed when reaped
	err    error         // cmd.Wait's
	off    int64
	open   map[string]string // "name token" -> name, from the log so far
	hello  bool              // its log has its Hello record: it runs
}

// newDriver returns the driver of a run on srvs: one Redis, or the masters
// of a quorum (crashquorum_test.go).
func newDriver(t *testing.T, bin string, srvs []*redistest.Server, until time.Time, wl workload) *driver {
	if *soak > 0 {
		wl.names = soakNames(wl.names)
	}
	d := &driver{t: t, bin: bin, dir: t.TempDir(), until: until, wl: wl, faults: make(map[faultKind]int), srvs: srvs}
	addrs := make([]string, len(srvs))
	for i, srv := range srvs {
		addrs[i] = srv.Addr()
		d.calls = append(d.calls, make(map[string]int))
	}
	d.seed = *seed
	if d.seed == 0 {
		d.seed = rand.Uint64()
	}
	d.rng = rand.New(rand.NewPCG(d.seed, scheduleStream(t.Name())))
	t.Logf("%s: faults drawn with seed %d (go test -run '^%s$' -seed %d replays their schedule, not the processes' interleaving)", t.Name(), d.seed, t.Name(), d.seed)
	d.smpRDB = redis.NewClient(&redis.Options{Addr: addrs[0], ContextTimeoutEnabled: true})
	for _, a := range addrs[1:] {
		d.smpRest = append(d.smpRest, redis.NewClient(&redis.Options{Addr: a, ContextTimeoutEnabled: true}))
	}
	d.net = startFaults(t, addrs, wl.names, *faults)
	d.addr = d.net.addr()
	path := filepath.Join(d.dir, "driver.log")
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	require.NoError(t, err)
	d.logFile, d.logs = f, append(d.logs, path)
	d.log = reliability.NewLog(f, os.Getpid())
	// As users configure: go-redis's default options when a lost reply
	// is the subject (a read then waits for the read timeout).
	var rdbs []redis.UniversalClient
	for i, a := range strings.Split(d.addr, ",") {
		rdb := redis.NewClient(&redis.Options{Addr: a, ContextTimeoutEnabled: !*faults})
		rdb.AddHook(reliability.SendHook{Client: i})
		rdbs = append(rdbs, rdb)
		t.Cleanup(func() { _ = rdb.Close() })
	}
	d.rdb = rdbs[0].(*redis.Client)
	newLocks := lockmw.New
	if len(rdbs) > 1 {
		newLocks = func(_ redis.UniversalClient, opts ...lockmw.Option) *lockmw.Client {
			return lockmw.NewQuorum(rdbs, opts...)
		}
	}
	// The driver's holds are named as the workers': by their fencing
	// token, or by a negative number of their own.
	var unfenced atomic.Int64
	d.c = newLocks(d.rdb, lockmw.WithWatchdogTimeout(crashWatchdog), lockmw.WithHooks(lockmw.Hooks{
		HoldStart: func(ctx context.Context, e lockmw.HoldStartEvent) context.Context {
			return reliability.WithHold(ctx, e.Field, e.Token, e.Waited, &unfenced)
		},
	}))
	d.log.Write(reliability.Record{Kind: reliability.Hello, Time: time.Now(), Note: d.c.ID()})
	t.Cleanup(func() {
		if d.smp != nil {
			d.smp.close()
		}
		for _, p := range d.procs { // after a failed assertion
			_ = p.cmd.Process.Kill()
			<-p.done
		}
		d.waiters.Wait()
		_ = d.c.Close()
		_ = d.smpRDB.Close()
		for _, r := range d.smpRest {
			_ = r.Close()
		}
		_ = f.Close()
		if t.Failed() {
			for _, p := range d.procs {
				if b, _ := os.ReadFile(p.stderr); len(b) > 0 {
					t.Logf("worker %d stderr:\n%s", p.pid, b)
				}
			}
		}
	})
	return d
}

// run runs the scenario until d.until: crashProcs workers at a time, a
// holder killed and replaced every 0.3 to 1 s; it returns the records of
// every process.
func (d *driver) run() []reliability.Record {
	d.smp = startSampler(d.smpRDB, d.smpRest, d.wl.names, d.wl.sem, d.wl.permits)
	d.started = time.Now()
	d.cpuStart, _ = cpuWaited()
	for range crashProcs {
		d.spawn()
	}
	// Kill until a few seconds before the end so that the last recoveries
	// can be seen.
	killUntil := d.until.Add(-3 * time.Second)
	for time.Now().Before(killUntil) {
		time.Sleep(300*time.Millisecond + time.Duration(d.rng.Int64N(int64(700*time.Millisecond)))) // the schedule
		sched := d.schedule()
		d.strike(sched[d.rng.IntN(len(sched))])
	}
	if !d.killFullUnlessStruck(d.fullAt(), time.Second) {
		d.t.Logf("%s: no kill struck a holder of a full name (for a semaphore, every permit taken)", d.t.Name())
	}
	d.finish()
	var kinds []string
	for _, k := range allFaults {
		if slices.Contains(d.schedule(), k) {
			kinds = append(kinds, fmt.Sprintf("%s %d", k, d.faults[k]))
		}
	}
	d.t.Logf("%s: faults struck (seed %d): %s", d.t.Name(), d.seed, strings.Join(kinds, ", "))
	// A soak covers every fault kind its workload draws: at its length
	// (5 minutes or more) a kind never struck is a broken schedule, not
	// bad luck.
	if *soak >= 5*time.Minute {
		for _, k := range d.schedule() {
			assert.Positive(d.t, d.faults[k], "the soak never struck %q", k)
		}
	}

	// A long run starts more processes than the kernel has pids: the
	// checker names each process by its log's number (the driver's is
	// driverProc), as the kills do, not by its pid.
	var recs []reliability.Record
	for i, path := range d.logs {
		rs, err := readRecords(path)
		if errors.Is(err, fs.ErrNotExist) && i > 0 && reaped(d.procs[i-1]) {
			// Killed (or dead) before it opened its log: it recorded
			// nothing, and held nothing.
			stderr, _ := os.ReadFile(d.procs[i-1].stderr)
			d.t.Logf("%s: worker %d ended before it opened its log (%v); its stderr: %q", d.t.Name(), i, d.procs[i-1].err, stderr)
			continue
		}
		require.NoError(d.t, err)
		for j := range rs {
			rs[j].Pid = procNumber(i)
		}
		recs = append(recs, rs...)
	}
	return recs
}

// driverProc is the driver's process number (its log is the first).
const driverProc = 1

// reaped reports whether p has ended and been waited for.
func reaped(p *proc) bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// procNumber is the number the checker names the process of log i by.
func procNumber(i int) int { return i + 1 }

// spawn starts a worker process.
func (d *driver) spawn() {
	t := d.t
	n := len(d.logs)
	p := &proc{
		log:    filepath.Join(d.dir, fmt.Sprintf("worker-%02d.log", n)),
		stderr: filepath.Join(d.dir, fmt.Sprintf("worker-%02d.stderr", n)),
		done:   make(chan struct{}),
		open:   make(map[string]string),
	}
	errf, err := os.Create(p.stderr)
	require.NoError(t, err)
	defer errf.Close()
	args := append([]string{d.wl.mode, "-addr", d.addr, "-log", p.log,
		"-names", strings.Join(d.wl.names, ","), "-goroutines", strconv.Itoa(crashGoroutines),
		"-until", strconv.FormatInt(d.until.UnixNano(), 10), "-watchdog", crashWatchdog.String()}, d.wl.args...)
	if *faults {
		args = append(args, "-default-options")
	}
	p.cmd = exec.Command(d.bin, args...)
	p.cmd.Stdout, p.cmd.Stderr = errf, errf
	p.cmd.SysProcAttr = sysProcAttr()
	require.NoError(t, p.cmd.Start())
	p.pid = p.cmd.Process.Pid
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	d.procs = append(d.procs, p)
	d.logs = append(d.logs, p.log)
}

// scan reads the records p wrote since the last scan and updates its open
// holds.
func (p *proc) scan() {
	f, err := os.Open(p.log)
	if err != nil {
		return // not created yet
	}
	defer f.Close()
	if _, err := f.Seek(p.off, io.SeekStart); err != nil {
		return
	}
	r := bufio.NewReader(f)
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return // a partial line is read again next time
		}
		p.off += int64(len(line))
		rec, err := reliability.ParseRecord(strings.TrimSuffix(line, "\n"))
		if err != nil {
			continue // the checker reports it
		}
		k := fmt.Sprint(rec.Name, " ", rec.Token)
		switch rec.Kind {
		case reliability.Hello:
			p.hello = true
		case reliability.Start:
			p.open[k] = rec.Name
		case reliability.End, reliability.Lost:
			delete(p.open, k)
		}
	}
}

// pickHolder returns a random live worker that holds a lock, polling the
// logs for up to d.
func (d *driver) pickHolder(wait time.Duration) *proc {
	deadline := time.Now().Add(wait)
	for {
		var holders []*proc
		for _, p := range d.procs {
			p.scan()
			if len(p.open) > 0 {
				holders = append(holders, p)
			}
		}
		if len(holders) > 0 {
			return holders[d.rng.IntN(len(holders))]
		}
		if time.Now().After(deadline) {
			return nil
		}
		time.Sleep(5 * time.Millisecond) // poll interval for new log lines
	}
}

// kill SIGKILLs p, reaps it and starts a driver waiter for every name p held.
// The signal goes through p's os.Process (a pidfd), never by pid: on a
// machine whose pids wrap within a run (pid_max 32768 and builds beside
// it), a worker that exited by itself has a pid another process may have
// been given, a redis-server of a test running beside this one.
func (d *driver) kill(p *proc) {
	if d.holdsFull(p, d.fullAt()) {
		d.fullKills++
	}
	require.NoError(d.t, p.cmd.Process.Signal(syscall.SIGKILL))
	d.kills = append(d.kills, kill{pid: procNumber(slices.Index(d.logs, p.log)), at: time.Now()})
	<-p.done
	p.scan()
	for i, q := range d.procs {
		if q == p {
			d.procs = append(d.procs[:i], d.procs[i+1:]...)
			break
		}
	}
	names := make(map[string]bool)
	for _, name := range p.open {
		names[name] = true
	}
	for name := range names {
		d.waiters.Go(func() { d.waitFor(name) })
	}
}

// waitFor takes name once, as one more contender, holds it briefly and
// releases it.
func (d *driver) waitFor(name string) {
	ctx, cancel := context.WithDeadline(context.Background(), d.until)
	defer cancel()
	m := d.wl.locker(d.c, name)
	lctx, sent := reliability.WithSendTimes(ctx)
	begin := time.Now()
	hctx, err := m.Lock(lctx)
	if err != nil {
		if ctx.Err() == nil {
			d.log.Write(reliability.Record{Kind: reliability.Fail, Name: name, Time: time.Now(), Note: "driver lock: " + err.Error()})
		}
		return
	}
	tok := reliability.TokenOf(hctx) // as HoldStart named the hold
	note := reliability.StartNote(reliability.FieldOf(hctx), reliability.Waited(hctx))
	d.log.Write(reliability.Record{Kind: reliability.Start, Name: name, Token: tok, Time: time.Now(), Begin: begin, Sent: sent.Last(), Note: note})
	time.Sleep(2 * time.Millisecond) // the critical section
	if errors.Is(context.Cause(hctx), lockmw.ErrLockLost) {
		d.log.Write(reliability.Record{Kind: reliability.Lost, Name: name, Token: tok, Time: time.Now(), Note: context.Cause(hctx).Error()})
	} else {
		d.log.Write(reliability.Record{Kind: reliability.End, Name: name, Token: tok, Time: time.Now()})
	}
	if err := m.Unlock(hctx); err != nil && !errors.Is(err, lockmw.ErrLockLost) {
		d.log.Write(reliability.Record{Kind: reliability.Fail, Name: name, Token: tok, Time: time.Now(), Note: reliability.UnlockFailedNote + err.Error()})
	}
}

// finish waits for the workers to stop on their own at the end of the run
// (each finishes its critical sections and unlocks) and for the driver's
// waiters.
func (d *driver) finish() {
	t := d.t
	limit := time.Until(d.until) + 10*time.Second
	for _, p := range d.procs {
		select {
		case <-p.done:
		case <-time.After(limit):
			t.Fatalf("worker %d did not stop", p.pid)
		}
		assert.NoError(t, p.err, "worker %d exits cleanly", p.pid)
	}
	d.procs = nil
	d.waiters.Wait()
	d.smp.close()
	require.NoError(t, d.log.Err())
	if *crashLogs != "" {
		// One folder per run: -count=N keeps every run's logs.
		require.NoError(t, os.MkdirAll(filepath.Join(*crashLogs, filepath.Dir(t.Name())), 0o755))
		dst, err := os.MkdirTemp(filepath.Join(*crashLogs, filepath.Dir(t.Name())), filepath.Base(t.Name())+"-")
		require.NoError(t, err)
		t.Logf("crash logs copied into %s", dst)
		require.NoError(t, os.CopyFS(dst, os.DirFS(d.dir)))
	}
}
