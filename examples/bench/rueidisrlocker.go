package main

import (
	"fmt"

	"github.com/go-rlock/rlock/lockmw"
	"github.com/go-rlock/rlock/lockmw/rueidisrlock"
	"github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"
)

// rueidisKind is rlock on rueidis (lockmw/rueidisrlock), one rueidis client
// with its default options (rueidisOption) under one lockmw.Client;
// rueidisAutoKind is the same with lockmw.WithoutBatching: every call
// alone through rueidis's Do, pipelined by rueidis's automatic
// pipelining instead of the engine's batcher. They are -lock names but not
// part of -lock all (run them with -lock rlock,rueidislock,rlock-rueidis,…).
const (
	rueidisKind     = "rlock-rueidis"
	rueidisAutoKind = "rlock-rueidis-autopipeline"
)

// clientKinds are the -lock names of rlock on another client than go-redis.
var clientKinds = []string{rueidisKind, rueidisAutoKind, valkeyKind, valkeylockKind}

// newRueidisRlock returns the lockers of names on one rueidisrlock Client,
// its commands counted in counter (nil: none), and the func that closes
// the Client and its rueidis client.
func newRueidisRlock(kind string, rdb redis.UniversalClient, counter *cmdCounter, names []string) ([]locker, func() error, error) {
	rc, err := rueidis.NewClient(rueidisOption(rdb))
	if err != nil {
		return nil, nil, fmt.Errorf("rueidis: %w", err)
	}
	var client rueidis.Client = rc
	if counter != nil {
		client = countingRueidis{Client: rc, counter: counter}
	}
	var opts []lockmw.Option
	if kind == rueidisAutoKind {
		opts = append(opts, lockmw.WithoutBatching())
	}
	c := rueidisrlock.New(client, opts...)
	ls := make([]locker, len(names))
	for i, n := range names {
		ls[i] = &rlockLocker{c: c, m: c.Mutex(n)}
	}
	return ls, func() error {
		err := c.Close()
		rc.Close()
		return err
	}, nil
}
