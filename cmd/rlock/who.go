package main

import (
	"context"
	"strconv"

	"github.com/go-rlock/rlock/internal/layout"
	"github.com/redis/go-redis/v9"
)

// How show tells an rlock holder from a Redisson one. Both write the field
// "<clientID>:<n>" with a UUID client ID (rlock's owner sequence in place of
// Redisson's thread ID), so the field alone does not tell. A holder is shown
// as an rlock client when something only rlock does shows it: the hold has
// rlock's fields (rlock:token, rlock:meta, rlock:handoffs), the client ID is
// not a UUID (WithClientID; Redisson's always are), the client has a waiter
// in rlock's queue, or it is subscribed to its rlock hand-off channel for
// the name. Otherwise it is "unknown": a Redisson client, or an rlock client
// without fencing, hooks or waiters. A semaphore permit taken by rlock is
// named by its holder's field; Redisson's permit IDs are 16 random bytes.

// subscribers counts the subscribers of a name's channels (plain and
// sharded pub/sub added up).
type subscribers map[string]int64

// countSubscribers asks PUBSUB NUMSUB and SHARDNUMSUB (unknown before Redis
// 7: ignored) for Redisson's channel, rlock's roll-call channel and the
// hand-off channel of every holder's client.
func countSubscribers(ctx context.Context, node redis.UniversalClient, s *state) (subscribers, error) {
	k := keysOf(s)
	chans := []string{k.Channel, k.Handoff}
	for _, h := range s.holders {
		if h.Client != "" {
			chans = append(chans, k.Handoff+":"+h.Client)
		}
	}
	p := node.Pipeline()
	plain := p.PubSubNumSub(ctx, chans...)
	sharded := p.PubSubShardNumSub(ctx, chans...)
	if _, err := p.Exec(ctx); err != nil && !isReply(err) {
		return nil, err
	}
	out := subscribers{}
	for ch, n := range plain.Val() {
		out[ch] += n
	}
	for ch, n := range sharded.Val() {
		out[ch] += n
	}
	return out, nil
}

// keysOf returns the keys of s's name for its kind, in its namespace.
func keysOf(s *state) layout.Keys {
	switch s.kind {
	case kindSemaphore:
		return s.ns.semaphore(s.name)
	case kindRWLock:
		return s.ns.rwMutex(s.name)
	}
	return s.ns.mutex(s.name)
}

// othersWaiting is how many clients wait on Redisson's channel without being
// rlock clients (every waiting rlock client is on the roll-call channel too).
func (subs subscribers) othersWaiting(s *state) int64 {
	k := keysOf(s)
	return max(subs[k.Channel]-subs[k.Handoff], 0)
}

// rlockEvidence says why h's client is an rlock client; "" when nothing
// shows it.
func rlockEvidence(s *state, h holder, subs subscribers) string {
	if s.kind == kindSemaphore {
		if h.Client != "" {
			return "permit named by an owner field (Redisson's permit IDs are random bytes)"
		}
		return ""
	}
	switch {
	case s.lock.token != "":
		return "the hold has a fencing token (" + layout.FieldToken + ")"
	case s.lock.meta != "":
		return "the hold has metadata (" + layout.FieldMeta + ")"
	case s.lock.handoffs > 0:
		return "the hold came by an rlock hand-off (" + layout.FieldHandoffs + " " + strconv.FormatInt(s.lock.handoffs, 10) + ")"
	case h.Client != "" && !isUUID(h.Client):
		return "the client ID is not a UUID (Redisson's always are)"
	case hasWaiter(s, h.Client):
		return "the client has a waiter in rlock's queue"
	case subs[keysOf(s).Handoff+":"+h.Client] > 0:
		return "the client is subscribed to its rlock hand-off channel"
	}
	return ""
}

// hasWaiter reports whether client has a waiter in the queue.
func hasWaiter(s *state, client string) bool {
	for _, w := range s.waiters {
		if w.Client == client {
			return true
		}
	}
	return false
}
