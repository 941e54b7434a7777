package lockmw

import (
	"context"
	"fmt"
	"time"
)

// Locker is what the decorators ([WithLock], [Do]) take: *[Mutex],
// *[Semaphore], *[RWMutex] (its write side; RWMutex.RLocker is its read
// side) and *[MultiLock] implement it. Lock and TryLock return the hold context that
// Unlock takes, as on a Mutex.
type Locker interface {
	Lock(ctx context.Context) (context.Context, error)
	TryLock(ctx context.Context, wait, lease time.Duration) (context.Context, error)
	Unlock(hold context.Context) error
	Name() string
}

// The lockers of this package: they can also give a hold up later (UnlockAt,
// for WithMinHold) and have a Client (whose end stops WithReleaseRetry).
var (
	_ ownLocker = (*Mutex)(nil)
	_ ownLocker = (*Semaphore)(nil)
	_ ownLocker = (*RWMutex)(nil)
	_ ownLocker = (*rwSide)(nil)
	_ ownLocker = (*MultiLock)(nil)
)

// ownLocker is a Locker of this package.
type ownLocker interface {
	Locker
	UnlockAt(hold context.Context, at time.Time) error
	client() *Client
}

func (m *Mutex) client() *Client     { return m.c }
func (s *Semaphore) client() *Client { return s.c }

// checkLocker returns ErrInvalidArgument, naming the caller what, for a nil
// Locker or a nil *Mutex, *Semaphore or *MultiLock inside one.
func checkLocker(what string, l Locker) error {
	switch v := l.(type) {
	case nil:
		return fmt.Errorf("%w: %s: nil Locker", ErrInvalidArgument, what)
	case *Mutex:
		if v == nil {
			return fmt.Errorf("%w: %s: nil *Mutex", ErrInvalidArgument, what)
		}
	case *Semaphore:
		if v == nil {
			return fmt.Errorf("%w: %s: nil *Semaphore", ErrInvalidArgument, what)
		}
	case *RWMutex:
		if v == nil {
			return fmt.Errorf("%w: %s: nil *RWMutex", ErrInvalidArgument, what)
		}
	case *MultiLock:
		if v == nil {
			return fmt.Errorf("%w: %s: nil *MultiLock", ErrInvalidArgument, what)
		}
	}
	return nil
}
