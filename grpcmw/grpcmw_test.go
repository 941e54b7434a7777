package grpcmw_test

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/go-rlock/rlock/grpcmw"
	"github.com/go-rlock/rlock/internal/redistest"
	"github.com/go-rlock/rlock/internal/rpclock/rpctest"
	"github.com/go-rlock/rlock/internal/testsupport"
	"github.com/go-rlock/rlock/internal/testsupport/locktest"
	"github.com/go-rlock/rlock/lockmw"
)

// twoServers serves svc on two servers, each with its own lockmw Client on
// srv and an Interceptor with opts, as two instances of a service would.
// The watchdog timeout of 10s makes waiters retry every 3.3s (a hand-off a
// new Client's first waiter misses, see httpmw's tests, costs that, not
// 10s), and leaves a lock handed over a claim window of 1s: with httpmw's 3s
// (a window of 300ms) a loaded machine stalls a holder past it, and the
// call then rightly ends Aborted, its lock lost.
func twoServers(t *testing.T, srv *redistest.Server, svc *service, opts ...grpcmw.Option) [2]*grpc.ClientConn {
	t.Helper()
	var ccs [2]*grpc.ClientConn
	for n := range ccs {
		i := grpcmw.New(locktest.NewOn(t, srv, lockmw.WithWatchdogTimeout(10*time.Second)), opts...)
		ccs[n] = serveLocked(t, svc, i.Unary(), i.Stream())
	}
	return ccs
}

func TestSerializesAMethodAcrossServers(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	var g rpctest.Gauge
	ccs := twoServers(t, srv, &service{work: g.Work}, grpcmw.WithWait(lockmw.Forever))
	const n = 16
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for k := range n {
		wg.Go(func() {
			// Different values: the lock is per method, not per request.
			_, err := call(t.Context(), ccs[k%2], callMethod, strconv.Itoa(k))
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	all, most := g.Counts()
	assert.Equal(t, n, all)
	assert.Equal(t, 1, most, "calls of one method ran concurrently")
}

func TestDistinctKeysRunInParallel(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	t.Run("distinct methods", func(t *testing.T) {
		ccs := twoServers(t, srv, &service{work: rpctest.Barrier(2)})
		errs := make(chan error, 2)
		go func() { _, err := call(t.Context(), ccs[0], callMethod, "a"); errs <- err }()
		go func() { _, err := call(t.Context(), ccs[1], otherMethod, "b"); errs <- err }()
		for range 2 {
			require.NoError(t, testsupport.Recv(t, errs, patience+patience, "a call"))
		}
	})
	t.Run("distinct metadata values of one method", func(t *testing.T) {
		ccs := twoServers(t, srv, &service{work: rpctest.Barrier(2)}, grpcmw.WithMetadataKey("X-Order-ID"))
		errs := make(chan error, 2)
		for n, id := range []string{"1", "2"} {
			go func() {
				ctx := metadata.AppendToOutgoingContext(t.Context(), "x-order-id", id)
				_, err := call(ctx, ccs[n], callMethod, id)
				errs <- err
			}()
		}
		for range 2 {
			require.NoError(t, testsupport.Recv(t, errs, patience+patience, "a call"))
		}
	})
	t.Run("one metadata value serializes", func(t *testing.T) {
		b := rpctest.NewBlocker()
		i := grpcmw.New(locktest.NewOn(t, srv), grpcmw.WithMetadataKey("x-order-id"), grpcmw.WithWait(0))
		cc := serveLocked(t, &service{work: b.Work}, i.Unary(), i.Stream())
		ctx := metadata.AppendToOutgoingContext(t.Context(), "x-order-id", "7/a b")
		errs := make(chan error, 1)
		go func() { _, err := call(ctx, cc, callMethod, "first"); errs <- err }()
		testsupport.Recv(t, b.Entered, patience, "the first call")
		require.Equal(t, int64(1), rpctest.Holders(t, srv, "rpc:"+callMethod+"#x-order-id=7%2Fa+b"), "the lock's name")
		_, err := call(ctx, cc, callMethod, "second")
		assert.Equal(t, codes.Aborted, status.Code(err), "%v", err)
		close(b.Release)
		require.NoError(t, testsupport.Recv(t, errs, patience, "the first call"))
	})
}

func TestPermits(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	// Two permits: two calls meet inside at once...
	ccs := twoServers(t, srv, &service{work: rpctest.Barrier(2)}, grpcmw.WithPermits(2), grpcmw.WithWait(0))
	errs := make(chan error, 2)
	for n := range 2 {
		go func() { _, err := call(t.Context(), ccs[n], callMethod, "x"); errs <- err }()
	}
	for range 2 {
		require.NoError(t, testsupport.Recv(t, errs, patience+patience, "a call"))
	}

	// ...and a third finds none left, with the first permit's TTL as its
	// retry delay.
	b := rpctest.NewBlocker()
	ccs = twoServers(t, srv, &service{work: b.Work}, grpcmw.WithPermits(2), grpcmw.WithWait(0))
	for n := range 2 {
		go func() { _, err := call(t.Context(), ccs[n], otherMethod, "x"); errs <- err }()
		testsupport.Recv(t, b.Entered, patience, "a call holding a permit")
	}
	var trailer metadata.MD
	_, err := call(t.Context(), ccs[0], otherMethod, "x", grpc.Trailer(&trailer))
	require.Equal(t, codes.Aborted, status.Code(err), "%v", err)
	delay := retryDelay(t, err)
	assert.Greater(t, delay, time.Second, "the permit's TTL, up to the watchdog timeout")
	assert.LessOrEqual(t, delay, 10*time.Second)
	assert.Equal(t, []string{strconv.FormatInt(delay.Milliseconds(), 10)}, trailer.Get("grpc-retry-pushback-ms"))
	n, err := srv.Client().ZCard(t.Context(), "{rpc:limit:"+otherMethod+"}:timeout").Result()
	require.NoError(t, err)
	assert.Equal(t, int64(2), n, "the semaphore's permits, named rpc:limit:<method>")
	close(b.Release)
	for range 2 {
		require.NoError(t, testsupport.Recv(t, errs, patience, "a call"))
	}
}

// retryDelay is the RetryInfo detail of err's status.
func retryDelay(t *testing.T, err error) time.Duration {
	t.Helper()
	for _, d := range status.Convert(err).Details() {
		if ri, ok := d.(*errdetails.RetryInfo); ok {
			return ri.GetRetryDelay().AsDuration()
		}
	}
	t.Fatalf("no RetryInfo in %v", err)
	return 0
}

// recorder is an interceptor, outside grpcmw's, that keeps the status the
// server answered: a client that gave up sees its own Canceled or
// DeadlineExceeded, whatever the server says.
type recorder struct {
	got     chan error
	timeout time.Duration // a deadline the server sets, when > 0
}

func newRecorder() *recorder { return &recorder{got: make(chan error, 16)} }

func (r *recorder) unary(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	if r.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, r.timeout)
		defer cancel()
	}
	resp, err := h(ctx, req)
	r.got <- err
	return resp, err
}

func TestCodes(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	locks := locktest.NewOn(t, srv)
	name := "rpc:" + callMethod

	t.Run("a busy lock answers Aborted with a retry delay", func(t *testing.T) {
		release := rpctest.HoldLock(t, srv, name, 0)
		defer release()
		i := grpcmw.New(locks, grpcmw.WithWait(0))
		cc := serveLocked(t, &service{}, i.Unary(), i.Stream())
		var trailer metadata.MD
		_, err := call(t.Context(), cc, callMethod, "x", grpc.Trailer(&trailer))
		require.Equal(t, codes.Aborted, status.Code(err), "%v", err)
		assert.Equal(t, grpcmw.DefaultRetryAfter, retryDelay(t, err), "no lease: the default")
		assert.Equal(t, []string{"1000"}, trailer.Get("grpc-retry-pushback-ms"))
	})
	t.Run("the retry delay is the holder's lease", func(t *testing.T) {
		const lease = 30 * time.Second
		release := rpctest.HoldLock(t, srv, name, lease)
		defer release()
		i := grpcmw.New(locks, grpcmw.WithWait(0), grpcmw.WithLease(time.Minute))
		cc := serveLocked(t, &service{}, i.Unary(), i.Stream())
		_, err := call(t.Context(), cc, callMethod, "x")
		require.Equal(t, codes.Aborted, status.Code(err), "%v", err)
		d := retryDelay(t, err)
		assert.Greater(t, d, time.Duration(0))
		assert.LessOrEqual(t, d, lease)
	})
	t.Run("the deadline while waiting answers DeadlineExceeded", func(t *testing.T) {
		release := rpctest.HoldLock(t, srv, name, 0)
		defer release()
		// A deadline the server sets (a client's deadline reaches the server
		// as a cancel when the client gives up first, which is Canceled).
		rec := newRecorder()
		rec.timeout = 200 * time.Millisecond
		i := grpcmw.New(locks, grpcmw.WithWait(lockmw.Forever))
		cc := serve(t, (&service{}).register, grpc.ChainUnaryInterceptor(rec.unary, i.Unary()))
		_, err := call(t.Context(), cc, callMethod, "x")
		assert.Equal(t, codes.DeadlineExceeded, status.Code(err), "%v", err)
		assert.Equal(t, "deadline exceeded while waiting for the lock", status.Convert(err).Message())
		served := testsupport.Recv(t, rec.got, patience, "the server's answer")
		assert.Equal(t, codes.DeadlineExceeded, status.Code(served), "%v", served)
	})
	t.Run("a cancel while waiting answers Canceled", func(t *testing.T) {
		release := rpctest.HoldLock(t, srv, name, 0)
		defer release()
		rec := newRecorder()
		i := grpcmw.New(locks, grpcmw.WithWait(lockmw.Forever))
		cc := serve(t, (&service{}).register, grpc.ChainUnaryInterceptor(rec.unary, i.Unary()))
		ctx, cancel := context.WithCancel(t.Context())
		errs := make(chan error, 1)
		go func() { _, err := call(ctx, cc, callMethod, "x"); errs <- err }()
		testsupport.Eventually(t, patience, "the call queued", func() bool { return rpctest.Queued(t, srv.Client(), name) == 1 })
		cancel()
		assert.Equal(t, codes.Canceled, status.Code(testsupport.Recv(t, errs, patience, "the call")))
		served := testsupport.Recv(t, rec.got, patience, "the server's answer")
		assert.Equal(t, codes.Canceled, status.Code(served), "%v", served)
	})
	t.Run("a key function's error answers InvalidArgument with its text", func(t *testing.T) {
		ran := false
		i := grpcmw.New(locks, grpcmw.WithKey(func(context.Context, string, any) (string, error) {
			return "", errors.New("no order id in the request")
		}))
		cc := serveLocked(t, &service{work: func(context.Context, string) error { ran = true; return nil }}, i.Unary(), i.Stream())
		_, err := call(t.Context(), cc, callMethod, "x")
		assert.Equal(t, codes.InvalidArgument, status.Code(err))
		assert.Equal(t, "no order id in the request", status.Convert(err).Message())
		assert.False(t, ran, "the handler ran")
	})
	t.Run("a missing metadata value answers InvalidArgument", func(t *testing.T) {
		i := grpcmw.New(locks, grpcmw.WithMetadataKey("x-tenant"))
		cc := serveLocked(t, &service{}, i.Unary(), i.Stream())
		_, err := call(t.Context(), cc, callMethod, "x")
		assert.Equal(t, codes.InvalidArgument, status.Code(err), "%v", err)
		assert.Contains(t, status.Convert(err).Message(), `"x-tenant"`)
	})
	t.Run("a name the lock cannot use answers InvalidArgument", func(t *testing.T) {
		i := grpcmw.New(locks, grpcmw.WithKey(func(context.Context, string, any) (string, error) {
			return "rpc:\x00bad", nil
		}))
		cc := serveLocked(t, &service{}, i.Unary(), i.Stream())
		_, err := call(t.Context(), cc, callMethod, "x")
		assert.Equal(t, codes.InvalidArgument, status.Code(err), "%v", err)
	})
	t.Run("an empty key runs the call unlocked", func(t *testing.T) {
		release := rpctest.HoldLock(t, srv, name, 0)
		defer release()
		i := grpcmw.New(locks, grpcmw.WithWait(0), grpcmw.WithKey(func(context.Context, string, any) (string, error) { return "", nil }))
		cc := serveLocked(t, &service{}, i.Unary(), i.Stream())
		got, err := call(t.Context(), cc, callMethod, "x")
		require.NoError(t, err)
		assert.Equal(t, "ok:x", got)
	})
	t.Run("Redis unreachable answers Unavailable", func(t *testing.T) {
		i := grpcmw.New(locktest.NewDown(t), grpcmw.WithWait(0))
		cc := serveLocked(t, &service{}, i.Unary(), i.Stream())
		_, err := call(t.Context(), cc, callMethod, "x")
		assert.Equal(t, codes.Unavailable, status.Code(err), "%v", err)
		assert.NotContains(t, status.Convert(err).Message(), "127.0.0.1", "a Redis error in the message")
	})
	t.Run("a lost lock answers Aborted, also when the handler returns nil", func(t *testing.T) {
		// A short watchdog timeout: renewal finds the lock gone soon.
		short := locktest.NewOn(t, srv, lockmw.WithWatchdogTimeout(600*time.Millisecond))
		i := grpcmw.New(short)
		l := rpctest.NewLoser()
		cc := serveLocked(t, &service{work: l.Work}, i.Unary(), i.Stream())
		errs := make(chan error, 1)
		go func() { _, err := call(t.Context(), cc, callMethod, "x"); errs <- err }()
		testsupport.Recv(t, l.Entered, patience, "the handler")
		_, err := locks.Mutex(name).ForceUnlock(t.Context())
		require.NoError(t, err)
		assert.ErrorIs(t, testsupport.Recv(t, l.Causes, patience, "the hold context's cause"), lockmw.ErrLockLost)
		err = testsupport.Recv(t, errs, patience, "the call")
		assert.Equal(t, codes.Aborted, status.Code(err), "%v", err)
	})
}
