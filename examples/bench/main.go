// Command bench is rlock's load tool: it measures the lock the way its users
// feel it, against a real redis-server, beside the Go locks it is compared
// with (redsync, bsm/redislock, rueidislock, a polling lock and a bare
// SET NX floor), in one run on one server, and says whether each
// performance target of the project is met.
//
// It is a Go module of its own (examples/bench/go.mod, with a replace of
// the root), so that the libraries it compares rlock with never enter
// rlock's go.mod. Run it from its directory, or from the repository's root
// with "go run -C examples/bench . [flags]":
//
//	cd examples/bench
//	go run .                                   # every scenario but parallel, every lock, about 2 minutes
//	go run . -scenario contended               # every lock's contended row, then rlock's targets
//	go run . -scenario parallel                # many independent locks from one client, about 4 minutes
//	go run . -scenario parallel -cluster 3     # the same on a Redis Cluster of 3 masters
//	go run . -scenario parallel-semaphore      # rlock's Semaphore beside its Mutex, about 3 minutes
//	go run . -scenario contended -lock rlock,poll
//	go run . -json > bench.json
//	go run . -addr 127.0.0.1:6379              # an existing server
//
// Without -addr it starts its own redis-server on loopback (with
// internal/redistest, the test harness), and stops it at exit, on Ctrl-C
// too. redis-server must be on PATH: "make test" installs it, or
// "apt-get install redis-server". With -addr it uses that server, writes only
// keys prefixed "rlock-bench:" (and each lock's own keys for those names:
// rlock's, "rueidislock:…") and never changes its configuration; INFO
// commandstats deltas then include whatever else runs there.
//
// # Locks
//
// -lock all (the default) runs each scenario with every lock below, one
// after the other, on the same redis-server; -lock NAME[,NAME] picks some,
// -lock both is rlock,poll. Every client is built with its library's default
// options but for the address (go-redis: ContextTimeoutEnabled false), as
// users build them.
//
//   - rlock: lockmw, this module's lock: pub/sub hand-off queue, watchdog.
//   - redsync: github.com/go-redsync/redsync/v4 with its default retry (32
//     tries 50–250 ms apart; after ErrFailed the tool calls Lock again, as
//     a caller that needs the lock would) and expiry (8 s).
//   - redsync-1ms: redsync with WithRetryDelay(1ms) and WithTries(MaxInt32):
//     it retries every 1 ms for as long as the run needs.
//   - redislock-100ms, redislock-1ms: github.com/bsm/redislock v0.9.4 with
//     RetryStrategy LinearBackoff(100ms) or LinearBackoff(1ms), a 30 s lease,
//     and a context that bounds each Obtain's wait to a minute.
//   - rueidislock: github.com/redis/rueidis/rueidislock (a package of the
//     rueidis module), as its README sets it up for a single Redis
//     (KeyMajority 1, NoLoopTracking), each worker on its own rueidis client;
//     waiters retry when client-side caching reports the key changed;
//     WithContext takes the lock, its CancelFunc releases it.
//   - poll: a polling lock written here, the design of redsync and
//     redislock: SET NX PX, retry every -poll-min..-poll-max (1–5 ms),
//     release with a compare-and-delete script.
//   - setnx: the floor, the cheapest lock there is and an unsafe one: SET
//     key token NX PX, retried every 1 ms while taken, released with a bare
//     DEL that does not check the token.
//
// # Scenarios
//
// Each prints one line per lock, the lines of a scenario aligned as a
// table; -json prints one JSON document instead, with every figure, target
// and skipped line.
//
//   - uncontended: one goroutine locks and unlocks one name -n times, and
//     the same go-redis client runs a bare SET NX PX + DEL pair -n times (the
//     floor), alternating -runs times, and within each run taking turns every
//     -block pairs (so that both see the same machine: on a small VM the
//     round trip drifts by tens of percent from one second to the next);
//     ops/s, p50/p99 of both and the median over runs of
//     p50(lock+unlock)/p50(floor); beside them, per operation, the
//     redis-server's CPU time (INFO cpu), this process's CPU time and the
//     commands sent. With rlock also the unlock latch keys still alive at
//     the end and, for reference, Redisson's own scripts timed the same way.
//     Target (rlock): ratio ≤ 1.3.
//   - contended: -workers workers, each with its own client and locker (as
//     separate processes would be), take turns on one name for -duration
//     per lock, holding it -hold and pausing -think between turns.
//     Acquisitions/s; utilization (time held / wall time); hand-off latency
//     from the Unlock call (one worker's Unlock called → another's Lock
//     returns) p50 and p99, and the same from Unlock's return, for
//     reference; wait p50/p99; commands the clients sent per acquisition (a
//     go-redis hook on every client, pub/sub and connection set-up excluded;
//     rueidislock's through a wrapper of its rueidis client) and,
//     separately, INFO commandstats per acquisition (which also counts the
//     commands run inside scripts); the redis-server's CPU time per
//     acquisition; acquisitions per worker min/max; PING p50 timed during
//     the run by an otherwise idle client of its own, every 2 ms (its
//     PINGs are left out of commandstats, not of the server's CPU time),
//     and before the run, for reference; with rlock, how many connections
//     receive one hand-off message. After every lock's row, a "compare"
//     line judges rlock's row (peers without a hand-off are left out).
//     Targets: hand-off p50 ≤ 2.5 × PING p50 (during rlock's run); hand-off
//     p50 below every other lock's, p99 below every other lock's;
//     acquisitions/s ≥ min(1.4 × the best other lock's,
//     0.9 / (hold + PING p50)), hold being rlock's mean measured hold
//     (time.Sleep(-hold) overshoots); redis-server CPU per acquisition ≤ 2 ×
//     the poll lock's; ≤ 4 client commands per acquisition; max/min
//     acquisitions per worker ≤ 3.
//   - many-held (rlock only): one Client holds -held locks under a -watchdog
//     watchdog for -rounds renewal intervals: renewal scripts per interval,
//     goroutines (at 0, -held/10 and -held locks), heap per held lock
//     (HeapAlloc after GC). Targets: scripts per interval ≤ ⌈held/100⌉,
//     goroutines independent of the number held, ≤ 2 KiB per lock.
//   - many-waiters: one client holds -waiters names, another has one
//     goroutine waiting on each; the holder unlocks them one by one (with
//     rlock once every waiter is queued and subscribed, with the others once
//     the waiting client has sent about one attempt per waiter). Pub/sub
//     connections per client (CLIENT LIST, sub>0 or ssub>0), wake-up
//     latency (Unlock of name i called → its waiter's Lock returns), the
//     waiting client's commands per wake-up (a polling waiter polls on while
//     the others are woken; commands are counted when sent, so under load
//     an attempt counted before the first unlock may take a lock after it). Target (rlock): one pub/sub connection for the
//     waiting client. rueidislock's waiters of one process share one
//     rueidis client.
//   - mixed (rlock only): rlock workers and Redisson workers
//     (internal/redisson: each its own Redisson process, waiting as Redisson
//     4.x's RLock.lock() does, on "0" or the holder's TTL) contend on one
//     name for -duration, holding it -hold and pausing a uniform 0 to
//     2×-think between turns; -mix N:M sets N rlock and M Redisson workers,
//     -mix all runs every pair of 1, 2 and 4, one line each. Per side:
//     holds, share of the holds against its fair share (its workers / all
//     workers), the longest gap without a hold (from the start or the
//     side's previous release to its next acquisition, or to the end), wait
//     p50/p99/max (a Lock still waiting at the end counts until the end);
//     and holds that overlapped. Targets, for the Redisson side: longest
//     gap ≤ 2 s, share ≥ 0.25 × fair share; no overlapping holds. With
//     -mixed-permits n the name is a semaphore of n permits instead
//     (lockmw.Semaphore; internal/redisson's RPermitExpirableSemaphore,
//     waiting as acquire() does, on a published count or the earliest
//     lease's end), and a hold that began beside n others overlaps.
//   - trace (rlock only): where the time of one hand-off goes, the way the
//     waiting user feels it, measured from outside the library. The
//     contended scenario's set-up (-workers, -hold, -think, -duration; each
//     worker its own go-redis client, default options, and its own Client;
//     one name), with instruments on each worker's client: a go-redis hook
//     and a Dialer whose connections time their reads. Per hand-off: U, the
//     releasing worker calls Unlock; S and P, its release script is handed
//     to go-redis and its reply arrives (the hook: the last EVALSHA or EVAL
//     sent on the context Unlock was given, marked with a value, which the
//     release's context keeps); E, Unlock returns; R, the waiting worker's
//     connection reads the hand-off message (a Read whose bytes carry
//     "rlock_handoff"; the payload names the waiter's owner field and the
//     releaser's, whose client ID, lockmw.Client.ID(), says which worker
//     released: a read that cut the message short counts for the worker's
//     next Lock return); L, the waiting worker's Lock returns. Hand-offs
//     are consecutive turns of different workers, as in contended; one is
//     traced when it has all six. p50/p90/p99 of U→S (Unlock's own work
//     before the send: the level, the release timeout's context, the
//     script's arguments), S→P (the releaser's round trip: a pool
//     connection, the write, the server's wake-up and script, the reply
//     read), S→R (release sent → the waiter's process has the message: the
//     write, the server's wake-up, the script, the publish's write, the
//     waiter process's wake-up and read), R→L (go-redis decodes the
//     message, lockmw's subscription goroutine dispatches it to the waiting
//     goroutine, the hold is set up, Lock returns), P→E (after the reply:
//     the hold ends, Unlock returns), U→E and U→L (the hand-off from the
//     call); PING p50 during the run (the contended scenario's pinger) and
//     U→L p50 / PING p50; the server's own time per script, INFO
//     commandstats usec_per_call of EVALSHA over the run, an average over
//     every script the run sent (acquisitions too, not only releases).
//     One header line, then one aligned line per step.
//   - semaphore (rlock only: no other lock offers a semaphore): -workers
//     workers, each with its own client and lockmw.Client, take permits of
//     one semaphore of -permits for -duration, holding one -hold and
//     pausing -think between turns (16 workers on a limit of 4), measured
//     as contended is. Acquisitions/s; utilization (time permits were held
//     / (wall time × permits)); the most holders at once the tool saw (an
//     atomic counter, up after Lock returns, down before Unlock is called);
//     hand-off p50/p99, each Lock return paired with the latest Unlock call
//     before it, by another worker, made while this worker waited (the
//     closest release that may have freed its permit; a Lock with no such
//     call found a permit free and is no hand-off); wait p50/p99; client
//     commands, INFO commandstats and redis-server CPU per acquisition;
//     acquisitions per worker min/max; PING p50 during the run; the free
//     permits after it. Targets: max holders ≤ permits and every permit
//     back after the run (hard: missed, the tool exits 1); ≤ 4 client
//     commands per acquisition; max/min acquisitions per worker ≤ 3. A
//     second line, semaphore-uncontended, times on one goroutine a
//     semaphore's Lock+Unlock, a mutex's Lock+Unlock and SET NX PX + DEL,
//     taking turns as uncontended does (-n, -runs, -block): p50/p99,
//     commands and redis-server CPU of each, and the median over runs of
//     p50(semaphore)/p50(mutex).
//   - rwmutex (rlock only): what sharing buys on read-mostly work.
//     -workers workers (16), each with its own go-redis client and
//     lockmw.Client, do the same work on one name, once on an RWMutex and
//     once on a Mutex, taking turns for -rounds rounds (3) of -duration
//     each (the first kind of a round the second of the previous one): each
//     operation reads with probability -read-share (0.9; RLock on the
//     RWMutex) or writes (Lock), and holds the lock -work (2ms, a sleep:
//     the work), the Mutex taken for both. Two lines, rwmutex-on-mutex and
//     rwmutex: operations/s, reads and writes, read and write p50/p99 (from
//     the Lock call to its return), the most readers the tool saw hold at
//     once and writers seen beside anyone (atomic counters, up after Lock
//     returns and down before Unlock is called: an overlap they see
//     happened); on the rwmutex line the median over rounds of its
//     operations/s over the Mutex's. Target: no writer beside anyone
//     (hard: missed, the tool exits 1).
//   - parallel (not part of -scenario all: it runs for about 4 minutes):
//     many independent locks from one service. -goroutines goroutines (64)
//     share one client per lock (one go-redis client with default options
//     for rlock, one lockmw.Client on it, and for the go-redis peers; one
//     rueidislock Locker, so one rueidis client), each locking and
//     unlocking a name of its own, with no contention, for -duration. Beside
//     the locks of -lock (a lock's retry variants run once: nobody
//     retries; rlock also as rlock-nobatch, with lockmw.WithoutBatching),
//     always the two floors: setnx (SET NX PX + DEL on plain
//     go-redis) and setnx-autopipeline (the same pair through go-redis's
//     Client.AutoPipeline(), experimental, go-redis v9.22+). -rounds rounds
//     (5), every lock once in each, the first lock of a round the second
//     of the previous one. Per lock: acquisitions/s (the median of the
//     rounds'); p50/p99 of lock+unlock, timed from the Lock call to Unlock
//     returning; redis-server CPU per acquisition (INFO cpu) from the
//     run's start until the keys it wrote have expired (rlock's unlock
//     latches live ~13 s; the tool waits for DBSIZE to come back, at most
//     -settle, and leaves out what the idle server spends meanwhile,
//     timed before the first round), also split into the run and the
//     expiry; INFO commandstats and client commands per acquisition; this
//     process's CPU time and heap allocations per acquisition; stalled
//     Lock calls (still waiting 5 s after the run's end, given up). Then
//     "parallel-compare rlock": GOMAXPROCS, the load average at each
//     round's start, and the per-round ratios of rlock's figures to the
//     floors' and rueidislock's with their medians. Targets (medians of
//     per-round ratios): acquisitions/s ≥ 1.2 × setnx's, ≥ rueidislock's,
//     ≥ 0.5 × setnx-autopipeline's; redis-server CPU per acquisition ≤
//     setnx's, ≤ rueidislock's and ≤ 3 × setnx-autopipeline's; p99 ≤
//     setnx's.
//   - parallel-semaphore (not part of -scenario all either; rlock only,
//     whatever -lock says): the parallel scenario on rlock's Mutex and on
//     its Semaphore, each goroutine a name of 2 permits of its own
//     (lockmw.Semaphore, one lockmw.Client), taking turns as parallel's
//     locks do: a line each, then "parallel-semaphore-compare
//     rlock-semaphore", the per-round ratios of the Semaphore's figures to
//     the Mutex's. Target: acquisitions/s ≥ 0.8 × the Mutex's.
//
// The other locks have no line of their own in many-held, mixed, trace,
// semaphore and rwmutex: one line per scenario names them and says why.
//
// # Flags
//
//	-addr host:port   use this Redis instead of starting one
//	-latency d        a faultproxy between every client and the server, delaying each direction by d
//	-cluster N        parallel, parallel-semaphore: a Redis Cluster of N masters instead of one server (see Ground)
//	-scenario s       all (every scenario but the parallel ones), uncontended, contended, many-held,
//	                  many-waiters, mixed, trace, semaphore, rwmutex, parallel or parallel-semaphore (default all)
//	-lock l           all (default), both (rlock,poll), or NAME[,NAME] of the locks above
//	-json             print one JSON document instead of text lines
//	-dry-run          parse and check the flags, print the plan (ground, locks, each line in order), start and dial nothing
//	-svg file         parallel, parallel-semaphore: also write the side-by-side as an SVG chart (see Chart)
//	-n, -runs         uncontended: pairs per run (2000), alternating runs (5)
//	-block            uncontended: pairs per turn within a run (100)
//	-workers, -hold, -think, -duration
//	                  contended and trace: 16 workers, 1ms, 1ms, 3s per lock (mixed: 3s per pair;
//	                  semaphore: the same, 3s)
//	-permits          semaphore: permits of the semaphore (4)
//	-held, -watchdog, -rounds
//	                  many-held: 10000 locks, 3s watchdog (renewal every 1s), 3 intervals
//	                  (-rounds: parallel's rounds too, 5 by default)
//	-goroutines, -settle
//	                  parallel, parallel-semaphore: 64 goroutines; wait at most 1m for a run's keys to expire
//	-waiters          many-waiters: 1000 names and waiters
//	-mix N:M, -mix all
//	                  mixed: rlock and Redisson workers (4:4); all: each of 1, 2, 4 against each
//	-mixed-permits n  mixed: 0 (default) a mutex; n > 0 a semaphore of n permits (lockmw.Semaphore
//	                  beside Redisson's RPermitExpirableSemaphore); -slow-wake applies to both
//	-read-share, -work
//	                  rwmutex: the share of reads (0.9), each operation's hold (2ms); -workers, -duration
//	                  and -rounds (3 rounds of 3s per kind) apply
//	-poll-min, -poll-max
//	                  the polling lock's retry interval range (1ms, 5ms)
//	-cpuprofile, -memprofile file
//	                  write a CPU profile of the run, an allocation profile at exit
//
// The machine and the load average at start and end are printed first: on a
// shared machine the figures move with the load.
//
// # Ground
//
// By default every client dials the server directly (on loopback, when the
// tool starts its own). -latency D puts one internal/faultproxy between
// every client of the run and the server, the admin client that reads INFO
// and the pinger included: each command reaches the server D after it was
// sent and each reply and pub/sub message reaches its client D after the
// server wrote it, a link with a one-way delay of D, as a server in another
// zone is (-latency 500us: a round trip about 1 ms longer than loopback's).
// Each direction is a wire, not a pause per command: a pipeline is delayed
// once. Every lock of every scenario goes through it (rlock, the peers,
// rueidislock's own connections, the Redisson workers of mixed). The header
// names the ground ("loopback", or "through faultproxy, 500µs each way")
// with a PING p50 timed on it before the first scenario.
//
// # Chart
//
// -svg FILE (parallel and parallel-semaphore) writes the run's side-by-side
// as an SVG chart besides the report: a title naming the ground, the
// machine and its load, then two panels, acquisitions/s and redis-server
// CPU per acquisition, with a row per lock (rlock, every peer, both
// floors): a bar at the median round, a whisker from the lowest round to
// the highest. "make charts" writes one per ground into docs/charts.
// -dry-run parses and checks the flags, prints the plan (the ground, the
// locks, each line of the report in order) and exits without starting or
// dialing a server.
//
// -cluster N (parallel and parallel-semaphore only, not with -addr) starts
// a Redis Cluster of N masters without replicas on loopback
// (internal/redistest's LaunchCluster, the slots split evenly) instead of
// one redis-server, and runs every lock through a cluster client of its
// own: rlock and the go-redis floors on a redis.ClusterClient seeded with
// the masters (default options; setnx-autopipeline through its
// AutoPipeline(), which pipelines per master), rueidislock on a rueidis
// client seeded with them (rueidis finds the cluster). The server's
// figures (CPU time, commandstats, reads, keys) are sums over the masters;
// the PING p50 is the first master's. With -latency every master has a
// faultproxy of its own, and every cluster client reaches each node,
// which it learns of from the cluster, through that node's proxy (a go-redis
// Dialer, a rueidis DialCtxFn): an address without a proxy is an error,
// never a direct connection.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"syscall"
	"time"
)

func main() {
	cfg, prof, err := parseFlags(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		<-ctx.Done()
		stop() // a second Ctrl-C kills at once
	}()

	if cfg.dryRun {
		if err := printPlan(os.Stdout, cfg); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		return
	}

	if prof.cpu != "" {
		f, err := os.Create(prof.cpu)
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		defer f.Close()
		defer pprof.StopCPUProfile()
	}
	if prof.mem != "" {
		runtime.MemProfileRate = 4096
	}

	err = run(ctx, cfg, os.Stdout)

	if prof.mem != "" {
		if werr := writeMemProfile(prof.mem); werr != nil && err == nil {
			err = werr
		}
	}
	switch {
	case errors.Is(err, errNoServer):
		fmt.Fprintln(os.Stderr, noServerHelp)
		exit(1, prof)
	case err != nil:
		fmt.Fprintln(os.Stderr, "bench:", err)
		exit(1, prof)
	}
}

// exit stops the CPU profile, which deferred calls would not, and exits.
func exit(code int, prof profiles) {
	if prof.cpu != "" {
		pprof.StopCPUProfile()
	}
	os.Exit(code)
}

func writeMemProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return pprof.Lookup("allocs").WriteTo(f, 0)
}

// noServerHelp is printed when there is no redis-server to start.
const noServerHelp = `bench: redis-server is not on PATH and no -addr was given.
Get one with "make test" (it installs redis-server) or "sudo apt-get install redis-server",
or point the tool at a running server with -addr host:port.`

// errNoServer is returned by run when it has to start a redis-server and
// cannot find one.
var errNoServer = errors.New("redis-server not found")

// config holds the parameters of a run.
type config struct {
	addr      string
	scenarios []string
	locks     []string
	json      bool

	n     int
	runs  int
	block int

	workers  int
	hold     time.Duration
	think    time.Duration
	duration time.Duration
	permits  int

	held     int
	watchdog time.Duration
	rounds   int

	waiters int

	mixes    []mix
	slowWake bool // mixed: the Redisson workers need two round trips from "0" to their acquire (redisson.WithSlowWake)
	// mixedPermits, for mixed: 0, a mutex; n > 0, a semaphore of n permits
	// (lockmw.Semaphore beside Redisson's RPermitExpirableSemaphore).
	mixedPermits int

	pollMin, pollMax time.Duration

	readShare float64       // rwmutex: the share of operations that read
	rwWork    time.Duration // rwmutex: how long each operation holds the lock (its work)

	latency time.Duration // one-way delay each direction through a faultproxy; 0: none
	cluster int           // parallel scenarios: masters of a Redis Cluster the tool starts; 0: one server

	dryRun bool   // -dry-run: print the plan, start and dial nothing
	svg    string // -svg: write the parallel scenarios' side-by-side to this file as an SVG chart

	goroutines int           // parallel: goroutines sharing one client, each on a name of its own
	parRounds  int           // parallel: rounds, the locks taking turns in each
	settle     time.Duration // parallel: the longest wait after a run for its keys to expire
}

type profiles struct{ cpu, mem string }

var allScenarios = []string{"uncontended", "contended", "many-held", "many-waiters", "mixed", "trace", "semaphore", "rwmutex"}

// parallelScenario is not among allScenarios: with five rounds, each
// waiting for rlock's unlock latches to expire, it runs for about three
// minutes on its own.
const parallelScenario = "parallel"

// parallelSemaphoreScenario is the parallel scenario on rlock's Semaphore
// (a name of semaphorePermits per goroutine) beside rlock's Mutex; not
// among allScenarios either.
const parallelSemaphoreScenario = "parallel-semaphore"

// parallelScenarios are the scenarios with a cluster ground (-cluster).
var parallelScenarios = []string{parallelScenario, parallelSemaphoreScenario}

// defaultConfig is what the flags default to.
func defaultConfig() config {
	return config{
		scenarios: allScenarios,
		locks:     lockKinds,
		n:         2000,
		runs:      5,
		block:     100,
		workers:   16,
		hold:      time.Millisecond,
		think:     time.Millisecond,
		duration:  3 * time.Second,
		permits:   4,
		held:      10000,
		watchdog:  3 * time.Second,
		rounds:    3,
		waiters:   1000,
		mixes:     []mix{{4, 4}},
		pollMin:   time.Millisecond,
		pollMax:   5 * time.Millisecond,
		readShare: 0.9,
		rwWork:    2 * time.Millisecond,

		goroutines: 64,
		parRounds:  5,
		settle:     60 * time.Second,
	}
}

func parseFlags(args []string, stderr io.Writer) (config, profiles, error) {
	cfg := defaultConfig()
	var prof profiles
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: go run . [flags]   (in examples/bench; from the root: go run -C examples/bench . [flags])\n\nMeasures rlock beside redsync, bsm/redislock, rueidislock, a polling lock and a SET NX floor against one redis-server (its own on loopback, or -addr) and checks the performance targets.\n\nFlags:")
		fs.PrintDefaults()
	}
	scenario := fs.String("scenario", "all", "all (every scenario but the parallel ones), uncontended, contended, many-held, many-waiters, mixed, trace, semaphore, rwmutex, parallel or parallel-semaphore")
	lock := fs.String("lock", "all", "all, both (rlock,poll) or a comma-separated list of "+strings.Join(slices.Concat(lockKinds, clientKinds), ", ")+" (all: but "+strings.Join(clientKinds, ", ")+")")
	fs.StringVar(&cfg.addr, "addr", "", "use the Redis at host:port instead of starting a redis-server")
	fs.DurationVar(&cfg.latency, "latency", 0, "put a faultproxy between every client and the server that delays each direction by this much (e.g. 500us: a round trip 1ms longer); 0: none")
	fs.IntVar(&cfg.cluster, "cluster", 0, "parallel and parallel-semaphore: start a Redis Cluster of this many masters (no replicas) instead of one redis-server, every lock on a cluster client of its own, the server CPU summed over the nodes; 0: one server")
	fs.BoolVar(&cfg.json, "json", false, "print one JSON document instead of text lines")
	fs.BoolVar(&cfg.dryRun, "dry-run", false, "parse and check the flags, print what would run, and exit without starting or dialing a server")
	fs.StringVar(&cfg.svg, "svg", "", "parallel and parallel-semaphore: also write the side-by-side as an SVG chart to this file (acquisitions/s and redis-server CPU per acquisition, per lock, the rounds' median and spread)")
	fs.IntVar(&cfg.n, "n", cfg.n, "uncontended: lock+unlock pairs (and floor pairs) per run")
	fs.IntVar(&cfg.runs, "runs", cfg.runs, "uncontended: alternating runs of lock+unlock and of the floor")
	fs.IntVar(&cfg.block, "block", cfg.block, "uncontended: within a run, lock+unlock and the floor take turns every this many pairs")
	fs.IntVar(&cfg.workers, "workers", cfg.workers, "contended: workers, each with its own Client")
	fs.DurationVar(&cfg.hold, "hold", cfg.hold, "contended, mixed and semaphore: how long a worker holds the lock")
	fs.DurationVar(&cfg.think, "think", cfg.think, "contended: pause between a worker's turns; mixed: the mean pause (uniform from 0 to twice this)")
	fs.DurationVar(&cfg.duration, "duration", cfg.duration, "contended, mixed and semaphore: length of the run")
	fs.IntVar(&cfg.permits, "permits", cfg.permits, "semaphore: permits of the semaphore the workers share")
	fs.IntVar(&cfg.held, "held", cfg.held, "many-held: locks held at once")
	fs.DurationVar(&cfg.watchdog, "watchdog", cfg.watchdog, "many-held: watchdog timeout (renewal every third of it)")
	rounds := fs.Int("rounds", 0, "many-held: renewal intervals to hold the locks for (0: 3); rwmutex: rounds (0: 3); parallel: rounds, the locks taking turns in each (0: 5)")
	fs.IntVar(&cfg.waiters, "waiters", cfg.waiters, "many-waiters: names, each with one waiting goroutine")
	mixFlag := fs.String("mix", "4:4", "mixed: N:M, N rlock workers and M Redisson workers, or all (each of 1, 2, 4 against each)")
	fs.IntVar(&cfg.mixedPermits, "mixed-permits", 0, "mixed: 0, the workers share a mutex; n > 0, a semaphore of n permits (Redisson's RPermitExpirableSemaphore on the Redisson side)")
	fs.BoolVar(&cfg.slowWake, "slow-wake", false, "mixed: Redisson workers that need two round trips, not one, from the unlock message to their acquire (like node-redisson)")
	fs.IntVar(&cfg.goroutines, "goroutines", cfg.goroutines, "parallel: goroutines sharing one client per lock, each locking and unlocking a name of its own")
	fs.DurationVar(&cfg.settle, "settle", cfg.settle, "parallel: after each lock's run, the longest wait for the keys it wrote to expire (the server's CPU time is measured until then)")
	fs.Float64Var(&cfg.readShare, "read-share", cfg.readShare, "rwmutex: the share of operations that read (the others write)")
	fs.DurationVar(&cfg.rwWork, "work", cfg.rwWork, "rwmutex: how long each operation holds the lock, reading or writing (its work)")
	fs.DurationVar(&cfg.pollMin, "poll-min", cfg.pollMin, "polling lock: shortest retry interval")
	fs.DurationVar(&cfg.pollMax, "poll-max", cfg.pollMax, "polling lock: longest retry interval")
	fs.StringVar(&prof.cpu, "cpuprofile", "", "write a CPU profile to this file")
	fs.StringVar(&prof.mem, "memprofile", "", "write an allocation profile to this file at exit")
	if err := fs.Parse(args); err != nil {
		return cfg, prof, err
	}
	if fs.NArg() > 0 {
		return cfg, prof, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	switch *scenario {
	case "all":
		cfg.scenarios = allScenarios
	case "uncontended", "contended", "many-held", "many-waiters", "mixed", "trace", "semaphore", "rwmutex", parallelScenario, parallelSemaphoreScenario:
		cfg.scenarios = []string{*scenario}
	default:
		return cfg, prof, fmt.Errorf("-scenario %q: want all, uncontended, contended, many-held, many-waiters, mixed, trace, semaphore, rwmutex, parallel or parallel-semaphore", *scenario)
	}
	if *rounds != 0 {
		cfg.rounds, cfg.parRounds = *rounds, *rounds
	}
	mixes, err := parseMix(*mixFlag)
	if err != nil {
		return cfg, prof, err
	}
	cfg.mixes = mixes
	if cfg.locks, err = parseLocks(*lock); err != nil {
		return cfg, prof, err
	}
	return cfg, prof, cfg.validate()
}

// parseMix parses -mix: "all", or "N:M" with N and M at least 1.
func parseMix(s string) ([]mix, error) {
	if s == "all" {
		return allMixes(), nil
	}
	var m mix
	if _, err := fmt.Sscanf(s, "%d:%d", &m.rlock, &m.redisson); err != nil || m.String() != s || m.rlock < 1 || m.redisson < 1 {
		return nil, fmt.Errorf("-mix %q: want N:M (rlock and Redisson workers, each at least 1) or all", s)
	}
	return []mix{m}, nil
}

func (c config) validate() error {
	if c.cluster > 0 {
		if c.addr != "" {
			return errors.New("-cluster starts a cluster of its own: not with -addr")
		}
		for _, sc := range c.scenarios {
			if !slices.Contains(parallelScenarios, sc) {
				return fmt.Errorf("-cluster: -scenario %s has no cluster ground (only parallel and parallel-semaphore)", sc)
			}
		}
	}
	if c.svg != "" && !slices.ContainsFunc(c.scenarios, func(sc string) bool { return slices.Contains(parallelScenarios, sc) }) {
		return errors.New("-svg: charts the parallel scenarios' rounds: use it with -scenario parallel or parallel-semaphore")
	}
	for _, v := range []struct {
		name string
		ok   bool
	}{
		{"-n must be positive", c.n > 0},
		{"-runs must be positive", c.runs > 0},
		{"-block must be positive", c.block > 0},
		{"-workers must be at least 2", c.workers >= 2},
		{"-hold must not be negative", c.hold >= 0},
		{"-think must not be negative", c.think >= 0},
		{"-duration must be positive", c.duration > 0},
		{"-permits must be positive", c.permits > 0},
		{"-mixed-permits must not be negative", c.mixedPermits >= 0},
		{"-held must be positive", c.held > 0},
		{"-watchdog must be at least 30ms", c.watchdog >= 30*time.Millisecond},
		{"-rounds must be positive", c.rounds > 0},
		{"-waiters must be positive", c.waiters > 0},
		{"-poll-min must be positive", c.pollMin > 0},
		{"-poll-max must not be less than -poll-min", c.pollMax >= c.pollMin},
		{"-latency must not be negative", c.latency >= 0},
		{"-cluster must not be negative", c.cluster >= 0},
		{"-goroutines must be positive", c.goroutines > 0},
		{"-rounds must be positive", c.parRounds > 0},
		{"-settle must not be negative", c.settle >= 0},
		{"-read-share must be from 0 to 1", c.readShare >= 0 && c.readShare <= 1},
		{"-work must not be negative", c.rwWork >= 0},
	} {
		if !v.ok {
			return errors.New(v.name)
		}
	}
	return nil
}
