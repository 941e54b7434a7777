package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestWhatCountsAsALock(t *testing.T) {
	cases := []struct {
		name   string
		fields map[string]string
		lock   bool
	}{
		{"a Redisson hold", map[string]string{"5a1ad1f0-0000-4000-8000-0000000000aa:1": "2"}, true},
		{"an rlock hold with its own fields", map[string]string{"c:7": "1", "rlock:token": "42", "rlock:meta": "x", "rlock:handoffs": "1"}, true},
		{"a client ID with colons splits at the last one", map[string]string{"svc:eu:1:3": "1"}, true},
		{"a field that is not <id>:<n>", map[string]string{"email": "a@b.c"}, false},
		{"an owner that is not a number", map[string]string{"c:x": "1"}, false},
		{"a count that is not an integer", map[string]string{"c:1": "one"}, false},
		{"rlock's fields alone", map[string]string{"rlock:handoffs": "1"}, false},
		{"a Redisson read-write lock's mode field", map[string]string{"mode": "write", "c:1": "1"}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, ok := parseLock(tc.fields)
			assert.Equal(t, tc.lock, ok)
		})
	}
}

func TestTraceIDComesFromATraceparentOnly(t *testing.T) {
	assert.Equal(t, "4bf92f3577b34da6a3ce929d0e0e4736", traceID("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"))
	assert.Empty(t, traceID("job 42"))
	assert.Empty(t, traceID("00-zzf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"))
}

func TestPermitHoldersAreRlockFieldsOrRedissonIDsInHex(t *testing.T) {
	shown, client, rlock := permitHolder("c1:4")
	assert.Equal(t, []any{"c1:4", "c1", true}, []any{shown, client, rlock})
	shown, client, rlock = permitHolder("\x6d\x41\x47\x9e\x24\xeb\xe3\xe9\x4e\xec\x31\x30\xca\x89\xf7\x1e")
	assert.Equal(t, []any{"6d41479e24ebe3e94eec3130ca89f71e", "", false}, []any{shown, client, rlock})
}

func TestIsUUID(t *testing.T) {
	assert.True(t, isUUID("5a1ad1f0-0000-4000-8000-0000000000aa"))
	assert.False(t, isUUID("billing-worker-1"))
	assert.False(t, isUUID("5a1ad1f0-0000-4000-8000-0000000000a"))
}

func TestWhatCountsAsAReadWriteLock(t *testing.T) {
	cases := []struct {
		name   string
		fields map[string]string
		rw     bool
		sides  []string // the holders' sides, the writer first
	}{
		{"readers", map[string]string{"mode": "read", "c:2": "1", "c:1": "2"}, true, []string{"read", "read"}},
		{"a writer that reads", map[string]string{"mode": "write", "c:1": "1", "c:1:write": "2"}, true, []string{"write", "read"}},
		{"a mode other than read or write", map[string]string{"mode": "other", "c:1": "1"}, false, nil},
		{"no holder", map[string]string{"mode": "read"}, false, nil},
		{"rlock's own field (never in a read-write lock)", map[string]string{"mode": "write", "c:1:write": "1", "rlock:token": "3"}, false, nil},
		{"a count that is not an integer", map[string]string{"mode": "read", "c:1": "x"}, false, nil},
		{"a field that is not <id>:<n>[:write]", map[string]string{"mode": "read", "c:1:read": "1"}, false, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			l, ok := parseRWLock(tc.fields)
			assert.Equal(t, tc.rw, ok)
			var sides []string
			for _, h := range l.holders {
				sides = append(sides, h.Side)
			}
			assert.Equal(t, tc.sides, sides)
		})
	}
}
