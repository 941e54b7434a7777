package lockmw

import (
	"time"
	"unsafe"
)

// Script arguments boxed once: a flag or a number passed as an interface
// value would otherwise allocate on every call.
var argTrue, argFalse any = "1", "0"

// flag is b as a script argument, "1" or "0".
func flag(b bool) any {
	if b {
		return argTrue
	}
	return argFalse
}

// ttlArg is the script argument for ttl in ms; the watchdog timeout's is
// boxed once per Client.
func (c *Client) ttlArg(ttl time.Duration) any {
	if ttl == c.opts.watchdog {
		return c.watchdogArg
	}
	return msCeil(ttl)
}

// claimArg is the script argument for claimWindow(ttl); the watchdog
// timeout's is boxed once per Client.
func (c *Client) claimArg(ttl time.Duration) any {
	if ttl == c.opts.watchdog {
		return c.claimWDArg
	}
	return claimWindow(ttl)
}

// expireArg boxes UnlockAt's expiry for the release script; 0 (release
// now) without an allocation.
func expireArg(ms int64) any {
	if ms == 0 {
		return argFalse
	}
	return ms
}

// asInt reads an integer of a script's reply; 0 when it is not one.
func asInt(v any) int64 {
	n, _ := v.(int64)
	return n
}

// strArg is a string script argument kept elsewhere (a hold's field, a
// level's latch key), passed by pointer: an interface value holding a
// pointer costs no allocation, where one holding a string copies the
// string's header to the heap. go-redis writes it with MarshalBinary (the
// string's bytes, not copied); hooks that print a command see the string
// (String).
type strArg string

// MarshalBinary returns the string's bytes, which go-redis only reads.
func (s *strArg) MarshalBinary() ([]byte, error) {
	return unsafe.Slice(unsafe.StringData(string(*s)), len(*s)), nil
}

func (s *strArg) String() string { return string(*s) }

// argString is a key argument as a string: a string, or one kept
// elsewhere (strArg, a level's latch); false for anything else.
func argString(v any) (string, bool) {
	switch v := v.(type) {
	case string:
		return v, true
	case *strArg:
		return string(*v), true
	case *levelLatch:
		return v.latch, true
	}
	return "", false
}

// argOf is *s as a script argument, without an allocation: *s must not
// change once a command holds it.
func argOf(s *string) any { return (*strArg)(s) }
