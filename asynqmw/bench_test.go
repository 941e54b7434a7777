package asynqmw_test

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"github.com/go-rlock/rlock/asynqmw"
	"github.com/go-rlock/rlock/internal/redistest"
	"github.com/go-rlock/rlock/lockmw"
)

// BenchmarkProcessTask measures what the middleware adds to one task on a
// local redis-server: no middleware, the lock alone, the lock with a dedup
// window (one EXISTS and one SET more; each run has a new key, so none is
// skipped).
func BenchmarkProcessTask(b *testing.B) {
	srv := redistest.Start(b)
	c := lockmw.New(srv.NewClient())
	defer c.Close()
	var n atomic.Int64
	fresh := func(context.Context, *asynq.Task) string { return "bench:" + strconv.FormatInt(n.Add(1), 10) }
	h := asynq.HandlerFunc(func(context.Context, *asynq.Task) error { return nil })
	for _, bc := range []struct {
		name string
		h    asynq.Handler
	}{
		{"bare handler", h},
		{"lock", asynqmw.New(c)(h)},
		{"lock+dedup", asynqmw.New(c, asynqmw.WithKey(fresh), asynqmw.WithDedupWindow(time.Minute))(h)},
	} {
		b.Run(bc.name, func(b *testing.B) {
			task := asynq.NewTask("bench", []byte(bc.name))
			ctx := context.Background()
			for b.Loop() {
				if err := bc.h.ProcessTask(ctx, task); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
