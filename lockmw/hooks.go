package lockmw

import (
	"context"
	"slices"
	"time"
)

// Hooks are optional callbacks for the events of a lock's life, in the manner
// of net/http/httptrace.ClientTrace: otelhooks fills them with OpenTelemetry
// spans and metrics. A nil func costs nothing. Hooks run synchronously on the
// goroutine of the event (the caller's for acquisitions, holds, releases and
// Close; the watchdog's for renewals and for losses a renewal finds; a timer's
// for a hold whose renewals failed until its key could have expired; a
// goroutine of its own for a [MultiLock]'s HoldEnd when a member's hold
// ends) and must not block or call back into the same lock.
type Hooks struct {
	// AcquireStart is called when Lock or TryLock begins. The context it
	// returns (ctx when it returns nil) is handed to AcquireEnd.
	AcquireStart func(ctx context.Context, e AcquireStartEvent) context.Context

	// AcquireEnd is called once for every AcquireStart, with the context
	// AcquireStart returned.
	AcquireEnd func(ctx context.Context, e AcquireEndEvent)

	// HoldStart is called when a new hold begins (not on a re-entry), with
	// the caller's context. The context it returns (ctx when nil) becomes the
	// parent of the hold context that Lock returns, and is handed to
	// HoldEnd and to Renewal.
	HoldStart func(ctx context.Context, e HoldStartEvent) context.Context

	// Metadata, called right after HoldStart with the context HoldStart
	// returned, gives a short string (at most MaxMetadataLen bytes; longer
	// strings are dropped) to store with the lock. Waiters that find the lock
	// busy get it back with their busy reply, in AcquireEndEvent.HolderMetadata
	// and BusyError.Metadata, at no extra round trip. It is written in the
	// background right after the acquisition, so a waiter that arrives within
	// a round trip of it may not see it yet.
	Metadata func(ctx context.Context, name string) string

	// HoldEnd is called once for every HoldStart, when the last level is
	// unlocked or the hold is lost or abandoned by Close.
	HoldEnd func(ctx context.Context, e HoldEndEvent)

	// Renewal is called after each renewal script of the watchdog, on the
	// watchdog goroutine, with the outcome for every lock it renewed.
	Renewal func(e RenewalEvent)

	// Skip is called when an adapter did not run the work a lock guards (a
	// request, an RPC, a task, a job's run): the lock stayed busy, could not
	// be applied, or was held and the work found done already. The adapter
	// reports it with [Client.ReportSkip]; no lock event shows the last.
	Skip func(ctx context.Context, e SkipEvent)
}

// MaxMetadataLen is the longest metadata string stored with a lock.
const MaxMetadataLen = 512

// MaxHoldersMetadata caps [AcquireEndEvent.HoldersMetadata]: a wait on a
// semaphore with many permits held, or on many readers, learns the
// metadata of that many holds at most (the permits that expire first, the
// readers first in Redisson's hash).
const MaxHoldersMetadata = 8

// Outcome says how an acquisition ended.
type Outcome int

// The outcomes of an acquisition. Their String values ("acquired",
// "timeout", "canceled", "error") are otelhooks' lock.outcome values.
const (
	OutcomeAcquired Outcome = iota // the lock is held
	OutcomeTimedOut                // busy for the whole wait (ErrNotAcquired)
	OutcomeCanceled                // the context ended first, or the Client was closed
	OutcomeFailed                  // Redis or argument error
)

// String names the outcome.
func (o Outcome) String() string {
	switch o {
	case OutcomeAcquired:
		return "acquired"
	case OutcomeTimedOut:
		return "timeout"
	case OutcomeCanceled:
		return "canceled"
	default:
		return "error"
	}
}

// LockInfo says which lock an event is about; every event of one lock
// embeds it, so that e.Name, e.Group and e.Permits read the same in each.
type LockInfo struct {
	Name  string
	Group string // the handle's WithGroup, a bounded label for Name; "" when none
	// Kind is what kind of lock it is: "mutex", "semaphore", "rwmutex" for
	// either side of an [RWMutex] (Mode says which), or "multilock" for a
	// [MultiLock] (whose members report their own events).
	Kind string
	// Permits is a semaphore's permits (its limit) when the lock is a
	// permit of a [Semaphore]; 0 for a [Mutex].
	Permits int
	// Mode is "read" or "write" for a side of an [RWMutex]; "" otherwise.
	Mode string
	// Adapter is the adapter that took the lock for its caller, one of the
	// Adapter constants ([WithAdapter]); "" when the caller called lockmw.
	Adapter string
}

// AcquireStartEvent describes an acquisition that begins.
type AcquireStartEvent struct {
	LockInfo
	Reentrant bool          // the context already holds the lock
	Wait      time.Duration // Forever for Lock
	Lease     time.Duration // 0: watchdog
	Lead      bool          // the acquisition is a campaign of [Lead]
}

// AcquireEndEvent describes how an acquisition ended.
type AcquireEndEvent struct {
	LockInfo
	Reentrant bool
	Lead      bool // the acquisition is a campaign of [Lead]
	Outcome   Outcome
	Err       error         // nil when acquired
	Waited    bool          // the lock was busy at least once
	Duration  time.Duration // from AcquireStart
	Token     int64         // fencing token when acquired on a fenced mutex
	// Holder and HolderMetadata describe the holder last seen while waiting.
	Holder         string
	HolderMetadata string
	// HoldersMetadata is the metadata of every hold the last attempt found
	// (a mutex's holder, a read-write lock's writer or readers, a
	// semaphore's permits that expire first), and of the hold that handed
	// the lock over, without repeats and at most MaxHoldersMetadata: what
	// the acquisition waited for. otelhooks links the wait to each.
	HoldersMetadata []string
}

// metHolders records the holders an attempt found busy: holder and its
// metadata, and metas, every holder's (a semaphore's, a read-write lock's).
func (e *AcquireEndEvent) metHolders(holder, meta string, metas []string) {
	e.Holder, e.HolderMetadata = holder, meta
	e.HoldersMetadata = e.HoldersMetadata[:0]
	e.addHolderMeta(meta)
	for _, m := range metas {
		e.addHolderMeta(m)
	}
}

// metHandoff records the hold that handed the lock over.
func (e *AcquireEndEvent) metHandoff(holder, meta string) {
	e.Holder, e.HolderMetadata = holder, meta
	e.addHolderMeta(meta)
}

func (e *AcquireEndEvent) addHolderMeta(m string) {
	if m != "" && len(e.HoldersMetadata) < MaxHoldersMetadata && !slices.Contains(e.HoldersMetadata, m) {
		e.HoldersMetadata = append(e.HoldersMetadata, m)
	}
}

// HoldStartEvent describes a new hold. Its Group is that of the handle that
// took the hold.
type HoldStartEvent struct {
	LockInfo
	Field  string        // "<clientID>:<ownerID>"
	Token  int64         // fencing token; 0 when the mutex is not fenced
	Lease  time.Duration // 0: renewed by the watchdog
	Waited bool          // the acquisition had to wait
	Lead   bool          // the hold is a term of [Lead]: this caller leads
}

// HoldEndEvent describes the end of a hold. Its Group is that of the handle
// that took the hold.
type HoldEndEvent struct {
	LockInfo
	Duration time.Duration
	// Lost is why the hold ended without its owner releasing it: an error
	// matching ErrLockLost, or ErrClosed when Client.Close abandoned it. It
	// is nil when the owner released it, as [HoldError.Lost] is.
	Lost error
}

// RenewalOutcome is the result of renewing one lock.
type RenewalOutcome int

// The outcomes of a renewal. Their String values ("renewed", "lost",
// "error") are otelhooks' lock.outcome values.
const (
	RenewalOK     RenewalOutcome = iota // the TTL was extended
	RenewalLost                         // the lock was gone or someone else's
	RenewalFailed                       // the script failed (network, Redis down)
)

// String names the outcome.
func (o RenewalOutcome) String() string {
	switch o {
	case RenewalOK:
		return "renewed"
	case RenewalLost:
		return "lost"
	default:
		return "error"
	}
}

// RenewedLock is one lock of a renewal batch. Its Group is that of the
// handle that took the hold.
type RenewedLock struct {
	LockInfo
	Context context.Context // the context HoldStart returned for this hold
	Outcome RenewalOutcome
}

// RenewalEvent describes one renewal script.
type RenewalEvent struct {
	Locks    []RenewedLock
	Err      error // the script's error, when it failed
	Duration time.Duration
	// Sent is when the script was sent: a renewed lock's TTL runs from no
	// earlier (the time the watchdog counts a hold's loss from). The hook's
	// now minus Duration may be later, by however long the renewing
	// goroutine waited before the hook ran.
	Sent time.Time
}

// CombineHooks returns Hooks that call each of hs in order. Context-returning
// hooks are chained: each gets the context the previous one returned. The
// first non-empty Metadata wins.
func CombineHooks(hs ...Hooks) Hooks {
	var out Hooks
	for _, h := range hs {
		out.AcquireStart = chainCtx(out.AcquireStart, h.AcquireStart)
		out.AcquireEnd = chainEnd(out.AcquireEnd, h.AcquireEnd)
		out.HoldStart = chainCtx(out.HoldStart, h.HoldStart)
		out.HoldEnd = chainEnd(out.HoldEnd, h.HoldEnd)
		out.Renewal = chainRenewal(out.Renewal, h.Renewal)
		out.Metadata = chainMeta(out.Metadata, h.Metadata)
		out.Skip = chainEnd(out.Skip, h.Skip)
	}
	return out
}

// chainCtx runs a, then b with the context a returned (nil: unchanged).
func chainCtx[E any](a, b func(context.Context, E) context.Context) func(context.Context, E) context.Context {
	if a == nil {
		return b
	}
	if b == nil {
		return a
	}
	return func(ctx context.Context, e E) context.Context {
		if c := a(ctx, e); c != nil {
			ctx = c
		}
		if c := b(ctx, e); c != nil {
			ctx = c
		}
		return ctx
	}
}

// chainEnd runs a, then b.
func chainEnd[E any](a, b func(context.Context, E)) func(context.Context, E) {
	if a == nil {
		return b
	}
	if b == nil {
		return a
	}
	return func(ctx context.Context, e E) { a(ctx, e); b(ctx, e) }
}

// chainRenewal runs a, then b.
func chainRenewal(a, b func(RenewalEvent)) func(RenewalEvent) {
	if a == nil {
		return b
	}
	if b == nil {
		return a
	}
	return func(e RenewalEvent) { a(e); b(e) }
}

// chainMeta returns the first non-empty metadata of a and b.
func chainMeta(a, b func(context.Context, string) string) func(context.Context, string) string {
	if a == nil {
		return b
	}
	if b == nil {
		return a
	}
	return func(ctx context.Context, name string) string {
		if s := a(ctx, name); s != "" {
			return s
		}
		return b(ctx, name)
	}
}
