package main

import (
	"encoding/hex"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/go-rlock/rlock/internal/layout"
)

// What counts as a lock: a hash whose every field other than rlock's own
// ("rlock:…") is "<id>:<n>" with an integer value, and that has at least
// one such field (Redisson's layout, so a Java service's lock shows too). A
// semaphore: an integer string at the name beside a "{name}:timeout" sorted
// set of permits taken (Redisson's RPermitExpirableSemaphore). A semaphore
// with no permit out is only a counter and is not listed.

// maxLockFields bounds the hash size read as a possible lock: a lock has one
// holder field and at most three of rlock's.
const maxLockFields = 16

// maxCountLen bounds the string read as a possible semaphore count.
const maxCountLen = 20

// noLease is the score of a Redisson permit taken without a lease: it never
// expires (lockmw/internal/scripts/lib.lua, rlockNoLease).
const noLease = 922337203685477

// lockHash is a hash read as a lock.
type lockHash struct {
	holders  []holder
	token    string
	meta     string
	handoffs int64
}

// parseLock reads fields as a lock; false when the hash is not one.
func parseLock(fields map[string]string) (lockHash, bool) {
	var l lockHash
	for f, v := range fields {
		switch {
		case f == layout.FieldToken:
			l.token = v
		case f == layout.FieldMeta:
			l.meta = v
		case f == layout.FieldHandoffs:
			l.handoffs, _ = strconv.ParseInt(v, 10, 64)
		case strings.HasPrefix(f, layout.OwnPrefix):
		default:
			client, _, ok := splitField(f)
			n, err := strconv.ParseInt(v, 10, 64)
			if !ok || err != nil {
				return lockHash{}, false
			}
			l.holders = append(l.holders, holder{Field: f, Client: client, Count: n, ExpiresMS: -1})
		}
	}
	sortHolders(l.holders)
	return l, len(l.holders) > 0
}

// splitField splits "<clientID>:<ownerID>" at its last colon; ok when the
// owner ID is a decimal number (Redisson's thread ID, rlock's owner
// sequence) and the client ID is not empty.
func splitField(f string) (client, owner string, ok bool) {
	i := strings.LastIndexByte(f, ':')
	if i <= 0 || i == len(f)-1 {
		return "", "", false
	}
	client, owner = f[:i], f[i+1:]
	for _, r := range owner {
		if r < '0' || r > '9' {
			return "", "", false
		}
	}
	return client, owner, true
}

// parseCount reads a semaphore's count: an integer string.
func parseCount(s string) (int64, bool) {
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil
}

// permitHolder names a semaphore permit's member: rlock's is the holder's
// field "<clientID>:<ownerID>"; Redisson's is a permit ID of 16 random bytes,
// shown in hex.
func permitHolder(member string) (shown, client string, rlock bool) {
	if printable(member) {
		if c, _, ok := splitField(member); ok && !strings.Contains(member, "|") {
			return member, c, true
		}
		return member, "", false
	}
	return hex.EncodeToString([]byte(member)), "", false
}

// printable reports whether s is UTF-8 text without control characters.
func printable(s string) bool {
	return utf8.ValidString(s) && strings.IndexFunc(s, func(r rune) bool { return !unicode.IsPrint(r) }) < 0
}

// isUUID reports whether s looks like a UUID (8-4-4-4-12 hex digits):
// Redisson's client IDs always do, and so do rlock's unless WithClientID
// chose another.
func isUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i, r := range s {
		switch i {
		case 8, 13, 18, 23:
			if r != '-' {
				return false
			}
		default:
			if !strings.ContainsRune("0123456789abcdefABCDEF", r) {
				return false
			}
		}
	}
	return true
}

// traceID returns the trace ID of a W3C traceparent
// ("00-<32 hex trace id>-<16 hex span id>-<2 hex flags>"), "" when meta is
// not one.
func traceID(meta string) string {
	p := strings.Split(meta, "-")
	if len(p) != 4 || len(p[0]) != 2 || len(p[1]) != 32 || len(p[2]) != 16 || len(p[3]) != 2 {
		return ""
	}
	if _, err := hex.DecodeString(p[1]); err != nil {
		return ""
	}
	return p[1]
}
