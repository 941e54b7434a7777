package lockmw

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Lead campaigns for m and runs fn while this caller leads: etcd's
// concurrency.Election or client-go's leaderelection on an rlock Mutex.
//
// It waits for m in the queue (no polling), then calls fn with the hold
// context, which is cancelled when leadership is lost (cause ErrLockLost) or
// ctx ends. What happens next depends on how the term ended:
//   - fn returned while still leading and ctx has not ended: Lead releases
//     m (a leader that finishes its work steps down, handing m to the next
//     standby at once) and returns fn's error, nil included;
//   - leadership was lost: once fn returns, Lead campaigns again (fn's error
//     is dropped: the term it reports on is over);
//   - ctx ended: Lead waits for fn, releases m and returns
//     context.Cause(ctx), joined with fn's error when that is a different
//     error.
//
// It returns at once on ErrClosed, ErrInvalidName or ErrInvalidArgument (a
// nil m or fn, as WithLock) and on a server reply that trying again cannot
// fix (WRONGTYPE: the name's key holds something else; NOPERM, NOAUTH, a
// script's error), as a waiting Lock does; transient errors while
// campaigning (Redis down, a reset connection, a fail-over's READONLY or
// LOADING) are retried with back-off until ctx ends. A standby takes over
// within the watchdog timeout plus one renewal interval after a leader
// process dies, and at once when a leader steps down. A leader paused past
// its TTL learns it at its next renewal or before, as any holder does; with
// WithFencing its token is older than its successor's ([Mutex.Token]), so a
// resource that checks tokens refuses it. Observers ask who leads with
// [Mutex.Holder], without campaigning.
//
// The hooks' events of a campaign (AcquireStart, AcquireEnd) and of a term
// (HoldStart) have Lead set; otelhooks marks their spans lock.lead. Locks
// taken with the term's context inside fn, m's re-entries included, are not
// marked: the mark is Lead's own, not the context's.
//
// Options ([WithFirstAttempt]) are applied in order; a nil LeadOption is
// ignored.
func Lead(ctx context.Context, m *Mutex, fn func(lead context.Context) error, opts ...LeadOption) error {
	if m == nil {
		return fmt.Errorf("%w: Lead: nil *Mutex", ErrInvalidArgument)
	}
	if fn == nil {
		return fmt.Errorf("%w: Lead(%q): nil fn", ErrInvalidArgument, m.Name())
	}
	var o leadOptions
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	var backoff time.Duration
	for {
		wait := Forever
		if o.firstAttempt != nil {
			wait = 0 // one attempt, reported; then the queue as usual
		}
		lead, err := m.tryLock(ctx, wait, 0, true) // Lock, marked as a campaign for the hooks
		if f := o.firstAttempt; f != nil {
			o.firstAttempt = nil
			f(err)
			if errors.Is(err, ErrNotAcquired) && ctx.Err() == nil {
				continue // busy: wait in the queue at once
			}
		}
		if err != nil {
			if ctx.Err() != nil {
				return context.Cause(ctx)
			}
			if errors.Is(err, ErrClosed) || errors.Is(err, ErrInvalidName) || errors.Is(err, ErrInvalidArgument) ||
				failureKind(err) == refused {
				return err // retrying cannot fix it: never campaign on in silence
			}
			backoff = min(max(2*backoff, 50*time.Millisecond), 5*time.Second)
			m.c.log.Debug("lockmw: campaign failed, retrying", "name", m.name, "err", err, "backoff", backoff)
			if err := sleepCtx(ctx, backoff); err != nil {
				return err
			}
			continue
		}
		backoff = 0
		done, err := m.term(ctx, lead, fn)
		if done {
			return err
		}
	}
}

// LeadOption configures one call of [Lead]. It follows the rule of a
// [CallOption] (see "Options" in the package documentation): a nil
// LeadOption is skipped.
type LeadOption func(*leadOptions)

type leadOptions struct {
	firstAttempt func(error)
}

// WithFirstAttempt has Lead call f once, when its first acquisition attempt
// has an outcome: nil when it won (before fn runs), an error matching
// [ErrNotAcquired] (a [*BusyError]) when another caller leads (Lead then
// waits in the queue), or the attempt's error (Redis down: Lead retries with
// back-off). It is how a caller learns within one round trip whether it
// leads now or stands by: scheduler's Elector waits for it before its first
// answer. With it, the first attempt is a single try (wait 0) followed,
// when busy, by the usual wait in the queue, so the hooks see two
// acquisitions for that campaign. f runs on Lead's goroutine and must not
// block. The default (not given) is no report.
func WithFirstAttempt(f func(err error)) LeadOption {
	return func(o *leadOptions) { o.firstAttempt = f }
}

// term runs one term of Lead: fn with the hold context lead, then the
// release. done is false when leadership was lost and the campaign goes on.
func (m *Mutex) term(ctx, lead context.Context, fn func(context.Context) error) (done bool, err error) {
	fnErr := fn(lead)
	if ctx.Err() != nil {
		_ = m.Unlock(lead)
		cause := context.Cause(ctx)
		if fnErr != nil && !errors.Is(fnErr, cause) {
			return true, errors.Join(cause, fnErr)
		}
		return true, cause
	}
	switch cause := context.Cause(lead); {
	case errors.Is(cause, ErrClosed):
		_ = m.Unlock(lead)
		return true, cause
	case errors.Is(cause, ErrLockLost):
		_ = m.Unlock(lead) // ErrLockLost: nothing in Redis is touched
		m.c.log.Info("lockmw: leadership lost, campaigning again", "name", m.name, "cause", cause)
		return false, nil
	}
	if err := m.Unlock(lead); err != nil && !errors.Is(err, ErrLockLost) {
		return true, errors.Join(fnErr, err)
	}
	return true, fnErr
}

// sleepCtx waits d, or returns context.Cause(ctx) when ctx ends first.
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}
