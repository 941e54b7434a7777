package lockmw_test

import (
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/go-rlock/rlock/internal/faultproxy"
	"github.com/go-rlock/rlock/internal/redistest"
	"github.com/go-rlock/rlock/internal/testsupport"
	"github.com/go-rlock/rlock/internal/testsupport/locktest"
	"github.com/go-rlock/rlock/lockmw/backend"
	"github.com/go-rlock/rlock/lockmw/internal/scripts"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// onName records the commands on one lock name that pass a fault proxy, and
// cuts off the replies of the first n that cut accepts (the commands ran:
// go-redis sends them again, goRedisTries times in all).
type onName struct {
	name  string
	cut   func(faultproxy.Command) bool
	n     int32
	fired atomic.Int32
	mu    sync.Mutex
	cmds  []string
}

// rule is the proxy's rule.
func (o *onName) rule(c faultproxy.Command) faultproxy.Action {
	if !slices.Contains(c.Args, o.name) {
		return faultproxy.Forward
	}
	o.mu.Lock()
	o.cmds = append(o.cmds, commandName(c))
	o.mu.Unlock()
	if o.cut(c) && o.fired.Add(1) <= o.n {
		return faultproxy.ResetMidReply
	}
	return faultproxy.Forward
}

// take returns the commands recorded since the last take.
func (o *onName) take() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	cmds := o.cmds
	o.cmds = nil
	return cmds
}

// commandName is "restore", "fastrelease" for the short release script,
// "script" for any other.
func commandName(c faultproxy.Command) string {
	switch {
	case c.Name == "restore":
		return "restore"
	case c.Name == "evalsha" && len(c.Args) > 0 && c.Args[0] == scripts.FastReleaseSHA:
		return "fastrelease"
	case c.Name == "evalsha" || c.Name == "eval":
		return "script"
	}
	return c.Name
}

// A command of the fast path that go-redis sends again after a lost reply
// finds its own first copy's work: a RESTORE finds the lock it created
// (BUSYKEY), a short release the field it deleted. Neither is contention,
// nor is a first attempt whose every try failed (the wait tries again with
// the acquire script, which finds the field): the name's next acquisition
// still takes the fast path. (Under overload such re-sends had names fall
// back to the scripts for 10 s.)
func TestResentFastPathIsNoContention(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	for _, tc := range []struct {
		what string
		cut  string // the command whose reply is cut off
		n    int32  // how many times
		want []string
	}{
		{"a re-sent RESTORE", "restore", 1, []string{"restore", "restore", "script", "fastrelease"}},
		{"a RESTORE whose every try failed", "restore", goRedisTries, []string{"restore", "restore", "restore", "restore", "script", "fastrelease"}},
		{"a re-sent short release", "fastrelease", 1, []string{"restore", "fastrelease", "fastrelease", "script"}},
	} {
		t.Run(tc.what, func(t *testing.T) {
			ctx := testsupport.Ctx(t)
			name := "resent-" + strings.ReplaceAll(tc.what, " ", "-")
			p, c := proxiedClient(t, srv)
			warm := c.Mutex(name + "-warm-up") // the RESTORE probe
			require.NoError(t, warm.Unlock(locktest.MustLock(t, warm, ctx)))
			for _, sc := range []backend.Script{scripts.Acquire, scripts.Release} { // no NOSCRIPT below
				require.NoError(t, srv.Client().ScriptLoad(ctx, sc.Source()).Err())
			}
			o := &onName{name: name, n: tc.n, cut: func(c faultproxy.Command) bool { return commandName(c) == tc.cut }}
			p.SetRule(o.rule)
			m := c.Mutex(o.name)

			require.NoError(t, m.Unlock(locktest.MustLock(t, m, ctx)), "the re-send is answered as the first copy")
			require.GreaterOrEqual(t, o.fired.Load(), tc.n, "the replies were cut off")
			assert.Equal(t, tc.want, o.take(), "what the first lock+unlock sent")

			require.NoError(t, m.Unlock(locktest.MustLock(t, m, ctx)))
			assert.Equal(t, []string{"restore", "fastrelease"}, o.take(), "the next lock+unlock takes the fast path")
		})
	}
}
