package faultproxy

import (
	"strings"
	"sync/atomic"
	"time"
)

// Command is a client command whose reply is about to be forwarded.
type Command struct {
	Conn uint64   // the connection, numbered from 1 in accept order
	Name string   // the command name in lower case, such as "evalsha"
	Args []string // the arguments after the name
}

// Action says what happens to one reply.
type Action int

// The actions a [Rule] can take.
const (
	Forward       Action = iota // pass the reply on (after the latency)
	Drop                        // throw the reply away: the command ran, the client never hears
	ResetMidReply               // pass the first half of the reply on, then reset the connection
)

func (a Action) String() string {
	switch a {
	case Forward:
		return "forward"
	case Drop:
		return "drop"
	case ResetMidReply:
		return "reset-mid-reply"
	default:
		return "action(?)"
	}
}

// A Rule chooses the action for the reply of each command. It runs on the
// proxy's goroutine of that connection and must not block.
type Rule func(Command) Action

// Once returns a rule that takes action a on the reply of the first command
// that match accepts, and forwards every other reply.
func Once(match func(Command) bool, a Action) Rule {
	var done atomic.Bool
	return func(c Command) Action {
		if match(c) && done.CompareAndSwap(false, true) {
			return a
		}
		return Forward
	}
}

// SetRule installs r (nil: forward everything). It applies to replies read
// from the server from now on.
func (p *Proxy) SetRule(r Rule) {
	if r == nil {
		p.rule.Store(nil)
		return
	}
	p.rule.Store(&r)
}

// SetLatency delays the server-to-client direction by d (0: none, the
// default): every reply and pub/sub push reaches the client d after the
// proxy has read it from the server. [Proxy.SetRequestLatency] delays the
// other direction; set both to d for a link with a one-way delay of d, a
// round trip of 2d more than loopback's.
//
// The delay is a wire's, not a pause per value: replies read together
// arrive together, so a pipeline's replies are late by d as a whole.
// Values of one connection stay in order, also when d changes; a value
// already in flight keeps the delay it was sent with.
func (p *Proxy) SetLatency(d time.Duration) { p.downLatency.Store(int64(max(d, 0))) }

// SetRequestLatency delays the client-to-server direction by d (0: none,
// the default): every command reaches the server d after the proxy has
// read it from the client, as a remote server sees it, by its own clock
// (the TIME a script reads is d later). Like [Proxy.SetLatency], it is a
// wire's delay: commands sent together (a pipeline) arrive together, in
// order. Commands in flight when the client hangs up still reach the
// server, then the server's side is closed.
func (p *Proxy) SetRequestLatency(d time.Duration) { p.upLatency.Store(int64(max(d, 0))) }

// SetBlackhole makes the proxy read and throw away every reply from now on
// (on) or forward them again (off). Commands still reach the server.
func (p *Proxy) SetBlackhole(on bool) { p.blackhole.Store(on) }

// ResetConnections resets every open connection now (TCP RST to the client
// and to the server) and returns how many there were.
func (p *Proxy) ResetConnections() int {
	p.mu.Lock()
	links := make([]*link, 0, len(p.links))
	for l := range p.links {
		links = append(links, l)
	}
	p.mu.Unlock()
	n := 0
	for _, l := range links {
		if l.close(true) {
			n++
		}
	}
	return n
}

// Stats counts what the proxy did since Start.
type Stats struct {
	Conns    int64 // connections accepted
	Commands int64 // commands forwarded to the server
	Replies  int64 // replies read from the server (pushes included)
	Dropped  int64 // replies thrown away (black hole or Drop)
	Resets   int64 // connections reset (ResetConnections or ResetMidReply)
}

// Stats returns the counters.
func (p *Proxy) Stats() Stats {
	return Stats{
		Conns:    p.nConns.Load(),
		Commands: p.nCommands.Load(),
		Replies:  p.nReplies.Load(),
		Dropped:  p.nDropped.Load(),
		Resets:   p.nResets.Load(),
	}
}

// Count returns how many commands called name (in any case) were forwarded.
func (p *Proxy) Count(name string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.counts[strings.ToLower(name)]
}

// action is the action for the reply to cmd (nil for a push or an unpaired
// reply, to which rules do not apply).
func (p *Proxy) action(cmd *Command) Action {
	if p.blackhole.Load() {
		return Drop
	}
	if cmd == nil {
		return Forward
	}
	if r := p.rule.Load(); r != nil {
		return (*r)(*cmd)
	}
	return Forward
}
