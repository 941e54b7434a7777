package lockmw

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// NewQuorum returns a Client whose locks live on a majority of independent
// Redis masters (the Redlock algorithm), with the same API and semantics as
// New's: reentrant, renewed by the watchdog, a lost signal, fencing tokens.
//
//   - An acquisition runs the acquire script on every master at once and
//     succeeds when a majority took it within the validity time (the TTL minus
//     the time the attempt took minus a drift margin of 1% + 2ms); otherwise
//     it releases the masters it took and reports the lock busy.
//   - Unlock and ForceUnlock run on every master; renewal too, and a hold
//     whose renewal no longer reaches a majority is lost (ErrLockLost).
//   - Fencing: each master's counter only knows the holds it saw, so a token
//     is the maximum over the majority, written back to every master (at
//     least a majority) before the acquisition returns. Any two majorities
//     share a master, so the next hold's token is strictly greater.
//   - Waiting uses pub/sub on every master, without the hand-off queue: any
//     master's unlock message wakes one waiter of a Client.
//
// Redlock's limits apply (Kleppmann, "How to do distributed locking", 2016):
// it assumes bounded clock drift, network delay and process pauses; a holder
// paused past its TTL (GC, swap, SIGSTOP) still believes it holds the lock
// when it resumes, and a master that restarts without persistence forgets
// the locks it held. Guard the protected resource with the fencing token
// (WithFencing) so that it rejects the stale holder.
//
// Each operation waits for every master's answer: a master that stops
// answering (paused, partitioned) holds it up for one read timeout of its
// go-redis client, 5 s with default options. A hold outlives that wait while
// the watchdog timeout exceeds about three read timeouts, as the default
// 30 s does; with a shorter one, give the masters' clients a read timeout
// small beside it, as Redlock advises.
//
// The clients must be independent masters, not a cluster (NewQuorum panics
// on a *redis.ClusterClient), and must not be used by New Clients on the same
// names. NewQuorum panics when clients is empty or holds a nil client.
func NewQuorum(clients []redis.UniversalClient, opts ...Option) *Client {
	if len(clients) == 0 {
		panic("lockmw: NewQuorum: at least one Redis client is required")
	}
	for i, r := range clients {
		if r == nil {
			panic(fmt.Sprintf("lockmw: NewQuorum: client %d is nil", i))
		}
		if _, ok := r.(*redis.ClusterClient); ok {
			panic(fmt.Sprintf("lockmw: NewQuorum: client %d is a cluster client; a quorum needs independent masters", i))
		}
	}
	members := slices.Clone(clients)
	return newClient(members[0], members, opts)
}

// quorumStore keeps the locks on a majority of independent masters (the
// Redlock algorithm; see NewQuorum): each operation runs on every master at
// once and counts the answers. It never queues waiters, so it is never
// handed a lock.
type quorumStore struct {
	c       *Client
	members []redis.UniversalClient
	need    int // how many members make a majority
}

// nodes returns the masters.
func (q *quorumStore) nodes() []redis.UniversalClient { return q.members }

// majority is how many masters make one.
func (q *quorumStore) majority() int { return q.need }

// fanout runs f for every member at once and returns their errors.
func (q *quorumStore) fanout(f func(i int, rdb redis.UniversalClient) error) []error {
	errs := make([]error, len(q.members))
	var wg sync.WaitGroup
	for i, r := range q.members {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = f(i, r)
		}()
	}
	wg.Wait()
	return errs
}

// acquireFirst is tryAcquire: a quorum never takes the fast path.
func (q *quorumStore) acquireFirst(ctx context.Context, m *Mutex, a attempt) (acquireReply, error) {
	return q.tryAcquire(ctx, m, a)
}

// tryAcquire runs the acquire script on every master, never queued, and wins
// when a majority took the lock within the validity time. A fenced win
// writes its token (the largest of the majority) back to every master.
func (q *quorumStore) tryAcquire(ctx context.Context, m *Mutex, a attempt) (acquireReply, error) {
	c := q.c
	start := time.Now()
	replies := make([]acquireReply, len(q.members))
	errs := q.fanout(func(i int, r redis.UniversalClient) error {
		res, err := acquireScript.Run(ctx, r, m.akeys, c.ttlArg(a.ttl), a.field, argFalse, c.graceArg, flag(m.fenced), argFalse, c.claimArg(a.ttl), c.tokenTTLArg).Slice()
		if err != nil {
			return err
		}
		replies[i], err = parseAcquire(res)
		return err
	})
	won, answered, token, busy := tally(replies, errs)
	validity := a.ttl - time.Since(start) - a.ttl/100 - 2*time.Millisecond
	if won >= q.need && validity > 0 {
		if !m.fenced {
			return acquireReply{won: true}, nil
		}
		return q.fence(ctx, m, a.field, token)
	}
	if won > 0 {
		m.abandon(a.field)
	}
	if answered < q.need || busy == nil {
		return acquireReply{}, errors.Join(ErrNotAcquired,
			fmt.Errorf("lockmw: acquire %q: %d of %d masters answered, %d needed: %w", m.name, answered, len(q.members), q.need, errors.Join(errs...)))
	}
	return *busy, nil
}

// tally counts the masters' acquire replies: how many won and answered, the
// largest token, and the busy reply with the shortest TTL.
func tally(replies []acquireReply, errs []error) (won, answered int, token int64, busy *acquireReply) {
	for i, r := range replies {
		if errs[i] != nil {
			continue
		}
		answered++
		if r.won {
			won++
			token = max(token, r.token)
		} else if busy == nil || (r.pttl >= 0 && r.pttl < busy.pttl) {
			busy = &replies[i]
		}
	}
	return won, answered, token, busy
}

// fence writes token to every master's counter (fence.lua); the acquisition
// fails unless a majority took it.
func (q *quorumStore) fence(ctx context.Context, m *Mutex, field string, token int64) (acquireReply, error) {
	acks := 0
	ferrs := q.fanout(func(i int, r redis.UniversalClient) error {
		return fenceScript.Run(ctx, r, m.akeys, token, field, q.c.tokenTTLArg).Err()
	})
	for _, err := range ferrs {
		if err == nil {
			acks++
		}
	}
	if acks >= q.need {
		return acquireReply{won: true, token: token}, nil
	}
	m.abandon(field)
	return acquireReply{}, fmt.Errorf("lockmw: acquire %q: fencing token reached %d of %d masters: %w", m.name, acks, len(q.members), errors.Join(ferrs...))
}

// claim never succeeds: a quorum waiter is never queued, so never handed
// the lock.
func (q *quorumStore) claim(context.Context, *Mutex, attempt) (int64, bool) { return 0, false }

// syncReplicas does nothing: the majority of masters is the redundancy.
func (q *quorumStore) syncReplicas(context.Context, *Mutex, string) error { return nil }

// quorumVotes counts the members' answers to a per-hold script.
type quorumVotes struct{ ok, gone, failed int }

// outcome is what n members' votes say when need make a majority.
func (v quorumVotes) outcome(n, need int) RenewalOutcome {
	switch {
	case v.ok >= need:
		return Renewed
	case v.gone > n-need:
		return RenewLost
	default:
		return RenewFailed
	}
}

// vote runs a per-hold script on every master and counts the answers: a
// negative result means the hold is gone there. It returns the outcome and
// the largest result of the masters that have the hold.
func (q *quorumStore) vote(run func(r redis.UniversalClient) (int64, error)) (RenewalOutcome, int64, error) {
	var mu sync.Mutex
	var v quorumVotes
	var top int64
	errs := q.fanout(func(_ int, r redis.UniversalClient) error {
		got, err := run(r)
		mu.Lock()
		defer mu.Unlock()
		switch {
		case err != nil:
			v.failed++
		case got < 0:
			v.gone++
		default:
			v.ok++
			top = max(top, got)
		}
		return err
	})
	return v.outcome(len(q.members), q.need), top, errors.Join(errs...)
}

// reenter adds a level on every master that has the hold.
func (q *quorumStore) reenter(ctx context.Context, m *Mutex, field, reqID string) (int64, error) {
	c := q.c
	keys := []string{m.k.lock, m.k.latchBase + reqID}
	out, n, err := q.vote(func(r redis.UniversalClient) (int64, error) {
		return reenterScript.Run(ctx, r, keys, field, c.latchArg).Int64()
	})
	switch out {
	case Renewed:
		return n, nil
	case RenewLost:
		return -1, nil
	}
	return 0, fmt.Errorf("lockmw: re-enter %q: %w", m.name, err)
}

// undoReenter runs unreenter.lua on every master.
func (q *quorumStore) undoReenter(ctx context.Context, m *Mutex, field, reqID string) error {
	keys := []string{m.k.lock, m.k.latchBase + reqID}
	return errors.Join(q.fanout(func(_ int, r redis.UniversalClient) error {
		return unreenterScript.Run(ctx, r, keys, field, q.c.latchArg).Err()
	})...)
}

// release releases one level on every master. The owner's last level
// deletes the lock whatever a master counted.
func (q *quorumStore) release(ctx context.Context, m *Mutex, rr releaseReq) (int64, error) {
	c := q.c
	out, _, err := q.vote(func(r redis.UniversalClient) (int64, error) {
		return releaseScript.Run(ctx, r, m.fullKeys(rr.lvl.reqID), rr.h.field, "publish", c.latchArg, rr.expireMS, flag(rr.last), c.tokenTTLArg).Int64()
	})
	switch out {
	case Renewed:
		if rr.last {
			return 1, nil
		}
		return 0, nil
	case RenewLost:
		return -1, nil
	}
	return 0, err
}

// leave runs leave.lua on every master; a quorum is never handed a lock.
func (q *quorumStore) leave(ctx context.Context, m *Mutex, field string, _ bool, ttl time.Duration) (int64, bool, error) {
	errs := q.fanout(func(i int, r redis.UniversalClient) error {
		return leaveScript.Run(ctx, r, m.fullKeys("leave"), field, "publish", argFalse, q.c.ttlArg(ttl), q.c.tokenTTLArg).Err()
	})
	return 0, false, errors.Join(errs...)
}

// forceUnlock runs forceunlock.lua on every master: true when any had the lock.
func (q *quorumStore) forceUnlock(ctx context.Context, m *Mutex) (bool, error) {
	vals, err := quorumRead(q, func(r redis.UniversalClient) (int64, error) {
		return forceUnlockScript.Run(ctx, r, m.fullKeys("force"), "publish", q.c.tokenTTLArg).Int64()
	})
	return slices.Contains(vals, 1), err
}

// isLocked is true when a majority has the lock.
func (q *quorumStore) isLocked(ctx context.Context, m *Mutex) (bool, error) {
	vals, err := quorumRead(q, func(r redis.UniversalClient) (int64, error) { return r.Exists(ctx, m.k.lock).Result() })
	return kthLargest(vals, q.need) == 1, err
}

// holdCount is the count a majority has at least.
func (q *quorumStore) holdCount(ctx context.Context, m *Mutex, field string) (int, error) {
	vals, err := quorumRead(q, func(r redis.UniversalClient) (int64, error) { return readCount(ctx, r, m.k.lock, field) })
	return int(kthLargest(vals, q.need)), err
}

// pttl is the TTL a majority has at least.
func (q *quorumStore) pttl(ctx context.Context, m *Mutex) (time.Duration, error) {
	vals, err := quorumRead(q, func(r redis.UniversalClient) (time.Duration, error) {
		d, err := r.PTTL(ctx, m.k.lock).Result()
		if d == -2 {
			d = 0
		}
		return d, err
	})
	return kthLargest(vals, q.need), err
}

// runBatches runs the calls in one pipeline per master, all at once.
func (q *quorumStore) runBatches(ctx context.Context, s *redis.Script, calls []scriptCall) [][]*redis.Cmd {
	perMember := make([][]*redis.Cmd, len(q.members))
	q.fanout(func(i int, r redis.UniversalClient) error {
		perMember[i] = runPipelinedScripts(ctx, r, s, calls)
		return nil
	})
	return perMember
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

// quorumRead runs read on every master and returns the values of those that
// answered; it fails when fewer than a majority did.
func quorumRead[T any](q *quorumStore, read func(r redis.UniversalClient) (T, error)) ([]T, error) {
	var mu sync.Mutex
	var vals []T
	errs := q.fanout(func(i int, r redis.UniversalClient) error {
		v, err := read(r)
		if err == nil {
			mu.Lock()
			vals = append(vals, v)
			mu.Unlock()
		}
		return err
	})
	if len(vals) < q.need {
		return nil, fmt.Errorf("lockmw: %d of %d masters answered, %d needed: %w", len(vals), len(q.members), q.need, errors.Join(errs...))
	}
	return vals, nil
}
