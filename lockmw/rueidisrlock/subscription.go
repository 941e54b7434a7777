package rueidisrlock

import (
	"context"
	"errors"
	"slices"
	"sync"

	"github.com/go-rlock/rlock/lockmw/backend"
	"github.com/redis/rueidis"
)

// Subscribe opens a subscription on a dedicated connection with pub/sub
// hooks: of the client (any node of a cluster, for plain SUBSCRIBE) or,
// sharded, of the master serving the first channel's slot.
func (b *back) Subscribe(ctx context.Context, sharded bool, channels ...string) (backend.Subscription, error) {
	s := &subscription{b: b, sharded: sharded, signal: make(chan struct{}, 1), done: make(chan struct{})}
	if sharded {
		if len(channels) == 0 {
			return nil, errors.New("rueidisrlock: a sharded subscription needs a channel")
		}
		n, err := b.nodeClient(ctx, channels[0])
		if err != nil {
			return nil, err
		}
		s.node = n
	} else {
		s.node = b.c
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.channels = append(s.channels, channels...)
	if err := s.connect(ctx); err != nil {
		s.closeConn()
		return nil, err
	}
	return s, nil
}

// subscription is one dedicated connection's subscriptions. Its hooks
// queue the confirmations and messages for Receive (without bound: a hook
// that blocked would stall the connection's reader, and with it a
// SUBSCRIBE waiting for its confirmation); a lost connection's error
// arrives on errs.
type subscription struct {
	b       *back
	node    rueidis.Client
	sharded bool
	done    chan struct{} // closed by Close

	qmu    sync.Mutex
	queue  []backend.Message
	signal chan struct{} // a message was queued

	mu       sync.Mutex
	channels []string // subscribed, to subscribe again after a reconnection
	dc       rueidis.DedicatedClient
	release  func()
	errs     <-chan error // the connection's; nil when there is none
	lost     bool         // the connection failed: sharded, no reconnection
	closed   bool
}

// connect opens the connection and subscribes s.channels; s.mu is held.
func (s *subscription) connect(ctx context.Context) error {
	dc, release := s.node.Dedicate()
	s.dc, s.release = dc, release
	s.errs = dc.SetPubSubHooks(rueidis.PubSubHooks{
		OnMessage: func(m rueidis.PubSubMessage) {
			s.deliver(backend.Message{Kind: backend.Published, Channel: m.Channel, Payload: m.Message})
		},
		OnSubscription: func(m rueidis.PubSubSubscription) {
			switch m.Kind {
			case "subscribe", "ssubscribe":
				s.deliver(backend.Message{Kind: backend.Subscribed, Channel: m.Channel})
			case "unsubscribe", "sunsubscribe":
				s.deliver(backend.Message{Kind: backend.Unsubscribed, Channel: m.Channel})
			}
		},
	})
	if len(s.channels) == 0 {
		return nil
	}
	return s.send(ctx, true, s.channels)
}

// send subscribes or unsubscribes channels on s.dc; s.mu is held. A
// sharded channel goes alone (each in its own slot).
func (s *subscription) send(ctx context.Context, subscribe bool, channels []string) error {
	bl := s.dc.B()
	var cmds []rueidis.Completed
	switch {
	case s.sharded && subscribe:
		for _, c := range channels {
			cmds = append(cmds, bl.Ssubscribe().Channel(c).Build())
		}
	case s.sharded:
		for _, c := range channels {
			cmds = append(cmds, bl.Sunsubscribe().Channel(c).Build())
		}
	case subscribe:
		cmds = append(cmds, bl.Subscribe().Channel(channels...).Build())
	default:
		cmds = append(cmds, bl.Unsubscribe().Channel(channels...).Build())
	}
	for _, c := range cmds {
		if err := s.dc.Do(ctx, c).Error(); err != nil {
			return convertErr(err)
		}
	}
	return nil
}

// deliver queues m for Receive.
func (s *subscription) deliver(m backend.Message) {
	s.qmu.Lock()
	s.queue = append(s.queue, m)
	s.qmu.Unlock()
	select {
	case s.signal <- struct{}{}:
	default:
	}
}

// next pops the first queued message.
func (s *subscription) next() (backend.Message, bool) {
	s.qmu.Lock()
	defer s.qmu.Unlock()
	if len(s.queue) == 0 {
		return backend.Message{}, false
	}
	m := s.queue[0]
	s.queue[0] = backend.Message{}
	s.queue = s.queue[1:]
	return m, true
}

// closeConn gives the connection back (rueidis unsubscribes it); s.mu is
// held.
func (s *subscription) closeConn() {
	if s.release != nil {
		s.release()
	}
	s.dc, s.release, s.errs = nil, nil, nil
}

func (s *subscription) Subscribe(ctx context.Context, channels ...string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range channels {
		if !slices.Contains(s.channels, c) {
			s.channels = append(s.channels, c)
		}
	}
	if s.dc == nil {
		return nil // subscribed at the reconnection
	}
	return s.send(ctx, true, channels)
}

func (s *subscription) Unsubscribe(ctx context.Context, channels ...string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.channels = slices.DeleteFunc(s.channels, func(c string) bool { return slices.Contains(channels, c) })
	if s.dc == nil {
		return nil
	}
	return s.send(ctx, false, channels)
}

// Receive returns the next message. After the connection is lost it
// returns its error; a plain subscription then reconnects at the next
// Receive, a sharded one returns the error again.
func (s *subscription) Receive(ctx context.Context) (backend.Message, error) {
	s.mu.Lock()
	switch {
	case s.closed:
		s.mu.Unlock()
		return backend.Message{}, errClosedSub
	case s.dc == nil && s.lost && s.sharded:
		s.mu.Unlock()
		return backend.Message{}, errLostSharded
	case s.dc == nil:
		if err := s.connect(ctx); err != nil {
			s.closeConn()
			s.mu.Unlock()
			return backend.Message{}, err
		}
	}
	errs := s.errs
	s.mu.Unlock()
	for {
		if m, ok := s.next(); ok {
			return m, nil
		}
		select {
		case <-s.signal:
			continue
		case err, ok := <-errs:
			return s.lose(errs, err, ok)
		case <-s.done:
			return backend.Message{}, errClosedSub
		case <-ctx.Done():
			return backend.Message{}, ctx.Err()
		}
	}
}

// lose ends the connection whose errs reported err: it is given back, and
// a plain subscription opens another at the next Receive.
func (s *subscription) lose(errs <-chan error, err error, ok bool) (backend.Message, error) {
	if !ok || err == nil {
		err = errors.New("rueidisrlock: the subscription's connection ended")
	}
	s.mu.Lock()
	if s.errs == errs {
		s.closeConn()
		s.lost = true
	}
	closed := s.closed
	s.mu.Unlock()
	if closed {
		return backend.Message{}, errClosedSub
	}
	return backend.Message{}, convertErr(err)
}

var (
	errClosedSub   = errors.New("rueidisrlock: subscription closed")
	errLostSharded = errors.New("rueidisrlock: the sharded subscription's connection was lost")
)

func (s *subscription) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.closed {
		s.closed = true
		close(s.done)
		s.closeConn()
	}
	return nil
}
