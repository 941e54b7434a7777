package faultproxy

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// dialTimeout bounds connecting to the target for one accepted connection.
const dialTimeout = 5 * time.Second

// Proxy forwards connections from its loopback address to a target address,
// injecting faults. Its methods are safe for concurrent use.
type Proxy struct {
	target string
	ln     net.Listener
	wg     sync.WaitGroup

	upLatency   atomic.Int64 // time.Duration: commands, client to server
	downLatency atomic.Int64 // time.Duration: replies and pushes, server to client
	blackhole   atomic.Bool
	rule        atomic.Pointer[Rule]

	nConns, nCommands, nReplies, nDropped, nResets atomic.Int64
	connSeq                                        atomic.Uint64

	mu     sync.Mutex
	links  map[*link]struct{}
	counts map[string]int
	closed bool
}

// Start listens on a free loopback port and forwards every connection made
// to it to target ("host:port"). Close the proxy when done.
func Start(target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("faultproxy: %w", err)
	}
	p := &Proxy{target: target, ln: ln, links: make(map[*link]struct{}), counts: make(map[string]int)}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Addr returns the address clients connect to, "127.0.0.1:port".
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Target returns the address the proxy forwards to.
func (p *Proxy) Target() string { return p.target }

// Close stops accepting, closes every connection and waits for the proxy's
// goroutines to end. It is safe to call more than once.
func (p *Proxy) Close() error {
	p.mu.Lock()
	p.closed = true
	links := make([]*link, 0, len(p.links))
	for l := range p.links {
		links = append(links, l)
	}
	p.mu.Unlock()
	err := p.ln.Close()
	if errors.Is(err, net.ErrClosed) {
		err = nil
	}
	for _, l := range links {
		l.close(false)
	}
	p.wg.Wait()
	return err
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return // closed
		}
		p.nConns.Add(1)
		l, err := p.newLink(c.(*net.TCPConn))
		if err != nil {
			_ = c.Close()
			continue
		}
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			l.close(false)
			return
		}
		p.links[l] = struct{}{}
		p.wg.Add(4)
		p.mu.Unlock()
		go l.readCommands()
		go l.deliver(l.requests, l.server, l.upClock)
		go l.readReplies()
		go l.deliver(l.replies, l.client, l.downClock)
	}
}

// newLink connects to the target for the client c.
func (p *Proxy) newLink(c *net.TCPConn) (*link, error) {
	up, err := newClock()
	if err != nil {
		return nil, err
	}
	down, err := newClock()
	if err != nil {
		up.close()
		return nil, err
	}
	s, err := net.DialTimeout("tcp", p.target, dialTimeout)
	if err != nil {
		up.close()
		down.close()
		return nil, err
	}
	return &link{
		p:         p,
		id:        p.connSeq.Add(1),
		client:    c,
		server:    s.(*net.TCPConn),
		done:      make(chan struct{}),
		requests:  make(chan segment, wireBuffer),
		replies:   make(chan segment, wireBuffer),
		upClock:   up,
		downClock: down,
	}, nil
}

func (p *Proxy) forget(l *link) {
	p.mu.Lock()
	delete(p.links, l)
	p.mu.Unlock()
}

// A link is one proxied connection: client <-> proxy <-> server, four
// goroutines: a reader and a [link.deliver] wire for each direction.
type link struct {
	p                  *Proxy
	id                 uint64
	client, server     *net.TCPConn
	done               chan struct{}
	requests, replies  chan segment // the wires: commands up, replies down
	upClock, downClock *clock       // their waits
	once               sync.Once

	mu      sync.Mutex
	pending []Command // commands sent, reply not read yet, oldest first
	pubsub  bool      // a SUBSCRIBE-family command was sent: no more pairing
}

// close closes both sides once, with a TCP reset when reset is set, and
// reports whether this call closed it.
func (l *link) close(reset bool) bool {
	closed := false
	l.once.Do(func() {
		closed = true
		if reset {
			l.p.nResets.Add(1)
			_ = l.client.SetLinger(0)
			_ = l.server.SetLinger(0)
		}
		close(l.done)
		l.upClock.close()
		l.downClock.close()
		_ = l.client.Close()
		_ = l.server.Close()
		l.p.forget(l)
	})
	return closed
}

// readCommands reads the client's commands whole, notes each one so its
// reply can be paired with it, and puts it on the wire to the server.
func (l *link) readCommands() {
	defer l.p.wg.Done()
	defer close(l.requests)
	r := bufio.NewReaderSize(l.client, 64<<10)
	for {
		raw, args, err := readCommand(r)
		if err != nil {
			return
		}
		if len(args) > 0 {
			l.note(args)
		}
		l.p.nCommands.Add(1)
		if !l.send(l.requests, segment{raw: raw, action: Forward}, l.p.upLatency.Load()) {
			return
		}
	}
}

// note counts the command args and queues it for pairing with its reply.
func (l *link) note(args []string) {
	name := strings.ToLower(args[0])
	l.p.mu.Lock()
	l.p.counts[name]++
	l.p.mu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	switch name {
	case "subscribe", "psubscribe", "ssubscribe":
		l.pubsub = true
		l.pending = nil
	}
	if !l.pubsub {
		l.pending = append(l.pending, Command{Conn: l.id, Name: name, Args: args[1:]})
	}
}

// next returns the command the reply of type typ answers, or nil.
func (l *link) next(typ byte) *Command {
	l.mu.Lock()
	defer l.mu.Unlock()
	if typ == '>' || l.pubsub || len(l.pending) == 0 {
		return nil
	}
	c := l.pending[0]
	l.pending = l.pending[1:]
	return &c
}

// readReplies reads the server's replies and pushes whole, decides what
// happens to each, and puts it on the wire to the client.
func (l *link) readReplies() {
	defer l.p.wg.Done()
	defer close(l.replies)
	r := bufio.NewReaderSize(l.server, 64<<10)
	for {
		raw, typ, err := readValue(r, nil)
		if err != nil {
			return
		}
		l.p.nReplies.Add(1)
		if !l.send(l.replies, segment{raw: raw, action: l.p.action(l.next(typ))}, l.p.downLatency.Load()) {
			return
		}
	}
}
