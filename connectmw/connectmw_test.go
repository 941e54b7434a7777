package connectmw_test

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-rlock/rlock/connectmw"
	"github.com/go-rlock/rlock/internal/redistest"
	"github.com/go-rlock/rlock/internal/rpclock/rpctest"
	"github.com/go-rlock/rlock/internal/testsupport"
	"github.com/go-rlock/rlock/internal/testsupport/locktest"
	"github.com/go-rlock/rlock/lockmw"
)

// twoServers serves svc on two servers, each with its own lockmw Client on
// srv and an Interceptor with opts, as two instances of a service would
// (the watchdog timeout as in grpcmw's tests).
func twoServers(t *testing.T, srv *redistest.Server, svc *service, opts ...connectmw.Option) [2]string {
	t.Helper()
	var bases [2]string
	for n := range bases {
		bases[n] = serveLocked(t, svc, connectmw.New(locktest.NewOn(t, srv, lockmw.WithWatchdogTimeout(10*time.Second)), opts...))
	}
	return bases
}

func TestSerializesAProcedureAcrossServers(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	for _, tr := range transports(t) {
		t.Run(tr.name, func(t *testing.T) {
			var calls, checks rpctest.Gauge // two procedures, two locks
			bases := twoServers(t, srv, &service{work: func(ctx context.Context, v string) error {
				if v == "" { // a health check's service
					return checks.Work(ctx, v)
				}
				return calls.Work(ctx, v)
			}}, connectmw.WithWait(lockmw.Forever))
			const n = 8
			var wg sync.WaitGroup
			errs := make(chan error, 2*n)
			for k := range n {
				wg.Go(func() { _, err := tr.call(t.Context(), bases[k%2], strconv.Itoa(k)); errs <- err })
				wg.Go(func() { errs <- tr.check(t.Context(), bases[k%2]) })
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				require.NoError(t, err)
			}
			for _, g := range []*rpctest.Gauge{&calls, &checks} {
				all, most := g.Counts()
				assert.Equal(t, n, all)
				assert.Equal(t, 1, most, "calls of one procedure ran concurrently")
			}
		})
	}
}

func TestDistinctKeysRunInParallel(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	tr := transports(t)[1]
	t.Run("distinct procedures", func(t *testing.T) {
		bases := twoServers(t, srv, &service{work: rpctest.Barrier(2)})
		errs := make(chan error, 2)
		go func() { _, err := tr.call(t.Context(), bases[0], "a"); errs <- err }()
		go func() { errs <- tr.check(t.Context(), bases[1]) }()
		for range 2 {
			require.NoError(t, testsupport.Recv(t, errs, 2*patience, "a call"))
		}
	})
	t.Run("distinct header values of one procedure", func(t *testing.T) {
		bases := twoServers(t, srv, &service{work: rpctest.Barrier(2)}, connectmw.WithHeaderKey("X-Order-ID"))
		errs := make(chan error, 2)
		for n, id := range []string{"1", "2"} {
			go func() { _, err := tr.call(t.Context(), bases[n], id, "X-Order-ID", id); errs <- err }()
		}
		for range 2 {
			require.NoError(t, testsupport.Recv(t, errs, 2*patience, "a call"))
		}
	})
	t.Run("one header value serializes, under grpcmw's name", func(t *testing.T) {
		b := rpctest.NewBlocker()
		base := serveLocked(t, &service{work: b.Work}, connectmw.New(locktest.NewOn(t, srv), connectmw.WithHeaderKey("x-order-id"), connectmw.WithWait(0)))
		errs := make(chan error, 1)
		go func() { _, err := tr.call(t.Context(), base, "first", "x-order-id", "7/a b"); errs <- err }()
		testsupport.Recv(t, b.Entered, patience, "the first call")
		require.Equal(t, int64(1), rpctest.Holders(t, srv, "rpc:"+callProc+"#x-order-id=7%2Fa+b"), "the lock's name")
		_, err := tr.call(t.Context(), base, "second", "x-order-id", "7/a b")
		assert.Equal(t, connect.CodeAborted, connect.CodeOf(err), "%v", err)
		close(b.Release)
		require.NoError(t, testsupport.Recv(t, errs, patience, "the first call"))
	})
}

func TestPermits(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	tr := transports(t)[0]
	b := rpctest.NewBlocker()
	bases := twoServers(t, srv, &service{work: b.Work}, connectmw.WithPermits(2), connectmw.WithWait(0))
	errs := make(chan error, 2)
	for n := range 2 {
		go func() { _, err := tr.call(t.Context(), bases[n], "x"); errs <- err }()
		testsupport.Recv(t, b.Entered, patience, "a call holding a permit")
	}
	_, err := tr.call(t.Context(), bases[0], "x")
	require.Equal(t, connect.CodeAborted, connect.CodeOf(err), "%v", err)
	delay := retryDelay(t, err)
	assert.Greater(t, delay, time.Second, "the permit's TTL, up to the watchdog timeout")
	assert.LessOrEqual(t, delay, 10*time.Second)
	n, err := srv.Client().ZCard(t.Context(), "{rpc:limit:"+callProc+"}:timeout").Result()
	require.NoError(t, err)
	assert.Equal(t, int64(2), n, "the semaphore's permits, named rpc:limit:<procedure>")
	close(b.Release)
	for range 2 {
		require.NoError(t, testsupport.Recv(t, errs, patience, "a call"))
	}
}

// timeout is a unary interceptor, outside connectmw's, that gives the
// handler a deadline of its own, and records what the server answered.
type timeout struct {
	d   time.Duration
	got chan error
}

func (tm *timeout) WrapUnary(next connect.UnaryFunc) connect.UnaryFunc {
	return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
		if tm.d > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, tm.d)
			defer cancel()
		}
		resp, err := next(ctx, req)
		tm.got <- err
		return resp, err
	}
}

func (tm *timeout) WrapStreamingClient(next connect.StreamingClientFunc) connect.StreamingClientFunc {
	return next
}

func (tm *timeout) WrapStreamingHandler(next connect.StreamingHandlerFunc) connect.StreamingHandlerFunc {
	return next
}

func TestCodes(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	locks := locktest.NewOn(t, srv)
	name := "rpc:" + checkProc
	for _, tr := range transports(t) {
		t.Run(tr.name, func(t *testing.T) {
			t.Run("a busy lock answers Aborted with a retry delay", func(t *testing.T) {
				release := rpctest.HoldLock(t, srv, name, 0)
				defer release()
				base := serveLocked(t, &service{}, connectmw.New(locks, connectmw.WithWait(0)))
				err := tr.check(t.Context(), base)
				require.Equal(t, connect.CodeAborted, connect.CodeOf(err), "%v", err)
				assert.Equal(t, connectmw.DefaultRetryAfter, retryDelay(t, err))
				var ce *connect.Error
				require.ErrorAs(t, err, &ce)
				assert.Equal(t, "1000", ce.Meta().Get("grpc-retry-pushback-ms"))
				assert.Equal(t, "busy: another call holds this lock; retry later", ce.Message())
			})
			t.Run("the deadline while waiting answers DeadlineExceeded", func(t *testing.T) {
				release := rpctest.HoldLock(t, srv, name, 0)
				defer release()
				tm := &timeout{d: 200 * time.Millisecond, got: make(chan error, 1)}
				base := serveHTTP(t, (&service{}).mux(connect.WithInterceptors(tm, connectmw.New(locks, connectmw.WithWait(lockmw.Forever)))))
				err := tr.check(t.Context(), base)
				assert.Equal(t, connect.CodeDeadlineExceeded, connect.CodeOf(err), "%v", err)
				served := testsupport.Recv(t, tm.got, patience, "the server's answer")
				assert.ErrorIs(t, served, context.DeadlineExceeded)
			})
			t.Run("a cancel while waiting answers Canceled and leaves the queue", func(t *testing.T) {
				release := rpctest.HoldLock(t, srv, name, 0)
				defer release()
				tm := &timeout{got: make(chan error, 1)}
				ran := make(chan struct{}, 1)
				svc := &service{work: func(context.Context, string) error { ran <- struct{}{}; return nil }}
				base := serveHTTP(t, svc.mux(connect.WithInterceptors(tm, connectmw.New(locks, connectmw.WithWait(lockmw.Forever)))))
				ctx, cancel := context.WithCancel(t.Context())
				errs := make(chan error, 1)
				go func() { errs <- tr.check(ctx, base) }()
				testsupport.Eventually(t, patience, "the call queued", func() bool { return rpctest.Queued(t, srv.Client(), name) == 1 })
				cancel()
				assert.Equal(t, connect.CodeCanceled, connect.CodeOf(testsupport.Recv(t, errs, patience, "the call")))
				served := testsupport.Recv(t, tm.got, patience, "the server's answer")
				assert.Equal(t, connect.CodeCanceled, connect.CodeOf(served), "%v", served)
				testsupport.Eventually(t, patience, "the waiter leaving the queue", func() bool { return rpctest.Queued(t, srv.Client(), name) == 0 })
				release()
				assert.Empty(t, ran, "the handler ran for a client that left")
			})
			t.Run("a key function's error answers InvalidArgument with its text", func(t *testing.T) {
				i := connectmw.New(locks, connectmw.WithKey(func(context.Context, connect.AnyRequest) (string, error) {
					return "", errors.New("no order id in the request")
				}))
				base := serveLocked(t, &service{}, i)
				_, err := tr.call(t.Context(), base, "x")
				assert.Equal(t, connect.CodeInvalidArgument, connect.CodeOf(err))
				var ce *connect.Error
				require.ErrorAs(t, err, &ce)
				assert.Equal(t, "no order id in the request", ce.Message())
			})
			t.Run("a missing header answers InvalidArgument", func(t *testing.T) {
				base := serveLocked(t, &service{}, connectmw.New(locks, connectmw.WithHeaderKey("x-tenant")))
				err := tr.check(t.Context(), base)
				assert.Equal(t, connect.CodeInvalidArgument, connect.CodeOf(err), "%v", err)
			})
			t.Run("Redis unreachable answers Unavailable", func(t *testing.T) {
				base := serveLocked(t, &service{}, connectmw.New(locktest.NewDown(t), connectmw.WithWait(0)))
				err := tr.check(t.Context(), base)
				assert.Equal(t, connect.CodeUnavailable, connect.CodeOf(err), "%v", err)
			})
			t.Run("a lost lock answers Aborted, also when the handler succeeds", func(t *testing.T) {
				short := locktest.NewOn(t, srv, lockmw.WithWatchdogTimeout(600*time.Millisecond))
				l := rpctest.NewLoser()
				base := serveLocked(t, &service{work: l.Work}, connectmw.New(short))
				errs := make(chan error, 1)
				go func() { errs <- tr.check(t.Context(), base) }()
				testsupport.Recv(t, l.Entered, patience, "the handler")
				_, err := locks.Mutex(name).ForceUnlock(t.Context())
				require.NoError(t, err)
				assert.ErrorIs(t, testsupport.Recv(t, l.Causes, patience, "the hold context's cause"), lockmw.ErrLockLost)
				err = testsupport.Recv(t, errs, patience, "the call")
				assert.Equal(t, connect.CodeAborted, connect.CodeOf(err), "%v", err)
			})
		})
	}
}

func TestStreams(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	locks := locktest.NewOn(t, srv)
	for _, tr := range transports(t) {
		for _, k := range streamKinds {
			if k.bidi && !tr.h2 {
				continue // Connect's bidi streams need HTTP/2
			}
			t.Run(tr.name+" "+k.name+" calls are serialized across servers", func(t *testing.T) {
				b := rpctest.NewBlocker()
				bases := twoServers(t, srv, &service{work: b.Work}, connectmw.WithWait(0))
				done := make(chan error, 1)
				go func() { _, err := tr.stream(t.Context(), bases[0], k.proc, "first"); done <- err }()
				testsupport.Recv(t, b.Entered, patience, "the first stream")
				got, err := tr.stream(t.Context(), bases[1], k.proc, "second")
				assert.Equal(t, connect.CodeAborted, connect.CodeOf(err), "%v", err)
				assert.Empty(t, got)
				retryDelay(t, err)
				close(b.Release)
				require.NoError(t, testsupport.Recv(t, done, patience, "the first stream"))
				got, err = tr.stream(t.Context(), bases[1], k.proc, "third")
				require.NoError(t, err)
				assert.Contains(t, got, "ok:third")
			})
			t.Run(tr.name+" "+k.name+" calls lock per WithStreamKey", func(t *testing.T) {
				i := connectmw.New(locks, connectmw.WithWait(0), connectmw.WithStreamKey(func(_ context.Context, spec connect.Spec, h http.Header) (string, error) {
					return "upload:" + spec.Procedure + ":" + h.Get("X-Upload"), nil
				}))
				base := serveLocked(t, &service{}, i)
				release := rpctest.HoldLock(t, srv, "upload:"+k.proc+":busy", 0)
				defer release()
				_, err := tr.stream(t.Context(), base, k.proc, "x", "X-Upload", "busy")
				assert.Equal(t, connect.CodeAborted, connect.CodeOf(err), "%v", err)
				got, err := tr.stream(t.Context(), base, k.proc, "x", "X-Upload", "free")
				require.NoError(t, err)
				assert.Contains(t, got, "ok:x")
			})
			t.Run(tr.name+" "+k.name+" calls end Aborted when the lock is lost", func(t *testing.T) {
				short := locktest.NewOn(t, srv, lockmw.WithWatchdogTimeout(600*time.Millisecond))
				l := rpctest.NewLoser()
				base := serveLocked(t, &service{work: l.Work}, connectmw.New(short))
				type result struct {
					got []string
					err error
				}
				done := make(chan result, 1)
				go func() {
					got, err := tr.stream(t.Context(), base, k.proc, "x")
					done <- result{got, err}
				}()
				testsupport.Recv(t, l.Entered, patience, "the handler")
				_, err := locks.Mutex("rpc:" + k.proc).ForceUnlock(t.Context())
				require.NoError(t, err)
				assert.ErrorIs(t, testsupport.Recv(t, l.Causes, patience, "the hold context's cause"), lockmw.ErrLockLost)
				r := testsupport.Recv(t, done, patience, "the stream")
				assert.Equal(t, connect.CodeAborted, connect.CodeOf(r.err), "%v", r.err)
				if k.proc == watchProc {
					assert.Equal(t, []string{"ok:x"}, r.got, "what the stream sent before the loss")
				} else {
					assert.Empty(t, r.got, "the send after the loss went out")
				}
			})
		}
	}
}

func TestClientCallsPassThrough(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	release := rpctest.HoldLock(t, srv, "rpc:"+callProc, 0)
	defer release()
	base := serveHTTP(t, (&service{}).mux()) // an unlocked server
	tr := transports(t)[1]
	tr.opts = append(tr.opts, connect.WithInterceptors(connectmw.New(locktest.NewOn(t, srv), connectmw.WithWait(0))))
	got, err := tr.call(t.Context(), base, "x")
	require.NoError(t, err, "a client's call took the lock")
	assert.Equal(t, "ok:x", got)
	streamed, err := tr.stream(t.Context(), base, chatProc, "x")
	require.NoError(t, err)
	assert.Equal(t, []string{"ok:x"}, streamed)
}
