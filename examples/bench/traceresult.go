package main

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// handoffTrace is the timeline of one traced hand-off: releasing worker's
// U, S, P, E, the waiting worker's R and L.
type handoffTrace struct{ u, s, p, e, r, l time.Time }

// traceStep is one step of the timeline.
type traceStep struct {
	key, label, what string
	d                func(h handoffTrace) time.Duration
}

var traceSteps = []traceStep{
	{"u_to_s", "U→S", "Unlock's own work before the send (level, release timeout, script arguments)",
		func(h handoffTrace) time.Duration { return h.s.Sub(h.u) }},
	{"s_to_p", "S→P", "the releaser's round trip (pool, write, server runs the release script, reply read)",
		func(h handoffTrace) time.Duration { return h.p.Sub(h.s) }},
	{"s_to_r", "S→R", "release sent → the waiter's process has the message (write, server wake-up, script, publish write, waiter wake-up and read)",
		func(h handoffTrace) time.Duration { return h.r.Sub(h.s) }},
	{"r_to_l", "R→L", "decode, dispatch to the waiting goroutine, hold set-up, Lock returns",
		func(h handoffTrace) time.Duration { return h.l.Sub(h.r) }},
	{"p_to_e", "P→E", "after the reply: the hold ends, Unlock returns",
		func(h handoffTrace) time.Duration { return h.e.Sub(h.p) }},
	{"u_to_e", "U→E", "Unlock, call to return",
		func(h handoffTrace) time.Duration { return h.e.Sub(h.u) }},
	{"u_to_l", "U→L", "the hand-off from the Unlock call, as the waiting user feels it",
		func(h handoffTrace) time.Duration { return h.l.Sub(h.u) }},
}

// traceCounts is what the correlation of a trace run found.
type traceCounts struct {
	handoffs int // consecutive turns of different workers
	traced   []handoffTrace
	byTime   int // traced with a read whose message could not be parsed
}

// traceHandoffs correlates the workers' records. Every turn of every
// worker, in the order of L; a hand-off is a turn whose worker differs
// from the previous turn's (as in the contended scenario). It is traced
// when the releasing turn has S and P and the waiting worker read a
// hand-off message during its Lock call (between its Lock call and L):
// the last one naming as previous owner a field of the releasing worker's
// client (lockmw.Client.ID() is the first half of every owner field), or
// failing any such, the last one that could not be parsed (a read that
// cut the message short), attributed to the Lock that returned next.
func traceHandoffs(ws []*traceWorker) traceCounts {
	ids := map[string]int{}
	reads := make([][]handoffRead, len(ws))
	var all []tracedTurn
	for i, w := range ws {
		ids[w.c.ID()] = w.id
		turns, rs := w.records()
		all = append(all, turns...)
		slices.SortFunc(rs, func(a, b handoffRead) int { return a.t.Compare(b.t) })
		reads[i] = rs
	}
	slices.SortFunc(all, func(a, b tracedTurn) int { return a.l.Compare(b.l) })
	var tc traceCounts
	for i := 1; i < len(all); i++ {
		a, b := all[i-1], all[i]
		if a.worker == b.worker {
			continue
		}
		tc.handoffs++
		if a.s.IsZero() {
			continue
		}
		r, ok := findRead(reads[b.worker], b, func(prev string) bool {
			id, known := ids[clientOf(prev)]
			return known && id == a.worker
		})
		if !ok {
			continue
		}
		if !r.parsed {
			tc.byTime++
		}
		tc.traced = append(tc.traced, handoffTrace{u: a.u, s: a.s, p: a.p, e: a.e, r: r.t, l: b.l})
	}
	return tc
}

// findRead returns the hand-off read of turn t (see traceHandoffs): among
// reads (sorted by time) between t's Lock call and L, the last parsed one
// whose previous owner fromReleaser accepts, else the last unparsed one.
func findRead(reads []handoffRead, t tracedTurn, fromReleaser func(prev string) bool) (handoffRead, bool) {
	lo, _ := slices.BinarySearchFunc(reads, t.called, func(r handoffRead, at time.Time) int { return r.t.Compare(at) })
	var unparsed *handoffRead
	for i := len(reads) - 1; i >= lo; i-- {
		r := &reads[i]
		switch {
		case r.t.After(t.l):
		case r.parsed && fromReleaser(r.prev):
			return *r, true
		case !r.parsed && unparsed == nil:
			unparsed = r
		}
	}
	if unparsed != nil {
		return *unparsed, true
	}
	return handoffRead{}, false
}

// clientOf is the client ID of an owner field "<clientID>:<n>".
func clientOf(field string) string {
	if i := strings.LastIndexByte(field, ':'); i >= 0 {
		return field[:i]
	}
	return field
}

// traceResult is the trace scenario's result: a header line and a block of
// one line per step, p50/p90/p99 over the traced hand-offs, then the PING
// and the server's time per script.
func traceResult(cfg config, tc traceCounts, m *contendedRun) *result {
	r := newResult("trace", "rlock")
	r.param("workers", cfg.workers)
	r.param("hold", cfg.hold)
	r.param("think", cfg.think)
	r.param("duration", cfg.duration)
	r.num("handoffs", "hand-offs=%.0f", float64(tc.handoffs))
	r.num("traced", "traced=%.0f", float64(len(tc.traced)))
	r.num("traced_by_time", "(by time alone: %.0f)", float64(tc.byTime))
	var ul time.Duration
	for _, st := range traceSteps {
		ds := make([]time.Duration, len(tc.traced))
		for i, h := range tc.traced {
			ds[i] = st.d(h)
		}
		sorted(ds)
		p50, p90, p99 := percentile(ds, 0.5), percentile(ds, 0.9), percentile(ds, 0.99)
		if st.key == "u_to_l" {
			ul = p50
		}
		r.Metrics[st.key+"_n"] = float64(len(ds))
		for _, q := range []struct {
			name string
			d    time.Duration
		}{{"p50", p50}, {"p90", p90}, {"p99", p99}} {
			r.Metrics[st.key+"_"+q.name+"_us"] = round(float64(q.d)/1e3, 1)
		}
		r.extra = append(r.extra, fmt.Sprintf("  %s\tp50=%s\tp90=%s\tp99=%s\t%s", st.label, fmtDur(p50), fmtDur(p90), fmtDur(p99), st.what))
	}
	ratio := float64(ul) / float64(max(m.pingDuring, 1))
	r.Metrics["ping_p50_us"] = round(float64(m.pingDuring)/1e3, 1)
	r.Metrics["u_to_l_p50_over_ping_p50"] = round(ratio, 4)
	r.extra = append(r.extra, fmt.Sprintf("  PING p50\t%s\t\t\tduring the run, an otherwise idle client of its own; U→L p50 / PING p50 = %.2f", fmtDur(m.pingDuring), ratio))
	perScript := float64(m.srv.usec["evalsha"]) / float64(max(m.srv.calls["evalsha"], 1))
	r.Metrics["server_us_per_script"] = round(perScript, 2)
	r.Metrics["scripts"] = float64(m.srv.calls["evalsha"])
	r.extra = append(r.extra, fmt.Sprintf("  server time per script (all scripts)\t%.1fµs\t\t\tINFO commandstats evalsha usec_per_call over the run, %d scripts", perScript, m.srv.calls["evalsha"]))
	r.Breakdown["commandstats_usec_per_call"] = m.srv.usecPerCall()
	return r
}
