package crashworker

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-rlock/rlock/internal/reliability"
	"github.com/go-rlock/rlock/lockmw"
)

// memberHolds keeps what a member's HoldStart event says of its hold (the
// field, whether it waited, when its acquisition was last sent), for the
// Start line written once the whole multi-lock is held.
type memberHolds struct{ m sync.Map } // memberKey -> memberHold

type memberKey struct {
	name  string
	token int64
}

type memberHold struct {
	field  string
	waited bool
	sent   time.Time
}

// note records the hold e begins. The hook runs on the acquiring goroutine
// right after the member's acquisition returned, so the last script sent
// with ctx is this member's (the winning attempt, or the one that queued
// the waiter it was handed over to): a lower bound on when its key got its
// TTL, as a lone mutex's Sent is. The members taken before it were sent
// earlier.
func (mh *memberHolds) note(ctx context.Context, e lockmw.HoldStartEvent) {
	h := memberHold{field: e.Field, waited: e.Waited}
	if s := reliability.SendTimesOf(ctx); s != nil {
		h.sent = s.Last()
	}
	mh.m.Store(memberKey{e.Name, e.Token}, h)
}

// take returns and forgets what note recorded of the hold of name with token.
func (mh *memberHolds) take(name string, token int64) memberHold {
	v, _ := mh.m.LoadAndDelete(memberKey{name, token})
	h, _ := v.(memberHold)
	return h
}

// contendMulti takes a multi-lock of two fenced mutexes of random names,
// given in a random order, holds it and unlocks, logging each member as a
// hold of its own (so that the mutex checker proves no two holds of a name
// overlapped), until ctx ends. A loss of the multi-lock's hold is logged for
// both members: the one lost is not told apart, so the checker leaves both
// out of the overlap check.
func contendMulti(ctx context.Context, c *lockmw.Client, names []string, lg *reliability.Log, members *memberHolds) {
	for ctx.Err() == nil {
		i := rand.IntN(len(names))
		j := (i + 1 + rand.IntN(len(names)-1)) % len(names)
		pair := [2]*lockmw.Mutex{c.Mutex(names[i], lockmw.WithFencing()), c.Mutex(names[j], lockmw.WithFencing())}
		ml := c.MultiLock(pair[0], pair[1])
		lctx, _ := reliability.WithSendTimes(ctx)
		begin := time.Now()
		for _, m := range pair {
			lg.Write(reliability.Record{Kind: reliability.Call, Name: m.Name(), Time: begin})
		}
		hctx, err := ml.Lock(lctx)
		if err != nil {
			if !runOver(ctx) {
				lg.Write(reliability.Record{Kind: reliability.Fail, Name: ml.Name(), Time: time.Now(), Note: "lock: " + err.Error()})
				time.Sleep(10 * time.Millisecond) // back off after a Redis error
			}
			continue
		}
		now := time.Now()
		var toks [2]int64
		for k, m := range pair {
			toks[k], _ = m.Token(hctx)
			h := members.take(m.Name(), toks[k])
			lg.Write(reliability.Record{Kind: reliability.Start, Name: m.Name(), Token: toks[k], Time: now, Begin: begin, Sent: h.sent,
				Note: reliability.StartNote(h.field, h.waited)})
		}

		t := time.NewTimer(holdTime())
		select {
		case <-t.C:
		case <-hctx.Done():
		}
		t.Stop()
		if !lost(hctx) {
			for k, m := range pair {
				lg.Write(reliability.Record{Kind: reliability.End, Name: m.Name(), Token: toks[k], Time: time.Now()})
			}
		}
		if lost(hctx) {
			for k, m := range pair {
				lg.Write(reliability.Record{Kind: reliability.Lost, Name: m.Name(), Token: toks[k], Time: time.Now(), Note: context.Cause(hctx).Error()})
			}
			if err := ml.Unlock(hctx); !errors.Is(err, lockmw.ErrLockLost) {
				lg.Write(reliability.Record{Kind: reliability.Fail, Name: ml.Name(), Time: time.Now(), Note: fmt.Sprintf("%s%v, want ErrLockLost", reliability.UnlockAfterLossNote, err)})
			}
			continue
		}
		if err := ml.Unlock(hctx); err != nil {
			logUnlockFailed(lg, pair, toks, err)
		}
	}
}

// logUnlockFailed writes the Fail line of a member's failed release for
// each member error of a multi-lock's Unlock (a member's error names it),
// as a lone mutex's Unlock would, for the checker to judge. An ErrLockLost
// that names no member (the multi-lock's hold found lost as a whole, when
// its Unlock came after its keys could expire) is logged for both members,
// as a loss of the hold is: the one lost is not told apart, and the checker
// judges each against its own key's earliest expiry. Any other error it
// cannot attribute is logged under the multi-lock's name (a violation).
func logUnlockFailed(lg *reliability.Log, pair [2]*lockmw.Mutex, toks [2]int64, err error) {
	errs := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	}
	now := time.Now()
	for _, e := range errs {
		var recs []reliability.Record
		for k, m := range pair {
			if strings.Contains(e.Error(), strconv.Quote(m.Name())) {
				recs = append(recs, reliability.Record{Kind: reliability.Fail, Name: m.Name(), Token: toks[k], Time: now, Note: reliability.UnlockFailedNote + e.Error()})
			}
		}
		if len(recs) == 0 && errors.Is(e, lockmw.ErrLockLost) {
			for k, m := range pair {
				recs = append(recs, reliability.Record{Kind: reliability.Fail, Name: m.Name(), Token: toks[k], Time: now, Note: reliability.UnlockFailedNote + e.Error()})
			}
		}
		if len(recs) == 0 {
			recs = append(recs, reliability.Record{Kind: reliability.Fail, Name: "multi", Time: now, Note: reliability.UnlockFailedNote + e.Error()})
		}
		for _, rec := range recs {
			lg.Write(rec)
		}
	}
}
