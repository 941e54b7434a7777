package main

import (
	"context"
	"fmt"
	"net"
	"slices"
	"sync"
	"time"

	"github.com/go-rlock/rlock/lockmw"
	"github.com/redis/go-redis/v9"
)

// traceName is the one name the trace workers take turns on.
const traceName = "rlock-bench:trace"

// tracedTurn is one acquisition by one trace worker, in wall-clock time
// with its monotonic reading (all in this process).
type tracedTurn struct {
	worker int
	called time.Time // Lock called
	l      time.Time // L: Lock returned
	u      time.Time // U: Unlock called
	s, p   time.Time // S, P: the release script handed to go-redis, its reply; zero when none seen
	e      time.Time // E: Unlock returned
}

// traceWorker is one worker's client, its rlock Client and what its
// instruments recorded: its turns (the locker) and the hand-off messages
// its connections read (the Dialer).
type traceWorker struct {
	id  int
	rdb *redis.Client
	c   *lockmw.Client
	m   *lockmw.Mutex

	mu    sync.Mutex
	turns []tracedTurn
	cur   tracedTurn // the turn in progress: Lock returned, not yet Unlock
	reads []handoffRead
}

// releaseKey marks the context given to Unlock: lockmw runs the release
// on a context derived from it (it keeps the values), so the release hook
// knows a release command from the other scripts of the same client
// (acquisitions, renewals, claims) and which turn it belongs to.
type releaseKey struct{}

// newTraceWorker builds worker i: a go-redis client with default options
// but for a Dialer that wraps each connection in a handoffConn and a hook
// that times the release script, and an rlock Client of its own on it.
func newTraceWorker(e *env, i int, counter *cmdCounter) *traceWorker {
	w := &traceWorker{id: i}
	d := &net.Dialer{Timeout: 5 * time.Second, KeepAlive: 5 * time.Minute} // go-redis's default dialer
	w.rdb = redis.NewClient(&redis.Options{
		Addr:       e.addr,
		ClientName: fmt.Sprintf("rlock-bench-trace-%d", i),
		Dialer: func(ctx context.Context, network, addr string) (net.Conn, error) {
			conn, err := d.DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return &handoffConn{Conn: conn, record: w.addRead}, nil
		},
	})
	w.rdb.AddHook(releaseHook{}) // first: the outermost, S taken before the counter's work
	w.rdb.AddHook(counter)
	w.c = lockmw.New(w.rdb)
	w.m = w.c.Mutex(traceName)
	return w
}

func (w *traceWorker) close() error {
	err := w.c.Close()
	if cerr := w.rdb.Close(); err == nil {
		err = cerr
	}
	return err
}

func (w *traceWorker) addRead(r handoffRead) {
	w.mu.Lock()
	w.reads = append(w.reads, r)
	w.mu.Unlock()
}

// records returns copies of the turns and reads so far: the connections
// go on reading after the workers end.
func (w *traceWorker) records() ([]tracedTurn, []handoffRead) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.turns), slices.Clone(w.reads)
}

// reset forgets what the warm-up recorded.
func (w *traceWorker) reset() {
	w.mu.Lock()
	w.turns, w.reads = nil, nil
	w.mu.Unlock()
}

// lock, unlock and close make a traceWorker a locker, for takeTurns: L is
// taken when Lock returns, U when unlock is called, S and P by the hook
// during Unlock, E when Unlock returns.
func (w *traceWorker) lock(ctx context.Context) (context.Context, error) {
	called := time.Now()
	h, err := w.m.Lock(ctx)
	if err == nil {
		l := time.Now()
		w.mu.Lock()
		w.cur = tracedTurn{worker: w.id, called: called, l: l}
		w.mu.Unlock()
	}
	return h, err
}

func (w *traceWorker) unlock(hctx context.Context) error {
	u := time.Now()
	w.mu.Lock()
	w.cur.u = u
	w.mu.Unlock()
	err := w.m.Unlock(context.WithValue(hctx, releaseKey{}, w))
	e := time.Now()
	w.mu.Lock()
	w.cur.e = e
	w.turns = append(w.turns, w.cur)
	w.mu.Unlock()
	return err
}

// setSP records the release script's S and P in the turn in progress.
func (w *traceWorker) setSP(s, p time.Time) {
	w.mu.Lock()
	w.cur.s, w.cur.p = s, p
	w.mu.Unlock()
}

// releaseHook is a go-redis hook that times the release script: the last
// EVALSHA or EVAL sent on a context that carries releaseKey, which is to
// say by an Unlock call (lockmw may first try its short uncontended
// release, then the full one: the last is the one whose reply Unlock waits
// for). S is when the command is handed to go-redis (the hook is entered),
// P when its reply has been read (the rest of the chain returns).
type releaseHook struct{}

var _ redis.Hook = releaseHook{}

func (releaseHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (releaseHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		w, ok := ctx.Value(releaseKey{}).(*traceWorker)
		if !ok || (cmd.Name() != "evalsha" && cmd.Name() != "eval") {
			return next(ctx, cmd)
		}
		s := time.Now()
		err := next(ctx, cmd)
		w.setSP(s, time.Now())
		return err
	}
}

func (releaseHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// runTrace has cfg.workers trace workers take turns on one name for
// cfg.duration, as in the contended scenario, and traces each hand-off.
func runTrace(ctx context.Context, e *env, cfg config) (*result, error) {
	counter := newCmdCounter()
	ws := make([]*traceWorker, cfg.workers)
	lockers := make([]locker, cfg.workers)
	for i := range ws {
		ws[i] = newTraceWorker(e, i, counter)
		defer ws[i].close()
		lockers[i] = ws[i]
	}
	if err := warmUp(ctx, lockers); err != nil {
		return nil, err
	}
	for _, w := range ws {
		w.reset()
	}
	m, err := measureContended(ctx, e, cfg, lockers, counter)
	if err != nil {
		return nil, err
	}
	return traceResult(cfg, traceHandoffs(ws), m), nil
}
