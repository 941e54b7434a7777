package lockmw

import (
	"sync"
	"time"
)

// A master that restarts without its data forgets the holds it had, and
// would grant their names again: with the masters A, B and C, a hold on A and
// B, and B restarted empty, a second owner could win B and C. Redlock's
// remedy is a delayed restart: a restarted master takes no part for one TTL,
// by when every hold it forgot has been renewed elsewhere or has expired.
//
// rlock sees a restart in the acquire script's reply, which carries the
// server's run ID (quorumacquire.lua; INFO server, about 2 µs of server
// time): a master whose run ID changed is left out of acquisitions — its wins
// are undone or kept like a straggler's, never counted — for one watchdog
// timeout from the moment the new ID is seen. Renewals, re-entries and
// releases still count it: they only touch holds that exist. Only a Client
// that saw the master before its restart can tell; see NewQuorum.

// restartWatch follows the run ID of one master.
type restartWatch struct {
	mu    sync.Mutex
	runID string    // the last seen; "" before the first acquisition
	until time.Time // its acquisitions count again from then
}

// counts reports whether an acquisition won on a master that answered with
// run ID id counts now; a new ID after a known one leaves the master out
// for delay from now (restarted reports it, once).
func (w *restartWatch) counts(id string, now time.Time, delay time.Duration) (ok, restarted bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case id == "" || id == w.runID:
	case w.runID == "":
		w.runID = id
	default:
		w.runID, w.until, restarted = id, now.Add(delay), true
	}
	return !now.Before(w.until), restarted
}

// id returns the last run ID seen; "" before the first acquisition.
func (w *restartWatch) id() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.runID
}

// counts reports whether member mb's acquisition won under run ID id
// counts, and logs a restart when it sees one.
func (mb *member) counts(id string) bool {
	c := mb.q.c
	ok, restarted := mb.restarts.counts(id, time.Now(), c.opts.watchdog)
	if restarted {
		c.log.Warn("lockmw: a quorum master restarted; it counts for acquisitions again after the watchdog timeout",
			"master", mb.i, "addr", mb.be.Info().Name, "run_id", id, "delay", c.opts.watchdog)
	}
	return ok
}
