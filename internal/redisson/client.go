package redisson

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"
)

// Redis is what a [Client] needs of a go-redis client: scripts, DEL, PING,
// SUBSCRIBE and SSUBSCRIBE. *redis.Client and *redis.ClusterClient have them.
type Redis interface {
	redis.Scripter
	Del(ctx context.Context, keys ...string) *redis.IntCmd
	Ping(ctx context.Context) *redis.StatusCmd
	Subscribe(ctx context.Context, channels ...string) *redis.PubSub
	SSubscribe(ctx context.Context, channels ...string) *redis.PubSub
}

// Client is one Redisson process (a RedissonClient): an id that prefixes its
// threads' hash fields, and one subscription per lock name that its waiting
// threads share (PublishSubscribeService with LockPubSub). Each "0" on a
// lock's channel wakes one of the process's threads waiting on that lock.
// Semaphores have theirs too (SemaphorePubSub): a message n wakes up to n.
//
// A Client is safe for concurrent use by the goroutines that play its
// threads; each passes its own thread id.
type Client struct {
	rdb      Redis
	id       string
	sharded  bool // SSUBSCRIBE and SPUBLISH
	slowWake bool // WithSlowWake
	nodeWake bool // WithNodeWake
	// watchdog is Config.lockWatchdogTimeout (WithWatchdogTimeout): the
	// lease of a read or write lock taken without one, which renewal
	// renews every third of it.
	watchdog time.Duration
	renewal  *renewalScheduler // the read and write locks' watchdog

	mu      sync.Mutex
	entries map[string]*entry // by channel: one lock or semaphore name, one entry
	closed  bool
}

// NewClient returns a Client on rdb with a new random id, as each Redisson
// process has (ServiceManager's id, a UUID). It panics on a nil Option and
// on an invalid option's value.
func NewClient(rdb Redis, opts ...Option) *Client {
	c := &Client{rdb: rdb, id: uuid.NewString(), entries: map[string]*entry{}, watchdog: WatchdogTimeout}
	for _, o := range opts {
		if o == nil {
			panic("redisson: NewClient: nil Option")
		}
		o(c)
	}
	if c.watchdog <= 0 {
		panic(fmt.Sprintf("redisson: WithWatchdogTimeout(%v): must be positive", c.watchdog))
	}
	c.renewal = newRenewalScheduler(c)
	return c
}

// NewShardedClient is NewClient for a Redis 7 cluster with sharded pub/sub,
// as Redisson 3.22+ uses it there: its waiters SSUBSCRIBE to the lock's
// channel and its unlock SPUBLISHes "0".
func NewShardedClient(rdb Redis, opts ...Option) *Client {
	c := NewClient(rdb, opts...)
	c.sharded = true
	c.checkNodeWake()
	return c
}

// publishCmd is the command the Client's unlock publishes with.
func (c *Client) publishCmd() string {
	if c.sharded {
		return "spublish"
	}
	return "publish"
}

// ID is the Client's id, the part of its hash fields before ":<threadId>".
func (c *Client) ID() string { return c.id }

// GetLock returns the process's handle on the lock name (getLock).
func (c *Client) GetLock(name string) *Lock {
	l := &Lock{c: c, name: name}
	l.leaseTime.Store(int64(WatchdogTimeout))
	return l
}

// Close stops renewing the read and write locks' holds, unsubscribes what
// threads still hold (none, when every Lock and TryLock call has returned)
// and waits for the listeners and renewals to stop. It does not close rdb.
// Calls made after Close fail to subscribe with ErrClosed.
func (c *Client) Close() error {
	c.renewal.close()
	c.mu.Lock()
	c.closed = true
	entries := c.entries
	c.entries = map[string]*entry{}
	c.mu.Unlock()
	for _, e := range entries {
		<-e.ready
		e.close()
	}
	return nil
}

// subscribe returns the entry of a lock's channel with this thread counted
// in, subscribing when no thread of the process is (PublishSubscribe.subscribe
// of LockPubSub). It returns once the subscription is confirmed. The caller
// calls unsubscribe once done, also after an error.
func (c *Client) subscribe(ctx context.Context, channel string) (*entry, error) {
	return c.subscribeWith(ctx, channel, lockMessage)
}

// subscribeWith is subscribe for any pub/sub: a new entry hands the
// channel's messages to onMessage. A channel belongs to one kind of object,
// so its entry, when there is one, already has the right onMessage.
func (c *Client) subscribeWith(ctx context.Context, channel string, onMessage func(*entry, string)) (*entry, error) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, ErrClosed
	}
	e, ok := c.entries[channel]
	if ok {
		e.threads++
		c.mu.Unlock()
		return e, e.wait(ctx)
	}
	e = newEntry(onMessage)
	c.entries[channel] = e
	c.mu.Unlock()

	ps, err := e.subscribe(ctx, c.rdb, channel, c.sharded)
	c.mu.Lock()
	e.ps, e.err = ps, err
	if err != nil && c.entries[channel] == e {
		delete(c.entries, channel) // the next thread tries afresh
	}
	c.mu.Unlock()
	if err == nil {
		go e.listen(ps)
	}
	close(e.ready)
	return e, err
}

// unsubscribe counts the thread out of e, and unsubscribes when it was the
// last (PublishSubscribe.unsubscribe): the permits left are lost with it.
func (c *Client) unsubscribe(channel string, e *entry) {
	c.mu.Lock()
	e.threads--
	last := e.threads == 0 && c.entries[channel] == e
	if last {
		delete(c.entries, channel)
	}
	c.mu.Unlock()
	if last {
		<-e.ready // the thread that subscribed returned: it is set
		e.close()
	}
}
