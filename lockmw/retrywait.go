package lockmw

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"

	"github.com/go-rlock/rlock/lockmw/backend"
	"github.com/redis/go-redis/v9"

	"github.com/go-rlock/rlock/lockmw/internal/rediserr"
)

// A wait rides out a transient error. An acquisition that may wait (Lock,
// TryLock with a wait, a semaphore's) retries an attempt that failed — its
// first or any later one — until the wait or its context ends, so that a
// connection reset or a fail-over in the first millisecond of a 30 s wait does
// not end it. Only what trying again cannot fix ends it at once
// (transientFailure). The queue entry an attempt made stays: the next one
// finds it (acquire.lua and semacquire.lua with "queued") and keeps its place.
// One rule for every lock kind that waits in the queue: firstFailed for the
// first attempt, waitTurn.retry for the later ones.

// The back-off between attempts while Redis fails: 10ms after the first
// failure, twice as long after each further failure in a row, at most 1s;
// each sleep is drawn at random between half and all of it (retrySleep), so
// that the waiters of a restarted server do not all come back at once.
const (
	retryBackoffMin = 10 * time.Millisecond
	retryBackoffMax = time.Second
)

// growBackoff returns the back-off after one more failure in a row, given
// the one before it (0 at the first failure).
func growBackoff(d time.Duration) time.Duration {
	return min(max(2*d, retryBackoffMin), retryBackoffMax)
}

// retrySleep returns a random duration between d/2 and d.
func retrySleep(d time.Duration) time.Duration {
	return d/2 + rand.N(d/2+1)
}

// firstFailed decides what a new acquisition does after its first attempt
// failed with err. It returns nil when the acquisition goes on waiting and
// retries: it may wait (wait > 0), ctx has not ended and err is transient.
// Otherwise it undoes the attempt in the background and returns the error to
// return: err, or (when ctx ended the attempt) ErrNotAcquired joined with
// err and ctx's error, as a wait that ctx ends.
func firstFailed(ctx context.Context, q queuer, field string, wait time.Duration, err error) error {
	if ctxErr(ctx) == nil && wait > 0 && transientFailure(err) {
		return nil
	}
	q.abandon(field)
	if ctxErr(ctx) != nil {
		return errors.Join(ErrNotAcquired, withCtxErr(ctx, err))
	}
	return err
}

// transientFailure reports whether an attempt that failed with err may
// succeed when tried again: a network error (a reset connection, a refused
// dial, a read timeout, go-redis's pool timeout) or a transient server reply
// (isTransient: LOADING, READONLY, MASTERDOWN, TRYAGAIN, CLUSTERDOWN, ...).
// It is false for a closed Client (ErrClosed, or the back-end's backend.ErrClosed),
// bad input (ErrInvalidName, ErrInvalidArgument, errors.ErrUnsupported) and
// every other server reply: WRONGTYPE, NOSCRIPT once the EVAL fallback failed
// too, NOAUTH, WRONGPASS, NOPERM, an unknown command, a script's error. An
// error that joins several (a quorum's masters) is transient when one of
// them is: a master that answers WRONGTYPE may be outvoted once the
// unreachable ones are back.
func transientFailure(err error) bool {
	for _, final := range []error{ErrClosed, backend.ErrClosed, redis.ErrClosed, ErrInvalidName, ErrInvalidArgument, errors.ErrUnsupported} {
		if errors.Is(err, final) {
			return false
		}
	}
	return failureKind(err) == mayPass
}

// How a failure's parts count for transientFailure.
const (
	noFailure = iota // ErrNotAcquired, a quorum's "too few answered": says nothing
	refused          // a server reply that trying again cannot fix
	mayPass          // the network, or a transient server reply
)

// failureKind classifies err: a server reply by its prefix, a join by its
// most hopeful part, anything else not a server reply as the network.
func failureKind(err error) int {
	switch e := err.(type) {
	case nil:
		return noFailure
	case backend.Error:
		if rediserr.IsTransient(e) {
			return mayPass
		}
		return refused
	case interface{ Unwrap() []error }:
		kind := noFailure
		for _, part := range e.Unwrap() {
			kind = max(kind, failureKind(part))
		}
		return kind
	case interface{ Unwrap() error }:
		return failureKind(e.Unwrap())
	}
	if err == ErrNotAcquired {
		return noFailure
	}
	return mayPass
}
