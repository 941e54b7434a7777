package rpclock

import (
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/go-rlock/rlock/lockmw"
)

// Defaults, which grpcmw and connectmw export under their own names.
const (
	// DefaultWait is how long a call waits for its lock: as httpmw's, a call
	// should not hold a connection long.
	DefaultWait = 10 * time.Second
	// DefaultRetryAfter is the retry delay of a busy answer when the
	// holder's lease is unknown.
	DefaultRetryAfter = time.Second
	// KeyPrefix starts every default lock name: "rpc:" + full method.
	KeyPrefix = "rpc:"
)

// limitInfix follows KeyPrefix in the name of a semaphore of more than one
// permit, as httpmw's and asynqmw's follow theirs, so that it never shares a
// Redis key with a method's mutex.
const limitInfix = "limit:"

// Settings are the options both adapters take, checked by Invalid.
type Settings struct {
	Wait    time.Duration
	Lease   time.Duration
	Permits int
	Headers []string // metadata keys whose values suffix the name, lower-case

	badHeader string // what AddHeader found wrong first
}

// AddHeader adds the metadata key h, lower-cased, given to the option called
// option ("WithMetadataKey"); a key that InvalidHeader refuses makes Invalid
// say so.
func (s *Settings) AddHeader(option, h string) {
	h = strings.ToLower(h)
	if msg := InvalidHeader(option, h); msg != "" && s.badHeader == "" {
		s.badHeader = msg
	}
	s.Headers = append(s.Headers, h)
}

// DefaultSettings are the settings before the options.
func DefaultSettings() Settings {
	return Settings{Wait: DefaultWait, Permits: 1}
}

// Invalid describes the first invalid value of s, "" when there is none, as
// the adapters' New panics with it.
func (s *Settings) Invalid() string {
	switch {
	case s.badHeader != "":
		return s.badHeader
	case s.Wait < 0:
		return fmt.Sprintf("WithWait(%v): must not be negative", s.Wait)
	case s.Lease < 0:
		return fmt.Sprintf("WithLease(%v): must not be negative", s.Lease)
	case s.Permits < 1:
		return fmt.Sprintf("WithPermits(%d): must be at least 1", s.Permits)
	}
	return ""
}

// InvalidHeader describes what is wrong with a metadata key given to the
// option called option ("WithMetadataKey"), "" when nothing is. A key is
// what gRPC allows in metadata, lower-case, and not binary ("-bin" values are
// bytes that grpc-go decodes and connect-go does not, so the two would lock
// different names), nor reserved ("grpc-").
func InvalidHeader(option, h string) string {
	bad := func(why string) string { return fmt.Sprintf("%s(%q): %s", option, h, why) }
	switch {
	case h == "":
		return bad("a metadata key is required")
	case strings.HasSuffix(h, "-bin"):
		return bad("a binary (-bin) key cannot name a lock")
	case strings.HasPrefix(h, "grpc-"):
		return bad("grpc- keys are reserved")
	}
	for _, r := range h {
		if !('a' <= r && r <= 'z' || '0' <= r && r <= '9' || r == '-' || r == '_' || r == '.') {
			return bad("not a metadata key (lower-case letters, digits, '-', '_', '.')")
		}
	}
	return ""
}

// Core takes the locks of one adapter's calls. It is safe for concurrent use.
type Core struct {
	c       *lockmw.Client
	s       Settings
	adapter lockmw.LockOption // WithAdapter: the adapter in every lock's events
	name    string            // the adapter's name in the skips it reports
}

// New returns a Core that locks through c with s, which Invalid found valid,
// for the adapter called adapter (lockmw.AdapterGRPC, lockmw.AdapterConnect):
// the hooks' events of its locks, and the skips it reports, carry it.
func New(c *lockmw.Client, s Settings, adapter string) *Core {
	return &Core{c: c, s: s, adapter: lockmw.WithAdapter(adapter), name: adapter}
}

// MethodKey is the default key of a method, "rpc:" + its full name
// ("/pkg.Service/Method", as grpc's info.FullMethod and connect's
// Spec.Procedure both give it).
func MethodKey(fullMethod string) string { return KeyPrefix + fullMethod }

// Name is the name of the lock of key k: k with the values of the metadata
// keys (Settings.Headers) appended, and "limit:" inserted under a limit
// above 1; "" when k is "" (the call runs unlocked). values gives a metadata
// key's values. A key that is missing, or that has several values, is a
// refusal (InvalidArgument): a lock per metadata value cannot place a call
// without exactly one.
//
// The suffix is "#<key>=<value>&<key>=<value>..." in the order the keys were
// given, each value escaped with url.QueryEscape (httpmw's path values'
// format), for example "rpc:/shop.Orders/Pay#x-tenant=acme".
func (c *Core) Name(k string, values func(key string) []string) (string, *Refusal) {
	if k == "" {
		return "", nil
	}
	if len(c.s.Headers) > 0 {
		var b strings.Builder
		b.WriteString(k)
		for i, h := range c.s.Headers {
			vs := values(h)
			if len(vs) != 1 {
				return "", BadKey(fmt.Errorf("the lock needs exactly one %q metadata value, got %d", h, len(vs)))
			}
			b.WriteByte("#&"[min(i, 1)])
			b.WriteString(h)
			b.WriteByte('=')
			b.WriteString(url.QueryEscape(vs[0]))
		}
		k = b.String()
	}
	return c.limited(k), nil
}

// Group is the lockmw.WithGroup of a method's locks, the bounded label of
// their metrics: the method's default name, whatever the key.
func (c *Core) Group(fullMethod string) string {
	return c.limited(MethodKey(fullMethod))
}

// limited is k with "limit:" inserted under a limit above 1: after "rpc:"
// when k starts with it, else in front.
func (c *Core) limited(k string) string {
	if c.s.Permits <= 1 {
		return k
	}
	if rest, ok := strings.CutPrefix(k, KeyPrefix); ok {
		return KeyPrefix + limitInfix + rest
	}
	return limitInfix + k
}

// locker is the lock called name in group: a Mutex, under a limit above 1 a
// Semaphore of that many permits.
func (c *Core) locker(name, group string) lockmw.Locker {
	if c.s.Permits > 1 {
		return c.c.Semaphore(name, c.s.Permits, lockmw.WithGroup(group), c.adapter)
	}
	return c.c.Mutex(name, lockmw.WithGroup(group), c.adapter)
}
