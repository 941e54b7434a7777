package lockmw

import (
	"context"
	"sync"
	"time"

	"github.com/go-rlock/rlock/lockmw/backend"
	"github.com/go-rlock/rlock/lockmw/internal/rediserr"
	"github.com/go-rlock/rlock/lockmw/internal/scripts"
)

// A member's background requests, and how every quorum script reaches a
// master. An end that fails on a master (see quorumend.go) is sent again
// until the master answers it or it no longer matters; one goroutine per
// member works through them, only while there are some.

// redoQueue is a member's background requests: ends to send, and send
// again after an error, until the master answers or they expire. One
// goroutine at a time works for a member, and only while there is work.
type redoQueue struct {
	mu      sync.Mutex
	calls   []redo
	running bool
}

// redo is one background request of a member.
type redo struct {
	s     backend.Script
	call  scripts.Call
	until time.Time // given up after then: what it guards has expired
	eval  bool      // sent with EVAL (the script's source), never EVALSHA: it never meets NOSCRIPT
}

// redoBackoff bounds the wait between two rounds of a member's failed
// background requests.
const (
	redoBackoffMin = 50 * time.Millisecond
	redoBackoffMax = 2 * time.Second
)

// later sends rs to the master in the background, in order, and again after
// an error until it answers or each expires.
func (mb *member) later(rs ...redo) {
	r := &mb.redo
	r.mu.Lock()
	r.calls = append(r.calls, rs...)
	start := !r.running
	r.running = true
	r.mu.Unlock()
	if start {
		go mb.runRedos()
	}
}

// runRedos is the member's background worker: it sends what is queued in
// one pipeline, keeps what failed, and ends when nothing is left or the
// Client closes.
func (mb *member) runRedos() {
	c, r := mb.q.c, &mb.redo
	var backoff time.Duration
	for {
		r.mu.Lock()
		calls := r.calls
		r.calls = nil
		now := time.Now()
		calls = dropExpired(calls, now)
		if len(calls) == 0 || c.isClosed() {
			r.running = false
			r.mu.Unlock()
			return
		}
		r.mu.Unlock()
		failed := mb.send(calls)
		if len(failed) == 0 {
			backoff = 0
			continue
		}
		backoff = min(max(2*backoff, redoBackoffMin), redoBackoffMax)
		r.mu.Lock()
		r.calls = append(failed, r.calls...)
		r.mu.Unlock()
		t := time.NewTimer(backoff)
		select {
		case <-t.C:
		case <-c.closed:
			t.Stop()
		}
	}
}

// dropExpired returns the calls not expired at now, in place.
func dropExpired(calls []redo, now time.Time) []redo {
	kept := calls[:0]
	for _, rd := range calls {
		if now.Before(rd.until) {
			kept = append(kept, rd)
		}
	}
	return kept
}

// send runs calls in one pipeline on the member and returns those that
// failed.
func (mb *member) send(calls []redo) []redo {
	ctx, cancel := context.WithTimeout(mb.q.c.bgCtx, mb.q.c.opts.releaseTimeout)
	defer cancel()
	var failed []redo
	for i, cmd := range mb.pipeline(ctx, calls) {
		if err := cmd.Err(); err != nil && (!rediserr.IsServerError(err) || rediserr.IsTransient(err)) { // a script error will not pass
			failed = append(failed, calls[i])
		}
	}
	return failed
}

// pipeline runs calls on the member in one pipeline, in order. A call
// whose script the server lacks (a master restarted, or never used) runs
// once more with EVAL, on ctx without its deadline and cancellation (the
// back-end's read timeout bounds it), so that a master slower than the
// operation's deadline still gets the script.
func (mb *member) pipeline(ctx context.Context, calls []redo) []*backend.Cmd {
	cmds := make([]*backend.Cmd, len(calls))
	for i, rd := range calls {
		line := scripts.Line(rd.s, rd.call.Keys, rd.call.Args)
		if rd.eval {
			line = scripts.EvalLine(rd.s.Source(), line)
		}
		cmds[i] = backend.NewCmd(line...)
	}
	_ = mb.be.Pipeline(ctx, cmds)
	for i, cmd := range cmds {
		if scripts.IsNoScript(cmd.Err()) {
			cmds[i] = mb.eval(ctx, calls[i].s, calls[i].call.Keys, calls[i].call.Args...)
		}
	}
	return cmds
}

// run runs one script call on the member, as pipeline does.
func (mb *member) run(ctx context.Context, s backend.Script, keys []string, args ...any) *backend.Cmd {
	cmd := backend.NewCmd(scripts.Line(s, keys, args)...)
	if err := mb.be.Process(ctx, cmd); scripts.IsNoScript(err) {
		cmd = mb.eval(ctx, s, keys, args...)
	}
	return cmd
}

// eval runs s with EVAL on the member, on ctx without its deadline and
// cancellation.
func (mb *member) eval(ctx context.Context, s backend.Script, keys []string, args ...any) *backend.Cmd {
	cmd := backend.NewCmd(scripts.EvalLine(s.Source(), scripts.Line(s, keys, args))...)
	_ = mb.be.Process(context.WithoutCancel(ctx), cmd)
	return cmd
}
