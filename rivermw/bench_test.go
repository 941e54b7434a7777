package rivermw_test

import (
	"context"
	"testing"

	"github.com/riverqueue/river/rivertype"

	"github.com/go-rlock/rlock/internal/redistest"
	"github.com/go-rlock/rlock/lockmw"
	"github.com/go-rlock/rlock/rivermw"
)

// BenchmarkWork measures what the middleware adds to one attempt on a local
// redis-server, without River around it: the bare doInner, an attempt that
// takes and releases the lock, and a busy attempt (the key held by another
// client), which makes one lock attempt and returns a snooze.
func BenchmarkWork(b *testing.B) {
	srv := redistest.Start(b)
	c := lockmw.New(srv.NewClient())
	defer c.Close()
	mw := rivermw.New(c)
	doInner := func(context.Context) error { return nil }
	ctx := context.Background()
	free := &rivertype.JobRow{ID: 1, Kind: "bench", EncodedArgs: []byte(`{"n":1}`)}
	busy := &rivertype.JobRow{ID: 2, Kind: "bench", EncodedArgs: []byte(`{"n":2}`)}
	other := lockmw.New(srv.NewClient())
	defer other.Close()
	m := other.Mutex(rivermw.DefaultKeyPrefix + "lock:" + rivermw.DefaultKey(ctx, busy))
	hold, err := m.Lock(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer m.Unlock(hold)

	b.Run("bare doInner", func(b *testing.B) {
		for b.Loop() {
			if err := doInner(ctx); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("lock", func(b *testing.B) {
		for b.Loop() {
			if err := mw.Work(ctx, free, doInner); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("busy, snoozed", func(b *testing.B) {
		for b.Loop() {
			if _, ok := mw.Work(ctx, busy, doInner).(*rivertype.JobSnoozeError); !ok {
				b.Fatal("not snoozed")
			}
		}
	})
}
