package lockmw_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/go-rlock/rlock/internal/redistest"
	"go.uber.org/goleak"
)

// redisAddr is a redis-server the examples use, started for the test binary.
var redisAddr string

func TestMain(m *testing.M) {
	srv, err := redistest.Launch(redistest.Config{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	redisAddr = srv.Addr()
	code := m.Run()
	_ = srv.Close()
	if code == 0 {
		// go-redis retries a failed dial in a goroutine that sleeps a second
		// before it sees its pool closed: not ours, and it ends by itself.
		if err := goleak.Find(goleak.IgnoreAnyFunction("github.com/redis/go-redis/v9/internal/pool.(*ConnPool).tryDial")); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}
