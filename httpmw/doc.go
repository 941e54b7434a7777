// Package httpmw is net/http middleware that runs requests one at a time per
// route, or per resource, across every instance of a service (or at most n
// at a time, see [WithPermits]): the HTTP counterpart of Redisson's
// @RequestLockable, on a [lockmw] lock.
//
//	m := httpmw.New(locks) // locks is a *lockmw.Client
//	mux.Handle("POST /reports", m.Wrap(reports))          // per route: "http:POST /reports"
//	perOrder := httpmw.New(locks, httpmw.WithPathValues("id"))
//	mux.Handle("POST /orders/{id}", perOrder.Wrap(orders)) // per resource: "http:POST /orders/{id}#id=1"
//
// or, instead, every route of a mux, one lock per pattern:
//
//	handler := httpmw.New(locks).WrapMux(mux)
//
// # Keys
//
// The lock of a request is named [KeyPrefix] + the pattern that matched
// (see [PatternKey]), with the request's method in front when the pattern
// names none ("/orders/{id}" locks "http:POST /orders/{id}" and
// "http:GET /orders/{id}" apart; [WithOneLockPerPath] shares them);
// [WithPathValues] appends the values of path wildcards, escaped, so that
// distinct resources never share a name; and [WithKey] replaces the whole
// scheme (its "" runs a request unlocked, by choice).
//
// # Placement, and routers
//
// The default key needs the pattern, which a router sets when it has matched
// the request: mount Wrap on routes, or use WrapMux. A Wrap that sees no
// pattern, or a mount's "/*", is misplaced: it answers 500 and logs once
// ([WithLogger]) rather than running the handler unlocked (see
// [Middleware.Wrap]). chi works through Wrap (r.With(m.Wrap), r.Group with
// Use), gorilla/mux through a small middleware that sets r.Pattern; gin,
// echo v4 and fiber v3 have modules of their own (httpmw/ginmw,
// httpmw/echomw, httpmw/fibermw) that hand httpmw the matched route. See
// docs/http.md for each.
//
// On a Redis Cluster a lock's keys go to the slot of the name's {hash tag},
// and a wildcard in the pattern is one: all names with "{id}" share a slot.
// That is correct, only less spread; a [WithKey] name without braces gets a
// slot of its own.
//
// # Reads and writes
//
// [WithReadWrite] lets the reads of a resource run together while its writes
// run alone: GET, HEAD, OPTIONS and TRACE take the read side of a
// [lockmw.RWMutex], every other method its write side.
//
//	docs := httpmw.New(locks, httpmw.WithPathValues("id"), httpmw.WithReadWrite())
//	mux.Handle("GET /docs/{id}", docs.Wrap(show))
//	mux.Handle("PUT /docs/{id}", docs.Wrap(save))
//
// Both routes lock "http:rw:/docs/{id}#id=…": the method is left out of the
// name so that reads and writes meet on one lock.
//
// # Limits
//
// [WithPermits] lets up to n requests with the same key run at once, across
// every instance: three exports per tenant, two report builds per route.
//
//	exports := httpmw.New(locks, httpmw.WithPathValues("tenant"), httpmw.WithPermits(3))
//	mux.Handle("POST /tenants/{tenant}/exports", exports.Wrap(export))
//
// With n = 1, the default, the key's lock is a [lockmw.Mutex] named by the
// key, as before limits existed. With n > 1 it is a [lockmw.Semaphore] of n
// permits whose name has "limit:" after [KeyPrefix], here
//
//	http:limit:POST /tenants/{tenant}/exports#tenant=acme
//
// ("limit:" + the key for a [WithKey] name without the prefix). No default
// key is such a name, so instances on either side of a change of limit do
// not block each other while a deploy rolls. A request over the limit
// waits, gets the busy answer and leaves the queue as one waiting for a
// mutex does.
//
// # Waiting and answers
//
// A request waits its turn up to the wait ([WithWait]; [DefaultWait], 10s,
// by default), never past its own context: a client that disconnects stops waiting at
// once and leaves the lock's queue. When the lock stays busy it gets the
// busy status ([WithBusyStatus], 409 by default) with a Retry-After header in
// whole seconds, at least 1. A lock renewed by the watchdog says nothing
// about when its holder will be done, so Retry-After is the [WithRetryAfter]
// hint (1s by default) unless the middleware holds its locks with a lease
// ([WithLease]): then it is the holder's remaining lease. Under a limit
// ([WithPermits]) it is the remaining TTL of the permit that expires first. Waiters queue in
// Redis: an unlock hands the lock to the next request in arrival order,
// whichever instance it waits on.
//
// Other failures answer with fixed short plain-text bodies, never Redis
// errors: 503 when the request's context ended while it waited or Redis
// failed or the Client was closed, 400 when the key is not a valid lock
// name (see [Middleware.Wrap]). The Client's [lockmw.Hooks] (otelhooks)
// see every failed acquisition.
//
// The handler runs with the hold context as r.Context(): it is cancelled when
// the lock is lost (cause [lockmw.ErrLockLost]) or the client goes away. The
// lock is released when the handler returns or panics.
//
// # Concurrency
//
// A Middleware is immutable after [New] and safe for concurrent use; the
// handlers it returns serve any number of requests at once, each waiting on
// its own. A waiting request costs no goroutine beyond the one net/http runs
// for it (a lockmw.Client's waiters share one subscription per name and one
// pub/sub connection, one per master on a Redis 7 cluster);
// it holds in memory at most the part of its body that [WithBodyBuffer]
// reads.
package httpmw
