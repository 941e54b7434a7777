package main

import (
	"context"
)

// showView is show's JSON object (and what its text prints).
type showView struct {
	Name       string `json:"name"`
	Kind       string `json:"kind"`
	Mode       string `json:"mode,omitempty"` // a read-write lock's: "read" or "write"
	ServerTime string `json:"server_time"`
	TTLMS      *int64 `json:"ttl_ms,omitempty"` // a lock's: -1 no expiry
	// ExpiresInMS is TTLMS by a name that says what it is: the key expires
	// then unless its holder renews it (a watchdog does, a lease does not).
	ExpiresInMS     *int64       `json:"expires_in_ms,omitempty"`
	Token           string       `json:"token,omitempty"`
	Metadata        string       `json:"metadata,omitempty"`
	TraceID         string       `json:"trace_id,omitempty"`
	Handoffs        int64        `json:"handoffs,omitempty"`
	Free            *int64       `json:"free,omitempty"` // a semaphore's free permits
	Holders         []holderView `json:"holders"`
	Expired         []holderView `json:"expired,omitempty"` // a semaphore's permits past expiry, not reclaimed yet
	Waiters         []waiterView `json:"waiters"`
	RedissonWaiting int64        `json:"redisson_waiting"`
	OpenUntil       string       `json:"open_until,omitempty"`
}

// holderView is one holder of a lock or one permit of a semaphore.
type holderView struct {
	Field       string `json:"field"`
	Client      string `json:"client,omitempty"`
	Count       int64  `json:"count"`
	Rlock       bool   `json:"rlock"`
	Evidence    string `json:"evidence,omitempty"`
	Expires     string `json:"expires,omitempty"` // a permit's; "" never
	RemainingMS int64  `json:"remaining_ms"`      // -1 never
	Side        string `json:"side,omitempty"`    // a read-write lock's holder: "read" or "write"
	// ExpiresInMS is RemainingMS by a name that says what it is: the hold
	// expires then unless renewed; -1 never.
	ExpiresInMS int64 `json:"expires_in_ms"`
	// Metadata is what a hook stored with the hold (otelhooks: a W3C
	// traceparent), for every kind; TraceID its trace ID when it is one.
	Metadata string `json:"metadata,omitempty"`
	TraceID  string `json:"trace_id,omitempty"`
	// LevelsMS is a reader's remaining TTL of each level's timeout key (-2
	// missing, -1 no expiry); absent when not read (the readers changed
	// meanwhile).
	LevelsMS []int64 `json:"levels_ms,omitempty"`
}

// waiterView is one queued waiter.
type waiterView struct {
	Position    int    `json:"position"`
	Field       string `json:"field"`
	Client      string `json:"client"`
	Deadline    string `json:"deadline"`
	RemainingMS int64  `json:"remaining_ms"`
	TTLMS       int64  `json:"ttl_ms"`
	Fenced      bool   `json:"fenced"`
	Side        string `json:"side,omitempty"` // a read-write lock's waiter: "read" or "write"
	// EntryExpires and EntryExpiresInMS are Deadline and RemainingMS by
	// names that say what they are: when the queue entry expires unless its
	// waiter refreshes it (the hold's TTL plus a grace, not the wait's end).
	EntryExpires     string `json:"entry_expires"`
	EntryExpiresInMS int64  `json:"entry_expires_in_ms"`
	// HoldTTLMS is TTLMS by a name that says what it is: the TTL the
	// waiter's hold gets.
	HoldTTLMS int64 `json:"hold_ttl_ms"`
}

// runShow is "rlock show NAME".
func runShow(ctx context.Context, c *cli, args []string) error {
	fs := newFlagSet("show")
	rest, err := c.parseCommand(fs, args, 1, "NAME")
	if err != nil {
		return err
	}
	rdb, err := c.connect(ctx)
	if err != nil {
		return err
	}
	defer rdb.Close()
	ctx, cancel := context.WithTimeout(ctx, c.conn.timeout)
	defer cancel()
	s, err := readState(ctx, rdb, c.ns, rest[0])
	if err != nil {
		return err
	}
	if s.kind == "" {
		return notLockedError{name: s.name, why: s.why}
	}
	node, err := nodeFor(ctx, rdb, s.key)
	if err != nil {
		return err
	}
	subs, err := countSubscribers(ctx, node, s)
	if err != nil {
		return err
	}
	v := newShowView(s, subs)
	p := c.printer()
	if p.json {
		p.object(v)
	} else {
		v.print(p)
	}
	return p.err
}
