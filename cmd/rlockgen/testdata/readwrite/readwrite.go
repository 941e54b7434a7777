// Package readwrite is the golden case of the read-write directives and
// the minimum hold.
package readwrite

import "context"

// Doc is a document.
type Doc struct {
	ID   string
	Body string
}

// Docs reads and writes documents: reads of one document run together,
// a write alone.
type Docs interface {
	// Get reads a document beside the other reads of it.
	//rlock:lock key="docs:{id}" rw=read wait=2s
	Get(ctx context.Context, id string) (Doc, error)

	// Put writes it alone, with a fencing token. Its template names the
	// same locks as Get's.
	//rlock:lock key="docs:{d.ID}" rw=write fencing
	Put(ctx context.Context, d *Doc) error

	// Publish keeps the write lock 2s at least, however soon it returns.
	//rlock:lock key="docs:{id}" rw=write minhold=2s group="docs"
	Publish(ctx context.Context, id string) error

	// Sweep is a mutex held 1m30s at least, within its 5m lease.
	//rlock:lock key="docs:sweep" lease=5m minhold=1m30s
	Sweep(ctx context.Context) (swept int, at string, err error)
}
