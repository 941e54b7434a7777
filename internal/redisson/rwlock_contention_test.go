package redisson

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/go-rlock/rlock/internal/redistest"
	"github.com/go-rlock/rlock/internal/testsupport"
	"github.com/stretchr/testify/assert"
)

// occupancy counts the threads inside the critical section of one
// read-write lock, as its holders report themselves, and the violations of
// "never a writer beside anyone" seen at each entry.
type occupancy struct {
	readers, writers, violations, maxReaders, reads, writes atomic.Int64
}

func (o *occupancy) enterRead() {
	n := o.readers.Add(1)
	o.reads.Add(1)
	for m := o.maxReaders.Load(); n > m && !o.maxReaders.CompareAndSwap(m, n); m = o.maxReaders.Load() {
	}
	if o.writers.Load() != 0 {
		o.violations.Add(1)
	}
}

func (o *occupancy) enterWrite() {
	o.writes.Add(1)
	if o.writers.Add(1) != 1 || o.readers.Load() != 0 {
		o.violations.Add(1)
	}
}

// Three processes of four threads each mix readers and writers on one name:
// plain readers (with re-entry), plain writers, and writers that take the
// read side and leave it either before their write unlock or after (the
// switch to read mode). Each thread does a fixed number of holds; the
// holders check at entry that no writer is beside anyone.
func TestReadWriteLockUnderContention(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := testsupport.Ctx(t)
	const holds = 12
	var o occupancy
	var wg sync.WaitGroup
	for range 3 {
		p := newProcess(t, srv)
		rw := p.GetReadWriteLock("shared")
		for id := range int64(4) {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range holds {
					var err error
					switch (id + int64(i)) % 4 {
					case 0, 1:
						err = read(ctx, rw, id, &o)
					case 2:
						err = write(ctx, rw, id, &o, false)
					default:
						err = write(ctx, rw, id, &o, true)
					}
					if err != nil {
						t.Errorf("thread %d, hold %d: %v", id, i, err)
						return
					}
				}
			}()
		}
	}
	wg.Wait()
	assert.Zero(t, o.violations.Load(), "a writer beside another holder")
	assert.Equal(t, int64(3*4*holds), o.reads.Load()+o.writes.Load(), "every hold done")
	t.Logf("%d reads (at most %d at once), %d writes", o.reads.Load(), o.maxReaders.Load(), o.writes.Load())
	assert.Empty(t, hashOf(t, ctx, srv, "shared"))
}

// read holds the read side, re-entering it once inside.
func read(ctx context.Context, rw *ReadWriteLock, id int64, o *occupancy) error {
	r := rw.ReadLock()
	if err := r.Lock(ctx, id, 0); err != nil {
		return err
	}
	o.enterRead()
	ok, err := r.TryLock(ctx, id, 0, 0)
	if err == nil && !ok {
		err = errNotReentered
	}
	if err == nil {
		err = r.Unlock(ctx, id)
	}
	o.readers.Add(-1)
	return errors.Join(err, r.Unlock(ctx, id))
}

// write holds the write side and takes the read side inside it; with
// readLast it leaves the write side first, and is a reader until it
// leaves the read side.
func write(ctx context.Context, rw *ReadWriteLock, id int64, o *occupancy, readLast bool) error {
	w, r := rw.WriteLock(), rw.ReadLock()
	if err := w.Lock(ctx, id, 0); err != nil {
		return err
	}
	o.enterWrite()
	ok, err := r.TryLock(ctx, id, 0, 0)
	if err == nil && !ok {
		err = errNotReentered
	}
	if err != nil {
		o.writers.Add(-1)
		return err
	}
	if !readLast {
		o.writers.Add(-1)
		return errors.Join(r.Unlock(ctx, id), w.Unlock(ctx, id))
	}
	o.readers.Add(1) // a reader once the write side goes
	o.writers.Add(-1)
	err = w.Unlock(ctx, id)
	o.readers.Add(-1)
	return errors.Join(err, r.Unlock(ctx, id))
}

// errNotReentered: a thread holding a side was refused it again.
var errNotReentered = errors.New("not re-entered")
