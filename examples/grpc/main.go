// Command grpc shows one method serialized across a grpc-go server and a
// connect-go server; run it with
//
//	go run -C examples/grpc .
//
// It needs nothing installed: without REDIS_ADDR it runs against an embedded
// in-process Redis (see examples/internal/devredis); set
// REDIS_ADDR=host:port to use a real server.
//
// Two "instances" of a service, each with its own lockmw Client on one
// Redis, serve the gRPC health service: one with grpc-go under grpcmw, one
// with connect-go (grpchealth, over h2c) under connectmw. A Check takes
// 100ms. Both lock "rpc:/grpc.health.v1.Health/Check", the default name of
// that method in both packages, so four Checks sent at once, two to each
// server, run one at a time. Then the lock is held elsewhere (a maintenance
// job, say): each server waits its 1s and answers Aborted with a RetryInfo
// telling the client when to come back. The program exits with status 1 if
// two Checks overlapped.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/go-rlock/rlock/examples/internal/devredis"
	"github.com/go-rlock/rlock/lockmw"
)

// work is how long a Check takes; wait how long a server waits for the lock.
const (
	work = 100 * time.Millisecond
	wait = time.Second
)

// checkLock is the name both servers lock for a Check.
const checkLock = "rpc:/grpc.health.v1.Health/Check"

func main() {
	ctx := context.Background()
	rdb, closeRedis, err := devredis.Client(ctx)
	if err == nil {
		defer closeRedis()
		err = run(ctx, os.Stdout, rdb)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "grpc example:", err)
		os.Exit(1)
	}
}

// run runs the example on rdb, printing to out.
func run(ctx context.Context, out io.Writer, rdb redis.UniversalClient) error {
	j := &journal{out: out, start: time.Now()}
	var instances []*instance
	for _, start := range []func(*lockmw.Client, *journal) (*instance, error){startGRPC, startConnect} {
		locks := lockmw.New(rdb)
		defer locks.Close()
		in, err := start(locks, j)
		if err != nil {
			return err
		}
		defer in.stop()
		instances = append(instances, in)
	}

	fmt.Fprintf(out, "== four Checks at once, two on each server; both lock %q\n", checkLock)
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for k := range 4 {
		in := instances[k%2]
		wg.Go(func() {
			if err := in.check(ctx); err != nil {
				errs <- fmt.Errorf("%s: %w", in.name, err)
			}
		})
	}
	wg.Wait()
	close(errs)
	if err, ok := <-errs; ok {
		return err
	}
	if j.clash {
		return fmt.Errorf("two Checks ran at once")
	}
	fmt.Fprintln(out, "at most one Check ran at a time")

	fmt.Fprintf(out, "== %q held elsewhere: each server waits %v, then answers\n", checkLock, wait)
	m := lockmw.New(rdb)
	defer m.Close()
	hold, err := m.Mutex(checkLock).Lock(ctx)
	if err != nil {
		return err
	}
	defer m.Mutex(checkLock).Unlock(hold)
	answers := make([]string, len(instances))
	for n, in := range instances {
		wg.Go(func() { answers[n] = in.name + ": " + in.busy(ctx) })
	}
	wg.Wait()
	for _, a := range answers {
		fmt.Fprintln(out, a)
	}
	return nil
}

// instance is one server of the service and a client of it.
type instance struct {
	name  string
	check func(ctx context.Context) error
	busy  func(ctx context.Context) string // a Check's answer while the lock is held elsewhere
	stop  func()
}

// journal prints the Checks' starts and ends with the time since the start,
// and notices when two overlap.
type journal struct {
	out   io.Writer
	start time.Time
	mu    sync.Mutex
	in    int
	clash bool
}

// checkWork is a Check's work on the server called name.
func (j *journal) checkWork(ctx context.Context, name string) error {
	j.event(name, "starts", 1)
	defer j.event(name, "ends", -1)
	select {
	case <-time.After(work):
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

func (j *journal) event(name, what string, delta int) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.in += delta
	j.clash = j.clash || j.in > 1
	fmt.Fprintf(j.out, "%6s  %-10s Check %s\n", time.Since(j.start).Round(10*time.Millisecond), name, what)
}
