package lockmw

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"
)

// isLocked is true when a majority has the lock; it returns as soon as the
// answers decide it.
func (q *quorumStore) isLocked(ctx context.Context, m *Mutex) (bool, error) {
	n := len(q.members)
	var ones int
	vals, err := quorumRead(ctx, q, func(ctx context.Context, mb *member) (int64, error) {
		return existsCount(ctx, mb.be, m.k.lock)
	}, func(vals []int64, pending int) bool {
		ones = 0
		for _, v := range vals {
			ones += int(v)
		}
		zeros := len(vals) - ones
		return ones >= q.need || zeros > n-q.need || pending == 0
	})
	if err != nil && ones < q.need && len(vals)-ones <= n-q.need {
		return false, err
	}
	return ones >= q.need, nil
}

// holdCount is the count a majority has at least; it returns as soon as
// the answers decide it (kthDecided).
func (q *quorumStore) holdCount(ctx context.Context, m *Mutex, field string) (int, error) {
	vals, err := quorumRead(ctx, q, func(ctx context.Context, mb *member) (int64, error) {
		return readCount(ctx, mb.be, m.k.lock, field)
	}, func(vals []int64, pending int) bool { return kthDecided(vals, pending, q.need) })
	return int(kthLargest(vals, q.need)), err
}

// pttl is a TTL a majority has at least: the shortest of the first
// majority to answer (waiting for the k-th largest TTL to be decided would
// wait for every master, whose TTLs differ by the milliseconds between their
// answers).
func (q *quorumStore) pttl(ctx context.Context, m *Mutex) (time.Duration, error) {
	vals, err := quorumRead(ctx, q, func(ctx context.Context, mb *member) (time.Duration, error) {
		d, err := pttlOf(ctx, mb.be, m.k.lock)
		if d == -2 {
			d = 0
		}
		return d, err
	}, nil)
	return kthLargest(vals, q.need), err
}

// kthLargest returns the k-th largest of vs (1-based), or zero when there are
// fewer: the value a majority of masters agree on at least.
func kthLargest[T int64 | time.Duration](vs []T, k int) T {
	if len(vs) < k {
		var zero T
		return zero
	}
	s := slices.Clone(vs)
	slices.Sort(s)
	return s[len(s)-k]
}

// kthDecided reports whether the k-th largest of the values is decided
// whatever pending more values are: the same when they are all below vals
// and all above.
func kthDecided(vals []int64, pending, k int) bool {
	if pending == 0 {
		return true
	}
	if len(vals) < k || k-pending < 1 {
		return false
	}
	return kthLargest(vals, k) == kthLargest(vals, k-pending)
}

// quorumRead runs read on every master and returns the values of those that
// answered, once done says they decide (nil: once a majority answered) or
// every master answered; it fails when fewer than a majority answered.
func quorumRead[T any](ctx context.Context, q *quorumStore, read func(ctx context.Context, mb *member) (T, error), done func(vals []T, pending int) bool) ([]T, error) {
	var vals []T
	var errs []error
	ask(ctx, q, read, func(a answer[T], pending int) bool {
		if a.err != nil {
			errs = append(errs, a.err)
		} else {
			vals = append(vals, a.v)
		}
		if done != nil {
			return done(vals, pending)
		}
		return len(vals) >= q.need || len(vals)+pending < q.need
	}, nil)
	if len(vals) < q.need {
		return vals, fmt.Errorf("lockmw: %d of %d masters answered, %d needed: %w", len(vals), len(q.members), q.need, errors.Join(errs...))
	}
	return vals, nil
}
