package lockmw_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-rlock/rlock/internal/redistest"
	"github.com/go-rlock/rlock/internal/testsupport"
	"github.com/go-rlock/rlock/internal/testsupport/locktest"
	"github.com/go-rlock/rlock/lockmw"
	"github.com/stretchr/testify/assert"
)

// Many readers keep the lock in read mode without a gap (each holds for a
// while and asks again at once) while two writers take it a few times. A
// lock that let a reader join readers whenever the mode is read (Redisson's
// rule) would keep the writers out until the readers stop; rlock's rule (a
// reader waits behind a writer queued before it) and hand-off (a writer
// alone, then the readers queued before the next writer as a batch) let the
// writers through while readers still read, and the readers between them.
// The counts are of operations, not of time.
func TestRWMutexFairness(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := testsupport.Ctx(t)
	const readers, reads, writers, writes = 8, 40, 2, 5
	var o rwOccupancy
	clients := []*lockmw.Client{locktest.NewOn(t, srv), locktest.NewOn(t, srv), locktest.NewOn(t, srv)}
	reading := make(chan struct{})
	var once sync.Once
	var readerWG, writerWG sync.WaitGroup
	var readsAtWritersEnd, readsDone atomic.Int64
	for i := range readers {
		readerWG.Add(1)
		go func() {
			defer readerWG.Done()
			defer readsDone.Add(1)
			rw := clients[i%2].RWMutex("rw-fair")
			for range reads {
				h, err := rw.RLock(ctx)
				if err != nil {
					t.Errorf("reader: %v", err)
					return
				}
				o.enterRead()
				once.Do(func() { close(reading) })
				time.Sleep(2 * time.Millisecond) // the work: readers overlap
				o.leaveRead()
				if err := rw.RUnlock(h); err != nil {
					t.Errorf("reader: %v", err)
					return
				}
			}
		}()
	}
	<-reading
	writerWG.Add(writers)
	for range writers {
		go func() {
			defer writerWG.Done()
			rw := clients[2].RWMutex("rw-fair")
			for range writes {
				h, err := rw.Lock(ctx)
				if err != nil {
					t.Errorf("writer: %v", err)
					return
				}
				o.enterWrite()
				o.leaveWrite()
				if err := rw.Unlock(h); err != nil {
					t.Errorf("writer: %v", err)
					return
				}
			}
		}()
	}
	writerWG.Wait()
	readsAtWritersEnd.Store(o.reads.Load())
	finishedReaders := readsDone.Load()
	readerWG.Wait()

	assert.Zero(t, o.violations.Load(), "a writer beside another holder")
	assert.Equal(t, int64(writers*writes), o.writes.Load(), "every write done")
	assert.Equal(t, int64(readers*reads), o.reads.Load(), "every read done: no reader starves behind writers")
	assert.Greater(t, o.maxReaders.Load(), int64(1), "readers overlap")
	// Each write lets at most one batch of readers (one read each) in before
	// the next: the writers are done long before the readers. Without the
	// rule they are done only after most reads (250 to 300 of 320 here).
	assert.LessOrEqual(t, readsAtWritersEnd.Load(), int64(readers*reads/2), "the writers were let in while readers still read")
	assert.Zero(t, finishedReaders, "no reader had finished its reads when the writers were done")
	t.Logf("%d reads (at most %d at once), %d writes; the writers were done after %d reads",
		o.reads.Load(), o.maxReaders.Load(), o.writes.Load(), readsAtWritersEnd.Load())
	assert.Empty(t, rwHash(t, srv, "rw-fair"))
}

// A Redisson writer (and then a Redisson reader) waits while rlock's readers
// and writers contend without a gap: the mutex's reservation for Redisson's
// waiters (lib.lua) lets each in after a few hand-offs, well before the
// rlock workers' bounded number of holds runs out.
func TestRWMutexRedissonWaitersNotStarved(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := testsupport.Ctx(t)
	const workers, maxHolds = 4, 400
	p := newRedissonRW(t, srv)
	var o rwOccupancy
	done := make(chan struct{})
	var holds atomic.Int64
	var wg sync.WaitGroup
	started := make(chan struct{}, workers)
	for i := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rw := locktest.NewOn(t, srv).RWMutex("rw-redisson-fair")
			for n := 0; n < maxHolds; n++ {
				select {
				case <-done:
					return
				default:
				}
				h, err := rwLockSide(ctx, rw, i%2 == 0)
				if err != nil {
					t.Errorf("rlock worker: %v", err)
					return
				}
				if n == 0 {
					started <- struct{}{}
				}
				holds.Add(1)
				if i%2 == 0 {
					o.enterWrite()
					time.Sleep(time.Millisecond)
					o.leaveWrite()
					err = rw.Unlock(h)
				} else {
					o.enterRead()
					time.Sleep(time.Millisecond)
					o.leaveRead()
					err = rw.RUnlock(h)
				}
				if err != nil {
					t.Errorf("rlock worker: %v", err)
					return
				}
			}
		}()
	}
	for range workers {
		<-started
	}
	prw := p.GetReadWriteLock("rw-redisson-fair")
	w := prw.WriteLock()
	err := w.Lock(ctx, 1, 0)
	writtenAt := holds.Load()
	if err == nil {
		o.enterWrite()
		o.leaveWrite()
		err = w.Unlock(ctx, 1)
	}
	assert.NoError(t, err)
	close(done)
	wg.Wait()
	assert.Zero(t, o.violations.Load(), "a writer beside another holder")
	assert.Less(t, writtenAt, int64(workers*maxHolds), "the Redisson writer got the lock while rlock contended")
	t.Logf("the Redisson writer got the lock after %d rlock holds", writtenAt)
}

// rwLockSide takes rw's write side (write) or its read side.
func rwLockSide(ctx context.Context, rw *lockmw.RWMutex, write bool) (context.Context, error) {
	if write {
		return rw.Lock(ctx)
	}
	return rw.RLock(ctx)
}
