package rueidisrlock_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-rlock/rlock/internal/redistest"
	"github.com/go-rlock/rlock/lockmw"
	"github.com/go-rlock/rlock/lockmw/rueidisrlock"
	"github.com/redis/rueidis"
)

// A service on rueidis locks with the client it has: single node here;
// ClientOption.Sentinel for a Sentinel group, or the cluster's addresses in
// InitAddress for a cluster.
func Example() {
	srv, err := redistest.Launch(redistest.Config{}) // a real redis-server for the example
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()

	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{srv.Addr()}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer rc.Close()
	locks := rueidisrlock.New(rc)
	defer locks.Close()

	ctx := context.Background()
	m := locks.Mutex("invoice:42")
	hold, err := m.Lock(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	// Another owner (here a go-redis Client: the same wire) is refused.
	other := lockmw.New(srv.Client())
	defer other.Close()
	_, err = other.Mutex("invoice:42").TryLock(ctx, 0, 0)
	fmt.Println("the go-redis owner:", errors.Is(err, lockmw.ErrNotAcquired))
	fmt.Println("unlock:", m.Unlock(hold))
	// Output:
	// the go-redis owner: true
	// unlock: <nil>
}
