package layout_test

import (
	"testing"

	"github.com/go-rlock/rlock/internal/layout"
	"github.com/stretchr/testify/assert"
)

func TestKeyNamesFollowRedissonAndRlockRules(t *testing.T) {
	cases := []struct {
		name string
		got  layout.Keys
		want layout.Keys
	}{
		{"a plain name goes into a hash tag", layout.Mutex("job"), layout.Keys{
			Lock: "job", Channel: "redisson_lock__channel:{job}", Queue: "rlock_queue:{job}",
			Waiters: "rlock_waiters:{job}", Token: "redisson_lock_token:{job}", Handoff: "rlock_handoff:{job}",
			LatchBase: "redisson_unlock_latch:{job}:",
		}},
		{"a name with a brace keeps its tag and rlock's keys get a tilde", layout.Mutex("{t}x"), layout.Keys{
			Lock: "{t}x", Channel: "redisson_lock__channel:{t}x", Queue: "rlock_queue:{t}x~",
			Waiters: "rlock_waiters:{t}x~", Token: "redisson_lock_token:{t}x", Handoff: "rlock_handoff:{t}x~",
			LatchBase: "redisson_unlock_latch:{t}x:",
		}},
		{"a semaphore has Redisson's timeout set and channel", layout.Semaphore("pool"), layout.Keys{
			Lock: "pool", Channel: "redisson_sc:{pool}", Queue: "rlock_queue:{pool}", Waiters: "rlock_waiters:{pool}",
			Handoff: "rlock_handoff:{pool}", LatchBase: "redisson_unlock_latch:{pool}:", Permits: "{pool}:timeout",
			Semaphore: true,
		}},
		{"a semaphore name with a brace is suffixed as is", layout.Semaphore("{p}"), layout.Keys{
			Lock: "{p}", Channel: "redisson_sc:{p}", Queue: "rlock_queue:{p}~", Waiters: "rlock_waiters:{p}~",
			Handoff: "rlock_handoff:{p}~", LatchBase: "redisson_unlock_latch:{p}:", Permits: "{p}:timeout",
			Semaphore: true,
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { assert.Equal(t, tc.want, tc.got) })
	}
}
