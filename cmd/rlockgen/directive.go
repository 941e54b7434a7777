package main

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// The comment prefix of every rlockgen directive, and the lock directive.
const (
	directivePrefix = "//rlock:"
	lockDirective   = "//rlock:lock"
)

// A directive is the parsed text of one //rlock:lock comment.
type directive struct {
	key      string // the key template as written
	parts    []part // the key template, parsed
	wait     time.Duration
	hasWait  bool
	lease    time.Duration
	permits  int  // 0: a mutex
	rw       side // "": not a read-write lock
	minHold  time.Duration
	fencing  bool
	group    string
	hasGroup bool
}

// A side is the side of a read-write lock a method takes.
type side string

const (
	readSide  side = "read"
	writeSide side = "write"
)

// kind is the kind of lock the directive makes, in words: one name is one
// kind of lock in Redis.
func (d directive) kind() string {
	switch {
	case d.rw != "":
		return "a read-write lock"
	case d.permits > 0:
		return fmt.Sprintf("a semaphore of %d permits", d.permits)
	}
	return "a mutex"
}

// isDirective reports whether the comment text is an rlockgen directive (of
// any name).
func isDirective(text string) bool { return strings.HasPrefix(text, directivePrefix) }

// parseDirective parses the comment text of an //rlock:lock directive: the
// settings key="…" (required), wait=D, lease=D, minhold=D, permits=N,
// rw=read|write, fencing and group="…", separated by spaces.
func parseDirective(text string) (directive, error) {
	rest, ok := strings.CutPrefix(text, lockDirective)
	if !ok || (rest != "" && rest[0] != ' ' && rest[0] != '\t') {
		name, _, _ := strings.Cut(text, " ")
		return directive{}, fmt.Errorf("unknown directive %s: want %s", name, lockDirective)
	}
	settings, err := splitSettings(rest)
	if err != nil {
		return directive{}, err
	}
	var d directive
	seen := map[string]bool{}
	for _, s := range settings {
		if seen[s.name] {
			return directive{}, fmt.Errorf("%s is given twice", s.name)
		}
		seen[s.name] = true
		if err := d.set(s); err != nil {
			return directive{}, err
		}
	}
	if !seen["key"] {
		return directive{}, errors.New(`key="…" is missing: it names the lock`)
	}
	if err := d.check(); err != nil {
		return directive{}, err
	}
	if !d.hasGroup {
		d.group = d.key
	}
	return d, nil
}

// check refuses the settings that cannot go together.
func (d *directive) check() error {
	switch {
	case d.rw != "" && d.permits > 0:
		return errors.New("rw= with permits=: a read-write lock has no permits")
	case d.rw == readSide && d.fencing:
		return errors.New("rw=read with fencing: only the write side has fencing tokens")
	case d.fencing && d.permits > 0:
		return errors.New("fencing with permits: a semaphore's permits have no fencing tokens")
	case d.lease > 0 && d.minHold > d.lease:
		return fmt.Errorf("minhold=%v with lease=%v: the lease ends the hold before the minimum hold does", d.minHold, d.lease)
	}
	return nil
}

// set applies one setting.
func (d *directive) set(s setting) error {
	switch s.name {
	case "key", "group":
		if !s.quoted {
			return fmt.Errorf(`%s= wants a quoted string: %s="…"`, s.name, s.name)
		}
		if s.name == "group" {
			d.group, d.hasGroup = s.value, true
			return nil
		}
		parts, err := parseKey(s.value)
		if err != nil {
			return err
		}
		d.key, d.parts = s.value, parts
	case "wait":
		v, err := parseDuration(s)
		d.wait, d.hasWait = v, true
		return err
	case "lease":
		v, err := parseDuration(s)
		d.lease = v
		return err
	case "permits":
		n, err := strconv.Atoi(s.value)
		if !s.hasValue || err != nil || n < 1 {
			return fmt.Errorf("permits=%s: want a whole number of at least 1", s.value)
		}
		d.permits = n
	case "fencing":
		if s.hasValue {
			return errors.New("fencing takes no value: write fencing alone")
		}
		d.fencing = true
	case "minhold":
		v, err := parseDuration(s)
		d.minHold = v
		return err
	case "rw":
		switch side(s.value) {
		case readSide, writeSide:
			if !s.quoted {
				d.rw = side(s.value)
				return nil
			}
		}
		return fmt.Errorf("rw=%s: want rw=read (the shared side) or rw=write (the exclusive side)", s.value)
	default:
		return fmt.Errorf("unknown setting %s: want key, wait, lease, minhold, permits, rw, fencing or group", s.name)
	}
	return nil
}

// parseDuration is the duration of a wait=, lease= or minhold= setting.
func parseDuration(s setting) (time.Duration, error) {
	if !s.hasValue {
		return 0, fmt.Errorf("%s needs a duration: %s=5s", s.name, s.name)
	}
	v, err := time.ParseDuration(s.value)
	if err != nil {
		return 0, fmt.Errorf("%s=%s: not a duration (want one such as 5s or 250ms)", s.name, s.value)
	}
	if v < 0 {
		return 0, fmt.Errorf("%s=%s: must not be negative", s.name, s.value)
	}
	return v, nil
}

// A setting is one name or name=value of a directive.
type setting struct {
	name     string
	value    string
	hasValue bool
	quoted   bool // value was a Go string literal
}

// splitSettings splits the text after the directive's name into settings:
// name, name=bare or name="quoted" (a Go string literal, "…" or `…`),
// separated by spaces or tabs.
func splitSettings(text string) ([]setting, error) {
	var out []setting
	for {
		text = strings.TrimLeft(text, " \t")
		if text == "" {
			return out, nil
		}
		end := strings.IndexAny(text, "= \t")
		if end < 0 {
			end = len(text)
		}
		s := setting{name: text[:end]}
		if s.name == "" {
			return nil, fmt.Errorf("a setting has no name: %q", text)
		}
		text = text[end:]
		if v, ok := strings.CutPrefix(text, "="); ok {
			var err error
			s.value, s.quoted, text, err = cutValue(s.name, v)
			if err != nil {
				return nil, err
			}
			s.hasValue = true
		}
		out = append(out, s)
	}
}

// cutValue cuts a setting's value from the front of text.
func cutValue(name, text string) (value string, quoted bool, rest string, err error) {
	if text == "" || (text[0] != '"' && text[0] != '`') {
		end := strings.IndexAny(text, " \t")
		if end < 0 {
			end = len(text)
		}
		return text[:end], false, text[end:], nil
	}
	end := closingQuote(text)
	if end < 0 {
		return "", false, "", fmt.Errorf("%s=%s: the string is not terminated", name, text)
	}
	value, err = strconv.Unquote(text[:end+1])
	if err != nil {
		return "", false, "", fmt.Errorf("%s=%s: not a valid Go string", name, text[:end+1])
	}
	return value, true, text[end+1:], nil
}

// closingQuote is the index of the quote closing the Go string literal text
// starts with, or -1.
func closingQuote(text string) int {
	q := text[0]
	for i := 1; i < len(text); i++ {
		switch {
		case text[i] == '\\' && q == '"':
			i++
		case text[i] == q:
			return i
		}
	}
	return -1
}
