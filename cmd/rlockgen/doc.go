// Command rlockgen generates lock decorators for Go interfaces: the methods
// that carry an //rlock:lock directive run under a distributed lock of
// lockmw, the others call the wrapped value directly. It is Go's form of
// Redisson's @RequestLockable, lock4j's @Lock4j and ShedLock's
// @SchedulerLock: the lock is written on the method, a generator does the
// rest.
//
//	//go:generate go run github.com/go-rlock/rlock/cmd/rlockgen -type Billing
//	type Billing interface {
//		// Charge bills one order at a time per order.
//		//rlock:lock key="billing:charge#{orderID}" wait=5s
//		Charge(ctx context.Context, orderID string, cents int64) (Receipt, error)
//
//		Quote(ctx context.Context, orderID string) (int64, error) // no directive: passed through
//	}
//
// go generate then writes billing_rlock.go beside the interface, with
//
//	func NewLockedBilling(c *lockmw.Client, next Billing) Billing
//
// Usage:
//
//	rlockgen -type T[,T...] [-output file] [-tags tags] [dir]
//
// -type names one or more interfaces of the package in dir (default the
// current directory, as go generate runs it); -output names the file to
// write (default <first type, lower case>_rlock.go in dir); -tags gives
// build tags to load the package with. rlockgen overwrites only a file it
// wrote (whose first line is its "Code generated" header).
//
// # The directive
//
//	//rlock:lock key="…" [wait=D] [lease=D] [minhold=D] [permits=N | rw=read|write] [fencing] [group="…"]
//
// in the doc comment of an interface method. The key is literal text with
// {param}, {param.Field} and {param.Method()} references to the method's
// parameters (chains such as {o.Customer.ID} too), each written with
// fmt.Sprint; {{ and }} write literal braces, for Redis Cluster hash tags.
// wait, lease and minhold are WithWait, WithLease and WithMinHold of lockmw
// (no wait: until the call's context ends; no lease: the watchdog renews
// the lock; no minhold: released when the call returns); permits=N makes
// the lock a Semaphore of N permits; rw=read and rw=write take the read
// (shared) or the write (exclusive) side of an RWMutex; fencing makes the
// Mutex or the write side hand out fencing tokens (lockmw.WithFencing);
// group is the lock's metrics label (lockmw.WithGroup), by default the key
// template as written. Directives whose key templates name the same locks
// make the same kind of lock.
//
// A locked method's first parameter must be a context.Context (the method
// of next gets the lock's hold context in it) and its last result an error.
// Every broken rule is reported as "file:line: message", and rlockgen exits
// with status 1 without writing anything.
//
// docs/annotations.md in the repository describes the directive, the rules
// and the generated code in full.
package main
