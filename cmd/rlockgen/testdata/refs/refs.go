// Package refs is a golden case: key references through fields, embedded
// fields, pointers, methods and getters, and what they check for nil.
package refs

import (
	"context"
	"errors"
)

// Region is where a customer is; its String handles a nil *Region.
type Region struct{ Code string }

func (r *Region) String() string {
	if r == nil {
		return "none"
	}
	return r.Code
}

// Customer is a customer.
type Customer struct {
	Tenant int
	Region *Region
}

// Base is embedded by pointer.
type Base struct{ Shard int }

// Order is an order.
type Order struct {
	*Base
	ID       string
	Customer *Customer
}

// Key is a value method: calling it through a nil *Order would panic.
func (o Order) Key() string { return "k" + o.ID }

// Checked is a key method that can fail.
func (o *Order) Checked() (string, error) {
	if o.ID == "" {
		return "", errors.New("no ID")
	}
	return o.ID, nil
}

// Request is a gRPC-style request with getters.
type Request interface {
	GetOrder() *Order
	GetID() string
}

// Status prints with its String method.
type Status int

func (s Status) String() string { return "status" }

// Refs has a method for each kind of reference.
type Refs interface {
	//rlock:lock key="a:{o.Shard}:{o.Customer.Region}:{o.Key()}"
	Embedded(ctx context.Context, o *Order) error

	//rlock:lock key="b:{req.GetOrder().Customer.Tenant}:{req.GetID()}"
	Getters(ctx context.Context, req Request) (string, error)

	//rlock:lock key="c:{o.Checked()}:{s}:{v}:{tags}" wait=1500ms lease=1h
	Errors(ctx context.Context, o *Order, s Status, v any, tags ...string) (int, error)

	//rlock:lock key="d:{n}{m}" group=""
	Numbers(ctx context.Context, n int, m uint8) error
}
