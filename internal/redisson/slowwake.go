package redisson

import "context"

// Option configures a [Client] made by [NewClient] or [NewShardedClient].
type Option func(*Client)

// WithSlowWake makes the Client's lock and semaphore waiters slower than
// Redisson's to react to a message: a thread that a "0" (or a semaphore's
// count) woke makes one round trip (PING) before its acquire script, so that
// its acquire reaches the server two round trips after the message was
// published instead of one. That is the
// delay of a client that unsubscribes before it retries (node-redisson, as
// issue 30 observed it), without the dip in the channel's subscriber count:
// the thread stays subscribed while it waits, as Redisson's do. A thread
// woken by the holder's TTL running out, rather than by a message, tries at
// once. Without this option a Client waits as Redisson 4.x does.
func WithSlowWake() Option {
	return func(c *Client) { c.slowWake = true }
}

// afterWake is what a lock or semaphore waiter does between its latch and its next
// attempt: nothing, or with WithSlowWake one more round trip when a message
// (a latch permit) woke it.
func (c *Client) afterWake(ctx context.Context, woken bool) error {
	if !woken || !c.slowWake {
		return nil
	}
	return c.rdb.Ping(ctx).Err()
}
