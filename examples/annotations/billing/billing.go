// Package billing is the service of the annotations example: an interface
// whose methods carry //rlock:lock directives, an implementation with no
// lock in sight, and the decorator rlockgen generates from the directives
// (billing_rlock.go, rewritten by go generate).
package billing

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

//go:generate go run github.com/go-rlock/rlock/cmd/rlockgen -type Billing

// Billing charges and refunds orders.
type Billing interface {
	// Charge bills an order once: one call per order at a time, waiting at
	// most 5s for another call on the same order.
	//rlock:lock key="billing:charge#{orderID}" wait=5s
	Charge(ctx context.Context, orderID string, cents int64) (Receipt, error)

	// Refund gives an order's money back, one call per order at a time; the
	// lock expires 30s after it was taken, renewed by nobody.
	//rlock:lock key="billing:refund#{o.ID}" lease=30s
	Refund(ctx context.Context, o *Order) error

	// Quote reads a price: no directive, so no lock.
	Quote(ctx context.Context, orderID string) (int64, error)
}

// Receipt is what a charge returns.
type Receipt struct {
	OrderID string
	Cents   int64
	New     bool // false: the order was charged before, this is that charge
}

// Order is an order to refund.
type Order struct {
	ID string
}

// Service is Billing on Redis with no lock of its own: Charge reads whether
// the order was charged, calls the payment provider and records the charge.
// Two calls that charge one order at once would both charge it; the locked
// decorator makes them take turns.
type Service struct {
	rdb    redis.UniversalClient
	prefix string
}

// NewService returns the service, keeping its data under keys that start
// with prefix.
func NewService(rdb redis.UniversalClient, prefix string) *Service {
	return &Service{rdb: rdb, prefix: prefix}
}

// Charge charges the order unless it was charged before.
func (s *Service) Charge(ctx context.Context, orderID string, cents int64) (Receipt, error) {
	charged := s.prefix + "charged:" + orderID
	prev, err := s.rdb.Get(ctx, charged).Int64()
	switch {
	case err == nil:
		return Receipt{OrderID: orderID, Cents: prev}, nil
	case !errors.Is(err, redis.Nil):
		return Receipt{}, err
	}
	time.Sleep(20 * time.Millisecond) // the payment provider takes a moment
	if err := s.rdb.Incr(ctx, s.prefix+"payments:"+orderID).Err(); err != nil {
		return Receipt{}, err
	}
	if err := s.rdb.Set(ctx, charged, cents, 0).Err(); err != nil {
		return Receipt{}, err
	}
	return Receipt{OrderID: orderID, Cents: cents, New: true}, nil
}

// Refund forgets the order's charge.
func (s *Service) Refund(ctx context.Context, o *Order) error {
	n, err := s.rdb.Del(ctx, s.prefix+"charged:"+o.ID).Result()
	if err == nil && n == 0 {
		err = fmt.Errorf("order %s was not charged", o.ID)
	}
	return err
}

// Quote is the price of an order.
func (s *Service) Quote(_ context.Context, orderID string) (int64, error) {
	return int64(100 * len(orderID)), nil
}

// Payments is how many times the payment provider was called for the order.
func (s *Service) Payments(ctx context.Context, orderID string) (int64, error) {
	n, err := s.rdb.Get(ctx, s.prefix+"payments:"+orderID).Int64()
	if errors.Is(err, redis.Nil) {
		return 0, nil
	}
	return n, err
}

// Reset deletes the service's data for the orders.
func (s *Service) Reset(ctx context.Context, orderIDs ...string) error {
	var keys []string
	for _, id := range orderIDs {
		keys = append(keys, s.prefix+"charged:"+id, s.prefix+"payments:"+id)
	}
	return s.rdb.Del(ctx, keys...).Err()
}
