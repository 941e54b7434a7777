// Command demo shows, in about ten seconds, what rlock does. Run it with
//
//	make demo
//
// or go run ./examples/demo. It needs nothing installed: without REDIS_ADDR
// it runs against an embedded, in-process Redis (see
// examples/internal/devredis); set REDIS_ADDR=host:port to use a real server.
// It exits 0 when every section behaved as it says, and 1 otherwise.
//
// It runs eight sections, one after the other, each printing one line per
// event (with the time since the section began) and a summary line:
//
//  1. Two service instances, each with its own gocron scheduler and lockmw
//     Client, share a job that ticks every second (scheduler.Locker): each
//     tick runs once, on one instance or the other.
//  2. Two asynq servers share a queue into which a burst of duplicate tasks
//     is enqueued (asynqmw with a dedup window): each invoice is sent once,
//     the duplicates are skipped.
//  3. Concurrent HTTP requests for one order, sent to two instances of a
//     service (httpmw), run one at a time; a route that does not wait
//     answers 409 Conflict with Retry-After while another request holds it.
//  4. A reentrant call chain, lockmw.WithLock → Do → Wrap on one lock name,
//     with the hold count going 1 → 2 → 3 and back; a context that does not
//     carry the hold is refused even on the same Client.
//  5. A force unlock: the holder (watchdog timeout 300ms) learns at its next
//     renewal, its hold context cancelled with cause lockmw.ErrLockLost,
//     while a waiter takes the lock over.
//  6. The contention timeline of a few workers drawn from the OpenTelemetry
//     spans that otelhooks records: '.' waiting, '#' holding.
//  7. An export route limited to two at once across two instances (a
//     lockmw.Semaphore of 2 permits around the handler): five requests, all
//     served, and the timeline from the spans shows at most two at once.
//  8. Three instances, each with its own connections and Client, campaign
//     with lockmw.Lead on one name and tick while they lead: the leader
//     crashes (its connections drop, nothing is released) and another takes
//     over once the lock expires, within the watchdog timeout plus one
//     renewal interval; that one steps down and the third takes over at once.
//     The terms are drawn from the spans.
//
// Every server, scheduler and Client it starts is stopped before it exits.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/go-rlock/rlock/examples/internal/devredis"
)

// timeLimit bounds the whole demo.
const timeLimit = 25 * time.Second

func main() {
	ctx, cancel := context.WithTimeout(context.Background(), timeLimit)
	defer cancel()
	if err := run(ctx, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		cancel()
		os.Exit(1)
	}
}

// run runs the demo on the Redis devredis gives (embedded, or $REDIS_ADDR)
// and writes its report to w.
func run(ctx context.Context, w io.Writer) error {
	rdb, closeRedis, err := devredis.Client(ctx)
	if err != nil {
		return err
	}
	defer closeRedis()
	where := "an embedded Redis (miniredis; set REDIS_ADDR=host:port for a real server)"
	if !devredis.Embedded() {
		where = "the Redis at " + os.Getenv(devredis.EnvAddr)
	}
	return demo(ctx, w, rdb, where)
}

// section is one part of the demo.
type section struct {
	title string
	run   func(ctx context.Context, p *printer, rdb redis.UniversalClient) error
}

// sections are the demo's parts, in order.
var sections = []section{
	{"Two service instances share one cron job (gocron + scheduler.Locker)", cronSection},
	{"A burst of duplicate asynq tasks (asynqmw)", asynqSection},
	{"Concurrent HTTP requests to one route (httpmw)", httpSection},
	{"A reentrant call chain (lockmw.WithLock → Do → Wrap)", reentrantSection},
	{"A force unlock cancels the holder's context (ErrLockLost)", forceUnlockSection},
	{"The contention timeline, from the OpenTelemetry spans (otelhooks)", timelineSection},
	{"An export route limited to two at once (httpmw.WithPermits, otelhooks)", exportSection},
	{"One leader at a time: a crash, a takeover, a hand-off (lockmw.Lead)", leadershipSection},
}

// demo runs every section on rdb, described as where, and stops at the first
// that fails.
func demo(ctx context.Context, w io.Writer, rdb redis.UniversalClient, where string) error {
	p := &printer{w: w}
	start := time.Now()
	p.printf("rlock demo on %s\n", where)
	for i, s := range sections {
		if err := p.err(); err != nil { // nobody would see it
			return err
		}
		p.header(i+1, s.title)
		if err := s.run(ctx, p, rdb); err != nil {
			return errors.Join(fmt.Errorf("section %d (%s): %w", i+1, s.title, err), p.err())
		}
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("after section %d: %w", i+1, err)
		}
	}
	p.printf("\ndemo done in %.1fs: every section behaved as it says\n", time.Since(start).Seconds())
	return p.err()
}
