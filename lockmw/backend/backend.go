package backend

import (
	"context"
	"errors"
	"time"
)

// Backend is a Redis client as lockmw's engine uses it. Its methods are
// safe for concurrent use. Process, Pipeline and Info are what every
// back-end writes; the others are capabilities with defaults in
// [Defaults], which an implementation embeds (the unexported method below
// makes embedding it required).
type Backend interface {
	// Process runs cmd and sets its reply; it returns cmd.Err(). It may
	// re-send cmd after a network error (the engine's scripts are latched
	// against running twice) for at most Info().Resend after first sending
	// it. It returns when ctx ends if Info().ContextDeadlines, else it may
	// return up to Info().ReadTimeout later.
	Process(ctx context.Context, cmd *Cmd) error

	// Pipeline runs cmds in order, in as few round trips as it can (one per
	// node on a cluster, routing each by its first key and following the
	// cluster's redirections), and sets each command's reply or error of
	// its own; it returns the first error, or nil. A command is never run
	// twice unless the server did not run it (the latches make a re-sent
	// script harmless all the same).
	Pipeline(ctx context.Context, cmds []*Cmd) error

	// Info describes the client; the engine reads it once.
	Info() Info

	// Subscribe opens a subscription to channels: sharded (SSUBSCRIBE, on
	// the node serving the first channel's slot) when sharded is true,
	// else plain SUBSCRIBE. The channels' confirmations arrive as
	// [Subscribed] messages. Default: [errors.ErrUnsupported]: a Lock that
	// must wait then fails with it (TryLock without a wait works).
	Subscribe(ctx context.Context, sharded bool, channels ...string) (Subscription, error)

	// NodeOf names the master serving key's slot on a cluster ("" when
	// the client is not a cluster's): the engine keeps a pipeline queue and
	// a sharded subscription per node. Default: "".
	NodeOf(ctx context.Context, key string) (string, error)

	// Refresh asks a cluster client to reload its slot map now (after a
	// fail-over a pipeline to a dead master does not). Default: nothing.
	Refresh(ctx context.Context)

	// PipelineOn runs cmds in one pipeline on one connection of the master
	// serving key, in order, as WAIT needs (it counts the writes of its own
	// connection). With no commands it only reports, without a round trip,
	// whether it is offered (nil). Default: [errors.ErrUnsupported]: a
	// Client with WithReplicaSync panics in its constructor.
	PipelineOn(ctx context.Context, key string, cmds []*Cmd) error

	defaults()
}

// Info is what the engine must know of a back-end's client.
type Info struct {
	// Name names the client in logs and errors (an address).
	Name string
	// Cluster says the keys are spread over masters by hash slot: the keys
	// of one script share a slot (lockmw's do), short releases merge per
	// slot, and subscriptions are sharded on Redis 7.
	Cluster bool
	// ContextDeadlines says a call returns at its context's deadline
	// (go-redis: ContextTimeoutEnabled). When false the engine bounds such
	// calls itself (a goroutine per call whose context has a deadline).
	ContextDeadlines bool
	// ReadTimeout is the longest one read of a reply may wait whatever the
	// context says; 0 when unknown or unbounded.
	ReadTimeout time.Duration
	// Resend is the longest the client may go on re-sending one command
	// after first sending it (retries × read timeout, plus back-offs); the
	// scripts' latches live at least that long (between 1 s and 1 min). 0:
	// the engine assumes what go-redis's default options allow (4 tries of
	// 3 s, 512 ms apart: 13.5 s).
	Resend time.Duration
	// Batch says Pipeline sends its commands in one round trip (per node):
	// the engine then queues concurrent calls into pipelines. false: every
	// call goes alone through Process.
	Batch bool
}

// Subscription is one pub/sub connection's subscriptions.
//
// After Receive returns an error the connection is gone. A plain
// (unsharded) subscription then reconnects at the next Receive and
// subscribes its channels again, each confirmed by a Subscribed message; a
// sharded one does not: the engine opens a new one on the node serving the
// slot now. A node that unsubscribes a sharded channel by itself (its slot
// moved) sends an Unsubscribed message.
type Subscription interface {
	// Subscribe adds channels (sharded like the subscription).
	Subscribe(ctx context.Context, channels ...string) error
	// Unsubscribe removes channels.
	Unsubscribe(ctx context.Context, channels ...string) error
	// Receive waits for the next message or error; ctx ending ends it.
	Receive(ctx context.Context) (Message, error)
	// Close closes the connection; a Receive under way returns an error.
	Close() error
}

// MessageKind is what a subscription's message says.
type MessageKind int

const (
	// Published is a message published to a channel.
	Published MessageKind = iota
	// Subscribed confirms a channel's subscription.
	Subscribed
	// Unsubscribed says a channel is no longer subscribed: the client asked,
	// or (sharded) the node dropped it.
	Unsubscribed
)

// Message is one message of a subscription.
type Message struct {
	Kind    MessageKind
	Channel string
	Payload string
}

// Defaults is embedded in every Backend: it gives each capability its
// default, so that a capability added to Backend later keeps existing
// back-ends compiling.
type Defaults struct{}

//lint:ignore U1000 the marker of Backend: a back-end gets it by embedding Defaults.
func (Defaults) defaults() {}

// Subscribe is not offered: [errors.ErrUnsupported].
func (Defaults) Subscribe(context.Context, bool, ...string) (Subscription, error) {
	return nil, errors.ErrUnsupported
}

// NodeOf says the client is not a cluster's: "".
func (Defaults) NodeOf(context.Context, string) (string, error) { return "", nil }

// Refresh does nothing.
func (Defaults) Refresh(context.Context) {}

// PipelineOn is not offered: [errors.ErrUnsupported].
func (Defaults) PipelineOn(context.Context, string, []*Cmd) error { return errors.ErrUnsupported }
