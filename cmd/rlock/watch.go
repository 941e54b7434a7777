package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// messageWait is how long, at least, a hand-off a poll saw first waits for
// its message (which names it exactly) before it is told as polled.
const messageWait = 250 * time.Millisecond

// watcher is one run of watch.
type watcher struct {
	c        *cli
	rdb      redis.UniversalClient
	name     string
	interval time.Duration
	sub      *subscription
	msgs     <-chan *redis.Message
	t        *tracker
	p        *printer
	handed   []event // hand-offs taken in from messages, told with the next state
}

// runWatch is "rlock watch NAME": one line per change until interrupted.
func runWatch(ctx context.Context, c *cli, args []string) error {
	fs := newFlagSet("watch")
	interval := fs.Duration("interval", 100*time.Millisecond, "how often to poll")
	rest, err := c.parseCommand(fs, args, 1, "[-interval D] NAME")
	if err != nil {
		return err
	}
	if *interval <= 0 {
		return usageError{"watch: -interval must be positive"}
	}
	rdb, err := c.connect(ctx)
	if err != nil {
		return err
	}
	defer rdb.Close()
	w := &watcher{c: c, rdb: rdb, name: rest[0], interval: *interval, p: c.printer()}
	w.sub = subscribe(ctx, rdb, c.ns, w.name)
	defer w.sub.close()
	w.msgs = w.sub.messages()
	w.t = newTracker(w.name, w.sub.exact)
	w.t.patience = max(1, int(messageWait/w.interval)) // polls a hand-off seen first by a poll waits for its message
	fmt.Fprintf(c.stderr, "rlock: watching %s every %v; %s (interrupt to stop)\n", w.name, w.interval, w.sub.mode)
	err = w.loop(ctx)
	w.print(append(w.handed, w.t.flush()...))
	if ctx.Err() != nil {
		return nil // interrupted: the normal end
	}
	return err
}

// loop polls every interval, and at once after a message, until ctx ends.
func (w *watcher) loop(ctx context.Context) error {
	tick := time.NewTicker(w.interval)
	defer tick.Stop()
	for {
		if err := w.poll(ctx); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case m, ok := <-w.msgs:
			if !ok {
				w.msgs = nil
				continue
			}
			w.message(m)
		case <-tick.C:
		}
	}
}

// poll reads the state, first taking in the messages already arrived (a
// hand-off message names the hand-off exactly), and prints the changes.
func (w *watcher) poll(ctx context.Context) error {
	w.drain()
	pctx, cancel := context.WithTimeout(ctx, w.c.conn.timeout)
	s, err := readState(pctx, w.rdb, w.c.ns, w.name)
	cancel()
	if err != nil {
		w.print(w.handed)
		w.handed = nil
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	w.drain()
	w.print(w.t.observeAfter(s, w.handed))
	w.handed = nil
	return w.p.err
}

// drain handles the messages waiting, without blocking.
func (w *watcher) drain() {
	for {
		select {
		case m, ok := <-w.msgs:
			if !ok {
				w.msgs = nil
				return
			}
			w.message(m)
		default:
			return
		}
	}
}

// message handles one message: a hand-off is told with the next state,
// after the ends that state shows (holders that left before it); a
// keyspace "expired" marks the next change as a loss; any message leads to
// a poll, at once.
func (w *watcher) message(m *redis.Message) {
	switch {
	case m.Pattern != "" && strings.HasPrefix(m.Channel, w.sub.k.Handoff+":"):
		p := strings.SplitN(m.Payload, "|", 5)
		if len(p) >= 4 {
			us, _ := strconv.ParseInt(p[3], 10, 64)
			w.handed = append(w.handed, w.t.handoff(p[0], p[1], p[2], us/1000)...)
		}
	case w.sub.keyspace != "" && m.Channel == w.sub.keyspace && m.Payload == "expired":
		w.t.expired = true
	}
}

// print writes events.
func (w *watcher) print(evs []event) {
	for _, e := range evs {
		if w.p.json {
			w.p.object(e)
			continue
		}
		w.p.textf("%s", e.text())
	}
}

// text is an event as one line for people.
func (e event) text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s  %s  %s", e.Time[11:23], e.Name, strings.ReplaceAll(e.Event, "_", " "))
	switch {
	case e.From != "":
		fmt.Fprintf(&b, "  %s → %s", e.From, e.Field)
	case e.Event == "handed_over":
		fmt.Fprintf(&b, "  → %s", e.Field)
	case e.Field != "":
		fmt.Fprintf(&b, "  %s", e.Field)
	}
	switch {
	case e.GapMS == nil:
	case e.GapExact:
		fmt.Fprintf(&b, "  gap %s (released and granted in one script)", gapDur(*e.GapMS))
	default:
		fmt.Fprintf(&b, "  gap ≤ %s (seen by polling: the poll's precision)", gapDur(*e.GapMS))
	}
	if e.Token != "" {
		fmt.Fprintf(&b, "  token %s", e.Token)
	}
	if e.TraceID != "" {
		fmt.Fprintf(&b, "  trace id %s", e.TraceID)
	}
	switch {
	case e.HeldMS == nil:
	case e.Event == "handed_over":
		fmt.Fprintf(&b, "  after a hold of %s", gapDur(*e.HeldMS))
	default:
		fmt.Fprintf(&b, "  held %s", gapDur(*e.HeldMS))
	}
	if e.Detail != "" {
		fmt.Fprintf(&b, "  (%s)", e.Detail)
	}
	return b.String()
}

// gapDur formats a hand-off's gap to the millisecond.
func gapDur(ms int64) string {
	return (time.Duration(ms) * time.Millisecond).String()
}
