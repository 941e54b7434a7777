package httpmw

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/go-rlock/rlock/internal/skip"
	"github.com/go-rlock/rlock/lockmw"
)

// The bodies of the answers the middleware gives itself.
const (
	busyBody        = "busy: another request holds this resource; retry later"
	endedBody       = "request ended while waiting for its turn"
	invalidKeyBody  = "bad request: cannot lock this resource"
	badBodyBody     = "bad request: cannot read the body"
	unavailableBody = "lock service unavailable"
	upgradeBody     = "server error: a read of this resource cannot write it"
	misplacedBody   = "server misconfigured: the lock middleware runs where no route is known; see the server log"
)

// ErrMisplaced is the reason ([WithOnSkip], [lockmw.SkipEvent].Err) of a
// request refused because the middleware runs where no route is known (see
// [Middleware.RefuseMisplaced]).
var ErrMisplaced = errors.New("httpmw: no route known where the lock middleware runs")

// wrapMisplaced is what Wrap logs when it refuses a request (see Wrap).
const wrapMisplaced = "Wrap got a request with no route pattern, or a mount's \"/*\". " +
	"Mount Wrap where the router has matched: on each route (mux.Handle(pattern, m.Wrap(h)), chi's r.With(m.Wrap)), " +
	"around a ServeMux with WrapMux, through the gin, echo or fiber modules, or give WithKey"

// RefuseMisplaced answers r as [Middleware.Wrap] answers a request that
// reached it where no route is known: 500 Internal Server Error with a
// short body, and, for the first such request of m, an Error line on the
// logger ([WithLogger]) saying why and what to do (why, for example "the
// middleware runs before routing: register it with e.Use"), with the
// request's method, path and pattern. It is for router adapters that find
// themselves misplaced by their own means (echomw under echo's Pre,
// fibermw under app.Use), so that every refusal looks and logs alike; each
// is reported to the Client's Skip hooks, reason refused, and to
// [WithOnSkip]'s function with an error matching [ErrMisplaced].
func (m *Middleware) RefuseMisplaced(w http.ResponseWriter, r *http.Request, why string) {
	m.warned.Do(func() {
		m.cfg.logger.Error("httpmw: refusing with 500 rather than running unlocked: "+why+" (logged once per Middleware)",
			"method", r.Method, "path", r.URL.Path, "pattern", r.Pattern)
	})
	m.skipped(r, nil, lockmw.SkipRefused, fmt.Errorf("%w: %s", ErrMisplaced, why))
	http.Error(w, misplacedBody, http.StatusInternalServerError)
}

// reject answers a request that did not get the lock, and reports it.
func (m *Middleware) reject(w http.ResponseWriter, r *http.Request, l lockmw.Locker, err error) {
	m.skipped(r, l, lockmw.SkipReasonOf(err), err)
	var busy *lockmw.BusyError
	switch {
	case r.Context().Err() != nil:
		http.Error(w, endedBody, http.StatusServiceUnavailable)
	case errors.As(err, &busy):
		w.Header().Set("Retry-After", strconv.FormatInt(seconds(m.retryAfter(r, l, busy)), 10))
		http.Error(w, busyBody, m.cfg.busyStatus)
	case errors.Is(err, lockmw.ErrUpgrade):
		m.cfg.logger.Error("httpmw: a request that holds the read side of its lock reached a write of the same lock (nested Wrap); refused with 500 rather than waiting for itself",
			"method", r.Method, "path", r.URL.Path, "lock", l.Name())
		http.Error(w, upgradeBody, http.StatusInternalServerError)
	case errors.Is(err, lockmw.ErrInvalidName):
		http.Error(w, invalidKeyBody, http.StatusBadRequest)
	default: // Redis error, lockmw.ErrClosed
		http.Error(w, unavailableBody, http.StatusServiceUnavailable)
	}
}

// skipped reports r, answered without running the handler, for reason:
// to the Client's Skip hooks (of the lock l; nil when there is none) and to
// WithOnSkip's function.
func (m *Middleware) skipped(r *http.Request, l lockmw.Locker, reason lockmw.SkipReason, err error) {
	if l == nil {
		skip.NotLocked(r.Context(), m.c, lockmw.AdapterHTTP, reason, err)
	} else {
		skip.Locked(r.Context(), m.c, l, reason, err)
	}
	if m.cfg.onSkip != nil {
		m.cfg.onSkip(r, err)
	}
}

// retryAfter is, under a limit, the remaining TTL of the permit that
// expires first (busy has it from the last attempt): the latest a permit
// comes back even if its holder dies. For a mutex it is the holder's
// remaining lease when holders lease (WithLease) and the lock still has a
// TTL. Otherwise, and when the TTL is unknown, the hint.
func (m *Middleware) retryAfter(r *http.Request, l lockmw.Locker, busy *lockmw.BusyError) time.Duration {
	if _, ok := l.(*lockmw.Semaphore); ok && busy.TTL > 0 {
		return busy.TTL
	}
	if m.cfg.lease <= 0 {
		return m.cfg.retryAfter
	}
	ttl := busy.TTL
	if mu, ok := l.(*lockmw.Mutex); ok && m.cfg.wait > 0 {
		// The TTL in busy was seen at the last attempt, which may be a while
		// ago; ask for the current one.
		if d, err := mu.TTL(r.Context()); err == nil {
			ttl = d
		}
	}
	if ttl <= 0 { // gone meanwhile, or no expiry (a foreign holder)
		return m.cfg.retryAfter
	}
	return ttl
}

// seconds rounds d up to whole seconds, at least 1.
func seconds(d time.Duration) int64 {
	s := int64((d + time.Second - 1) / time.Second)
	return max(s, 1)
}
