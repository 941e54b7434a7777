package noderedisson

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-rlock/rlock/internal/faultproxy"
	"github.com/go-rlock/rlock/internal/redistest"
	"github.com/go-rlock/rlock/lockmw"
	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var (
	interop  = flag.Bool("interop", false, "run the tests against node-redisson (make interop installs it and sets this)")
	duration = flag.Duration("duration", 10*time.Second, "each run's length")
)

// The promise's targets (issue 50): while both sides have as many workers,
// neither goes longer than maxGap without a hold, and the node-redisson side
// gets at least minShare of the holds.
const (
	maxGap   = 2 * time.Second
	minShare = 0.2
)

// minUsed is the least share of reservations the node-redisson side uses,
// either variant: a reservation ends when a Redisson waiter used it, and
// goes unused only when the waiter's acquire came after its window, or no
// waiter came (measured: 96% and more on a loaded 2-core machine, 99% and
// more idle).
const minUsed = 0.9

// node returns the path of node, or skips the test with what is missing.
func node(t *testing.T) string {
	t.Helper()
	if !*interop {
		t.Skip("the node-redisson interop test runs with -interop: make interop installs node-redisson and runs it")
	}
	bin, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not on PATH: the node-redisson interop test needs Node.js 16 or later (make interop)")
	}
	if _, err := os.Stat(filepath.Join("node_modules", "node-redisson", "package.json")); err != nil {
		t.Skip("node-redisson is not installed here: make interop (npm ci in internal/interop/noderedisson) installs it")
	}
	return bin
}

// TestSharedWithNodeRedisson has 4 node-redisson 1.0.4 workers (each its own
// Redisson instance) and 4 rlock workers (each its own Client on a go-redis
// client with default options) take one name in turns, on loopback and
// through a proxy that delays each direction by 500 µs, with pauses between
// turns of up to 2 ms and up to 20 ms. Always: no two holds overlap, both
// sides hold the name, and the node side uses the reservations made for it
// (minUsed). With node-redisson's timer defect mended
// (worker.js timer-fixed): neither side goes longer than maxGap without a
// hold, and the node side gets at least minShare of the holds. As published,
// node-redisson's waiters lose their own subscriptions (worker.js): the
// figures are logged, not judged against the targets.
func TestSharedWithNodeRedisson(t *testing.T) {
	bin := node(t)
	for _, variant := range []string{"timer-fixed", "published"} {
		for _, ground := range []struct {
			name    string
			latency time.Duration
		}{{"loopback", 0}, {"500us each way", 500 * time.Microsecond}} {
			for _, think := range []time.Duration{2 * time.Millisecond, 20 * time.Millisecond} {
				t.Run(fmt.Sprintf("%s, %s, think up to %v", variant, ground.name, think), func(t *testing.T) {
					r := run{variant: variant, workers: 4, think: think, duration: *duration, latency: ground.latency}
					res := r.do(t, bin)
					t.Logf("%s", res)
					if res.overlaps > 0 {
						t.Errorf("%d rlock holds overlapped a node-redisson hold", res.overlaps)
					}
					if len(res.rlock.holds) == 0 || len(res.node.holds) == 0 {
						t.Errorf("a side never held the name")
					}
					if n := len(res.reservations); n == 0 || float64(len(res.used)) < minUsed*float64(n) {
						t.Errorf("node-redisson used %d of %d reservations, want at least %.0f%%", len(res.used), n, 100*minUsed)
					}
					if variant != "timer-fixed" {
						return
					}
					for _, s := range []side{res.rlock, res.node} {
						if s.gap > maxGap {
							t.Errorf("the %s side went %v without a hold, want at most %v", s.name, s.gap, maxGap)
						}
					}
					if share := res.share(); share < minShare {
						t.Errorf("the node-redisson side got %.2f of the holds, want at least %.2f", share, minShare)
					}
				})
			}
		}
	}
}

// run is one run of the shared name: node-redisson's variant (worker.js),
// workers on each side, the pause between turns (uniform, 0 to think), its
// length, and the added latency of each direction between every client and
// the server.
type run struct {
	variant  string
	workers  int
	think    time.Duration
	duration time.Duration
	latency  time.Duration
}

// hold is one hold of a run: when it was acquired and released, in µs
// since the epoch (the two sides share the machine's clock).
type hold struct{ from, to int64 }

// side is what one side of a run did.
type side struct {
	name  string
	holds []hold
	gap   time.Duration // the longest time within the run with none of its holds
}

// result is a run's outcome.
type result struct {
	run
	rlock, node side
	overlaps    int
	// reservations made within the run (their generations: the server's
	// time in µs), and how many the node side used, with the time from
	// each used one to its node hold (lock() returned).
	reservations []int64
	used         []time.Duration
}

func (r result) share() float64 {
	all := len(r.rlock.holds) + len(r.node.holds)
	if all == 0 {
		return 0
	}
	return float64(len(r.node.holds)) / float64(all)
}

func (r result) String() string {
	s := fmt.Sprintf("node-redisson %s, %d:%d workers, think ≤ %v, +%v each way, %v: holds rlock %d / node-redisson %d (node share %.2f), longest without a hold rlock %v / node-redisson %v; reservations %d, used by node-redisson %d",
		r.variant, r.workers, r.workers, r.think, r.latency, r.duration, len(r.rlock.holds), len(r.node.holds), r.share(),
		r.rlock.gap.Round(time.Millisecond), r.node.gap.Round(time.Millisecond), len(r.reservations), len(r.used))
	if len(r.used) > 0 {
		u := slices.Sorted(slices.Values(r.used))
		s += fmt.Sprintf(", from the reservation to node-redisson's lock() returning p50 %v p90 %v max %v",
			u[len(u)/2].Round(10*time.Microsecond), u[len(u)*9/10].Round(10*time.Microsecond), u[len(u)-1].Round(10*time.Microsecond))
	}
	return s
}

func (r run) do(t *testing.T, bin string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), r.duration+time.Minute)
	defer cancel()
	srv := redistest.Start(t)
	addr := srv.Addr()
	if r.latency > 0 {
		p, err := faultproxy.Start(addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = p.Close() })
		p.SetLatency(r.latency)
		p.SetRequestLatency(r.latency)
		addr = p.Addr()
	}
	const name = "shared-with-node"
	nodeSide := startNode(ctx, t, bin, addr, name, r)
	seen := watchReservations(ctx, t, srv, name)

	clients := make([]*lockmw.Client, r.workers)
	for i := range clients {
		rdb := redis.NewClient(&redis.Options{Addr: addr})
		clients[i] = lockmw.New(rdb)
		t.Cleanup(func() {
			_ = clients[i].Close()
			_ = rdb.Close()
		})
		h, err := clients[i].Mutex(name).Lock(ctx) // warm up: connections and scripts
		if err != nil {
			t.Fatal(err)
		}
		if err := clients[i].Mutex(name).Unlock(h); err != nil {
			t.Fatal(err)
		}
	}

	start := time.Now()
	end := start.Add(r.duration)
	nodeSide.start(t, end)
	var (
		mu    sync.Mutex
		holds []hold
		wg    sync.WaitGroup
		errs  = make([]error, r.workers)
	)
	for i, c := range clients {
		wg.Go(func() {
			m := c.Mutex(name)
			for time.Now().Before(end) {
				h, err := m.Lock(ctx)
				if err != nil {
					errs[i] = err
					return
				}
				from := time.Now().UnixMicro()
				to := time.Now().UnixMicro()
				if err := m.Unlock(h); err != nil {
					errs[i] = err
					return
				}
				mu.Lock()
				holds = append(holds, hold{from, to})
				mu.Unlock()
				if r.think > 0 {
					time.Sleep(rand.N(r.think)) // the workload's pause between turns, not a wait
				}
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	nodeHolds := nodeSide.wait(t)
	lo, hi := start.UnixMicro(), end.UnixMicro()
	res := result{
		run:      r,
		rlock:    side{name: "rlock", holds: holds, gap: longestGap(holds, lo, hi)},
		node:     side{name: "node-redisson", holds: nodeHolds, gap: longestGap(nodeHolds, lo, hi)},
		overlaps: overlaps(holds, nodeHolds),
	}
	res.reservations, res.used = reservationsUsed(seen(), holds, nodeHolds, lo, hi)
	return res
}

// watchReservations subscribes to the roll-call channel of name, where a
// reserving release publishes the reservation's generation (the server's
// time in µs), and returns a function that stops and returns the
// generations seen. It subscribes to Redisson's channel of name in the same
// command, as an rlock client does, so that the releases' count of Redisson
// subscribers (the difference of the two) does not change.
func watchReservations(ctx context.Context, t *testing.T, srv *redistest.Server, name string) func() []int64 {
	t.Helper()
	rollCall := "rlock_handoff:{" + name + "}"
	ps := srv.Client().Subscribe(ctx, "redisson_lock__channel:{"+name+"}", rollCall)
	if _, err := ps.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	var (
		mu   sync.Mutex
		gens []int64
		done = make(chan struct{})
	)
	go func() {
		defer close(done)
		for m := range ps.Channel() {
			if m.Channel != rollCall {
				continue
			}
			if g, err := strconv.ParseInt(m.Payload, 10, 64); err == nil {
				mu.Lock()
				gens = append(gens, g)
				mu.Unlock()
			}
		}
	}()
	var once sync.Once
	stop := func() []int64 {
		once.Do(func() {
			_ = ps.Close()
			<-done
		})
		mu.Lock()
		defer mu.Unlock()
		return gens
	}
	t.Cleanup(func() { stop() })
	return stop
}

// reservationsUsed returns the reservations made within [lo, hi] and, for
// each one whose next hold (of either side) is node-redisson's, the time
// from the reservation to that hold.
func reservationsUsed(gens []int64, rlockHolds, nodeHolds []hold, lo, hi int64) (within []int64, used []time.Duration) {
	type taken struct {
		at   int64
		node bool
	}
	var all []taken
	for _, h := range rlockHolds {
		all = append(all, taken{h.from, false})
	}
	for _, h := range nodeHolds {
		all = append(all, taken{h.from, true})
	}
	slices.SortFunc(all, func(a, b taken) int { return int(a.at - b.at) })
	for _, g := range gens {
		if g < lo || g > hi {
			continue
		}
		within = append(within, g)
		i, _ := slices.BinarySearchFunc(all, g, func(x taken, g int64) int { return int(x.at - g) })
		if i < len(all) && all[i].node {
			used = append(used, time.Duration(all[i].at-g)*time.Microsecond)
		}
	}
	return within, used
}

// nodeProcess is the node-redisson side of a run: one node process of
// worker.js.
type nodeProcess struct {
	stdin io.WriteCloser
	lines *bufio.Scanner
}

// startNode starts worker.js with r's node-redisson workers on name at addr
// and returns once they are ready.
func startNode(ctx context.Context, t *testing.T, bin, addr, name string, r run) *nodeProcess {
	t.Helper()
	think := strconv.FormatFloat(float64(r.think)/float64(time.Millisecond), 'f', 3, 64)
	cmd := exec.CommandContext(ctx, bin, "worker.js", addr, name, strconv.Itoa(r.workers), "0", think, r.variant)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	p := &nodeProcess{stdin: stdin, lines: bufio.NewScanner(stdout)}
	if !p.lines.Scan() || p.lines.Text() != "ready" {
		t.Fatalf("node-redisson workers did not start: %q %v", p.lines.Text(), p.lines.Err())
	}
	return p
}

// start tells the node side to run until end.
func (p *nodeProcess) start(t *testing.T, end time.Time) {
	t.Helper()
	if _, err := fmt.Fprintf(p.stdin, "start %d\n", end.UnixMilli()); err != nil {
		t.Fatal(err)
	}
}

// wait returns the node side's holds once it has printed them.
func (p *nodeProcess) wait(t *testing.T) []hold {
	t.Helper()
	var holds []hold
	for p.lines.Scan() {
		f := strings.Fields(p.lines.Text())
		if len(f) == 1 && f[0] == "done" {
			return holds
		}
		if len(f) != 4 || f[0] != "hold" {
			t.Fatalf("node-redisson workers printed %q", p.lines.Text())
		}
		from, err1 := strconv.ParseInt(f[2], 10, 64)
		to, err2 := strconv.ParseInt(f[3], 10, 64)
		if err := errors.Join(err1, err2); err != nil {
			t.Fatal(err)
		}
		holds = append(holds, hold{from, to})
	}
	t.Fatalf("node-redisson workers ended before their holds: %v", p.lines.Err())
	return nil
}

// longestGap is the longest time within [lo, hi] (µs) covered by none of
// holds.
func longestGap(holds []hold, lo, hi int64) time.Duration {
	hs := slices.Clone(holds)
	slices.SortFunc(hs, func(a, b hold) int { return int(a.from - b.from) })
	gap, at := int64(0), lo
	for _, h := range hs {
		if h.from > at {
			gap = max(gap, min(h.from, hi)-at)
		}
		at = max(at, h.to)
		if at >= hi {
			break
		}
	}
	gap = max(gap, hi-at)
	return time.Duration(gap) * time.Microsecond
}

// overlaps counts the holds of a that overlap a hold of b: the two sides'
// holds are seen from the clients (from the call's return to the unlock
// call), within the server's holds, so any overlap is a broken exclusion.
func overlaps(a, b []hold) int {
	n := 0
	for _, x := range a {
		for _, y := range b {
			if x.from < y.to && y.from < x.to {
				n++
				break
			}
		}
	}
	return n
}
