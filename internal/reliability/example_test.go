package reliability_test

import (
	"context"
	"fmt"

	"github.com/go-rlock/rlock/internal/redistest"
	"github.com/go-rlock/rlock/internal/reliability"
	"github.com/go-rlock/rlock/lockmw"
)

// A holder passes its fencing token with every write; the resource refuses
// a token older than one it has seen, so a holder that lost the lock without
// knowing it cannot overwrite the work of the next one.
func ExampleGuardedWrite() {
	srv, err := redistest.Launch(redistest.Config{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()
	rdb := srv.Client()
	c := lockmw.New(rdb)
	defer c.Close()
	ctx := context.Background()
	m := c.Mutex("invoice:42", lockmw.WithFencing())

	old, _ := m.Lock(ctx)
	oldTok, _ := m.Token(old)
	_, _ = m.ForceUnlock(ctx) // as if its key had expired while it was paused
	cur, _ := m.Lock(ctx)
	curTok, _ := m.Token(cur)

	ok, _ := reliability.GuardedWrite(ctx, rdb, "invoice:42:data", curTok, "paid")
	fmt.Println("current holder:", ok)
	ok, _ = reliability.GuardedWrite(ctx, rdb, "invoice:42:data", oldTok, "draft")
	fmt.Println("stale holder:", ok)
	_ = m.Unlock(cur)
	// Output:
	// current holder: true
	// stale holder: false
}
