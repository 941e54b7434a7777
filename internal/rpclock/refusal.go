package rpclock

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/go-rlock/rlock/internal/skip"
	"github.com/go-rlock/rlock/lockmw"
)

// Code is a status code in gRPC's numbering (google.golang.org/grpc/codes),
// which connectrpc.com/connect's Code shares: codes.Code(c) and
// connect.Code(c) name the same code.
type Code uint32

// The codes a lock answers with.
const (
	Canceled         Code = 1
	InvalidArgument  Code = 3
	DeadlineExceeded Code = 4
	Aborted          Code = 10
	Internal         Code = 13
	Unavailable      Code = 14
)

// PushbackHeader is the trailer (gRPC's retry pushback, gRFC A6) that tells
// a client how many milliseconds to wait before it tries again.
const PushbackHeader = "grpc-retry-pushback-ms"

// The messages of the answers, which never include a Redis error.
const (
	busyMsg        = "busy: another call holds this lock; retry later"
	lostMsg        = "lock lost while the call ran: another call may have run beside it"
	closedMsg      = "lock service closed while the call ran"
	invalidNameMsg = "cannot lock this call: invalid lock name"
	unavailableMsg = "lock service unavailable"
	deadlineMsg    = "deadline exceeded while waiting for the lock"
	canceledMsg    = "canceled while waiting for the lock"
)

// Refusal is why a call did not run, or did not end well, under its lock:
// the code and message the client gets, and for a busy lock when to come
// back. Err is what lockmw (or the key function) returned.
type Refusal struct {
	Code       Code
	Msg        string
	RetryAfter time.Duration // > 0 only for a busy lock (Aborted before the call ran)
	Err        error
}

// Error is the message.
func (r *Refusal) Error() string { return r.Msg }

// Unwrap returns Err.
func (r *Refusal) Unwrap() error { return r.Err }

// Pushback is RetryAfter in whole milliseconds, at least 1, as the value of
// PushbackHeader.
func (r *Refusal) Pushback() string {
	return strconv.FormatInt(max(r.RetryAfter.Milliseconds(), 1), 10)
}

// BadKey is the refusal of a call whose key function failed: InvalidArgument
// with the function's text.
func BadKey(err error) *Refusal {
	return &Refusal{Code: InvalidArgument, Msg: err.Error(), Err: err}
}

// Refused reports r, the refusal of a call that takes no lock because its
// key could not be made (BadKey, Name's), to the Client's Skip hooks as a
// refused skip that names only the adapter, and returns it.
func (c *Core) Refused(ctx context.Context, r *Refusal) *Refusal {
	skip.NotLocked(ctx, c.c, c.name, lockmw.SkipRefused, r.Err)
	return r
}

// lost is the refusal of a call whose hold ended while it ran (hold is its
// hold context, release what Unlock returned), nil when the lock was held
// throughout: Aborted when the lock was lost, Unavailable when the Client
// was closed.
func lost(hold context.Context, release error) *Refusal {
	cause := context.Cause(hold)
	switch {
	case errors.Is(cause, lockmw.ErrLockLost):
		return &Refusal{Code: Aborted, Msg: lostMsg, Err: cause}
	case errors.Is(cause, lockmw.ErrClosed):
		return &Refusal{Code: Unavailable, Msg: closedMsg, Err: cause}
	case errors.Is(release, lockmw.ErrLockLost): // a lease outlived, found at release
		return &Refusal{Code: Aborted, Msg: lostMsg, Err: release}
	}
	return nil
}

// refuse translates the error of an acquisition on ctx that failed.
func (c *Core) refuse(ctx context.Context, l lockmw.Locker, err error) *Refusal {
	if ctxErr := ctx.Err(); ctxErr != nil {
		err = errors.Join(err, context.Cause(ctx))
		if errors.Is(ctxErr, context.DeadlineExceeded) {
			return &Refusal{Code: DeadlineExceeded, Msg: deadlineMsg, Err: err}
		}
		return &Refusal{Code: Canceled, Msg: canceledMsg, Err: err}
	}
	if busy, ok := errors.AsType[*lockmw.BusyError](err); ok {
		return &Refusal{Code: Aborted, Msg: busyMsg, RetryAfter: c.retryAfter(ctx, l, busy), Err: err}
	}
	if errors.Is(err, lockmw.ErrInvalidName) {
		return &Refusal{Code: InvalidArgument, Msg: invalidNameMsg, Err: err}
	}
	return &Refusal{Code: Unavailable, Msg: unavailableMsg, Err: err} // Redis error, lockmw.ErrClosed
}

// retryAfter is, under a limit, the remaining TTL of the permit that
// expires first (busy has it from the last attempt): the latest a permit
// comes back even if its holder dies. For a mutex it is the holder's
// remaining lease when holders lease (Settings.Lease) and the lock still has
// a TTL. Otherwise, and when the TTL is unknown, DefaultRetryAfter. It is
// httpmw's rule, in milliseconds rather than seconds.
func (c *Core) retryAfter(ctx context.Context, l lockmw.Locker, busy *lockmw.BusyError) time.Duration {
	if _, ok := l.(*lockmw.Semaphore); ok && busy.TTL > 0 {
		return busy.TTL
	}
	if c.s.Lease <= 0 {
		return DefaultRetryAfter
	}
	ttl := busy.TTL
	if mu, ok := l.(*lockmw.Mutex); ok && c.s.Wait > 0 {
		// The TTL in busy was seen at the last attempt, which may be a while
		// ago; ask for the current one.
		if d, err := mu.TTL(ctx); err == nil {
			ttl = d
		}
	}
	if ttl <= 0 { // gone meanwhile, or no expiry (a foreign holder)
		return DefaultRetryAfter
	}
	return ttl
}
