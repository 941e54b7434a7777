package main

import (
	"errors"
	"fmt"

	"github.com/go-rlock/rlock/lockmw"
	"github.com/redis/go-redis/v9"
)

// autopipelineKind is the auto-pipelined floor of the parallel scenario: the
// setnx floor's SET NX PX and DEL sent through go-redis's
// Client.AutoPipeline() (go-redis v9.22+, experimental), which batches the
// commands of concurrent callers into pipelines.
const autopipelineKind = "setnx-autopipeline"

// unbatchedKind is rlock with lockmw.WithoutBatching, beside rlock in the
// parallel scenario.
const unbatchedKind = "rlock-nobatch"

// semaphoreKind is rlock's Semaphore of the parallel-semaphore scenario:
// a name of semaphorePermits permits per goroutine, beside rlock's Mutex.
const semaphoreKind = "rlock-semaphore"

// semaphorePermits are the permits of each name of semaphoreKind.
const semaphorePermits = 2

// newLockers returns one locker of kind per name, all on rdb, and a func
// that closes them, as one process's locks would share one client: rlock's
// (and rlock's semaphores) share one Client (one lockmw.New), rueidislock's
// one Locker (one rueidis client), the auto-pipelined floor's rdb's
// AutoPipeliner (a ClusterClient's routes by slot, a pipeline per master).
func newLockers(kind string, rdb redis.UniversalClient, counter *cmdCounter, names []string, cfg config) ([]locker, func() error, error) {
	ls := make([]locker, len(names))
	switch kind {
	case "rlock", unbatchedKind:
		var opts []lockmw.Option
		if kind == unbatchedKind {
			opts = append(opts, lockmw.WithoutBatching())
		}
		c := lockmw.New(rdb, opts...)
		for i, n := range names {
			ls[i] = &rlockLocker{c: c, m: c.Mutex(n)}
		}
		return ls, c.Close, nil
	case semaphoreKind:
		c := lockmw.New(rdb)
		for i, n := range names {
			ls[i] = &rlockSemLocker{c: c, s: c.Semaphore(n, semaphorePermits)}
		}
		return ls, c.Close, nil
	case rueidisKind, rueidisAutoKind:
		return newRueidisRlock(kind, rdb, counter, names)
	case valkeyKind, valkeylockKind:
		return newValkeyLockers(kind, rdb, counter, names)
	case "rueidislock":
		base, err := newRueidisLocker(rueidisOption(rdb), names[0], counter)
		if err != nil {
			return nil, nil, err
		}
		for i, n := range names {
			ls[i] = &rueidisLocker{l: base.l, name: n}
		}
		return ls, base.close, nil
	case autopipelineKind:
		ap, err := rdb.AutoPipeline()
		if err != nil {
			return nil, nil, fmt.Errorf("go-redis AutoPipeline: %w", err)
		}
		for i, n := range names {
			ls[i] = newSetNXLock(ap, n)
		}
		return ls, ap.Close, nil
	}
	for i, n := range names {
		l, err := newLocker(kind, rdb, counter, n, cfg)
		if err != nil {
			return nil, nil, err
		}
		ls[i] = l
	}
	closeAll := func() error {
		var errs []error
		for _, l := range ls {
			errs = append(errs, l.close())
		}
		return errors.Join(errs...)
	}
	return ls, closeAll, nil
}
