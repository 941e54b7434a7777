package main

import (
	"crypto/rand"
	"encoding/hex"
	"strings"

	"github.com/go-rlock/rlock/lockmw"
)

// runID tells this run's Clients from those of an earlier run on the same
// server. A Client ID must not be reused while locks or unlock latches
// (redisson_unlock_latch:…, which live some seconds) of a Client with that
// ID may remain: two runs within seconds against one REDIS_ADDR would
// otherwise mistake each other's holds and latches for their own.
var runID = func() string {
	b := make([]byte, 2)
	_, _ = rand.Read(b) // never fails (crypto/rand.Read panics rather than return an error)
	return hex.EncodeToString(b)
}()

// withName gives a Client the ID name@<runID>.
func withName(name string) lockmw.Option {
	return lockmw.WithClientID(name + "@" + runID)
}

// clientOf returns the name of the Client in a lock holder's field
// "<name>@<runID>:<ownerID>", or the field's client ID part when it is not
// one of the demo's.
func clientOf(holder string) string {
	if holder == "" {
		return "someone"
	}
	if i := strings.LastIndexByte(holder, ':'); i > 0 {
		holder = holder[:i]
	}
	if name, run, ok := strings.Cut(holder, "@"); ok && run == runID {
		return name
	}
	return holder
}
