package lockmw_test

import (
	"context"
	"fmt"
	"sync"

	"github.com/go-rlock/rlock/lockmw"
)

// eventRecorder notes every hook event of a Client in order: the event, the
// lock's name, its Group and its Lead mark (false for the events without
// one).
type eventRecorder struct {
	mu     sync.Mutex
	events []recordedEvent
}

type recordedEvent struct {
	event, name, group string
	lead               bool
}

func (r *eventRecorder) note(event, name, group string, lead bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, recordedEvent{event, name, group, lead})
}

func (r *eventRecorder) hooks() lockmw.Hooks {
	return lockmw.Hooks{
		AcquireStart: func(ctx context.Context, e lockmw.AcquireStartEvent) context.Context {
			r.note("acquire-start", e.Name, e.Group, e.Lead)
			return ctx
		},
		AcquireEnd: func(_ context.Context, e lockmw.AcquireEndEvent) { r.note("acquire-end", e.Name, e.Group, e.Lead) },
		HoldStart: func(ctx context.Context, e lockmw.HoldStartEvent) context.Context {
			r.note("hold-start", e.Name, e.Group, e.Lead)
			return ctx
		},
		HoldEnd: func(_ context.Context, e lockmw.HoldEndEvent) { r.note("hold-end", e.Name, e.Group, false) },
		Renewal: func(e lockmw.RenewalEvent) {
			for _, l := range e.Locks {
				r.note("renewal", l.Name, l.Group, false)
			}
		},
	}
}

// groups returns the groups of the events of that kind of lock name, in
// order.
func (r *eventRecorder) groups(event, name string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, e := range r.events {
		if e.event == event && e.name == name {
			out = append(out, e.group)
		}
	}
	return out
}

// leads returns the events that carry a Lead mark (acquire-start,
// hold-start, acquire-end) as "<event> <name> lead=<bool>", in order.
func (r *eventRecorder) leads() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, e := range r.events {
		switch e.event {
		case "acquire-start", "hold-start", "acquire-end":
			out = append(out, fmt.Sprintf("%s %s lead=%v", e.event, e.name, e.lead))
		}
	}
	return out
}
