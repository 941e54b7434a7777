package main_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/go-rlock/rlock/internal/testsupport"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// listed is one ls JSON line.
type listed struct {
	Name    string   `json:"name"`
	Kind    string   `json:"kind"`
	Holders []string `json:"holders"`
	TTLMS   *int64   `json:"ttl_ms"`
	Taken   *int64   `json:"taken"`
	Free    *int64   `json:"free"`
	Waiters int64    `json:"waiters"`
}

func TestLsListsLocksAndSemaphoresOnEveryMaster(t *testing.T) {
	for _, topo := range topologies {
		t.Run(topo.name, func(t *testing.T) {
			rdb := redisClient(t, topo.name)
			ctx := testsupport.Ctx(t)
			c := newClient(t, rdb)
			prefix := unique("ls:"+topo.name) + ":"
			var want []string
			for i := range 6 { // names without a hash tag: spread over the masters
				name := fmt.Sprintf("%sorder:%d", prefix, i)
				_, err := c.Mutex(name).TryLock(ctx, 0, 0)
				require.NoError(t, err)
				want = append(want, name)
			}
			java := prefix + "java"
			require.NoError(t, rdb.HSet(ctx, java, "5a1ad1f0-0000-4000-8000-0000000000bb:1", 1).Err())
			_, err := c.Semaphore(prefix+"export", 3).TryLock(ctx, 0, 0)
			require.NoError(t, err)
			want = append(want, java, prefix+"export")
			// Keys that are not locks: skipped.
			require.NoError(t, rdb.Set(ctx, prefix+"plain", "x", 0).Err())
			require.NoError(t, rdb.Set(ctx, prefix+"counter", "7", 0).Err())
			require.NoError(t, rdb.HSet(ctx, prefix+"profile", "email", "a@b.c").Err())

			r := run(t, nil, args(topo.flags(), "-json", "ls", "-count", "2", prefix+"*")...)
			require.Equal(t, 0, r.code, r.stderr)
			assert.Empty(t, r.stderr, "not stopped early")
			var got []string
			for _, l := range lines(r.stdout) {
				var e listed
				decode(t, l, &e)
				got = append(got, e.Name)
				switch e.Name {
				case prefix + "export":
					assert.Equal(t, "semaphore", e.Kind)
					assert.EqualValues(t, 1, *e.Taken)
					assert.EqualValues(t, 2, *e.Free)
				case java:
					assert.Equal(t, "lock", e.Kind)
					assert.EqualValues(t, -1, *e.TTLMS, "no expiry")
				default:
					assert.Equal(t, "lock", e.Kind)
					require.Len(t, e.Holders, 1)
					assert.Greater(t, *e.TTLMS, int64(0))
				}
			}
			slices.Sort(got)
			slices.Sort(want)
			assert.Equal(t, want, got)

			text := run(t, nil, args(topo.flags(), "ls", prefix+"*")...)
			require.Equal(t, 0, text.code, text.stderr)
			assert.Len(t, lines(text.stdout), 1+len(want), "a header and one line each")
		})
	}
}

func TestLsSaysWhenItStopsAtTheLimit(t *testing.T) {
	for _, topo := range topologies {
		t.Run(topo.name, func(t *testing.T) {
			rdb := redisClient(t, topo.name)
			c := newClient(t, rdb)
			prefix := unique("limit:"+topo.name) + ":"
			for i := range 5 {
				_, err := c.Mutex(fmt.Sprintf("%s%d", prefix, i)).TryLock(testsupport.Ctx(t), 0, 0)
				require.NoError(t, err)
			}
			r := run(t, nil, args(topo.flags(), "-json", "ls", "-limit", "2", prefix+"*")...)
			require.Equal(t, 0, r.code, r.stderr)
			assert.Len(t, lines(r.stdout), 2)
			assert.Contains(t, r.stderr, "stopped early, at -limit 2")
		})
	}
}
