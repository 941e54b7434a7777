package reliability_test

import (
	"context"
	"testing"
	"time"

	"github.com/go-rlock/rlock/internal/reliability"
	"github.com/stretchr/testify/assert"
)

// A SendRecorder records what SendHook and a hook of ScriptSends record of
// a go-redis client's commands, from command lines: a script sent with a
// SendTimes context is its client's last send; one sent without gives a
// renewal's bound by each of its arguments; other commands count for
// neither.
func TestSendRecorderRecordsAsTheHooks(t *testing.T) {
	t.Parallel()
	sends := new(reliability.ScriptSends)
	one, two := reliability.NewSendRecorder(0, sends), reliability.NewSendRecorder(1, sends)
	t0 := time.Now()
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	late := at(1000)

	sctx, st := reliability.WithSendTimes(context.Background())
	one.Sent(sctx, at(1), []string{"ping"})
	assert.True(t, st.Last().IsZero(), "a PING is not a script")
	one.Sent(sctx, at(2), []string{"get", "k"}, []string{"EVALSHA", "sha", "1", "k", "field-1"})
	assert.Equal(t, at(2), st.Last(), "a pipeline with a script")
	two.Sent(sctx, at(3), []string{"evalsha", "sha", "1", "k", "field-1"})
	assert.Equal(t, at(2), st.Last(), "the earliest of the clients' last sends")
	assert.Equal(t, late, sends.RenewalSent(late, "field-1"), "a call's script (SendTimes) is not a background one")

	bg := context.Background()
	one.Sent(bg, at(4), []string{"pexpire", "k", "1000", "field-2"})
	assert.Equal(t, late, sends.RenewalSent(late, "field-2"), "not a script")
	one.Sent(bg, at(5), []string{"evalsha", "sha", "1", "k", "field-2"})
	two.Sent(bg, at(6), []string{"eval", "return 1", "1", "k", "field-2"})
	assert.Equal(t, at(5), sends.RenewalSent(late, "field-2"), "the earliest of the clients' latest sends")
	assert.Equal(t, at(0), sends.RenewalSent(at(0), "field-2"), "an estimate before the send stands")
	assert.Equal(t, at(2), st.Last(), "a background script is not the call's")

	// A recorder without ScriptSends records a call's scripts only, as a
	// SendHook alone does.
	lone := reliability.NewSendRecorder(2, nil)
	lone.Sent(bg, at(7), []string{"evalsha", "sha", "1", "k", "field-3"})
	assert.Equal(t, late, sends.RenewalSent(late, "field-3"))
	lone.Sent(sctx, at(8), []string{"evalsha", "sha", "1", "k", "field-3"})
	assert.Equal(t, at(2), st.Last(), "still the earliest")
}
