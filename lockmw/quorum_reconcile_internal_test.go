package lockmw

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-rlock/rlock/internal/redistest"
	"github.com/go-rlock/rlock/lockmw/internal/scripts"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A master that was paused runs the requests its connections buffered in no
// fixed order. Whatever the order in which one master runs a field's
// acquisition attempts, their undoing, a renewal and the hold's end, the
// outcome is the same (quorumend.go): an undone attempt keeps nothing, a
// later attempt survives the undoing of an earlier one, and after the end
// the field holds nothing and another owner takes the lock.
func TestQuorumLateRequestsAnyOrder(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := srv.NewClient()
	c := NewQuorum([]redis.UniversalClient{rdb})
	defer c.Close()
	q := c.store.(*quorumStore)
	ctx := context.Background()

	type step struct {
		name string
		run  func(m *Mutex, field string) error
	}
	acquire := func(try int64) step {
		return step{fmt.Sprint("acquire", try), func(m *Mutex, field string) error {
			call := q.acquireCall(m, attempt{field: field, ttl: time.Minute}, try)
			return redis.NewScript(scripts.QuorumAcquire.Source()).Run(ctx, rdb, call.Keys, call.Args...).Err()
		}}
	}
	end := func(upto int64) step {
		return step{fmt.Sprint("end", upto), func(m *Mutex, field string) error {
			call := q.endCall(m, field, upto, time.Minute, true)
			return redis.NewScript(scripts.QuorumEnd.Source()).Run(ctx, rdb, call.Keys, call.Args...).Err()
		}}
	}
	renew := step{"renew", func(m *Mutex, field string) error {
		return redis.NewScript(scripts.Renew.Source()).Run(ctx, rdb, []string{m.k.lock}, time.Minute.Milliseconds(), field).Err()
	}}
	release := step{"release", func(m *Mutex, field string) error {
		mark := q.endCall(m, field, endAll, time.Minute, false)
		if err := redis.NewScript(scripts.QuorumEnd.Source()).Run(ctx, rdb, mark.Keys, mark.Args...).Err(); err != nil {
			return err
		}
		return redis.NewScript(scripts.Release.Source()).Run(ctx, rdb, m.fullKeys("r-"+field), field, "publish", c.latchArg, int64(0), argTrue, c.tokenTTLArg).Err()
	}}

	for _, tc := range []struct {
		name  string
		steps []step
		held  bool // the field holds the lock at the end
	}{
		{"an undone attempt keeps nothing", []step{acquire(1), end(1)}, false},
		{"undoing an attempt leaves a later one", []step{acquire(1), end(1), acquire(2)}, true},
		{"the end of a wait takes every attempt back", []step{acquire(1), end(1), acquire(2), end(endAll)}, false},
		{"the end of a hold takes a late acquisition back", []step{acquire(1), renew, release}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for i, order := range permutations(len(tc.steps)) {
				name := fmt.Sprintf("late-%s-%d", strings.ReplaceAll(tc.name, " ", "-"), i)
				m := c.Mutex(name)
				field := fmt.Sprintf("%s:%d", c.id, i)
				var names []string
				for _, j := range order {
					require.NoError(t, tc.steps[j].run(m, field))
					names = append(names, tc.steps[j].name)
				}
				has, err := rdb.HExists(ctx, name, field).Result()
				require.NoError(t, err)
				assert.Equal(t, tc.held, has, "after %v", names)
				if !tc.held {
					other := attempt{field: c.id + ":other", ttl: time.Minute}
					call := q.acquireCall(m, other, int64(100+i))
					res, err := redis.NewScript(scripts.QuorumAcquire.Source()).Run(ctx, rdb, call.Keys, call.Args...).Slice()
					require.NoError(t, err)
					got, err := parseQuorumAcquire(res)
					require.NoError(t, err)
					assert.True(t, got.reply.won, "another owner takes the lock after %v", names)
				}
			}
		})
	}
}

// permutations returns every order of 0..n-1.
func permutations(n int) [][]int {
	if n == 0 {
		return [][]int{nil}
	}
	var out [][]int
	for _, p := range permutations(n - 1) {
		for i := 0; i <= len(p); i++ {
			q := append(append(append([]int{}, p[:i]...), n-1), p[i:]...)
			out = append(out, q)
		}
	}
	return out
}
