package lockmw_test

import (
	"context"
	"testing"
	"time"

	"github.com/go-rlock/rlock/internal/redistest"
	"github.com/go-rlock/rlock/lockmw"
)

func TestSmoke(t *testing.T) {
	srv := redistest.Start(t)
	a := lockmw.New(srv.NewClient(), lockmw.WithWatchdogTimeout(time.Second))
	b := lockmw.New(srv.NewClient(), lockmw.WithWatchdogTimeout(time.Second))
	defer a.Close()
	defer b.Close()
	ctx := context.Background()
	ma, mb := a.Mutex("smoke"), b.Mutex("smoke")
	h, err := ma.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	h2, err := ma.Lock(h)
	if err != nil {
		t.Fatal(err)
	}
	n, _ := ma.HoldCount(h2)
	t.Log("count", n)
	_, err = mb.TryLock(ctx, 0, 0)
	t.Log("busy:", err)
	done := make(chan error)
	go func() {
		start := time.Now()
		hb, err := mb.Lock(ctx)
		t.Log("b acquired after", time.Since(start), err)
		if err == nil {
			err = mb.Unlock(hb)
		}
		done <- err
	}()
	time.Sleep(1500 * time.Millisecond)
	if err := ma.Unlock(h2); err != nil {
		t.Fatal(err)
	}
	if err := ma.Unlock(h); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
