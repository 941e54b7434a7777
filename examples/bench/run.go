package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// machine describes where the figures come from.
type machine struct {
	CPU        string `json:"cpu"`
	NumCPU     int    `json:"num_cpu"`
	GOMAXPROCS int    `json:"gomaxprocs"`
	Go         string `json:"go"`
	Redis      string `json:"redis"`
	Addr       string `json:"addr"` // the server's, or the first master's
	// Cluster is -cluster: the masters of the Redis Cluster the tool
	// started; 0, one server.
	Cluster   int  `json:"cluster_masters,omitempty"`
	OwnServer bool `json:"own_server"`
	// Ground is the network between the clients and the server, in words:
	// "loopback; PING p50 45µs", "through faultproxy, 500µs each way; PING
	// p50 1.3ms".
	Ground       string  `json:"ground"`
	LatencyUs    float64 `json:"latency_each_way_us"` // -latency
	PingP50Us    float64 `json:"ping_p50_us"`         // at start, on the ground
	LoadAtStart  string  `json:"load_at_start"`
	LoadAtFinish string  `json:"load_at_finish,omitempty"`
}

type report struct {
	Machine machine   `json:"machine"`
	Results []*result `json:"results"`
}

// run starts (or connects to) Redis, runs the configured scenarios and
// writes the report to out.
func run(ctx context.Context, cfg config, out io.Writer) error {
	e, err := startEnv(cfg)
	if err != nil {
		return err
	}
	defer e.close()
	server := e.servers[0]
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	for i, n := range e.nodes {
		if err := n.Ping(pctx).Err(); err != nil {
			return fmt.Errorf("redis at %s: %w", e.servers[i], err)
		}
	}
	ground, ping, err := describe(ctx, e, cfg)
	if err != nil {
		return fmt.Errorf("redis at %s: %w", server, err)
	}

	rep := report{Machine: machine{
		CPU:         cpuModel(),
		NumCPU:      runtime.NumCPU(),
		GOMAXPROCS:  runtime.GOMAXPROCS(0),
		Go:          runtime.Version(),
		Redis:       redisVersion(ctx, e.admin),
		Addr:        server,
		Cluster:     cfg.cluster,
		OwnServer:   e.own,
		Ground:      ground,
		LatencyUs:   round(float64(cfg.latency)/1e3, 1),
		PingP50Us:   round(float64(ping)/1e3, 1),
		LoadAtStart: loadAvg(),
	}}
	if !cfg.json {
		m := rep.Machine
		fmt.Fprintf(out, "# %s, %d CPUs (GOMAXPROCS %d), %s, redis %s at %s, load average %s\n# ground: %s\n",
			m.CPU, m.NumCPU, m.GOMAXPROCS, m.Go, m.Redis, m.Addr, m.LoadAtStart, m.Ground)
	}
	rows := newRowWriter(out, cfg.json)
	for _, j := range jobs(cfg) {
		rs, err := runJob(ctx, e, cfg, j)
		if ctx.Err() != nil {
			return fmt.Errorf("interrupted during %s: %w", j, context.Cause(ctx))
		}
		if err != nil {
			return fmt.Errorf("%s: %w", j, err)
		}
		for _, r := range rs {
			rep.Results = append(rep.Results, r)
			if err := rows.add(r); err != nil {
				return err
			}
		}
	}
	if r := compareContended(rep.Results); r != nil {
		rep.Results = append(rep.Results, r)
		if err := rows.add(r); err != nil {
			return err
		}
	}
	if err := rows.flush(); err != nil {
		return err
	}
	rep.Machine.LoadAtFinish = loadAvg()
	if cfg.json {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(out, "# load average at finish %s\n", rep.Machine.LoadAtFinish)
	}
	if cfg.svg != "" {
		if err := writeChartFile(cfg.svg, rep); err != nil {
			return err
		}
	}
	return hardMisses(rep.Results)
}

// errHardMiss is returned, after the report, when a hard target was missed:
// not a slow run but a broken guarantee.
var errHardMiss = errors.New("a hard target was missed")

func hardMisses(rs []*result) error {
	var missed []string
	for _, r := range rs {
		missed = append(missed, r.hardMissed()...)
	}
	if len(missed) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %s", errHardMiss, strings.Join(missed, "; "))
}

// job is one line of the report: a scenario with one lock, and for mixed
// one pair of rlock and Redisson workers. A job of an rlock-only scenario
// with other locks is a line saying why they were skipped.
type job struct {
	scenario, lock string
	mix            mix
	skip           string // why lock (a list of locks) does not run scenario
}

func (j job) String() string {
	if j.scenario == "mixed" {
		return fmt.Sprintf("%s %s (%s)", j.scenario, j.mix, j.lock)
	}
	return fmt.Sprintf("%s (%s)", j.scenario, j.lock)
}

// rlockOnly are the scenarios only rlock runs, and why.
var rlockOnly = map[string]string{
	"many-held": "rlock only: it measures rlock's watchdog, which renews many locks in a few scripts",
	"mixed":     "rlock only: the others do not speak Redisson's protocol",
	"trace":     "rlock only: it traces rlock's hand-off message",
	"semaphore": "rlock only: no other lock offers a semaphore",
	"rwmutex":   "rlock only: no other lock offers a read-write lock",
}

// jobs lists the runs cfg asks for, in order.
func jobs(cfg config) []job {
	var js []job
	for _, sc := range cfg.scenarios {
		if slices.Contains(parallelScenarios, sc) { // one job: its locks take turns in each round
			js = append(js, job{scenario: sc, lock: strings.Join(cfg.locks, ",")})
			continue
		}
		why, only := rlockOnly[sc]
		var others []string
		for _, lk := range cfg.locks {
			switch {
			case !only:
				js = append(js, job{scenario: sc, lock: lk})
			case lk != "rlock":
				others = append(others, lk)
			case sc == "mixed":
				for _, m := range cfg.mixes {
					js = append(js, job{scenario: sc, lock: lk, mix: m})
				}
			case sc == "semaphore":
				js = append(js, job{scenario: sc, lock: lk}, job{scenario: "semaphore-uncontended", lock: lk})
			default:
				js = append(js, job{scenario: sc, lock: lk})
			}
		}
		if len(others) > 0 {
			js = append(js, job{scenario: sc, lock: strings.Join(others, ","), skip: why})
		}
	}
	return js
}

// runJob runs one job: one line, or for parallel, whose locks take turns
// in each round, a line per lock and the comparison, and for rwmutex the
// Mutex's line and the RWMutex's.
func runJob(ctx context.Context, e *env, cfg config, j job) ([]*result, error) {
	switch {
	case slices.Contains(parallelScenarios, j.scenario):
		return runParallel(ctx, e, cfg, planParallel(j.scenario, cfg.locks))
	case j.scenario == "rwmutex" && j.skip == "":
		return runRWBench(ctx, e, cfg)
	}
	r, err := runScenario(ctx, e, cfg, j)
	if err != nil {
		return nil, err
	}
	return []*result{r}, nil
}

func runScenario(ctx context.Context, e *env, cfg config, j job) (*result, error) {
	if j.skip != "" {
		return skipped(j.scenario, j.lock, j.skip), nil
	}
	switch j.scenario {
	case "uncontended":
		return runUncontended(ctx, e, cfg, j.lock)
	case "contended":
		return runContended(ctx, e, cfg, j.lock)
	case "many-held":
		return runManyHeld(ctx, e, cfg)
	case "many-waiters":
		if j.lock != "rlock" {
			return runManyWaitersPeer(ctx, e, cfg, j.lock)
		}
		return runManyWaiters(ctx, e, cfg)
	case "mixed":
		return runMixed(ctx, e, cfg, j.mix)
	case "trace":
		return runTrace(ctx, e, cfg)
	case "semaphore":
		return runSemaphore(ctx, e, cfg)
	case "semaphore-uncontended":
		return runSemaphoreUncontended(ctx, e, cfg)
	}
	return nil, fmt.Errorf("unknown scenario %q", j.scenario)
}

func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return runtime.GOARCH
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return runtime.GOARCH
}

// loadAvg is the 1, 5 and 15 minute load average, or "?".
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

func redisVersion(ctx context.Context, rdb *redis.Client) string {
	info, err := rdb.Info(ctx, "server").Result()
	if err != nil {
		return "?"
	}
	for line := range strings.Lines(info) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "redis_version:"); ok {
			return v
		}
	}
	return "?"
}
