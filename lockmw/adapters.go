package lockmw

import (
	"context"
	"errors"
	"fmt"
	"slices"
)

// The adapters of this module, the values of [LockInfo.Adapter] (and
// otelhooks' lock.adapter): a closed set, so that a metric counted by
// adapter stays bounded.
const (
	AdapterHTTP    = "http"    // httpmw and its router modules
	AdapterGRPC    = "grpc"    // grpcmw
	AdapterConnect = "connect" // connectmw
	AdapterAsynq   = "asynq"   // asynqmw
	AdapterRiver   = "river"   // rivermw
	AdapterGocron  = "gocron"  // scheduler's Locker and Elector
)

var adapters = []string{AdapterHTTP, AdapterGRPC, AdapterConnect, AdapterAsynq, AdapterRiver, AdapterGocron}

// WithAdapter names the adapter that takes the handle's locks for its
// caller, one of the Adapter constants: the hooks' events carry it
// ([LockInfo.Adapter]), and so do the skips the adapter reports
// ([Client.ReportSkip]). Adapters set it; a caller of lockmw leaves it out
// (the default is ""). Any other value can never be right: Client.Mutex,
// Semaphore and RWMutex panic on it with one line.
func WithAdapter(adapter string) LockOption {
	if !slices.Contains(adapters, adapter) {
		panic(fmt.Sprintf("lockmw: WithAdapter(%q): not one of %v", adapter, adapters))
	}
	return func(o *lockOptions) { o.adapter = adapter }
}

// SkipReason says why an adapter did not run the work a lock guards.
type SkipReason int

// The reasons of a skip. Their String values ("busy", "duplicate",
// "refused", "error") are otelhooks' reason values.
const (
	// SkipBusy: the lock stayed busy for the adapter's whole wait.
	SkipBusy SkipReason = iota + 1
	// SkipDuplicate: the lock was held, and the work found done already (a
	// task de-duplicated by asynqmw's mark); no lock event shows it.
	SkipDuplicate
	// SkipRefused: the lock could not be applied (no key for the request,
	// an option this topology does not support), so the work was refused.
	SkipRefused
	// SkipFailed: taking the lock failed (a Redis error, a closed Client).
	SkipFailed
)

// String names the reason.
func (r SkipReason) String() string {
	switch r {
	case SkipBusy:
		return "busy"
	case SkipDuplicate:
		return "duplicate"
	case SkipRefused:
		return "refused"
	default:
		return "error"
	}
}

// SkipReasonOf is the reason of a skip whose lock attempt failed with err,
// as the adapters of this module classify it: SkipBusy for a busy lock (a
// [BusyError]: the lock was seen held; a wait in which Redis never answered
// also matches ErrNotAcquired, but is SkipFailed), SkipRefused for a lock
// that cannot be applied (ErrInvalidName, ErrUpgrade, ErrInvalidArgument,
// errors.ErrUnsupported), and SkipFailed for anything else.
func SkipReasonOf(err error) SkipReason {
	switch {
	case errors.As(err, new(*BusyError)):
		return SkipBusy
	case errors.Is(err, ErrInvalidName), errors.Is(err, ErrUpgrade),
		errors.Is(err, errors.ErrUnsupported), errors.Is(err, ErrInvalidArgument):
		return SkipRefused
	}
	return SkipFailed
}

// SkipEvent describes work an adapter skipped ([Hooks.Skip]). Its LockInfo
// names the lock the work needed ([InfoOf] gives it); when there was none
// (a request with no key), only Adapter is set.
type SkipEvent struct {
	LockInfo
	Reason SkipReason
	// Err is what the adapter returned or logged for the skip, matching
	// the adapter's sentinel (asynqmw.ErrDuplicate, asynqmw.ErrBusy, …) or
	// lockmw's (ErrNotAcquired); nil when the adapter returned nothing.
	Err error
}

// ReportSkip reports e to the Client's Skip hooks ([Hooks.Skip]); it does
// nothing when there are none. Adapters call it for every request, RPC,
// task or run they skip, refuse or turn away busy, so that a count of skips
// by reason and adapter needs no middleware of the user's own.
func (c *Client) ReportSkip(ctx context.Context, e SkipEvent) {
	if f := c.opts.hooks.Skip; f != nil {
		f(ctx, e)
	}
}

// InfoOf returns the lock l as the hooks' events name it (see [LockInfo]):
// for a lock of this package its name, group, kind, permits, mode and
// adapter; for another Locker only its name.
func InfoOf(l Locker) LockInfo {
	switch l := l.(type) {
	case *RWMutex:
		return l.w.info() // a Locker as its write side
	case interface{ info() LockInfo }:
		return l.info()
	case nil:
		return LockInfo{}
	}
	return LockInfo{Name: l.Name()}
}
