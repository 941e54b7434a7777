package rivermw_test

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertype"

	"github.com/go-rlock/rlock/lockmw"
	"github.com/go-rlock/rlock/rivermw"
)

// SyncArgs are the args of a job that must not run twice at once for one
// account.
type SyncArgs struct {
	Account string `json:"account"`
}

func (SyncArgs) Kind() string { return "sync_account" }

// SyncWorker syncs one account.
type SyncWorker struct {
	river.WorkerDefaults[SyncArgs]
}

func (w *SyncWorker) Work(ctx context.Context, job *river.Job[SyncArgs]) error {
	// ctx is the lock's hold context: it ends, with cause
	// lockmw.ErrLockLost, if the lock is lost.
	return nil
}

// Every River client of the deployment gets the middleware, on the same
// Redis: jobs of one kind and args run one at a time across all of them, and
// a busy job is snoozed. (Not run: it needs a PostgreSQL and a Redis.)
func Example() {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, "postgres://localhost/app") // River's database, migrated
	if err != nil {
		panic(err)
	}
	defer pool.Close()
	rdb := redis.NewClient(&redis.Options{Addr: "localhost:6379"})
	defer rdb.Close()
	locks := lockmw.New(rdb)
	defer locks.Close()

	workers := river.NewWorkers()
	river.AddWorker(workers, &SyncWorker{})
	client, err := river.NewClient(riverpgxv5.New(pool), &river.Config{
		Queues:     map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: 50}},
		Workers:    workers,
		Middleware: []rivertype.Middleware{rivermw.New(locks, rivermw.WithMaxSnoozes(100))},
	})
	if err != nil {
		panic(err)
	}
	if err := client.Start(ctx); err != nil {
		panic(err)
	}
	defer client.Stop(ctx)
	_, err = client.Insert(ctx, SyncArgs{Account: "acme"}, nil)
	fmt.Println(err)
}

// A key of the account alone: its jobs of every kind run one at a time,
// those of other accounts side by side; "" leaves jobs without an account
// unlocked. Two may run at once with WithPermits(2); a busy job waits up to a
// second for its turn before it is snoozed.
func ExampleWithKey() {
	byAccount := func(_ context.Context, job *rivertype.JobRow) string {
		var args struct {
			Account string `json:"account"`
		}
		if json.Unmarshal(job.EncodedArgs, &args) != nil || args.Account == "" {
			return ""
		}
		return "account:" + args.Account
	}
	rdb := redis.NewClient(&redis.Options{Addr: "localhost:6379"})
	defer rdb.Close()
	locks := lockmw.New(rdb)
	defer locks.Close()
	mw := rivermw.New(locks, rivermw.WithKey(byAccount), rivermw.WithPermits(2), rivermw.WithWait(time.Second))

	job := &rivertype.JobRow{Kind: "sync_account", EncodedArgs: []byte(`{"account":"acme"}`)}
	fmt.Println(byAccount(context.Background(), job))
	_ = mw // in river.Config.Middleware
	// Output: account:acme
}

// The default key is the kind and a hash of the encoded args: equal args,
// equal key.
func ExampleDefaultKey() {
	a := &rivertype.JobRow{Kind: "sync_account", EncodedArgs: []byte(`{"account":"acme"}`)}
	b := &rivertype.JobRow{Kind: "sync_account", EncodedArgs: []byte(`{"account":"acme"}`)}
	c := &rivertype.JobRow{Kind: "sync_account", EncodedArgs: []byte(`{"account":"globex"}`)}
	ctx := context.Background()
	fmt.Println(rivermw.DefaultKey(ctx, a) == rivermw.DefaultKey(ctx, b))
	fmt.Println(rivermw.DefaultKey(ctx, a) == rivermw.DefaultKey(ctx, c))
	fmt.Println(rivermw.DefaultKeyPrefix + "lock:" + rivermw.DefaultKey(ctx, a))
	// Output:
	// true
	// false
	// river:lock:sync_account:8aacc13ff62bafe5c9a1a7cac990e2cd
}
