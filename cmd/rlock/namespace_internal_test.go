package main

import (
	"testing"

	"github.com/go-rlock/rlock/internal/layout"
)

func TestNameOfIsTheInverseOfInNamespace(t *testing.T) {
	ns := namespace("app:")
	for _, name := range []string{"orders:42", "{t}:x", "x{y}", "a}b", "{a}{b}", "rlock_queue:foo", "redisson_lock__channel:{x}"} {
		key := ns.key(name)
		got, ok := ns.nameOf(key)
		if !ok || ns.key(got) != key {
			t.Errorf("nameOf(%q) = %q, %v; want a name whose key is %q", key, got, ok, key)
		}
		if name == "orders:42" && got != name {
			t.Errorf("nameOf(%q) = %q, want %q", key, got, name)
		}
		for _, k := range []layout.Keys{ns.mutex(name), ns.semaphore(name), ns.rwMutex(name)} {
			for _, side := range []string{k.Channel, k.Queue, k.Waiters, k.Token, k.Handoff} {
				if n, ok := ns.nameOf(side); side != "" && ok {
					t.Errorf("the side key %q of %q is listed as %q", side, name, n)
				}
			}
		}
	}
	for _, key := range []string{"other:{x}", "app:plain", "app:"} {
		if n, ok := ns.nameOf(key); ok {
			t.Errorf("nameOf(%q) = %q, want none", key, n)
		}
	}
}

func TestGlobMatchIsRedisGlob(t *testing.T) {
	for _, tc := range []struct {
		pattern, s string
		want       bool
	}{
		{"*", "", true},
		{"*", "a:b", true},
		{"orders:*", "orders:42", true},
		{"orders:*", "order:42", false},
		{"o?ders", "orders", true},
		{"o?ders", "oders", false},
		{"[op]*", "pool", true},
		{"[^op]*", "pool", false},
		{"[a-c]x", "bx", true},
		{"[c-a]x", "bx", true},
		{`a\*`, "a*", true},
		{`a\*`, "ab", false},
		{`[\]]`, "]", true},
		{"a**b", "axxb", true},
		{"a*", "", false},
		{"[ab", "a", true},
	} {
		if got := globMatch(tc.pattern, tc.s); got != tc.want {
			t.Errorf("globMatch(%q, %q) = %v, want %v", tc.pattern, tc.s, got, tc.want)
		}
	}
}
