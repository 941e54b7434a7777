package redistest

import (
	"context"
	"strings"
)

// MinimalACL is the ACL rule docs/security.md gives for a service's rlock
// user, before its key and channel patterns: the commands rlock sends and
// those its scripts call, nothing else. Redis 7.2+ adds +client|setinfo
// (go-redis' handshake; refused, it is ignored); +restore is optional (the
// fast path falls back without it).
const MinimalACL = "-@all +hello +auth +ping +info " +
	"+eval +evalsha +restore +type +exists +pttl +hgetall +hget +wait " +
	"+subscribe +unsubscribe +ssubscribe +sunsubscribe +publish +spublish +pubsub|numsub +pubsub|shardnumsub " +
	"+get +set +del +incr +incrby +decr +pexpire +persist +time " +
	"+hset +hdel +hincrby +hexists +hmget +hlen " +
	"+zadd +zrem +zscore +zrange +zrangebyscore +zcard +zrank +zincrby"

// SetUser makes (or resets) the ACL user name with password, the rule's
// commands (space-separated ACL SETUSER rules, MinimalACL for one) and the
// key and channel patterns ("~app:*", "&app:*"), on every server given: on
// a cluster, each node has its own users.
func SetUser(ctx context.Context, name, password, rule string, patterns []string, servers ...*Server) error {
	args := []any{"acl", "setuser", name, "reset", "on", ">" + password}
	for _, p := range append(strings.Fields(rule), patterns...) {
		args = append(args, p)
	}
	for _, s := range servers {
		if err := s.Client().Do(ctx, args...).Err(); err != nil {
			return err
		}
	}
	return nil
}
