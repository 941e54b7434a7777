package reliability

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"
)

// A model of rlock's locks for porcupine, the linearizability checker
// (github.com/anishathalye/porcupine), over the operations a crash run
// recorded: each is a call with the times it began and returned, and the
// checker looks for one order of them, each placed within its own call,
// that the model accepts. The model sees no clock, so the operations carry
// their times: a hold's key may expire (a step the model takes on its own)
// before an operation that returned after the hold's earliest expiry, the
// earliest start of its TTL plus the TTL (the claim window of a hold handed
// over and not claimed yet). An expiry is taken only where an acquisition
// needs it, which is the most any history may ask of it.
//
// The search is kept tractable by partitions: by name, and within a name
// into epochs at quiet points, where no call is open and every hold was
// released or could have expired (Epochs). Each epoch after the first begins
// with the largest fencing token of those before it, so a token that goes
// back is caught across epochs too.

// LockKind is the kind of lock a model checks.
type LockKind int

const (
	// MutexKind: one holder at a time, its fencing tokens increasing.
	MutexKind LockKind = iota
	// SemaphoreKind: at most Spec.Permits holders at a time.
	SemaphoreKind
	// RWMutexKind: any number of shared (read) holders, or one exclusive
	// (write) holder.
	RWMutexKind
)

func (k LockKind) String() string {
	switch k {
	case MutexKind:
		return "mutex"
	case SemaphoreKind:
		return "semaphore"
	case RWMutexKind:
		return "read-write lock"
	}
	return fmt.Sprintf("LockKind(%d)", int(k))
}

// Spec is what a model checks: the kind, and a semaphore's permits.
type Spec struct {
	Kind    LockKind
	Permits int
}

// OpKind is the kind of an [Op].
type OpKind int

const (
	// OpAcquire: the hold began (Lock returned it).
	OpAcquire OpKind = iota
	// OpRelease: the hold's Unlock; Op.Lost when it reported the lock lost.
	OpRelease
	// OpRenew: a renewal of the hold, which extended it (Op.Failed: it did
	// not, and the model does not extend it).
	OpRenew
	// OpForceUnlock: the name was forced free, whoever held it.
	OpForceUnlock
	// opCarry begins an epoch (Epochs) with the largest fencing token of
	// the epochs before it, Op.Token.
	opCarry
)

func (k OpKind) String() string {
	return [...]string{"acquire", "release", "renew", "force-unlock", "epoch"}[k]
}

// Op is one operation of a history: a call on one name by one process.
type Op struct {
	Kind    OpKind
	Name    string
	Process int // the process that made the call
	Hold    int // the hold it is about, unique in the history
	Shared  bool
	Token   int64 // OpAcquire: its fencing token; > 0 is checked to increase
	Call    time.Time
	Return  time.Time
	// Expires is, for OpAcquire and OpRenew, the earliest moment the key could
	// expire unrenewed after it: the earliest start of its TTL plus the TTL.
	Expires time.Time
	// Lost is, for OpRelease, that Unlock reported the lock lost: it may find
	// the hold gone.
	Lost bool
	// Failed is, for OpRenew, that the renewal did not extend the hold: its
	// script found the hold gone, or failed (its reply lost: it may have run,
	// and not extending is the earliest expiry either way).
	Failed bool
	// Gone is, for a failed OpRenew, that its script found the hold gone
	// (by Return, when its reply was in): the hold's key may have expired
	// by then, or it was released.
	Gone bool
}

func (o Op) String() string {
	var b strings.Builder
	if o.Kind == opCarry {
		return fmt.Sprintf("epoch after token %d", o.Token)
	}
	fmt.Fprintf(&b, "%s hold %d of pid %d", o.Kind, o.Hold, o.Process)
	if o.Shared {
		b.WriteString(" shared")
	}
	if o.Token != 0 {
		fmt.Fprintf(&b, " token %d", o.Token)
	}
	if o.Lost {
		b.WriteString(" (lost)")
	}
	switch {
	case o.Gone:
		b.WriteString(" (found it gone)")
	case o.Failed:
		b.WriteString(" (failed)")
	}
	return b.String()
}

// held is one hold in the model's state.
type held struct {
	hold    int
	token   int64
	expires int64 // Unix ns
	shared  bool
}

// lockState is the model's state of one name: its holds, ordered by hold,
// and the largest fencing token given so far.
type lockState struct {
	holds []held
	last  int64
}

func (s lockState) without(drop func(held) bool) lockState {
	out := lockState{last: s.last, holds: make([]held, 0, len(s.holds)+1)}
	for _, h := range s.holds {
		if !drop(h) {
			out.holds = append(out.holds, h)
		}
	}
	return out
}

func (s lockState) with(h held) lockState {
	out := lockState{last: s.last, holds: append(slices.Clone(s.holds), h)}
	slices.SortFunc(out.holds, func(a, b held) int { return a.hold - b.hold })
	return out
}

func (s lockState) index(hold int) int {
	return slices.IndexFunc(s.holds, func(h held) bool { return h.hold == hold })
}

func (s lockState) String() string {
	parts := make([]string, len(s.holds))
	for i, h := range s.holds {
		parts[i] = fmt.Sprintf("hold %d (token %d, expires %s)", h.hold, h.token, time.Unix(0, h.expires).Format("15:04:05.000000"))
	}
	if len(parts) == 0 {
		return fmt.Sprintf("free, last token %d", s.last)
	}
	return strings.Join(parts, ", ") + fmt.Sprintf("; last token %d", s.last)
}

// Model returns the porcupine model of spec, partitioned by name.
func Model(spec Spec) porcupine.Model {
	nm := porcupine.NondeterministicModel{
		Partition: partition,
		Init:      func() []any { return []any{lockState{}} },
		Step: func(state, input, _ any) []any {
			return step(spec, state.(lockState), input.(Op))
		},
		Hash: func(state any) uint64 {
			s := state.(lockState)
			h := uint64(s.last) * 0x9e3779b97f4a7c15
			for _, x := range s.holds {
				h = (h ^ uint64(x.hold)) * 0x100000001b3
				h = (h ^ uint64(x.expires)) * 0x100000001b3
			}
			return h
		},
		Equal: func(a, b any) bool {
			x, y := a.(lockState), b.(lockState)
			return x.last == y.last && slices.Equal(x.holds, y.holds)
		},
		DescribeOperation: func(input, _ any) string { return input.(Op).String() },
		DescribeState:     func(state any) string { return state.(lockState).String() },
	}
	return nm.ToModel()
}

// partition splits history by name, then each name's operations into epochs.
func partition(history []porcupine.Operation) [][]porcupine.Operation {
	var out [][]porcupine.Operation
	for _, ops := range partitionByName(history) {
		out = append(out, epochs(ops)...)
	}
	return out
}

func partitionByName(history []porcupine.Operation) [][]porcupine.Operation {
	byName := make(map[string][]porcupine.Operation)
	var names []string
	for _, op := range history {
		n := op.Input.(Op).Name
		if _, ok := byName[n]; !ok {
			names = append(names, n)
		}
		byName[n] = append(byName[n], op)
	}
	out := make([][]porcupine.Operation, len(names))
	for i, n := range names {
		out[i] = byName[n]
	}
	return out
}

// step returns the states op may lead s to (none: op cannot come next).
func step(spec Spec, s lockState, op Op) []any {
	at := op.Return.UnixNano()
	switch op.Kind {
	case OpAcquire:
		if s.index(op.Hold) >= 0 || (op.Token > 0 && op.Token <= s.last) {
			return nil
		}
		h := held{hold: op.Hold, token: op.Token, expires: op.Expires.UnixNano(), shared: op.Shared}
		var outs []any
		for _, rest := range makeRoom(spec, s, h, at) {
			n := rest.with(h)
			n.last = max(n.last, op.Token)
			outs = append(outs, n)
		}
		return outs
	case OpRelease:
		if i := s.index(op.Hold); i >= 0 {
			return []any{s.without(func(h held) bool { return h.hold == op.Hold })}
		}
		if op.Lost {
			return []any{s}
		}
		return nil // a release that succeeded, by no holder
	case OpRenew:
		if op.Gone {
			i := s.index(op.Hold)
			if i < 0 {
				return []any{s}
			}
			if s.holds[i].expires > at {
				return nil // found gone before its key could expire
			}
			return []any{s.without(func(h held) bool { return h.hold == op.Hold })}
		}
		if op.Failed {
			return []any{s}
		}
		i := s.index(op.Hold)
		if i < 0 {
			return nil // a renewal that succeeded, by no holder
		}
		n := lockState{last: s.last, holds: slices.Clone(s.holds)}
		n.holds[i].expires = max(n.holds[i].expires, op.Expires.UnixNano())
		return []any{n}
	case OpForceUnlock:
		return []any{lockState{last: s.last}}
	case opCarry:
		return []any{lockState{last: max(s.last, op.Token), holds: s.holds}}
	}
	return nil
}

// makeRoom returns the states, s less the holds that expired, in which the
// hold h may begin at a moment no later than at: only holds whose earliest
// expiry is at or before at may have expired, and only those in h's way
// are made to (a semaphore's: each choice of as many as it takes).
func makeRoom(spec Spec, s lockState, h held, at int64) []lockState {
	canExpire := func(x held) bool { return x.expires <= at }
	inWay := func(x held) bool {
		switch spec.Kind {
		case RWMutexKind:
			return !(h.shared && x.shared)
		case SemaphoreKind:
			return false // counted below
		}
		return true
	}
	if spec.Kind != SemaphoreKind {
		for _, x := range s.holds {
			if inWay(x) && !canExpire(x) {
				return nil
			}
		}
		return []lockState{s.without(inWay)}
	}
	need := len(s.holds) + 1 - max(spec.Permits, 1)
	if need <= 0 {
		return []lockState{s}
	}
	var expirable []int
	for _, x := range s.holds {
		if canExpire(x) {
			expirable = append(expirable, x.hold)
		}
	}
	var outs []lockState
	for _, pick := range choose(expirable, need) {
		outs = append(outs, s.without(func(x held) bool { return slices.Contains(pick, x.hold) }))
	}
	return outs
}

// choose returns every subset of k elements of xs.
func choose(xs []int, k int) [][]int {
	if k == 0 {
		return [][]int{nil}
	}
	if len(xs) < k {
		return nil
	}
	var out [][]int
	for _, rest := range choose(xs[1:], k-1) {
		out = append(out, append([]int{xs[0]}, rest...))
	}
	return append(out, choose(xs[1:], k)...)
}

// Operations returns ops as porcupine's operations, with the process as the
// client (numbered densely, for the visualisation) and the times in Unix
// ns; a call that returned in the same nanosecond it began is given one.
func Operations(ops []Op) []porcupine.Operation {
	clients := make(map[int]int)
	out := make([]porcupine.Operation, len(ops))
	for i, op := range ops {
		c, ok := clients[op.Process]
		if !ok {
			c = len(clients)
			clients[op.Process] = c
		}
		call, ret := op.Call.UnixNano(), op.Return.UnixNano()
		if ret <= call {
			ret = call + 1
		}
		out[i] = porcupine.Operation{ClientId: c, Input: op, Call: call, Output: nil, Return: ret}
	}
	return out
}

// Verdict is the outcome of [Check].
type Verdict struct {
	Result     porcupine.CheckResult // Ok, Illegal, or Unknown: the search timed out
	Info       porcupine.LinearizationInfo
	Model      porcupine.Model
	Ops        int
	Partitions int // names times their epochs, each searched apart
	Took       time.Duration
}

// Check runs porcupine on ops with spec's model, for at most timeout (then
// the result is Unknown, no verdict).
func Check(spec Spec, ops []Op, timeout time.Duration) Verdict {
	m := Model(spec)
	history := Operations(ops)
	parts := len(partition(history))
	start := time.Now()
	res, info := porcupine.CheckOperationsVerbose(m, history, timeout)
	return Verdict{Result: res, Info: info, Model: m, Ops: len(ops), Partitions: parts, Took: time.Since(start)}
}
