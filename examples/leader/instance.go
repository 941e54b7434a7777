package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/go-rlock/rlock/lockmw"
)

// config is how one instance runs.
type config struct {
	id       string        // who this instance is, stored with the lock while it leads
	name     string        // the lock's name
	watchdog time.Duration // the watchdog timeout
	work     time.Duration // how often the leader works
}

// instance is one instance of the service: it leads, or stands by.
type instance struct {
	cfg     config
	out     *console
	leading atomic.Bool
	// clientID is the ID of this instance's lockmw.Client, the start of
	// its holds' fields.
	clientID string
	runs     atomic.Int64 // the work done, across terms
}

// run campaigns for cfg.name on rdb until ctx ends, working while it leads.
// When ctx ends it steps down (Lead releases the lock) and returns nil.
func run(ctx context.Context, out *console, rdb redis.UniversalClient, cfg config) error {
	in := &instance{cfg: cfg, out: out}
	meta := lockmw.Hooks{Metadata: func(context.Context, string) string { return cfg.id }}
	locks := lockmw.New(rdb, lockmw.WithWatchdogTimeout(cfg.watchdog), lockmw.WithHooks(meta))
	defer locks.Close()
	in.clientID = locks.ID()
	m := locks.Mutex(cfg.name)

	observed := make(chan struct{})
	go func() {
		defer close(observed)
		in.observe(ctx, m)
	}()
	err := lockmw.Lead(ctx, m, in.lead)
	<-observed
	if isCanceled(err) {
		out.printf("stopped: no longer campaigning (%d runs of the work here)", in.runs.Load())
		return nil
	}
	return err
}

// lead is one term: it works every cfg.work until the term ends. When ctx
// ends, Lead releases the lock as soon as lead returns; when leadership was
// lost, Lead campaigns again.
func (in *instance) lead(lead context.Context) error {
	in.leading.Store(true)
	defer in.leading.Store(false)
	in.out.printf("leading: %s is mine; working every %v", in.cfg.name, in.cfg.work)
	t := time.NewTicker(in.cfg.work)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			in.out.printf("leading: work run %d", in.runs.Add(1))
		case <-lead.Done():
			cause := context.Cause(lead)
			if errors.Is(cause, lockmw.ErrLockLost) {
				in.out.printf("leadership lost (%v): campaigning again", cause)
			} else {
				in.out.printf("stepping down (%v): releasing %s", cause, in.cfg.name)
			}
			return nil
		}
	}
}

// observe says who leads whenever that changes while this instance stands
// by, asking Redis every third of the watchdog timeout (at most every
// second) with Mutex.Holder, which takes no part in the campaign.
func (in *instance) observe(ctx context.Context, m *lockmw.Mutex) {
	t := time.NewTicker(min(in.cfg.watchdog/3, time.Second))
	defer t.Stop()
	last := ""
	for {
		if in.leading.Load() {
			last = in.cfg.id
		} else if who, what := in.leader(ctx, m); who != last && who != in.cfg.id && ctx.Err() == nil {
			in.out.printf("standing by: %s", what)
			last = who
		}
		select {
		case <-t.C:
		case <-ctx.Done():
			return
		}
	}
}

// leader tells who leads m, as an observer sees it: who identifies the
// leader ("" when nobody leads), what describes it.
func (in *instance) leader(ctx context.Context, m *lockmw.Mutex) (who, what string) {
	h, ok, err := m.Holder(ctx)
	switch {
	case err != nil:
		return "?", "cannot ask who leads: " + err.Error()
	case !ok:
		return "", "nobody leads"
	}
	who = h.Metadata
	if strings.HasPrefix(h.Field, in.clientID+":") {
		// This instance's own hold, won between the check of leading and
		// the read, before its metadata was stored.
		who = in.cfg.id
	} else if who == "" { // a holder without this program's Metadata hook
		who = h.Field
	}
	return who, fmt.Sprintf("%s leads (its lock expires in %v unless renewed)", who, h.TTL.Round(time.Millisecond))
}
