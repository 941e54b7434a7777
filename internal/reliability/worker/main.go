// Command worker is the crash suite's worker program on go-redis:
// crashworker.Main, whose doc says its modes, with a go-redis client of
// each address. A client has ContextTimeoutEnabled unless -default-options
// keeps go-redis's defaults, and hooks that record its scripts' sends
// (reliability.SendHook, reliability.ScriptSends).
package main

import (
	"os"

	"github.com/go-rlock/rlock/internal/reliability"
	"github.com/go-rlock/rlock/internal/reliability/crashworker"
	"github.com/go-rlock/rlock/lockmw/backend/goredis"
	"github.com/redis/go-redis/v9"
)

func main() {
	os.Exit(crashworker.Main(os.Args[1:], dial))
}

// dial returns a go-redis client of addr as o says.
func dial(addr string, o crashworker.DialOptions) (crashworker.Conn, error) {
	rdb := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: !o.DefaultOptions})
	rdb.AddHook(reliability.SendHook{Client: o.Client})
	if o.Sends != nil {
		rdb.AddHook(o.Sends.Hook())
	}
	return crashworker.Conn{Backend: goredis.New(rdb), Close: func() { _ = rdb.Close() }}, nil
}
