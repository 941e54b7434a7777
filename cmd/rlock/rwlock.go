package main

import (
	"context"
	"maps"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// What counts as a read-write lock: a hash whose field "mode" is "read" or
// "write" and whose every other field is a reader's "<id>:<n>" or the
// writer's "<id>:<n>:write" with an integer value, with at least one of
// them (Redisson's RReadWriteLock, which lockmw's RWMutex writes too: the
// hash holds nothing else). Each level n of a reader has a timeout key
// "{name}:<field>:rwlock_timeout:<n>" carrying that level's TTL.

// writeSuffix ends the writer's field of a read-write lock.
const writeSuffix = ":write"

// maxLevels bounds the readers' timeout keys show reads: beyond it a
// reader's levels are not shown.
const maxLevels = 64

// rwHash is a hash read as a read-write lock.
type rwHash struct {
	mode    string
	holders []holder // the writer first, then the readers by field
}

// parseRWLock reads fields as a read-write lock; false when the hash is not one.
func parseRWLock(fields map[string]string) (rwHash, bool) {
	l := rwHash{mode: fields["mode"]}
	if l.mode != "read" && l.mode != "write" {
		return rwHash{}, false
	}
	var writer []holder
	for f, v := range fields {
		if f == "mode" {
			continue
		}
		client, _, ok := splitField(strings.TrimSuffix(f, writeSuffix))
		n, err := strconv.ParseInt(v, 10, 64)
		if !ok || err != nil {
			return rwHash{}, false
		}
		h := holder{Field: f, Client: client, Count: n, ExpiresMS: -1, Side: sideOf(f)}
		if h.Side == "write" {
			writer = append(writer, h)
		} else {
			l.holders = append(l.holders, h)
		}
	}
	sortHolders(l.holders)
	sortHolders(writer)
	l.holders = append(writer, l.holders...)
	return l, len(l.holders) > 0
}

// sideOf is the side of a read-write lock's field: "write" for the writer's.
func sideOf(field string) string {
	if strings.HasSuffix(field, writeSuffix) {
		return "write"
	}
	return "read"
}

// classifyRW takes a hash that is not a lock as a read-write lock, if it is one.
func (s *state) classifyRW(fields map[string]string) {
	l, ok := parseRWLock(fields)
	if !ok {
		s.why = "a hash that is not a lock"
		return
	}
	s.kind, s.mode, s.holders = kindRWLock, l.mode, l.holders
	for i := range s.holders {
		s.holders[i].ExpiresMS = s.expiry()
	}
}

// readLevels reads the PTTL of each reader level's timeout key, in a MULTI
// that reads the hash again: the levels are shown only when the hash is
// still the one classified (readers come and go between the two).
func (s *state) readLevels(ctx context.Context, node redis.UniversalClient, fields map[string]string) error {
	prefix := s.ns.rwMutex(s.name).Timeouts
	var total int64
	for _, h := range s.holders {
		if h.Side == "read" {
			total += max(h.Count, 0)
		}
	}
	if total == 0 || total > maxLevels {
		return nil
	}
	var hash *redis.MapStringStringCmd
	pttls := make([][]*redis.DurationCmd, len(s.holders))
	_, err := node.TxPipelined(ctx, func(p redis.Pipeliner) error {
		hash = p.HGetAll(ctx, s.key)
		for i, h := range s.holders {
			for n := int64(1); h.Side == "read" && n <= h.Count; n++ {
				key := prefix + h.Field + ":rwlock_timeout:" + strconv.FormatInt(n, 10)
				pttls[i] = append(pttls[i], p.PTTL(ctx, key))
			}
		}
		return nil
	})
	if err != nil && !isReply(err) {
		return err
	}
	if hash.Err() != nil || !maps.Equal(hash.Val(), fields) {
		return nil
	}
	for i, cmds := range pttls {
		for _, c := range cmds {
			if c.Err() != nil {
				s.holders[i].LevelsMS = nil
				break
			}
			s.holders[i].LevelsMS = append(s.holders[i].LevelsMS, pttlMS(c.Val()))
		}
	}
	return nil
}
