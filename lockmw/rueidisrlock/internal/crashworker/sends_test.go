package main

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/go-rlock/rlock/internal/redistest"
	"github.com/go-rlock/rlock/internal/reliability"
	"github.com/go-rlock/rlock/internal/reliability/crashworker"
	"github.com/go-rlock/rlock/internal/testsupport"
	"github.com/go-rlock/rlock/internal/testsupport/locktest"
	"github.com/go-rlock/rlock/lockmw"
)

// The worker's client records its scripts' sends as the go-redis worker's
// hooks record its client's: a Lock's acquire script in the SendTimes of
// the Lock's context, and a renewal (sent with no SendTimes) in the
// worker's ScriptSends, by the hold's field, no later than the Renewal
// hook runs. A hold that a starved renewer let go before its first renewal
// has none: the test takes another, on a name of its own.
func TestDialRecordsScriptSends(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := testsupport.CtxFor(t, 20*time.Second)
	sends := new(reliability.ScriptSends)
	conn, err := dial(srv.Addr(), crashworker.DialOptions{Sends: sends})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	type renewal struct {
		name, field string
		sent, hook  time.Time
	}
	renewals := make(chan renewal, 100)
	c := lockmw.NewFromBackend(conn.Backend, lockmw.WithWatchdogTimeout(time.Second), lockmw.WithHooks(lockmw.Hooks{
		HoldStart: func(ctx context.Context, e lockmw.HoldStartEvent) context.Context {
			return reliability.WithField(ctx, e.Field)
		},
		Renewal: func(e lockmw.RenewalEvent) {
			now := time.Now()
			for _, l := range e.Locks {
				field := reliability.FieldOf(l.Context)
				select {
				case renewals <- renewal{name: l.Name, field: field, sent: sends.RenewalSent(now.Add(time.Hour), field), hook: now}:
				default:
				}
			}
		},
	}))
	defer c.Close()

	name := func(try int) string { return fmt.Sprintf("recorded-%d", try) }
	var after time.Time
	r, m, h := locktest.FirstRenewal(t, ctx, renewals, func(try int) (lockmw.Locker, context.Context) {
		sctx, st := reliability.WithSendTimes(ctx)
		m := c.Mutex(name(try), lockmw.WithFencing()) // the acquire script, not the RESTORE fast path
		before := time.Now()
		h := locktest.MustLock(t, m, sctx)
		after = time.Now()
		if last := st.Last(); last.Before(before) || last.After(after) {
			t.Errorf("the acquire's send was recorded at %v, want within Lock's call (%v to %v)", last, before, after)
		}
		return m, h
	}, func(try int, r renewal) bool { return r.name == name(try) })
	if r.field != reliability.FieldOf(h) {
		t.Errorf("renewed %q, want the hold's field %q", r.field, reliability.FieldOf(h))
	}
	if r.sent.Before(after) || r.sent.After(r.hook) {
		t.Errorf("the renewal's send was recorded at %v, want after Lock returned (%v) and before its hook ran (%v)", r.sent, after, r.hook)
	}
	if err := m.Unlock(h); err != nil && !errors.Is(err, lockmw.ErrLockLost) { // a renewal may find it gone
		t.Fatal(err)
	}
}
