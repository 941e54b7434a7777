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
			Semaphore: true, Meta: "{pool}:rlock_meta",
		}},
		{"a semaphore name with a brace is suffixed as is", layout.Semaphore("{p}"), layout.Keys{
			Lock: "{p}", Channel: "redisson_sc:{p}", Queue: "rlock_queue:{p}~", Waiters: "rlock_waiters:{p}~",
			Handoff: "rlock_handoff:{p}~", LatchBase: "redisson_unlock_latch:{p}:", Permits: "{p}:timeout",
			Semaphore: true, Meta: "{p}:rlock_meta",
		}},
		{"a read-write lock has Redisson's channel and readers' timeout prefix", layout.RWMutex("rw"), layout.Keys{
			Lock: "rw", Channel: "redisson_rwlock:{rw}", Queue: "rlock_queue:{rw}", Waiters: "rlock_waiters:{rw}",
			Token: "redisson_lock_token:{rw}", Handoff: "rlock_handoff:{rw}", LatchBase: "redisson_unlock_latch:{rw}:",
			Timeouts: "{rw}:", Meta: "{rw}:rlock_meta",
		}},
		{"a read-write lock name with a brace keeps it in its timeout prefix", layout.RWMutex("{t}rw"), layout.Keys{
			Lock: "{t}rw", Channel: "redisson_rwlock:{t}rw", Queue: "rlock_queue:{t}rw~", Waiters: "rlock_waiters:{t}rw~",
			Token: "redisson_lock_token:{t}rw", Handoff: "rlock_handoff:{t}rw~", LatchBase: "redisson_unlock_latch:{t}rw:",
			Timeouts: "{t}rw:", Meta: "{t}rw:rlock_meta",
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { assert.Equal(t, tc.want, tc.got) })
	}
}

func TestNamespaced(t *testing.T) {
	for _, tc := range []struct{ name, lock, queue, channel, permits string }{
		{"orders:42", "app:{orders:42}", "app:rlock_queue:app:{orders:42}~", "app:redisson_sc:app:{orders:42}", "app:{orders:42}:timeout"},
		{"{t}:x", "app:{t}:x", "app:rlock_queue:app:{t}:x~", "app:redisson_sc:app:{t}:x", "app:{t}:x:timeout"},
	} {
		k := layout.Namespaced("app:", layout.Semaphore(layout.InNamespace("app:", tc.name)))
		if k.Lock != tc.lock || k.Queue != tc.queue || k.Channel != tc.channel || k.Permits != tc.permits {
			t.Errorf("%q: %+v", tc.name, k)
		}
	}
	if k := layout.Namespaced("", layout.Mutex(layout.InNamespace("", "x"))); k != layout.Mutex("x") {
		t.Errorf("no namespace changed the keys: %+v", k)
	}
	if got := layout.RWMutex(layout.InNamespace("app:", "d")).Timeouts; got != "app:{d}:" {
		t.Errorf("a read-write lock's timeout prefix in a namespace is %q, want what its script derives from the hash, app:{d}:", got)
	}
}
