package goredis

import (
	"context"

	"github.com/go-rlock/rlock/lockmw/backend"
	"github.com/redis/go-redis/v9"
)

// Subscribe opens a go-redis PubSub: SSUBSCRIBE when sharded, else
// SUBSCRIBE. go-redis's PubSub reconnects after an error at the next
// Receive and subscribes its channels again, as the seam asks of a plain
// subscription; a sharded one is replaced by the engine.
func (b *Backend) Subscribe(ctx context.Context, sharded bool, channels ...string) (backend.Subscription, error) {
	s := &subscription{sharded: sharded}
	if sharded {
		s.ps = b.rdb.SSubscribe(ctx, channels...)
	} else {
		s.ps = b.rdb.Subscribe(ctx, channels...)
	}
	return s, nil
}

type subscription struct {
	ps      *redis.PubSub
	sharded bool
}

func (s *subscription) Subscribe(ctx context.Context, channels ...string) error {
	if s.sharded {
		return convertErr(s.ps.SSubscribe(ctx, channels...))
	}
	return convertErr(s.ps.Subscribe(ctx, channels...))
}

func (s *subscription) Unsubscribe(ctx context.Context, channels ...string) error {
	if s.sharded {
		return convertErr(s.ps.SUnsubscribe(ctx, channels...))
	}
	return convertErr(s.ps.Unsubscribe(ctx, channels...))
}

func (s *subscription) Receive(ctx context.Context) (backend.Message, error) {
	for {
		msg, err := s.ps.Receive(ctx)
		if err != nil {
			return backend.Message{}, convertErr(err)
		}
		switch m := msg.(type) {
		case *redis.Subscription:
			switch m.Kind {
			case "subscribe", "ssubscribe":
				return backend.Message{Kind: backend.Subscribed, Channel: m.Channel}, nil
			case "unsubscribe", "sunsubscribe":
				return backend.Message{Kind: backend.Unsubscribed, Channel: m.Channel}, nil
			}
		case *redis.Message:
			return backend.Message{Kind: backend.Published, Channel: m.Channel, Payload: m.Payload}, nil
		}
	}
}

func (s *subscription) Close() error { return s.ps.Close() }
