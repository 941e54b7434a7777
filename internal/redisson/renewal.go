package redisson

import (
	"context"
	"sync"
	"time"
)

// WithWatchdogTimeout sets the Client's lockWatchdogTimeout (Redisson's
// Config.setLockWatchdogTimeout; default WatchdogTimeout, 30 s): the lease
// of a read or write lock taken with leaseTime ≤ 0, which the Client's
// watchdog renews to it every third of it until the hold is released.
// NewClient panics when d is not positive. [Lock] keeps WatchdogTimeout and
// is not renewed.
func WithWatchdogTimeout(d time.Duration) Option {
	return func(c *Client) { c.watchdog = d }
}

// renewalScheduler is renewal.LockRenewalScheduler, the process's watchdog:
// lock renews the write locks' holds (LockTask), read the read locks'
// (ReadLockTask), each every third of the watchdog timeout while it has
// holds to renew.
type renewalScheduler struct {
	lock, read *renewalTask
}

func newRenewalScheduler(c *Client) *renewalScheduler {
	return &renewalScheduler{lock: newRenewalTask(c, renewLock, false), read: newRenewalTask(c, renewRead, true)}
}

// close stops both tasks and waits for their runs in progress.
func (s *renewalScheduler) close() {
	s.lock.close()
	s.read.close()
}

// renewalTask is renewal.RenewalTask: the holds to renew, by lock name, and
// a timer that renews them every period while there are some. Where
// Redisson batches up to lockWatchdogBatchSize names in one script (per
// slot on a cluster), the task here runs the same script once per name.
type renewalTask struct {
	c      *Client
	period time.Duration
	renew  renewFunc
	// cancelAll: a name found without holds has every thread's renewal
	// cancelled (ReadLockTask), else only its first thread's (LockTask).
	cancelAll bool
	ctx       context.Context // ends at close, and with it a renewal in progress
	stop      context.CancelFunc
	runs      sync.WaitGroup

	mu      sync.Mutex
	entries map[string]*renewalEntry // name2entry
	running bool
	closed  bool
	timer   *time.Timer
}

// renewFunc renews one name's holds, as one chunk of LockTask or
// ReadLockTask does, and reports whether the lock still had any of them.
type renewFunc func(ctx context.Context, c *Client, name string, e renewalTarget) (bool, error)

func newRenewalTask(c *Client, renew renewFunc, cancelAll bool) *renewalTask {
	ctx, stop := context.WithCancel(context.Background())
	return &renewalTask{
		c: c, period: c.watchdog / 3, renew: renew, cancelAll: cancelAll, ctx: ctx, stop: stop,
		entries: map[string]*renewalEntry{},
	}
}

// renewalEntry is renewal.LockEntry (and ReadLockEntry): the threads whose
// holds of one name are renewed, in the order they came, with the number
// of their acquisitions not yet unlocked, their fields and, for readers,
// their key prefixes.
type renewalEntry struct {
	order    []int64          // threadsQueue, without repeats
	counts   map[int64]int    // threadId2counter
	fields   map[int64]string // threadId2lockName
	prefixes map[int64]string // threadId2keyPrefix
}

// add counts one more acquisition of the thread (addThreadId); the first
// field and key prefix given for it stay.
func (e *renewalEntry) add(threadID int64, field, prefix string) {
	if e.counts[threadID] == 0 {
		e.order = append(e.order, threadID)
		e.fields[threadID], e.prefixes[threadID] = field, prefix
	}
	e.counts[threadID]++
}

// remove counts one acquisition of the thread out (removeThreadId); at 0
// the thread leaves.
func (e *renewalEntry) remove(threadID int64) {
	n, ok := e.counts[threadID]
	if !ok {
		return
	}
	if n > 1 {
		e.counts[threadID] = n - 1
		return
	}
	delete(e.counts, threadID)
	delete(e.fields, threadID)
	delete(e.prefixes, threadID)
	for i, id := range e.order {
		if id == threadID {
			e.order = append(e.order[:i:i], e.order[i+1:]...)
			break
		}
	}
}

// renewalTarget is what one run renews of one name: the first thread's
// field and key prefix (getFirstThreadId), every thread's field, and the
// threads whose renewal is cancelled when the name holds none of them.
type renewalTarget struct {
	field, prefix string
	fields        []string
	cancel        []int64
}

// add hands one acquisition of the thread to the watchdog
// (RenewalTask.add): a name's first starts the timer when it is stopped.
func (t *renewalTask) add(name string, threadID int64, field, prefix string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return
	}
	e, ok := t.entries[name]
	if !ok {
		e = &renewalEntry{counts: map[int64]int{}, fields: map[int64]string{}, prefixes: map[int64]string{}}
		t.entries[name] = e
	}
	e.add(threadID, field, prefix)
	if !t.running {
		t.running = true
		t.schedule()
	}
}

// cancel takes one acquisition of the thread off the watchdog
// (cancelExpirationRenewal); the timer stops with the last.
func (t *renewalTask) cancel(name string, threadID int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.cancelLocked(name, threadID)
}

func (t *renewalTask) cancelLocked(name string, threadID int64) {
	e, ok := t.entries[name]
	if !ok {
		return
	}
	e.remove(threadID)
	if len(e.order) == 0 {
		delete(t.entries, name)
	}
	if len(t.entries) == 0 && t.running {
		t.running = false
		t.timer.Stop()
	}
}

// schedule arms the timer for one period (schedule); t.mu is held.
func (t *renewalTask) schedule() {
	if t.timer == nil {
		t.timer = time.AfterFunc(t.period, t.run)
		return
	}
	t.timer.Reset(t.period)
}

// run renews every name's holds (RenewalTask.run), cancels the renewal of
// the names that hold none of them any more, and arms the timer again
// while there is something to renew. A name whose script failed is kept
// (Redisson logs the error).
func (t *renewalTask) run() {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return
	}
	t.runs.Add(1)
	defer t.runs.Done()
	targets := make(map[string]renewalTarget, len(t.entries))
	for name, e := range t.entries {
		targets[name] = t.target(e)
	}
	t.mu.Unlock()

	var gone []string
	for name, target := range targets {
		if alive, err := t.renew(t.ctx, t.c, name, target); err == nil && !alive {
			gone = append(gone, name)
		}
	}

	t.mu.Lock()
	defer t.mu.Unlock()
	for _, name := range gone {
		for _, id := range targets[name].cancel {
			t.cancelLocked(name, id)
		}
	}
	if t.running && !t.closed {
		t.schedule()
	}
}

// target is what run renews of e; t.mu is held.
func (t *renewalTask) target(e *renewalEntry) renewalTarget {
	first := e.order[0]
	target := renewalTarget{field: e.fields[first], prefix: e.prefixes[first]}
	for _, id := range e.order {
		target.fields = append(target.fields, e.fields[id])
	}
	target.cancel = []int64{first}
	if t.cancelAll {
		target.cancel = append([]int64(nil), e.order...)
	}
	return target
}

// close stops the timer, ends a renewal in progress and waits for it.
func (t *renewalTask) close() {
	t.mu.Lock()
	t.closed = true
	if t.timer != nil {
		t.timer.Stop()
	}
	t.mu.Unlock()
	t.stop()
	t.runs.Wait()
}

// renewLock is one name's chunk of LockTask: the first thread's field is
// checked, the hash's TTL set to the watchdog timeout; when the field is
// gone, the first thread's renewal is cancelled (one acquisition of it).
func renewLock(ctx context.Context, c *Client, name string, target renewalTarget) (bool, error) {
	res, err := lockRenewScript.Run(ctx, c.rdb, []string{name}, c.watchdog.Milliseconds(), target.field).Int64Slice()
	return err == nil && len(res) == 1 && res[0] == 1, err
}

// renewRead is one name's chunk of ReadLockTask: every renewed reader's
// field is checked, each level's timeout key and the hash get the watchdog
// timeout; when no field is left, every thread's renewal is cancelled (one
// acquisition each).
func renewRead(ctx context.Context, c *Client, name string, target renewalTarget) (bool, error) {
	args := []any{c.watchdog.Milliseconds(), len(target.fields)}
	for _, f := range target.fields {
		args = append(args, f)
	}
	res, err := readRenewScript.Run(ctx, c.rdb, []string{name, target.prefix}, args...).Int64Slice()
	return err == nil && len(res) == 1 && res[0] == 1, err
}
