package crashworker

import (
	"fmt"
	"strings"

	"github.com/go-rlock/rlock/internal/reliability"
	"github.com/go-rlock/rlock/lockmw"
	"github.com/go-rlock/rlock/lockmw/backend"
)

// A Dialer builds the worker's client of the redis-server at addr, one of
// -addr's, as o says.
type Dialer func(addr string, o DialOptions) (Conn, error)

// DialOptions say how a Dialer builds a client.
type DialOptions struct {
	// Client is addr's place in -addr (0 on one Redis; a quorum's masters
	// in order): the Client of the reliability.SendHook or
	// reliability.SendRecorder that records its sends.
	Client int
	// DefaultOptions asks for the client's default options (-default-
	// options, as users configure): go-redis's has ContextTimeoutEnabled
	// off, otherwise on.
	DefaultOptions bool
	// Sends records the scripts the client sends with no
	// reliability.SendTimes in their context (the watchdog's renewals),
	// through a hook of Sends.Hook or a reliability.SendRecorder; nil when
	// the mode records none.
	Sends *reliability.ScriptSends
}

// A Conn is a client a Dialer built.
type Conn struct {
	// Backend is the client as a lockmw back-end.
	Backend backend.Backend
	// Close closes the client, after the lockmw.Client on it.
	Close func()
}

// conns are the clients of one worker, in -addr's order.
type conns []Conn

func (cs conns) close() {
	for _, c := range cs {
		c.Close()
	}
}

// connect dials every address of addr, comma-separated, and returns the
// lockmw Client on them with opts: on one Redis (lockmw.NewFromBackend),
// or on a quorum of the masters addr names (lockmw.NewQuorumOf).
func connect(dial Dialer, addr string, o DialOptions, opts ...lockmw.Option) (conns, *lockmw.Client, error) {
	var cs conns
	for i, a := range strings.Split(addr, ",") {
		o.Client = i
		c, err := dial(a, o)
		if err != nil {
			cs.close()
			return nil, nil, fmt.Errorf("client of %s: %w", a, err)
		}
		cs = append(cs, c)
	}
	if len(cs) > 1 {
		members := make([]backend.Backend, len(cs))
		for i, c := range cs {
			members[i] = c.Backend
		}
		return cs, lockmw.NewQuorumOf(members, opts...), nil
	}
	return cs, lockmw.NewFromBackend(cs[0].Backend, opts...), nil
}
