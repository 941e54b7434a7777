package reliability

import (
	"context"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// SendTimes records when the last script (EVALSHA or EVAL) run with a
// context was sent, on each client (SendHook.Client: the masters of a
// quorum). Lock's acquire attempts carry the context passed to Lock, so
// after Lock returns, Last is a lower bound on when the hold's key got its
// TTL: the winning attempt, or the attempt that queued the waiter the lock
// was later handed over to; on a quorum, on every master. (Other commands
// made with that context, such as subscribing, are not scripts and may come
// after a hand-off.)
type SendTimes struct {
	mu   sync.Mutex
	last map[int]time.Time // by SendHook.Client
}

func (s *SendTimes) note(client int, sent time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.last == nil {
		s.last = make(map[int]time.Time)
	}
	s.last[client] = sent
}

type sendTimesKey struct{}

// WithSendTimes returns a context whose commands [SendHook] records in the
// returned SendTimes.
func WithSendTimes(ctx context.Context) (context.Context, *SendTimes) {
	s := new(SendTimes)
	return context.WithValue(ctx, sendTimesKey{}, s), s
}

// Last returns when the last recorded command was sent (zero if none); with
// several clients, the earliest of their last sends: a master whose last
// script went out later than another's got its TTL later too, and the hold
// lasts as long as its masters' keys do.
func (s *SendTimes) Last() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	var at time.Time
	for _, t := range s.last {
		if at.IsZero() || t.Before(at) {
			at = t
		}
	}
	return at
}

// SendHook is a go-redis hook that records the send time of each script
// whose context carries a SendTimes. A command go-redis re-sends keeps the
// time of its first send, which only makes Last an earlier, still valid,
// lower bound. Client tells the clients of one Lock call apart: the masters
// of a quorum, each hooked with a number of its own.
type SendHook struct{ Client int }

var _ redis.Hook = SendHook{}

// DialHook passes dials through.
func (SendHook) DialHook(next redis.DialHook) redis.DialHook { return next }

// ProcessHook records the time before the command is sent.
func (h SendHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if s, ok := ctx.Value(sendTimesKey{}).(*SendTimes); ok && isScript(cmd.Name()) {
			s.note(h.Client, time.Now())
		}
		return next(ctx, cmd)
	}
}

// ProcessPipelineHook records the time before a pipeline with a script is
// sent.
func (h SendHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if s, ok := ctx.Value(sendTimesKey{}).(*SendTimes); ok && slices.ContainsFunc(cmds, func(cmd redis.Cmder) bool { return isScript(cmd.Name()) }) {
			s.note(h.Client, time.Now())
		}
		return next(ctx, cmds)
	}
}

// isScript reports whether a command of this name runs a script.
func isScript(name string) bool {
	switch strings.ToLower(name) {
	case "evalsha", "eval", "evalsha_ro", "eval_ro":
		return true
	}
	return false
}

type tokenKey struct{}

type waitedKey struct{}

// WithWaited returns ctx marked as the hold context of an acquisition that
// waited (lockmw's HoldStartEvent.Waited): such a hold may have been handed
// over with only a claim window of TTL.
func WithWaited(ctx context.Context) context.Context {
	return context.WithValue(ctx, waitedKey{}, true)
}

// Waited reports whether ctx was marked by WithWaited.
func Waited(ctx context.Context) bool {
	w, _ := ctx.Value(waitedKey{}).(bool)
	return w
}

// WaitedNote starts the Note of a Start record whose acquisition waited.
const WaitedNote = "waited"

// StartNote is the Note of a Start record: the hold's field in Redis
// ("<clientID>:<ownerID>", "" when unknown), after WaitedNote and a space
// when the acquisition waited.
func StartNote(field string, waited bool) string {
	if waited {
		return strings.TrimSuffix(WaitedNote+" "+field, " ")
	}
	return field
}

// ParseStartNote reads a Note written by StartNote.
func ParseStartNote(note string) (field string, waited bool) {
	if note == WaitedNote {
		return "", true
	}
	if f, ok := strings.CutPrefix(note, WaitedNote+" "); ok {
		return f, true
	}
	return note, false
}

type fieldKey struct{}

// WithField returns ctx carrying a hold's field in Redis (lockmw's
// HoldStartEvent.Field), for its Start record.
func WithField(ctx context.Context, field string) context.Context {
	return context.WithValue(ctx, fieldKey{}, field)
}

// FieldOf returns the field WithField put in ctx, or "".
func FieldOf(ctx context.Context) string {
	f, _ := ctx.Value(fieldKey{}).(string)
	return f
}

// WithToken returns ctx carrying a hold's fencing token; a lockmw HoldStart
// hook uses it so that Renewal events, which get the HoldStart context, can
// say which hold they renewed.
func WithToken(ctx context.Context, token int64) context.Context {
	return context.WithValue(ctx, tokenKey{}, token)
}

// WithHold returns ctx carrying what a crash process logs of a new hold (a
// lockmw HoldStart hook's event): its field, whether it waited, and the
// number that names it in the log, its fencing token, or for a hold without
// one (token 0) the next negative number of unfenced, unique in the process.
func WithHold(ctx context.Context, field string, token int64, waited bool, unfenced *atomic.Int64) context.Context {
	if token == 0 {
		token = -unfenced.Add(1)
	}
	if waited {
		ctx = WithWaited(ctx)
	}
	return WithToken(WithField(ctx, field), token)
}

// TokenOf returns the token WithToken put in ctx, or 0.
func TokenOf(ctx context.Context) int64 {
	if ctx == nil {
		return 0
	}
	n, _ := ctx.Value(tokenKey{}).(int64)
	return n
}

// ScriptSends records when scripts sent with a context that carries no
// SendTimes (lockmw's own background calls, the watchdog's renewals among
// them) were sent, by each of their string arguments (a hold's field is
// one of a renewal's), apart for each go-redis client it hooks (each master
// of a quorum). It gives a renewal's send time that the Renewal hook cannot
// give: the hook learns the script's duration, and now minus the duration is
// late by however long the renewing goroutine did not run between the
// reply and the hook (a loaded machine, a pause), which would make the key
// look renewed later than it was.
type ScriptSends struct {
	mu      sync.Mutex
	clients []map[string]time.Time
}

// Hook returns a go-redis hook that records the sends of one more client.
func (s *ScriptSends) Hook() redis.Hook {
	return scriptSendsHook{s: s, client: s.add()}
}

// add makes room for the sends of one more client and returns its number.
func (s *ScriptSends) add() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.clients = append(s.clients, make(map[string]time.Time))
	return len(s.clients) - 1
}

// RenewalSent returns a moment no later than the renewal the Renewal hook
// reports, of the hold whose field in the script is arg, reached its keys:
// estimate (the hook's now minus the script's duration), or the send of the
// latest script with arg on the client that sent it last, if earlier; with
// several clients (a quorum's masters), the earliest of theirs. That is a
// bound on when the key got its TTL however late the hook ran.
func (s *ScriptSends) RenewalSent(estimate time.Time, arg string) time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	at := estimate
	for _, c := range s.clients {
		if p, ok := c[arg]; ok && p.Before(at) {
			at = p
		}
	}
	return at
}

// note records that the command lines cmds (each its name first) were
// sent at sent by client: each script's every argument.
func (s *ScriptSends) note(client int, sent time.Time, cmds [][]string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, cmd := range cmds {
		if len(cmd) == 0 || !isScript(cmd[0]) {
			continue
		}
		for _, arg := range cmd {
			s.clients[client][arg] = sent
		}
	}
}

// stringArgs is cmd's command line as ScriptSends records it: its string
// arguments (the name, the SHA, keys and fields), the others left out.
func stringArgs(cmd redis.Cmder) []string {
	var out []string
	for _, a := range cmd.Args() {
		if arg, ok := a.(string); ok {
			out = append(out, arg)
		}
	}
	return out
}

type scriptSendsHook struct {
	s      *ScriptSends
	client int
}

func (scriptSendsHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h scriptSendsHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if ctx.Value(sendTimesKey{}) == nil {
			h.s.note(h.client, time.Now(), [][]string{stringArgs(cmd)})
		}
		return next(ctx, cmd)
	}
}

func (h scriptSendsHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if ctx.Value(sendTimesKey{}) == nil {
			lines := make([][]string, len(cmds))
			for i, cmd := range cmds {
				lines[i] = stringArgs(cmd)
			}
			h.s.note(h.client, time.Now(), lines)
		}
		return next(ctx, cmds)
	}
}
