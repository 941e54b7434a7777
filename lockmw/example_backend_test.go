package lockmw_test

import (
	"context"
	"fmt"

	"github.com/go-rlock/rlock/lockmw"
	"github.com/go-rlock/rlock/lockmw/backend/goredis"
	"github.com/redis/go-redis/v9"
)

// A Client on a back-end of the seam (package lockmw/backend): here go-redis's,
// which is what New builds; a back-end for another client (rueidis,
// valkey-go) is passed the same way.
func ExampleNewFromBackend() {
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer rdb.Close()
	locks := lockmw.NewFromBackend(goredis.New(rdb))
	defer locks.Close()

	m := locks.Mutex("backend-example")
	hold, err := m.Lock(context.Background())
	if err != nil {
		fmt.Println("lock:", err)
		return
	}
	defer m.Unlock(hold)
	fmt.Println("holding", m.Name())
	// Output: holding backend-example
}
