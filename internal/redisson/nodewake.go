package redisson

import (
	"context"
	"errors"
	"net"
	"time"

	"github.com/redis/go-redis/v9"
)

// WithNodeWake makes the Client's lock waiters wait as node-redisson 1.0.4's
// lock() does (RedissonLock.tryLock with no wait limit and
// CommandExecutor.waitSubscribeOnce, read from its published dist/), where
// Redisson's share one subscription per process and wake one thread per
// "0":
//
//   - a thread tries twice before it waits, then subscribes on a
//     subscription of its own (each node-redisson instance has one
//     connection for it) and waits, once subscribed, for any message on the
//     lock's channel or for the TTL its last attempt saw (1 s when the lock
//     had none);
//   - every waiting thread wakes on each message, not one per "0";
//   - woken, it unsubscribes and waits for the server's confirmation before
//     it tries again: between the message and its acquire there is one
//     round trip more than Redisson's, and while it tries it is not a
//     subscriber of the channel (a release that counts them misses it).
//
// node-redisson's timer defect is not played: its waitSubscribeOnce does not
// clear the wait's timer when a message ends the wait, and when that timer
// fires later its UNSUBSCRIBE removes the connection's subscription under a
// newer wait, which then sleeps the whole TTL its attempt saw (docs/redisson.md).
// Only Lock waits this way; TryLock and the semaphore wait as Redisson's. It
// cannot be combined with sharded pub/sub (node-redisson has none): a
// Client made by NewShardedClient with it panics.
func WithNodeWake() Option {
	return func(c *Client) { c.nodeWake = true }
}

// nodeLock is Lock with WithNodeWake.
func (c *Client) nodeLock(ctx context.Context, a attempter, threadID int64, leaseTime time.Duration) error {
	ps := c.rdb.Subscribe(ctx) // no channel yet: a connection once it subscribes
	defer func() { _ = ps.Close() }()
	ok, _, err := a.tryAcquire(ctx, threadID, leaseTime)
	if err != nil || ok {
		return err
	}
	for {
		ok, ttl, err := a.tryAcquire(ctx, threadID, leaseTime)
		if err != nil || ok {
			return err
		}
		if err := nodeWait(ctx, ps, a.channel(), ttl); err != nil {
			return err
		}
	}
}

// nodeWait is one waitSubscribeOnce of node-redisson: subscribe and wait
// for the confirmation, wait for a message or until ttl (1 s if ttl ≤ 0)
// passes, then unsubscribe and wait for that confirmation too (messages
// that arrive meanwhile are dropped, as its listener is gone).
func nodeWait(ctx context.Context, ps *redis.PubSub, channel string, ttl time.Duration) error {
	if ttl <= 0 {
		ttl = time.Second
	}
	if err := ps.Subscribe(ctx, channel); err != nil {
		return err
	}
	if err := awaitSubscription(ctx, ps, "subscribe"); err != nil {
		return err
	}
	for deadline := time.Now().Add(ttl); ; {
		left := time.Until(deadline)
		if left <= 0 {
			break
		}
		msg, err := ps.ReceiveTimeout(ctx, left)
		if isTimeout(err) {
			break
		}
		if err != nil {
			return err
		}
		if _, ok := msg.(*redis.Message); ok {
			break
		}
	}
	if err := ps.Unsubscribe(ctx, channel); err != nil {
		return err
	}
	return awaitSubscription(ctx, ps, "unsubscribe")
}

// awaitSubscription reads ps until the server confirms kind ("subscribe",
// "unsubscribe"), dropping messages.
func awaitSubscription(ctx context.Context, ps *redis.PubSub, kind string) error {
	for {
		msg, err := ps.Receive(ctx)
		if err != nil {
			return err
		}
		if s, ok := msg.(*redis.Subscription); ok && s.Kind == kind {
			return nil
		}
	}
}

// isTimeout reports whether err is a read that timed out.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// checkNodeWake panics on a sharded Client with WithNodeWake.
func (c *Client) checkNodeWake() {
	if c.nodeWake && c.sharded {
		panic("redisson: NewShardedClient: WithNodeWake: node-redisson has no sharded pub/sub")
	}
}
