package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/go-rlock/rlock/lockmw"
	"github.com/redis/go-redis/v9"
)

// locker is one owner's handle on one lock name: an rlock Mutex of its own
// Client, or one of the peers. lock waits until it holds the lock or ctx
// ends and returns the hold context that unlock takes.
type locker interface {
	lock(ctx context.Context) (context.Context, error)
	unlock(hctx context.Context) error
	close() error
}

// lockPair takes l and releases it at once.
func lockPair(ctx context.Context, l locker) error {
	h, err := l.lock(ctx)
	if err != nil {
		return fmt.Errorf("lock: %w", err)
	}
	if err := l.unlock(h); err != nil {
		return fmt.Errorf("unlock: %w", err)
	}
	return nil
}

// lockKinds are the -lock names, in the order the rows are printed:
//
//   - rlock: lockmw, this module's lock (pub/sub hand-off queue);
//   - redsync: go-redsync/redsync v4 with its default retry (32 tries,
//     50–250 ms apart), taken again after ErrFailed;
//   - redsync-1ms: redsync retrying every 1 ms, with tries enough to wait
//     as long as the run needs;
//   - redislock-100ms, redislock-1ms: bsm/redislock retrying every 100 ms
//     or 1 ms (LinearBackoff), the wait bounded by a context;
//   - rueidislock: rueidis' rueidislock, woken by client-side caching
//     invalidations, each worker on a rueidis client of its own;
//   - poll: the polling lock written here (SET NX PX, retry every
//     -poll-min..-poll-max, compare-and-delete release);
//   - setnx: the bare floor, SET NX PX and DEL retried every 1 ms.
var lockKinds = []string{"rlock", "redsync", "redsync-1ms", "redislock-100ms", "redislock-1ms", "rueidislock", "poll", "setnx"}

// parseLocks parses -lock: "all", "both" (rlock and poll), or a
// comma-separated list of lockKinds.
func parseLocks(s string) ([]string, error) {
	switch s {
	case "all":
		return lockKinds, nil
	case "both":
		return []string{"rlock", "poll"}, nil
	}
	var out []string
	for name := range strings.SplitSeq(s, ",") {
		known := false
		for _, k := range append(lockKinds, clientKinds...) {
			known = known || k == name
		}
		if !known {
			return nil, fmt.Errorf("-lock %q: want all, both or a list of %s", s, strings.Join(lockKinds, ", "))
		}
		out = append(out, name)
	}
	return out, nil
}

// newLocker returns a locker of kind (one of lockKinds) on name. The
// go-redis peers and rlock use rdb (a *redis.Client, or a
// *redis.ClusterClient with -cluster); rueidislock opens a rueidis client
// of its own to the servers rdb reaches (rueidisOption), counting its
// commands in counter (nil: none).
func newLocker(kind string, rdb redis.UniversalClient, counter *cmdCounter, name string, cfg config, opts ...lockmw.Option) (locker, error) {
	switch kind {
	case "rlock":
		return newRlockLocker(rdb, name, opts...), nil
	case "redsync":
		return newRedsyncLocker(rdb, name, 0), nil
	case "redsync-1ms":
		return newRedsyncLocker(rdb, name, peerRetry), nil
	case "redislock-100ms":
		return newRedislockLocker(rdb, name, 100*peerRetry), nil
	case "redislock-1ms":
		return newRedislockLocker(rdb, name, peerRetry), nil
	case "rueidislock":
		return newRueidisLocker(rueidisOption(rdb), name, counter)
	case rueidisKind, rueidisAutoKind, valkeyKind, valkeylockKind:
		newSet := newRueidisRlock
		if kind == valkeyKind || kind == valkeylockKind {
			newSet = newValkeyLockers
		}
		ls, closeAll, err := newSet(kind, rdb, counter, []string{name})
		if err != nil {
			return nil, err
		}
		return closedByLocker{ls[0], closeAll}, nil
	case "poll":
		return newPollLock(rdb, name, cfg.pollMin, cfg.pollMax), nil
	case "setnx":
		return newSetNXLock(rdb, name), nil
	}
	return nil, fmt.Errorf("unknown lock %q", kind)
}

// closedByLocker is a locker whose close is another func.
type closedByLocker struct {
	locker
	closeAll func() error
}

func (l closedByLocker) close() error { return l.closeAll() }

// rlockLocker is an rlock Mutex of a Client of its own.
type rlockLocker struct {
	c *lockmw.Client
	m *lockmw.Mutex
}

func newRlockLocker(rdb redis.UniversalClient, name string, opts ...lockmw.Option) *rlockLocker {
	c := lockmw.New(rdb, opts...)
	return &rlockLocker{c: c, m: c.Mutex(name)}
}

func (l *rlockLocker) lock(ctx context.Context) (context.Context, error) { return l.m.Lock(ctx) }
func (l *rlockLocker) unlock(hctx context.Context) error                 { return l.m.Unlock(hctx) }
func (l *rlockLocker) close() error                                      { return l.c.Close() }
