package httpmw

import (
	"context"
	"errors"
	"net/http"
	"reflect"
	"strings"
	"sync"

	"github.com/go-rlock/rlock/lockmw"
)

// Middleware serializes requests that share a lock key (or lets at most
// [WithPermits] of them run at once) across every instance of a service whose
// Middlewares use lockmw Clients on the same Redis. It is configured once by [New] and safe for concurrent use.
type Middleware struct {
	c      *lockmw.Client
	cfg    config
	warned sync.Once // the misplaced mounting was logged
}

// New returns a Middleware that takes its locks through c. It panics when c
// is nil, an option is nil or an option's value is invalid (see [Option]):
// that is configuration that can never be right.
func New(c *lockmw.Client, opts ...Option) *Middleware {
	if c == nil {
		panic("httpmw: New(nil): a lockmw.Client is required")
	}
	return &Middleware{c: c, cfg: newConfig(opts)}
}

// Key returns the name of the lock that a request served by [Middleware.Wrap]
// takes: the key function's result, with the path values appended when
// [WithPathValues] was given, "limit:" inserted under a [WithPermits]
// above 1 and "rw:" under [WithReadWrite]; "" when the request takes no lock.
func (m *Middleware) Key(r *http.Request) string {
	name, _ := m.names(r)
	return name
}

// names returns the name of r's lock (see Key) and its group
// (lockmw.WithGroup), the bounded label of its metrics: the name without
// the path values, the route's lock name by default.
func (m *Middleware) names(r *http.Request) (name, group string) {
	k := m.cfg.key(r)
	group = m.lockName(k)
	if k == "" || len(m.cfg.pathValues) == 0 {
		return group, group
	}
	return m.lockName(appendPathValues(k, r, m.cfg.pathValues)), group
}

// lockName is the name of the lock of key k: k itself for a mutex, the
// semaphore's name (see WithPermits) under a limit above 1, the read-write
// lock's under WithReadWrite.
func (m *Middleware) lockName(k string) string {
	infix := ""
	switch {
	case k == "":
		return k
	case m.cfg.readWrite:
		infix = rwInfix
	case m.cfg.permits > 1:
		infix = limitInfix
	default:
		return k
	}
	if rest, ok := strings.CutPrefix(k, KeyPrefix); ok {
		return KeyPrefix + infix + rest
	}
	return infix + k
}

// locker is the lock of r called name in group: a Mutex, under a limit
// above 1 a Semaphore of that many permits, under WithReadWrite a side of
// an RWMutex picked by r's method.
func (m *Middleware) locker(r *http.Request, name, group string) lockmw.Locker {
	switch {
	case m.cfg.readWrite:
		rw := m.c.RWMutex(name, lockmw.WithGroup(group), adapter)
		if safeMethod(r.Method) {
			return rw.RLocker()
		}
		return rw
	case m.cfg.permits > 1:
		return m.c.Semaphore(name, m.cfg.permits, lockmw.WithGroup(group), adapter)
	}
	return m.c.Mutex(name, lockmw.WithGroup(group), adapter)
}

// adapter names httpmw (and the router modules on it) in the hooks' events
// of its locks (LockInfo.Adapter) and in the skips it reports.
var adapter = lockmw.WithAdapter(lockmw.AdapterHTTP)

// Wrap returns a handler that runs h one request at a time per lock key (at
// most [WithPermits] at a time), for use on a route, where the router has
// matched the request and set r.Pattern:
//
//	mux.Handle("POST /orders/{id}", m.Wrap(h))          // net/http
//	r.With(m.Wrap).Post("/orders/{id}", h)               // chi
//
// (gin, echo and fiber have modules of their own: see docs/http.md.)
// Each request computes its key (see [Middleware.Key]) and waits for the
// lock up to the wait ([WithWait]) or until its context ends, then:
//
//   - it got the lock: h runs with the hold context as r.Context(), which is
//     cancelled, with cause [lockmw.ErrLockLost], if the lock is lost; the
//     lock is released when h returns or panics (the panic goes on to the
//     server). A nested Wrap with the same key and Client re-enters (under
//     a limit above 1 it takes another permit).
//   - the lock stayed busy: the busy status ([WithBusyStatus]), a Retry-After
//     header (see [WithLease] and [WithRetryAfter]) and a short plain-text
//     body.
//   - the request's context ended first (the client went away, or a server
//     timeout): 503 Service Unavailable with a short body, which a client
//     that has gone never sees.
//   - reading the body before the wait failed (see [WithBodyBuffer]): 400
//     Bad Request, or 413 when an [http.MaxBytesReader] refused it.
//   - the key is not a valid lock name ([lockmw.ErrInvalidName], for example
//     path values too long for it): 400 Bad Request.
//   - Redis failed or the Client was closed: 503 Service Unavailable.
//
// Each request answered so, h not run, is reported to [WithOnSkip]'s
// function and to the Client's Skip hooks ([lockmw.Hooks.Skip]; otelhooks
// counts it in lock.skips, with lock.adapter http): reason busy (the lock stayed busy, also when the
// request's context ended during the wait), refused (a body that cannot be
// read, an invalid key, a read reaching a write of its lock, a misplaced
// Wrap) or error (Redis failed, the Client was closed). Every lock's events
// carry lock.adapter http ([lockmw.WithAdapter]).
//
// A misplaced Wrap is refused, never skipped: with the default key, a
// request that arrives without a pattern (Wrap mounted before the router
// matched, such as chi's top-level r.Use, or around a whole router; and
// every request under GODEBUG=httpmuxgo121=1, where ServeMux sets no
// pattern) or with a mount's wildcard pattern ending in "/*" (chi's Use
// inside Route or Mount, which every route under the mount would share) is
// answered 500 Internal Server Error with a short body, h does not run, and
// the first such request of each Middleware is logged ([WithLogger]) with
// the fix. A [WithKey] function is trusted instead: its "" runs h unlocked.
//
// Bodies never include Redis errors; the Client's [lockmw.Hooks] (for
// example otelhooks) see every failed acquisition. Each lock has the name
// without the path values as its [lockmw.WithGroup] (by default the
// route's, "http:POST /orders/{id}"), so otelhooks' metrics count one
// series per route, not per resource; spans keep the full name. Wrap
// panics when h is nil.
func (m *Middleware) Wrap(h http.Handler) http.Handler {
	if h == nil {
		panic("httpmw: Wrap(nil): a handler is required")
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !m.cfg.customKey && misplaced(r.Pattern) {
			m.RefuseMisplaced(w, r, wrapMisplaced)
			return
		}
		name, group := m.names(r)
		m.serve(w, r, h, name, group)
	})
}

// WrapMux returns a handler that serves mux with one lock per pattern: it
// finds the pattern a request matches with mux.Handler before dispatch and
// locks [KeyPrefix] + pattern (the key function sees the request with
// r.Pattern set to it). Requests that match no pattern (404, 405) and
// redirects (to add a trailing slash or clean the path, and
// [http.RedirectHandler] routes) pass through unlocked.
//
// mux.Handler sets no path values, so WrapMux cannot lock per resource: it
// panics on a Middleware with [WithPathValues] (use Wrap on the route), and
// when mux is nil.
func (m *Middleware) WrapMux(mux *http.ServeMux) http.Handler {
	if mux == nil {
		panic("httpmw: WrapMux(nil): a ServeMux is required")
	}
	if len(m.cfg.pathValues) > 0 {
		panic("httpmw: WrapMux: WithPathValues needs Wrap (mux.Handler sets no path values)")
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h, pattern := mux.Handler(r)
		if pattern == "" || reflect.TypeOf(h) == redirectType {
			mux.ServeHTTP(w, r)
			return
		}
		kr := new(http.Request)
		*kr = *r
		kr.Pattern = pattern
		name := m.lockName(m.cfg.key(kr))
		m.serve(w, r, mux, name, name)
	})
}

// redirectType is the type of the handlers ServeMux redirects with.
var redirectType = reflect.TypeOf(http.RedirectHandler("/", http.StatusTemporaryRedirect))

// serve runs h under the lock called name in group ("" runs it without a
// lock).
func (m *Middleware) serve(w http.ResponseWriter, r *http.Request, h http.Handler, name, group string) {
	if name == "" {
		h.ServeHTTP(w, r)
		return
	}
	l := m.locker(r, name, group)
	r, err := bufferBody(r, m.cfg.bodyBuffer)
	if err != nil {
		m.skipped(r, l, lockmw.SkipRefused, err)
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			http.Error(w, badBodyBody, http.StatusRequestEntityTooLarge)
		} else {
			http.Error(w, badBodyBody, http.StatusBadRequest)
		}
		return
	}
	// WithLock releases the lock also when h panics; the panic then goes on.
	// Once h has run, the response is written: what happened to the lock
	// meanwhile is the Client's hooks' to report.
	ran := false
	err = lockmw.WithLock(r.Context(), l, func(hctx context.Context) error {
		ran = true
		h.ServeHTTP(w, r.WithContext(hctx))
		return nil
	}, lockmw.WithWait(m.cfg.wait), lockmw.WithLease(m.cfg.lease))
	if !ran {
		m.reject(w, r, l, err)
	}
}
