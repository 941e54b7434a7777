package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"

	"github.com/go-rlock/rlock/lockmw"
)

// reentrantSection nests lockmw.WithLock, Do and a function made by Wrap on
// one lock name, passing the hold context down: each level re-enters, and the
// hold count goes 1, 2, 3 and back. A context that does not carry the hold
// is refused, even on the same Client, and so is another Client.
func reentrantSection(ctx context.Context, p *printer, rdb redis.UniversalClient) error {
	c := lockmw.New(rdb, withName("billing"))
	defer c.Close()
	other := lockmw.New(rdb, withName("reporting"))
	defer other.Close()
	const name = "account:7"
	m := c.Mutex(name)
	p.note("the hold context is the thread: pass it down and a nested call on %q re-enters", name)

	var counts []int
	// count reads and prints the hold count at one level of the chain.
	count := func(ctx context.Context, indent int, what string) error {
		n, err := m.HoldCount(ctx)
		if err != nil {
			return err
		}
		counts = append(counts, n)
		p.event("%*s%s: HoldCount %d", 2*indent, "", what, n)
		return nil
	}

	// audit is guarded by the lock "account:<id>", like Redisson's
	// @RequestLockable; called with a hold context of that name, it re-enters.
	audit := lockmw.Wrap(c, func(id int) string { return "account:" + strconv.Itoa(id) },
		func(ctx context.Context, id int) (string, error) {
			return "audited", count(ctx, 2, "audit := lockmw.Wrap(c, key, fn); audit(ctx, 7)")
		})

	err := lockmw.WithLock(ctx, m, func(ctx context.Context) error {
		if err := count(ctx, 0, "lockmw.WithLock(ctx, m, fn)"); err != nil {
			return err
		}
		balance, err := lockmw.Do(ctx, m, func(ctx context.Context) (int, error) {
			if err := count(ctx, 1, "lockmw.Do(ctx, m, fn)"); err != nil {
				return 0, err
			}
			res, err := audit(ctx, 7)
			if err != nil {
				return 0, err
			}
			p.event("  audit returned %q", res)
			if err := count(ctx, 1, "back in Do"); err != nil {
				return 0, err
			}
			// A fresh context is another owner, even on the same Client.
			_, err = m.TryLock(context.Background(), 0, 0)
			if !errors.Is(err, lockmw.ErrNotAcquired) {
				return 0, fmt.Errorf("TryLock with a fresh context: %v, want ErrNotAcquired", err)
			}
			p.event("  m.TryLock(context.Background(), 0, 0) in Do: not acquired (not the hold context)")
			return 120, nil
		})
		if err != nil {
			return err
		}
		p.event("Do returned balance %d", balance)
		_, err = other.Mutex(name).TryLock(ctx, 0, 0)
		busy, ok := errors.AsType[*lockmw.BusyError](err)
		if !ok {
			return fmt.Errorf("another Client's TryLock: %v, want a *lockmw.BusyError", err)
		}
		p.event("another Client's TryLock: not acquired, held by %q", busy.Holder)
		return count(ctx, 0, "back in WithLock")
	})
	if err != nil {
		return err
	}
	locked, err := m.IsLocked(ctx)
	if err != nil {
		return err
	}
	p.event("WithLock returned: IsLocked %v", locked)
	want := []int{1, 2, 3, 2, 1}
	if fmt.Sprint(counts) != fmt.Sprint(want) || locked {
		return fmt.Errorf("hold counts %v and locked %v afterwards, want %v and false", counts, locked, want)
	}
	p.summary("hold count 1 → 2 → 3 → 2 → 1 → released: one lock, three nested calls, no deadlock")
	return nil
}
