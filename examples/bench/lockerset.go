package main

import (
	"errors"

	"github.com/redis/go-redis/v9"
)

// newLockers returns one locker of kind (not rlock) per name, all on rdb,
// and a func that closes them. rueidislock's share one Locker, and so one
// rueidis client, as one process's locks would.
func newLockers(kind string, rdb *redis.Client, counter *cmdCounter, names []string, cfg config) ([]locker, func() error, error) {
	ls := make([]locker, len(names))
	if kind == "rueidislock" {
		base, err := newRueidisLocker(rdb.Options().Addr, names[0], counter)
		if err != nil {
			return nil, nil, err
		}
		for i, n := range names {
			ls[i] = &rueidisLocker{l: base.l, name: n}
		}
		return ls, base.close, nil
	}
	for i, n := range names {
		l, err := newLocker(kind, rdb, counter, n, cfg)
		if err != nil {
			return nil, nil, err
		}
		ls[i] = l
	}
	closeAll := func() error {
		var errs []error
		for _, l := range ls {
			errs = append(errs, l.close())
		}
		return errors.Join(errs...)
	}
	return ls, closeAll, nil
}
