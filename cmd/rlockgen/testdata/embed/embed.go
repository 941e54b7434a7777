// Package embed is a golden case: an interface that embeds one of its own
// package, whose directives come along, and io.Closer, passed through.
package embed

import (
	"context"
	"io"
)

// Store keeps values.
type Store interface {
	//rlock:lock key="store:{id}"
	Put(ctx context.Context, id string, value []byte) error
	Get(ctx context.Context, id string) ([]byte, error)
}

// Service is a Store that also runs and closes.
type Service interface {
	Store
	io.Closer

	//rlock:lock key="svc:{n}" lease=1m30s permits=2
	Run(ctx context.Context, n int) error

	Stats() map[string]int
}
