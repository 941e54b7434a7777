package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/go-rlock/rlock/internal/layout"
	"github.com/redis/go-redis/v9"
)

// subscription is what watch listens to besides polling.
type subscription struct {
	ps       *redis.PubSub // nil: polling only
	k        layout.Keys
	keyspace string // the key's keyspace channel, "" when not subscribed
	exact    bool   // hand-off messages arrive (PSUBSCRIBE)
	mode     string // says what is listened to, for the start line
}

// subscribe subscribes to the name's channels: on a single node or
// Sentinel Redisson's channels (a lock's and a semaphore's: watch does not
// know yet which the name is), rlock's hand-off channels by pattern and,
// when the server publishes them, the key's keyspace events; on a cluster,
// where rlock uses sharded pub/sub and there is no pattern subscription,
// Redisson's channels alone (they wake the poll). Redisson's channels are
// subscribed in one command with rlock's roll-call channel, as an rlock
// client does, so that rlock does not count the watcher as a waiting
// Redisson client (which would change how it hands the lock over). Refused
// by an ACL (NOPERM), it subscribes to Redisson's channels and the
// roll-call channel alone; another failure leaves polling only.
func subscribe(ctx context.Context, rdb redis.UniversalClient, ns namespace, name string) *subscription {
	k := ns.mutex(name)
	sub := &subscription{k: k}
	channels := []string{k.Channel, ns.semaphore(name).Channel, k.Handoff}
	if cc, ok := rdb.(*redis.ClusterClient); ok {
		sub.ps = cc.SSubscribe(ctx, channels...)
		sub.mode = "cluster: polling (sharded pub/sub has no pattern subscribe, so hand-offs are seen by polling); Redisson's channels wake the poll"
		if err := confirmSubs(ctx, sub.ps, len(channels)); err != nil {
			sub.close()
			sub.mode = "cluster: polling only (SSUBSCRIBE failed: " + oneLine(err.Error()) + ")"
		}
		return sub
	}
	ks := keyspaceChannel(ctx, rdb, ns.key(name))
	if ks != "" {
		channels = append(channels, ks)
	}
	sub.ps = rdb.PSubscribe(ctx, globEscape(k.Handoff)+":*")
	err := sub.ps.Subscribe(ctx, channels...)
	if err == nil {
		err = confirmSubs(ctx, sub.ps, 1+len(channels))
	}
	if redis.HasErrorPrefix(err, "NOPERM") {
		// An ACL user's channel patterns admit a PSUBSCRIBE only of a
		// pattern they list as it is, and a prefix leaves the keyspace
		// channel out: Redisson's channels and the roll-call channel then.
		sub.close()
		plain := channels[:3]
		sub.ps = rdb.Subscribe(ctx, plain...)
		if err = confirmSubs(ctx, sub.ps, len(plain)); err == nil {
			sub.mode = "Redisson's channels wake the poll (the ACL refused PSUBSCRIBE or the keyspace channel: hand-offs are seen by polling)"
			return sub
		}
	}
	if err != nil {
		sub.close()
		sub.mode = "polling only (subscribing failed: " + oneLine(err.Error()) + ")"
		return sub
	}
	sub.keyspace, sub.exact = ks, true
	sub.mode = "hand-offs by PSUBSCRIBE " + globEscape(k.Handoff) + ":*, Redisson's channels"
	if ks != "" {
		sub.mode += ", keyspace events " + ks
	} else {
		sub.mode += ", no keyspace events (notify-keyspace-events lacks K and x, or CONFIG is refused)"
	}
	return sub
}

// confirmSubs waits for n subscription confirmations.
func confirmSubs(ctx context.Context, ps *redis.PubSub, n int) error {
	for n > 0 {
		msg, err := ps.Receive(ctx)
		if err != nil {
			return err
		}
		if _, ok := msg.(*redis.Subscription); ok {
			n--
		}
	}
	return nil
}

// keyspaceChannel returns the keyspace channel of key when the server
// publishes keyspace events with expirations (K, and x or A); "" otherwise
// or when CONFIG GET is refused.
func keyspaceChannel(ctx context.Context, rdb redis.UniversalClient, key string) string {
	cfg, err := rdb.ConfigGet(ctx, "notify-keyspace-events").Result()
	if err != nil {
		return ""
	}
	v := cfg["notify-keyspace-events"]
	if !strings.Contains(v, "K") || !strings.ContainsAny(v, "xA") {
		return ""
	}
	db := 0
	if c, ok := rdb.(*redis.Client); ok {
		db = c.Options().DB
	}
	return fmt.Sprintf("__keyspace@%d__:%s", db, key)
}

// globEscape escapes the glob characters of a pattern's literal part.
func globEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[]\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// messages returns the channel of messages; nil (never ready) when polling only.
func (s *subscription) messages() <-chan *redis.Message {
	if s.ps == nil {
		return nil
	}
	return s.ps.Channel()
}

// close ends the subscription.
func (s *subscription) close() {
	if s.ps != nil {
		_ = s.ps.Close()
		s.ps = nil
	}
}
