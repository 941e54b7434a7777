package asynqmw_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/go-rlock/rlock/asynqmw"
	"github.com/go-rlock/rlock/internal/redistest"
	"github.com/go-rlock/rlock/internal/testsupport/locktest"
	"github.com/go-rlock/rlock/lockmw"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// waitLimit bounds every wait for an event in these tests.
const waitLimit = 15 * time.Second

// env is one test's redis-server with a lockmw Client on it.
type env struct {
	srv *redistest.Server
	rdb *redis.Client
	c   *lockmw.Client
}

func newEnv(t *testing.T, opts ...lockmw.Option) *env {
	t.Helper()
	srv := redistest.Start(t)
	rdb := srv.NewClient()
	return &env{srv: srv, rdb: rdb, c: locktest.New(t, rdb, opts...)}
}

// keys lists the middleware's keys under the default prefix: locks and dedup
// marks (not lockmw's short-lived latch keys).
func (e *env) keys(t *testing.T) []string {
	t.Helper()
	ks, err := e.rdb.Keys(t.Context(), asynqmw.DefaultKeyPrefix+"*").Result()
	require.NoError(t, err)
	return ks
}

// other returns a second lock owner on the same server, as another process.
func (e *env) other(t *testing.T) *lockmw.Client {
	return locktest.New(t, e.srv.NewClient())
}

// startServer starts an asynq server on rdb that retries quickly and does
// not count busy attempts as failures; it is shut down at cleanup.
func startServer(t *testing.T, rdb redis.UniversalClient, concurrency int, h asynq.Handler) {
	t.Helper()
	s := asynq.NewServerFromRedisClient(rdb, asynq.Config{
		Concurrency:              concurrency,
		TaskCheckInterval:        20 * time.Millisecond,
		DelayedTaskCheckInterval: 20 * time.Millisecond,
		IsFailure:                func(err error) bool { return !asynqmw.IsBusy(err) },
		RetryDelayFunc:           asynqmw.RetryDelay(10*time.Millisecond, func(int, error, *asynq.Task) time.Duration { return 10 * time.Millisecond }),
		ShutdownTimeout:          2 * time.Second,
		Logger:                   nopLogger{},
	})
	require.NoError(t, s.Start(h))
	t.Cleanup(s.Shutdown)
}

type nopLogger struct{}

func (nopLogger) Debug(...any) {}
func (nopLogger) Info(...any)  {}
func (nopLogger) Warn(...any)  {}
func (nopLogger) Error(...any) {}
func (nopLogger) Fatal(...any) {}

func enqueue(t *testing.T, rdb redis.UniversalClient, task *asynq.Task, opts ...asynq.Option) string {
	t.Helper()
	info, err := asynq.NewClientFromRedisClient(rdb).Enqueue(task, opts...)
	require.NoError(t, err)
	return info.ID
}

// result is what the middleware returned for one attempt of a task.
type result struct {
	id  string
	err error
}

// record is middleware, put outside asynqmw's, that reports every attempt's
// result on ch.
func record(ch chan<- result) asynq.MiddlewareFunc {
	return func(next asynq.Handler) asynq.Handler {
		return asynq.HandlerFunc(func(ctx context.Context, t *asynq.Task) error {
			err := next.ProcessTask(ctx, t)
			id, _ := asynq.GetTaskID(ctx)
			ch <- result{id: id, err: err}
			return err
		})
	}
}

// lockName is the lock the middleware takes for a task by default.
func lockName(typ string, payload []byte) string {
	sum := sha256.Sum256(payload)
	return "asynq:lock:" + typ + ":" + hex.EncodeToString(sum[:])[:32]
}

// doneKey is the default dedup mark of a task.
func doneKey(typ string, payload []byte) string {
	sum := sha256.Sum256(payload)
	return "asynq:done:" + typ + ":" + hex.EncodeToString(sum[:])[:32]
}

// awaitRelease holds a test handler until the test releases it, its
// context ends, or waitLimit passes.
func awaitRelease(ctx context.Context, release <-chan struct{}) error {
	select {
	case <-release:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(waitLimit):
		return errors.New("never released")
	}
}
