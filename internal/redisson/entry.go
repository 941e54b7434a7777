package redisson

import (
	"context"
	"errors"
	"net"
	"time"

	"github.com/redis/go-redis/v9"
)

// LockPubSub's messages: unlockMessage (UNLOCK_MESSAGE) is what a lock's
// unlock and a read lock's publish, readUnlockMessage (READ_UNLOCK_MESSAGE)
// what a write lock's publishes.
const (
	unlockMessage     = "0"
	readUnlockMessage = "1"
)

// entry is one process's subscription to one lock's channel, shared by the
// threads waiting on that lock (RedissonLockEntry, with the listener that
// PublishSubscribe.createListener adds and LockPubSub.onMessage runs).
//
// Its fields other than latch are guarded by the Client's mutex.
type entry struct {
	latch   *latch
	threads int           // threads subscribed (RedissonLockEntry.counter)
	ready   chan struct{} // closed once subscribed, or failing to
	err     error         // why subscribing failed; set before ready closes
	ps      *redis.PubSub // nil until subscribed
	done    chan struct{} // closed when listen returns

	// onMessage is the pub/sub's onMessage: lockMessage, or a Client's
	// semaphoreMessage. Set once, by newEntry.
	onMessage func(e *entry, payload string)
}

func newEntry(onMessage func(e *entry, payload string)) *entry {
	return &entry{
		latch: newLatch(), threads: 1, ready: make(chan struct{}), done: make(chan struct{}),
		onMessage: onMessage,
	}
}

// lockMessage is LockPubSub.onMessage: each "0" releases one latch permit;
// each "1" releases one per thread blocked on the latch at that moment.
func lockMessage(e *entry, payload string) {
	switch payload {
	case unlockMessage:
		e.latch.release()
	case readUnlockMessage:
		e.latch.releaseQueued()
	}
}

// subscribe subscribes to channel and waits for the server's confirmation,
// (SSUBSCRIBE when sharded), as Redisson's subscribe future completes only then. It does not start
// listening.
func (e *entry) subscribe(ctx context.Context, rdb Redis, channel string, sharded bool) (*redis.PubSub, error) {
	var ps *redis.PubSub
	if sharded {
		ps = rdb.SSubscribe(ctx, channel)
	} else {
		ps = rdb.Subscribe(ctx, channel)
	}
	if _, err := ps.Receive(ctx); err != nil {
		_ = ps.Close()
		return nil, err
	}
	return ps, nil
}

// listen hands each message on ps to onMessage until ps is closed (for a
// lock, LockPubSub.onMessage: one tryRunListener and one latch permit per
// "0").
// After a network error go-redis reconnects and subscribes again, as
// Redisson does; listen goes on.
func (e *entry) listen(ps *redis.PubSub) {
	defer close(e.done)
	for {
		msg, err := ps.ReceiveMessage(context.Background())
		switch {
		case errors.Is(err, redis.ErrClosed), errors.Is(err, net.ErrClosed):
			// The last thread left, or the Client closed: go-redis reports
			// the connection closed under a read in progress as
			// net.ErrClosed, and only the next read as redis.ErrClosed.
			return
		case err != nil:
			time.Sleep(reconnectPause)
		default:
			e.onMessage(e, msg.Payload)
		}
	}
}

// reconnectPause spaces listen's attempts while the server is unreachable.
const reconnectPause = 10 * time.Millisecond

// wait returns once the subscription is confirmed, with the error of
// subscribing, or ctx's error.
func (e *entry) wait(ctx context.Context) error {
	select {
	case <-e.ready:
		return e.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// close unsubscribes and waits for listen to return. Call it once ready is
// closed, and once.
func (e *entry) close() {
	if e.ps == nil {
		return // subscribing failed
	}
	_ = e.ps.Close()
	<-e.done
}
