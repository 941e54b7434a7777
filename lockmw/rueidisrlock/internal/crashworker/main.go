// Command crashworker is the crash suite's worker program on rueidis:
// Main of the root module's internal/reliability/crashworker, whose doc
// says its modes, with a rueidis client of each address, built with
// rueidis's default options but InitAddress (-default-options changes
// nothing: rueidis honours a call's context by default) and wrapped so
// that its scripts' sends are recorded (sends.go).
// TestCrashMutualExclusionOnRueidis runs the suite's mutex scenario with
// it.
package main

import (
	"os"

	"github.com/go-rlock/rlock/internal/reliability/crashworker"
	"github.com/go-rlock/rlock/lockmw/rueidisrlock"
	"github.com/redis/rueidis"
)

func main() {
	os.Exit(crashworker.Main(os.Args[1:], dial))
}

// dial returns a rueidis client of addr as o says.
func dial(addr string, o crashworker.DialOptions) (crashworker.Conn, error) {
	c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}})
	if err != nil {
		return crashworker.Conn{}, err
	}
	return crashworker.Conn{Backend: rueidisrlock.Backend(record(c, o)), Close: c.Close}, nil
}
