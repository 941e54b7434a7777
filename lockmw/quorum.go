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

func (c *Client) isQuorum() bool { return c.members != nil }

// fanout runs f for every member at once and returns their errors.
func (c *Client) fanout(f func(i int, rdb redis.UniversalClient) error) []error {
	errs := make([]error, len(c.members))
	var wg sync.WaitGroup
	for i, r := range c.members {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = f(i, r)
		}()
	}
	wg.Wait()
	return errs
}

func parseAcquire(res []any) (acquireReply, error) {
	var r acquireReply
	if len(res) >= 2 && asInt(res[0]) == 1 {
		r.won, r.token = true, asInt(res[1])
		return r, nil
	}
	if len(res) < 4 {
		return r, fmt.Errorf("unexpected reply %v", res)
	}
	r.pttl = time.Duration(asInt(res[1])) * time.Millisecond
	if r.pttl < 0 {
		r.pttl = -1
	}
	r.holder, _ = res[2].(string)
	r.meta, _ = res[3].(string)
	return r, nil
}

// tryQuorum is try on a quorum client: never queued.
func (m *Mutex) tryQuorum(ctx context.Context, field string, ttl time.Duration) (acquireReply, error) {
	c := m.c
	start := time.Now()
	replies := make([]acquireReply, len(c.members))
	errs := c.fanout(func(i int, r redis.UniversalClient) error {
		res, err := acquireScript.Run(ctx, r, m.akeys, c.ttlArg(ttl), field, argFalse, c.graceArg, flag(m.fenced), argFalse).Slice()
		if err != nil {
			return err
		}
		replies[i], err = parseAcquire(res)
		return err
	})
	won, answered := 0, 0
	var token int64
	var busy *acquireReply
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
	validity := ttl - time.Since(start) - ttl/100 - 2*time.Millisecond
	if won >= c.need && validity > 0 {
		if !m.fenced {
			return acquireReply{won: true}, nil
		}
		acks := 0
		ferrs := c.fanout(func(i int, r redis.UniversalClient) error {
			return fenceScript.Run(ctx, r, m.akeys, token, field).Err()
		})
		for _, err := range ferrs {
			if err == nil {
				acks++
			}
		}
		if acks >= c.need {
			return acquireReply{won: true, token: token}, nil
		}
		m.abandon(ctx, field)
		return acquireReply{}, fmt.Errorf("lockmw: acquire %q: fencing token reached %d of %d masters: %w", m.name, acks, len(c.members), errors.Join(ferrs...))
	}
	if won > 0 {
		m.abandon(ctx, field)
	}
	if answered < c.need || busy == nil {
		return acquireReply{}, errors.Join(ErrNotAcquired,
			fmt.Errorf("lockmw: acquire %q: %d of %d masters answered, %d needed: %w", m.name, answered, len(c.members), c.need, errors.Join(errs...)))
	}
	return *busy, nil
}

// quorumVotes counts the members' answers to a per-hold script.
type quorumVotes struct{ ok, gone, failed int }

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
func (c *Client) vote(run func(r redis.UniversalClient) (int64, error)) (RenewalOutcome, int64, error) {
	var mu sync.Mutex
	var v quorumVotes
	var top int64
	errs := c.fanout(func(_ int, r redis.UniversalClient) error {
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
	return v.outcome(len(c.members), c.need), top, errors.Join(errs...)
}

// reenterQuorum adds a level on every master that has the hold.
func (m *Mutex) reenterQuorum(ctx context.Context, h *hold, reqID string) (int64, error) {
	c := m.c
	keys := []string{m.k.lock, m.k.latchBase + reqID}
	out, n, err := c.vote(func(r redis.UniversalClient) (int64, error) {
		return reenterScript.Run(ctx, r, keys, h.field, c.latchArg).Int64()
	})
	switch out {
	case Renewed:
		return n, nil
	case RenewLost:
		return -1, nil
	}
	return 0, fmt.Errorf("lockmw: re-enter %q: %w", m.name, err)
}

// releaseQuorum releases one level on every master. last says it is the
// owner's last level, which deletes the lock whatever a master counted.
func (m *Mutex) releaseQuorum(ctx context.Context, h *hold, reqID string, expireMS int64, last bool) (int64, error) {
	c := m.c
	out, _, err := c.vote(func(r redis.UniversalClient) (int64, error) {
		return releaseScript.Run(ctx, r, m.fullKeys(reqID), h.field, "publish", c.latchArg, expireMS, flag(last)).Int64()
	})
	switch out {
	case Renewed:
		if last {
			return 1, nil
		}
		return 0, nil
	case RenewLost:
		return -1, nil
	}
	return 0, err
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
func quorumRead[T any](c *Client, read func(r redis.UniversalClient) (T, error)) ([]T, error) {
	var mu sync.Mutex
	var vals []T
	errs := c.fanout(func(i int, r redis.UniversalClient) error {
		v, err := read(r)
		if err == nil {
			mu.Lock()
			vals = append(vals, v)
			mu.Unlock()
		}
		return err
	})
	if len(vals) < c.need {
		return nil, fmt.Errorf("lockmw: %d of %d masters answered, %d needed: %w", len(vals), len(c.members), c.need, errors.Join(errs...))
	}
	return vals, nil
}
