package reliability

import (
	"cmp"
	"slices"
	"time"

	"github.com/anishathalye/porcupine"
)

// Epochs returns ops split by name, then each name's operations into epochs
// at its quiet points, as [Check] searches them: a quiet point is a moment
// at which no operation of the name is open and every hold of it was
// released or could have expired (its earliest expiry, renewals included,
// has passed). Nothing after a quiet point can tell whether a hold that
// could have expired before it did: the model may expire it whenever an
// acquisition needs the room, so dropping it there changes no verdict. Each
// epoch after the first begins with an operation that carries the largest
// fencing token of the epochs before it, so a token that goes back is
// rejected across epochs too.
func Epochs(ops []Op) [][]Op {
	var out [][]Op
	for _, part := range partition(Operations(ops)) {
		e := make([]Op, len(part))
		for i, op := range part {
			e[i] = op.Input.(Op)
		}
		out = append(out, e)
	}
	return out
}

// span is the time some operations of one name take together: a hold's
// from its acquisition's call to its release's return or, unreleased, to
// its earliest expiry; or one operation about no hold.
type span struct {
	from, to int64 // Unix ns
	ops      []int // indexes into the name's operations
}

// epochs splits the operations of one name at its quiet points (Epochs).
func epochs(ops []porcupine.Operation) [][]porcupine.Operation {
	spans := holdSpans(ops)
	slices.SortFunc(spans, func(a, b span) int { return cmp.Compare(a.from, b.from) })
	var groups [][]int
	var end int64
	for i, s := range spans {
		if i == 0 || s.from > end {
			groups = append(groups, nil)
			end = s.to
		}
		groups[len(groups)-1] = append(groups[len(groups)-1], s.ops...)
		end = max(end, s.to)
	}
	out := make([][]porcupine.Operation, 0, len(groups))
	var carry int64 // the largest fencing token before the epoch
	for _, g := range groups {
		slices.Sort(g)
		part := make([]porcupine.Operation, 0, len(g)+1)
		if carry > 0 {
			first := slices.MinFunc(g, func(a, b int) int { return cmp.Compare(ops[a].Call, ops[b].Call) })
			part = append(part, carryOp(ops[first], carry))
		}
		for _, i := range g {
			part = append(part, ops[i])
			if in := ops[i].Input.(Op); in.Kind == OpAcquire {
				carry = max(carry, in.Token)
			}
		}
		out = append(out, part)
	}
	return out
}

// holdSpans returns a span per hold of ops and one per operation about no
// hold (a force-unlock).
func holdSpans(ops []porcupine.Operation) []span {
	type life struct {
		span
		released bool
		expires  int64
	}
	byHold := make(map[int]*life)
	var order []int
	var spans []span
	for i, op := range ops {
		in := op.Input.(Op)
		if in.Kind == OpForceUnlock || in.Kind == opCarry {
			spans = append(spans, span{from: op.Call, to: op.Return, ops: []int{i}})
			continue
		}
		l := byHold[in.Hold]
		if l == nil {
			l = &life{span: span{from: op.Call, to: op.Return}}
			byHold[in.Hold] = l
			order = append(order, in.Hold)
		}
		l.from, l.to = min(l.from, op.Call), max(l.to, op.Return)
		l.ops = append(l.ops, i)
		switch {
		case in.Kind == OpRelease:
			l.released = true
		case in.Kind == OpAcquire || (in.Kind == OpRenew && !in.Failed):
			l.expires = max(l.expires, in.Expires.UnixNano())
		}
	}
	for _, h := range order {
		l := byHold[h]
		if !l.released {
			l.to = max(l.to, l.expires)
		}
		spans = append(spans, l.span)
	}
	return spans
}

// carryOp is the operation that begins an epoch whose earliest call is
// first's, with the fencing token carried over: it returns before first is
// called, so it is placed first.
func carryOp(first porcupine.Operation, token int64) porcupine.Operation {
	in := first.Input.(Op)
	call, ret := first.Call-2, first.Call-1
	op := Op{Kind: opCarry, Name: in.Name, Process: in.Process, Token: token, Call: time.Unix(0, call), Return: time.Unix(0, ret)}
	return porcupine.Operation{ClientId: first.ClientId, Input: op, Call: call, Return: ret}
}
