package lockmw

// The reservation for Redisson's waiters, the Client's side (the scripts'
// side is lib.lua's rlock_reserve; the protocol is docs/waiting.md, Beside
// Redisson waiters). A release that reserves the free lock publishes "0" on
// Redisson's channel, then the reservation's generation on the roll-call
// channel; rlock callers that would wait leave the lock alone until one of
// them says the reservation was used, or until its window passes. Two things
// live here: what a Client's hub saw of a name's reservation (a "0" after its
// generation means the reserved lock was taken and freed again), and the
// window a release gives, from the round trips this Client measures to its
// Redis.

import (
	"sync/atomic"
	"time"
)

// The window of a reservation: reserveWindowRTTs smoothed round trips of the
// releasing Client's release script, within [reserveWindowMin,
// reserveWindowMax]. A reservation ends when it is used, so the window is
// only what a reservation nobody uses costs (the lock idles that long, and
// the name is quiet for 16 windows after): long enough for a Redisson waiter
// that needs two round trips and a scheduler's delay, short beside the 2 s
// a Redisson service may go without the lock. reserveWindowMin is lib.lua's
// rlockReserveWindow.
const (
	reserveWindowMin  = 20 * time.Millisecond
	reserveWindowMax  = time.Second
	reserveWindowRTTs = 8
)

// rttGauge is a smoothed round trip (TCP's SRTT: each sample weighs 1/8),
// safe for concurrent use; a sample lost to a concurrent one does not matter.
type rttGauge struct{ ns atomic.Int64 }

// observe adds the round trip of one script that took d, from its sending
// to its reply.
func (g *rttGauge) observe(d time.Duration) {
	old := g.ns.Load()
	if old == 0 {
		g.ns.Store(int64(d))
		return
	}
	g.ns.Store(old + (int64(d)-old)/8)
}

// windowMS is the reservation window in ms for a release now.
func (g *rttGauge) windowMS() int64 {
	w := min(max(reserveWindowRTTs*time.Duration(g.ns.Load()), reserveWindowMin), reserveWindowMax)
	return msCeil(w)
}

// reservationSeen is what one hub saw of a name's reservations, in the order
// the server published: the generation of the last one, and whether a "0"
// (a release) came after it. Guarded by the hub's mutex.
type reservationSeen struct {
	gen  string
	used bool
}

// reserved records a reservation's generation, from the roll-call channel.
func (r *reservationSeen) reserved(gen string) { r.gen, r.used = gen, false }

// unlocked records a "0" on Redisson's channel: the last reservation, if
// any, was used (the lock was free and reserved at its generation, and was
// held and freed since).
func (r *reservationSeen) unlocked() { r.used = r.gen != "" }

// usedGen returns the generation of a reservation seen used, or "".
func (r *reservationSeen) usedGen() string {
	if r.used {
		return r.gen
	}
	return ""
}

// usedReservation returns the generation of the name's last reservation when
// one of the Client's hubs saw it used, else "": the acquire script's ninth
// argument, which ends the reservation. A generation is unique, so a word
// about an older reservation than the one in Redis changes nothing.
func (c *Client) usedReservation(k *keys) string {
	for _, h := range c.hubs {
		h.mu.Lock()
		ns := h.names[k.channel]
		gen := ""
		if ns != nil {
			gen = ns.reserved.usedGen()
		}
		h.mu.Unlock()
		if gen != "" {
			return gen
		}
	}
	return ""
}
