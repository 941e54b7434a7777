package main

import (
	"fmt"
	"strings"
)

// newShowView builds what show prints from s.
func newShowView(s *state, subs subscribers) showView {
	v := showView{
		Name: s.name, Kind: s.kind, Mode: s.mode, ServerTime: msTime(s.nowMS),
		Holders: holderViews(s, s.holders, subs), Waiters: waiterViews(s),
		RedissonWaiting: subs.othersWaiting(s),
	}
	if s.open > s.nowMS {
		v.OpenUntil = msTime(s.open)
	}
	if s.kind == kindSemaphore {
		v.Free = &s.free
		v.Expired = holderViews(s, s.expired, subs)
		return v
	}
	ttl := s.ttlMS
	v.TTLMS, v.ExpiresInMS = &ttl, &ttl
	v.Token, v.Metadata, v.Handoffs = s.lock.token, s.lock.meta, s.lock.handoffs
	v.TraceID = traceID(s.lock.meta)
	return v
}

// holderViews describes holders.
func holderViews(s *state, hs []holder, subs subscribers) []holderView {
	out := make([]holderView, 0, len(hs))
	for _, h := range hs {
		ev := rlockEvidence(s, h, subs)
		hv := holderView{
			Field: h.Field, Client: h.Client, Count: h.Count, Rlock: ev != "", Evidence: ev, RemainingMS: -1,
			Side: h.Side, LevelsMS: h.LevelsMS, Metadata: h.Meta, TraceID: traceID(h.Meta),
		}
		if h.ExpiresMS >= 0 {
			hv.RemainingMS = max(h.ExpiresMS-s.nowMS, 0)
			if s.kind == kindSemaphore {
				hv.Expires = msTime(h.ExpiresMS)
			}
		}
		hv.ExpiresInMS = hv.RemainingMS
		out = append(out, hv)
	}
	return out
}

// waiterViews describes the queue, in order.
func waiterViews(s *state) []waiterView {
	out := make([]waiterView, 0, len(s.waiters))
	for i, w := range s.waiters {
		wv := waiterView{
			Position: i + 1, Field: w.Field, Client: w.Client, Deadline: msTime(w.DeadlineMS),
			RemainingMS: w.DeadlineMS - s.nowMS, TTLMS: w.TTLMS, Fenced: w.Fenced, Side: w.Side,
		}
		wv.EntryExpires, wv.EntryExpiresInMS, wv.HoldTTLMS = wv.Deadline, wv.RemainingMS, wv.TTLMS
		out = append(out, wv)
	}
	return out
}

// print writes v as text.
func (v *showView) print(p *printer) {
	p.textf("%s %s (server time %s)", v.Kind, v.Name, v.ServerTime)
	if v.Kind == kindSemaphore {
		p.textf("  free permits: %d", *v.Free)
		v.printPermits(p, "permits taken", v.Holders)
		if len(v.Expired) > 0 {
			v.printPermits(p, "expired, not yet reclaimed", v.Expired)
		}
	} else {
		v.printLock(p)
	}
	v.printWaiters(p)
	if v.RedissonWaiting > 0 {
		p.textf("  other (Redisson) clients subscribed, waiting: %d", v.RedissonWaiting)
	}
	switch {
	case v.OpenUntil == "":
	case v.Kind == kindSemaphore:
		p.textf("  a permit reserved for Redisson's waiters until one takes a permit, or until %s at most", v.OpenUntil)
	default:
		p.textf("  reserved for Redisson's waiters until one takes it, or until %s at most", v.OpenUntil)
	}
}

// printLock writes a lock's holders, TTL, token and metadata; a read-write
// lock's mode, writer and readers.
func (v *showView) printLock(p *printer) {
	if v.Mode != "" {
		p.textf("  mode: %s", v.Mode)
	}
	for _, h := range v.Holders {
		switch h.Side {
		case "write":
			p.textf("  writer: %s  count %d%s  %s", h.Field, h.Count, metaNote(h), rlockNote(h))
		case "read":
			p.textf("  reader: %s  count %d%s%s  %s", h.Field, h.Count, levelsNote(h.LevelsMS), metaNote(h), rlockNote(h))
		default:
			p.textf("  holder: %s  count %d%s  %s", h.Field, h.Count, metaNote(h), rlockNote(h))
		}
	}
	p.textf("  expires in: %s", expiresNote(*v.TTLMS))
	if v.Kind == kindLock { // a read-write lock's hash holds no token
		p.textf("  fencing token: %s", orDash(v.Token))
	}
	if v.Handoffs > 0 {
		p.textf("  hand-offs in a row: %d", v.Handoffs)
	}
}

// printPermits writes a semaphore's permits.
func (v *showView) printPermits(p *printer, title string, hs []holderView) {
	p.textf("  %s: %d", title, len(hs))
	for _, h := range hs {
		exp := "never expires"
		if h.Expires != "" {
			exp = fmt.Sprintf("expires in %s (%s)", expiresNote(h.ExpiresInMS), h.Expires)
		}
		note := rlockNote(h)
		if h.Client == "" {
			note = "Redisson permit (its random ID in hex)"
		}
		p.textf("    %s  %s%s  %s", h.Field, exp, metaNote(h), note)
	}
}

// printWaiters writes the queue.
func (v *showView) printWaiters(p *printer) {
	if len(v.Waiters) == 0 {
		p.textf("  waiters: none")
		return
	}
	p.textf("  waiters (%d, in order):", len(v.Waiters))
	for _, w := range v.Waiters {
		var extra []string
		if w.Side != "" {
			extra = append(extra, w.Side)
		}
		if w.Fenced {
			extra = append(extra, "fenced")
		}
		p.textf("    %d. %s  client %s  queue entry expires in %s (%s)%s", w.Position, w.Field, w.Client,
			msDur(max(w.EntryExpiresInMS, 0)), w.EntryExpires, strings.Join(append([]string{""}, extra...), "  "))
	}
}

// expiresNote says when a hold expires: its TTL runs out then unless its
// holder renews it (rlock's watchdog does, every third of it; a lease is
// never renewed), which Redis cannot tell apart.
func expiresNote(ms int64) string {
	if ms == -1 {
		return "never (no TTL)"
	}
	return msDur(ms) + " unless renewed"
}

// metaNote shows the metadata stored with a hold: its trace ID when it is
// a traceparent; "" when none.
func metaNote(h holderView) string {
	switch {
	case h.TraceID != "":
		return "  trace id " + h.TraceID
	case h.Metadata != "":
		return "  metadata " + h.Metadata
	}
	return ""
}

// levelsNote lists a reader's levels' remaining TTLs; "" when unknown.
func levelsNote(levels []int64) string {
	if levels == nil {
		return ""
	}
	out := make([]string, len(levels))
	for i, ms := range levels {
		out[i] = msDur(ms)
		if ms == -2 {
			out[i] = "gone"
		}
	}
	return "  levels " + strings.Join(out, ", ")
}

// rlockNote says whether a holder is an rlock client, and how it is known.
func rlockNote(h holderView) string {
	if h.Rlock {
		return "rlock client: " + h.Evidence
	}
	return "client: unknown (Redisson layout; nothing only rlock writes)"
}
