// Package ledger is the interface whose generated decorator the behaviour
// tests of rlockgen run against a real redis-server: a method for each kind
// of lock the directive makes, and one without a directive. Its generated
// file, ledger_rlock.go, is committed; cmd/rlockgen's tests check that it is
// what rlockgen generates now.
package ledger

import "context"

//go:generate go run github.com/go-rlock/rlock/cmd/rlockgen -type Ledger

// Ledger posts to accounts.
type Ledger interface {
	// Post runs one call per account at a time, waiting as long as ctx lets
	// it.
	//rlock:lock key="ledger:post#{account}"
	Post(ctx context.Context, account string, cents int64) (int64, error)

	// Settle gives up after 200ms on a busy account.
	//rlock:lock key="ledger:settle#{account}" wait=200ms
	Settle(ctx context.Context, account string) (int64, error)

	// Export runs at most two exports per tenant at once.
	//rlock:lock key="ledger:export#{e.Tenant}" permits=2
	Export(ctx context.Context, e *Export) error

	// Audit hands out fencing tokens.
	//rlock:lock key="ledger:audit#{account}" fencing
	Audit(ctx context.Context, account string) (token int64, err error)

	// Rank returns several values.
	//rlock:lock key="ledger:rank#{account}"
	Rank(ctx context.Context, account string) (rank int, tier string, err error)

	// Statement reads an account's book beside the other reads of it.
	//rlock:lock key="ledger:book#{account}" rw=read
	Statement(ctx context.Context, account string) (string, error)

	// Close writes the book alone, with a fencing token: the write side of
	// Statement's lock.
	//rlock:lock key="ledger:book#{account}" rw=write fencing
	Close(ctx context.Context, account string) (token int64, err error)

	// Reconcile keeps its lock a minute at least, however soon it returns.
	//rlock:lock key="ledger:reconcile#{account}" minhold=1m
	Reconcile(ctx context.Context, account string) error

	// Balance has no directive: it calls next's at once.
	Balance(ctx context.Context, account string) (int64, error)
}

// Export is an export request.
type Export struct {
	Tenant string
}
