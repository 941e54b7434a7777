package lockmw

// The reservation for Redisson's waiters, the Client's side (the scripts'
// side is lib.lua's rlock_reserve; the protocol is docs/waiting.md, Beside
// Redisson waiters). A release that reserves the free lock (a mutex's) or a
// permit (a semaphore's) publishes on Redisson's channel ("0", or the count
// of free permits), then the reservation's generation on the roll-call
// channel; rlock callers that would wait leave the lock, or the count's last
// permit, alone until the reservation was used, or until its window passes.
// Two things live here: what a Client's hub saw of a name's reservation (the
// messages on Redisson's channel after its generation, which the scripts
// weigh: lib.lua's rlock_reservation), and the window a release gives, from
// the round trips this Client measures to its Redis.

import (
	"strconv"
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
// the server published: the generation of the last one, and how many
// messages came on Redisson's channel after it. Guarded by the hub's mutex.
type reservationSeen struct {
	gen   string
	after int
}

// reserved records a reservation's generation, from the roll-call channel.
func (r *reservationSeen) reserved(gen string) { r.gen, r.after = gen, 0 }

// unlocked records a message on Redisson's channel: a mutex's "0" (the lock
// reserved at the last generation was held and freed since: the reservation
// was used), or a semaphore's count (a permit went back, Redisson's or
// rlock's: the script weighs it against the count it finds).
func (r *reservationSeen) unlocked() {
	if r.gen != "" {
		r.after++
	}
}

// word is what the acquire script is told of the last reservation, or ""
// when no message came after it: a mutex's waiter says its generation (it
// was used), a semaphore's "<generation>|<messages after it>".
func (r *reservationSeen) word(sem bool) string {
	switch {
	case r.after == 0:
		return ""
	case sem:
		return r.gen + "|" + strconv.Itoa(r.after)
	}
	return r.gen
}

// usedReservation returns what the Client's hubs saw of the name's last
// reservation (reservationSeen.word), else "": the acquire script's
// argument that ends a used reservation. A generation is unique, so a word
// about an older reservation than the one in Redis changes nothing.
func (c *Client) usedReservation(k *keys) string {
	for _, h := range c.hubs {
		h.mu.Lock()
		ns := h.names[k.channel]
		word := ""
		if ns != nil {
			word = ns.reserved.word(k.sem)
		}
		h.mu.Unlock()
		if word != "" {
			return word
		}
	}
	return ""
}
