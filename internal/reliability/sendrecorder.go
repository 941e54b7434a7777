package reliability

import (
	"context"
	"slices"
	"time"
)

// SendRecorder records the script sends of one client that go-redis hooks
// cannot see, such as a rueidis or valkey-go client through a wrapper of
// the calls its back-end sends commands with: what a
// SendHook{Client: client} and a hook of [ScriptSends.Hook] record of a
// go-redis client.
type SendRecorder struct {
	client int
	sends  *ScriptSends
	slot   int // the client's number in sends
}

// NewSendRecorder returns the recorder of one more client: client tells
// the clients of one Lock call apart, as SendHook.Client does; the sends
// made without a SendTimes in their context go to sends, unless it is nil.
func NewSendRecorder(client int, sends *ScriptSends) SendRecorder {
	r := SendRecorder{client: client, sends: sends}
	if sends != nil {
		r.slot = sends.add()
	}
	return r
}

// Sent records that the command lines cmds (each its name first, as the
// client sends it) were sent with ctx at sent; call it before they go out.
// When ctx carries a SendTimes (WithSendTimes), a script among cmds sets
// its last send for this client; otherwise each script's arguments get
// sent in the recorder's ScriptSends.
func (r SendRecorder) Sent(ctx context.Context, sent time.Time, cmds ...[]string) {
	if s, ok := ctx.Value(sendTimesKey{}).(*SendTimes); ok {
		if slices.ContainsFunc(cmds, func(cmd []string) bool { return len(cmd) > 0 && isScript(cmd[0]) }) {
			s.note(r.client, sent)
		}
		return
	}
	if r.sends != nil {
		r.sends.note(r.slot, sent, cmds)
	}
}
