package crashworker_test

import (
	"fmt"

	"github.com/go-rlock/rlock/internal/reliability"
	"github.com/go-rlock/rlock/internal/reliability/crashworker"
	"github.com/go-rlock/rlock/lockmw/backend/goredis"
	"github.com/redis/go-redis/v9"
)

// A worker program is Main with a Dialer of its client, whose sends it
// records as the checker needs them: here go-redis, through its hooks.
// Main returns the exit status (an unknown mode: 1).
func Example() {
	dial := func(addr string, o crashworker.DialOptions) (crashworker.Conn, error) {
		rdb := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: !o.DefaultOptions})
		rdb.AddHook(reliability.SendHook{Client: o.Client})
		if o.Sends != nil {
			rdb.AddHook(o.Sends.Hook())
		}
		return crashworker.Conn{Backend: goredis.New(rdb), Close: func() { _ = rdb.Close() }}, nil
	}
	fmt.Println(crashworker.Main([]string{"no-such-mode"}, dial))
	// Output: 1
}
