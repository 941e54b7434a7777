// Package billing is the generator's main golden case: the Billing.
package billing

import (
	"context"
	"time"
)

// Receipt is what a charge returns.
type Receipt struct {
	ID    string
	Cents int64
}

// Order is an order.
type Order struct {
	ID       string
	Customer *Customer
}

// Customer is a customer.
type Customer struct {
	Tenant int
}

// Billing bills orders.
type Billing interface {
	// Charge bills one order at a time per order.
	//rlock:lock key="billing:charge#{orderID}" wait=5s
	Charge(ctx context.Context, orderID string, cents int64) (Receipt, error)

	//rlock:lock key="billing:refund#{o.ID}" lease=30s
	Refund(ctx context.Context, o Order) error

	//rlock:lock key="{{billing}}:tenant#{o.Customer.Tenant}:{o.ID}" permits=3 group="tenant"
	Settle(ctx context.Context, o *Order, at time.Time) (n int, settled bool, err error)

	//rlock:lock key="billing:nightly" fencing wait=0
	Nightly(ctx context.Context) error

	Quote(ctx context.Context, orderID string) (int64, error) // no directive: passed through
}
