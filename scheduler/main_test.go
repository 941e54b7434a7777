package scheduler_test

import (
	"math"
	"sync"
	"testing"
	"time"

	"github.com/go-co-op/gocron/v2"
	"github.com/google/uuid"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	// go-redis retries a failed dial in a goroutine that sleeps a second
	// before it sees its pool closed: not ours, and it ends by itself.
	goleak.VerifyTestMain(m, goleak.IgnoreAnyFunction("github.com/redis/go-redis/v9/internal/pool.(*ConnPool).tryDial"))
}

// instance is one gocron scheduler, as one process of a fleet would run it.
type instance struct {
	name string
	s    gocron.Scheduler
	once sync.Once
}

// newInstance creates a scheduler with opts, shut down at the end of the test
// (before the clients and servers created earlier are closed).
func newInstance(t testing.TB, name string, opts ...gocron.SchedulerOption) *instance {
	t.Helper()
	s, err := gocron.NewScheduler(opts...)
	if err != nil {
		t.Fatalf("NewScheduler: %v", err)
	}
	in := &instance{name: name, s: s}
	t.Cleanup(in.stop)
	return in
}

// stop shuts the scheduler down once: after it returns no run is under way
// and none starts.
func (in *instance) stop() { in.once.Do(func() { _ = in.s.Shutdown() }) }

// add adds a job and starts the scheduler.
func (in *instance) add(t testing.TB, def gocron.JobDefinition, task gocron.Task, opts ...gocron.JobOption) {
	t.Helper()
	if _, err := in.s.NewJob(def, task, opts...); err != nil {
		t.Fatalf("%s: NewJob: %v", in.name, err)
	}
	in.s.Start()
}

// runLog records which instance ran each tick of a job scheduled every
// `every` from t0 (set by startJobs before any run), and the lock errors
// gocron reported.
type runLog struct {
	t0    time.Time
	every time.Duration

	mu       sync.Mutex
	ticks    map[int64][]string
	at       map[int64][]time.Time // when each run of ticks began
	total    int
	lockErrs []error
}

func newRunLog(every time.Duration) *runLog {
	return &runLog{every: every, ticks: map[int64][]string{}, at: map[int64][]time.Time{}}
}

// startJobs adds the job name to every instance, scheduled every log.every
// from a start time a little ahead, plus offsets[i] for instance i (none
// when offsets is nil); run(instance) is the job. The start time is taken
// only now, after the instances were made, so that a slow set-up cannot
// make it pass before the schedulers start.
func startJobs(t testing.TB, log *runLog, name string, ins []*instance, offsets []time.Duration, run func(inst string)) {
	t.Helper()
	log.t0 = time.Now().Add(300 * time.Millisecond)
	for i, in := range ins {
		start := log.t0
		if offsets != nil {
			start = start.Add(offsets[i])
		}
		inst := in.name
		in.add(t, gocron.DurationJob(log.every),
			gocron.NewTask(func() { run(inst) }),
			gocron.WithName(name),
			gocron.WithStartAt(gocron.WithStartDateTime(start)),
			gocron.WithEventListeners(gocron.AfterLockError(func(_ uuid.UUID, _ string, err error) {
				log.lockError(err)
			})),
		)
	}
}

// record notes a run by inst now, in the tick nearest to now.
func (r *runLog) record(inst string) {
	now := time.Now()
	tick := int64(math.Round(float64(now.Sub(r.t0)) / float64(r.every)))
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ticks[tick] = append(r.ticks[tick], inst)
	r.at[tick] = append(r.at[tick], now)
	r.total++
}

func (r *runLog) lockError(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lockErrs = append(r.lockErrs, err)
}

// snapshot returns a copy of the runs per tick and of the lock errors.
func (r *runLog) snapshot() (map[int64][]string, []error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	ticks := make(map[int64][]string, len(r.ticks))
	for k, v := range r.ticks {
		ticks[k] = append([]string(nil), v...)
	}
	return ticks, append([]error(nil), r.lockErrs...)
}

// gaps returns, per tick run more than once, the time from each run's
// start to the next one's.
func (r *runLog) gaps() map[int64][]time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[int64][]time.Duration{}
	for tick, ats := range r.at {
		for i := 1; i < len(ats); i++ {
			out[tick] = append(out[tick], ats[i].Sub(ats[i-1]))
		}
	}
	return out
}

func (r *runLog) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.total
}

// byInstance counts the runs of each instance.
func (r *runLog) byInstance() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := map[string]int{}
	for _, insts := range r.ticks {
		for _, in := range insts {
			n[in]++
		}
	}
	return n
}
