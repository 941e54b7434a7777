package rivermw_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertype"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/go-rlock/rlock/internal/redistest"
	"github.com/go-rlock/rlock/internal/testsupport"
	"github.com/go-rlock/rlock/internal/testsupport/locktest"
	"github.com/go-rlock/rlock/lockmw"
	"github.com/go-rlock/rlock/rivermw"
	"github.com/go-rlock/rlock/rivermw/internal/pgtest"
)

// pg is the postgres every test of the binary shares (each on a database of
// its own), started by the first test that needs it and stopped by TestMain.
var pg struct {
	once sync.Once
	srv  *pgtest.Server
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if pg.srv != nil {
		if err := pg.srv.Close(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = 1
		}
	}
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// waitLimit bounds every wait for an event in these tests.
const waitLimit = 30 * time.Second

// testSnooze is the snooze delay of the tests' middleware, short so that a
// busy job comes back soon.
const testSnooze = 20 * time.Millisecond

// jobArgs are the args of every test job: jobs with equal args have the
// same default key.
type jobArgs struct {
	Key string `json:"key"`
}

func (jobArgs) Kind() string { return "rivermw_test" }

// workFunc is a test worker's body.
type workFunc func(ctx context.Context, job *river.Job[jobArgs]) error

type worker struct {
	river.WorkerDefaults[jobArgs]
	work workFunc
}

func (w *worker) Work(ctx context.Context, job *river.Job[jobArgs]) error { return w.work(ctx, job) }

// attempt is what the middleware returned for one attempt of a job.
type attempt struct {
	id  int64
	err error
}

// env is one test's Redis and database, shared by the River clients it
// starts, as processes of one deployment would share them.
type env struct {
	redis    *redistest.Server
	db       *pgxpool.Pool
	attempts chan attempt // every attempt of every client's jobs
}

func newEnv(t *testing.T) *env {
	t.Helper()
	pg.once.Do(func() { pg.srv, pg.err = pgtest.Launch() })
	if pg.err != nil {
		t.Fatal(pg.err)
	}
	return &env{
		redis:    redistest.Start(t),
		db:       pg.srv.RiverDB(t),
		attempts: make(chan attempt, 1000),
	}
}

// node is one River client of a test.
type node struct {
	queue   string           // the one queue it works; default river.QueueDefault
	workers int              // MaxWorkers; default 4
	locks   *lockmw.Client   // default a new Client on the test's Redis
	opts    []rivermw.Option // rivermw.New's, after WithSnooze(testSnooze)
	work    workFunc
}

// start starts a River client, on a pool of its own, with rivermw's
// middleware inside one that reports every attempt on e.attempts; it is
// stopped at cleanup.
func (e *env) start(t *testing.T, n node) *river.Client[pgx.Tx] {
	t.Helper()
	if n.queue == "" {
		n.queue = river.QueueDefault
	}
	if n.workers == 0 {
		n.workers = 4
	}
	if n.locks == nil {
		n.locks = locktest.NewOn(t, e.redis)
	}
	pool, err := pgxpool.New(t.Context(), e.db.Config().ConnString())
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	workers := river.NewWorkers()
	river.AddWorker(workers, &worker{work: n.work})
	record := river.WorkerMiddlewareFunc(func(ctx context.Context, job *rivertype.JobRow, doInner func(context.Context) error) error {
		err := doInner(ctx)
		e.attempts <- attempt{id: job.ID, err: err}
		return err
	})
	c, err := river.NewClient(riverpgxv5.New(pool), &river.Config{
		Queues:            map[string]river.QueueConfig{n.queue: {MaxWorkers: n.workers}},
		Workers:           workers,
		Middleware:        []rivertype.Middleware{record, rivermw.New(n.locks, append([]rivermw.Option{rivermw.WithSnooze(testSnooze)}, n.opts...)...)},
		FetchCooldown:     5 * time.Millisecond,
		FetchPollInterval: 20 * time.Millisecond,
		RetryPolicy:       quickRetry{},
		Logger:            slog.New(slog.DiscardHandler),
		TestOnly:          true,
	})
	require.NoError(t, err)
	require.NoError(t, c.Start(t.Context()))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
		defer cancel()
		require.NoError(t, c.Stop(ctx))
	})
	return c
}

// quickRetry retries a failed job 10ms later, instead of River's back-off.
type quickRetry struct{}

func (quickRetry) NextRetry(*rivertype.JobRow) time.Time {
	return time.Now().Add(10 * time.Millisecond)
}

// insert inserts a job with args into queue ("": the default queue).
func insert(t *testing.T, c *river.Client[pgx.Tx], args jobArgs, queue string, opts ...func(*river.InsertOpts)) *rivertype.JobRow {
	t.Helper()
	o := &river.InsertOpts{Queue: queue}
	for _, f := range opts {
		f(o)
	}
	res, err := c.Insert(t.Context(), args, o)
	require.NoError(t, err)
	return res.Job
}

// next returns the next attempt that match accepts, dropping the others.
func (e *env) next(t *testing.T, what string, match func(attempt) bool) attempt {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for {
		a := testsupport.Recv(t, e.attempts, time.Until(deadline), what)
		if match(a) {
			return a
		}
	}
}

// snoozed reports whether an attempt of job id was a snooze.
func snoozed(id int64) func(attempt) bool {
	return func(a attempt) bool {
		_, ok := a.err.(*rivertype.JobSnoozeError)
		return a.id == id && ok
	}
}

// finished waits until job id is in state and returns its row.
func finished(t *testing.T, c *river.Client[pgx.Tx], id int64, state rivertype.JobState) *rivertype.JobRow {
	t.Helper()
	var job *rivertype.JobRow
	testsupport.Eventually(t, waitLimit, fmt.Sprintf("job %d %s", id, state), func() bool {
		var err error
		job, err = c.JobGet(t.Context(), id)
		require.NoError(t, err)
		return job.State == state
	})
	return job
}

// byArgsKey returns opts after a key function that keys a job by its args'
// Key, so that a test knows a job's lock (heldLock for Key "held") before it
// inserts the job. (The default key hashes the args as the database returns
// them.)
func byArgsKey(opts ...rivermw.Option) []rivermw.Option {
	key := func(_ context.Context, job *rivertype.JobRow) string {
		var args jobArgs
		if err := json.Unmarshal(job.EncodedArgs, &args); err != nil {
			return "undecodable"
		}
		return "test:" + args.Key
	}
	return append([]rivermw.Option{rivermw.WithKey(key)}, opts...)
}

// heldLock is the lock of the jobs with Key "held" under byArgsKey.
const heldLock = rivermw.DefaultKeyPrefix + "lock:test:held"

// lockName is the lock the middleware takes for job by default.
func lockName(job *rivertype.JobRow) string {
	return rivermw.DefaultKeyPrefix + "lock:" + rivermw.DefaultKey(context.Background(), job)
}
