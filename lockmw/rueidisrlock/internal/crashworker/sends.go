package main

import (
	"context"
	"time"

	"github.com/go-rlock/rlock/internal/reliability"
	"github.com/go-rlock/rlock/internal/reliability/crashworker"
	"github.com/redis/rueidis"
)

// recorded is a rueidis client that records its scripts' sends
// (reliability.SendRecorder) before they go out, as the go-redis worker's
// hooks record its client's: those of Do and DoMulti, the calls
// rueidisrlock's back-end runs commands and pipelines with on one node.
// The calls of its dedicated connections (a waiter's subscription,
// WithReplicaSync's WAIT) and of its node clients (a cluster's) are not
// recorded: none of the worker's scripts goes there.
type recorded struct {
	rueidis.Client
	rec reliability.SendRecorder
}

// record returns c recording its sends as o says.
func record(c rueidis.Client, o crashworker.DialOptions) rueidis.Client {
	return recorded{Client: c, rec: reliability.NewSendRecorder(o.Client, o.Sends)}
}

func (c recorded) Do(ctx context.Context, cmd rueidis.Completed) rueidis.RedisResult {
	c.rec.Sent(ctx, time.Now(), cmd.Commands())
	return c.Client.Do(ctx, cmd)
}

func (c recorded) DoMulti(ctx context.Context, multi ...rueidis.Completed) []rueidis.RedisResult {
	lines := make([][]string, len(multi))
	for i, cmd := range multi {
		lines[i] = cmd.Commands()
	}
	c.rec.Sent(ctx, time.Now(), lines...)
	return c.Client.DoMulti(ctx, multi...)
}
