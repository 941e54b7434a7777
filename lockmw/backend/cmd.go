package backend

import (
	"encoding"
	"fmt"
	"strconv"
)

// Cmd is one command: its line (name first, then its arguments as given:
// string, []byte, int, int64, uint64, float64, bool, or an
// encoding.BinaryMarshaler — lockmw passes keys, fields and the RESTORE
// payload by pointer, to save an allocation per call; ArgString writes any
// of them as the bytes Redis must receive) and, once run, its reply. A
// back-end reads Args and sets the reply with SetVal or SetErr; the engine
// reads it. A Cmd is one caller's: a back-end may keep none after it
// answered.
type Cmd struct {
	args []any
	val  any
	err  error
}

// NewCmd returns the command args; the slice becomes the command's, the
// caller must not change it afterwards.
func NewCmd(args ...any) *Cmd { return &Cmd{args: args} }

// Reuse makes c the command args, its reply cleared: for a caller that
// pools its commands (lockmw's hot path does), once nothing reads c any
// more. A back-end never calls it.
func (c *Cmd) Reuse(args []any) { c.args, c.val, c.err = args, nil, nil }

// Args is the command line.
func (c *Cmd) Args() []any { return c.args }

// Name is the command's name as given (lockmw gives it in lower case).
func (c *Cmd) Name() string {
	if len(c.args) == 0 {
		return ""
	}
	s, _ := c.args[0].(string)
	return s
}

// FirstKey is the command's first key: for EVAL and EVALSHA the first after
// the key count, for the other commands lockmw sends (RESTORE, EXISTS,
// PTTL, HGETALL, TYPE…) the first argument. false when it has none
// (PING, INFO, WAIT, PUBLISH and the commands whose first argument is a
// subcommand: PUBSUB, SCRIPT, CLUSTER, CLIENT, CONFIG).
func (c *Cmd) FirstKey() (string, bool) {
	at := 1
	switch c.Name() {
	case "eval", "evalsha":
		at = 3
	case "info", "ping", "wait", "publish", "pubsub", "script", "cluster", "client", "config":
		return "", false
	}
	if len(c.args) <= at {
		return "", false
	}
	return argString(c.args[at])
}

// argString returns a key argument as a string: lockmw gives keys as
// strings or as fmt.Stringer values.
func argString(a any) (string, bool) {
	switch v := a.(type) {
	case string:
		return v, true
	case fmt.Stringer:
		return v.String(), true
	}
	return "", false
}

// SetVal sets the reply (see the package comment for its types) and clears
// the error.
func (c *Cmd) SetVal(v any) { c.val, c.err = v, nil }

// SetErr sets the command's error: an [Error] for a server's error reply,
// [ErrNil] for a nil reply, else a network, context or client error.
func (c *Cmd) SetErr(err error) { c.err = err }

// Val is the reply.
func (c *Cmd) Val() any { return c.val }

// Err is the command's error, nil when it has a reply.
func (c *Cmd) Err() error { return c.err }

// Result is the reply and the error.
func (c *Cmd) Result() (any, error) { return c.val, c.err }

// Int64 is the reply as an integer (an integer reply, or a string holding one).
func (c *Cmd) Int64() (int64, error) {
	if c.err != nil {
		return 0, c.err
	}
	return toInt64(c.val)
}

// Int is Int64 as an int.
func (c *Cmd) Int() (int, error) {
	n, err := c.Int64()
	return int(n), err
}

// Text is the reply as a string.
func (c *Cmd) Text() (string, error) {
	if c.err != nil {
		return "", c.err
	}
	switch v := c.val.(type) {
	case string:
		return v, nil
	case int64:
		return strconv.FormatInt(v, 10), nil
	}
	return "", fmt.Errorf("backend: %q replied %T, not a string", c.Name(), c.val)
}

// Slice is the reply as an array.
func (c *Cmd) Slice() ([]any, error) {
	if c.err != nil {
		return nil, c.err
	}
	s, ok := c.val.([]any)
	if !ok {
		return nil, fmt.Errorf("backend: %q replied %T, not an array", c.Name(), c.val)
	}
	return s, nil
}

// Int64Slice is the reply as an array of integers.
func (c *Cmd) Int64Slice() ([]int64, error) {
	s, err := c.Slice()
	if err != nil {
		return nil, err
	}
	out := make([]int64, len(s))
	for i, v := range s {
		if out[i], err = toInt64(v); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func toInt64(v any) (int64, error) {
	switch v := v.(type) {
	case int64:
		return v, nil
	case string:
		return strconv.ParseInt(v, 10, 64)
	case error:
		return 0, v
	}
	return 0, fmt.Errorf("backend: reply %T is not an integer", v)
}

// ArgString is one argument of a command line as the string Redis must
// receive, encoded as go-redis encodes it: integers and floats in decimal,
// a bool as 1 or 0, an encoding.BinaryMarshaler's bytes. A back-end whose
// client takes strings (rueidis, valkey-go) writes every argument with it.
func ArgString(a any) (string, error) {
	switch v := a.(type) {
	case string:
		return v, nil
	case []byte:
		return string(v), nil
	case int:
		return strconv.Itoa(v), nil
	case int64:
		return strconv.FormatInt(v, 10), nil
	case uint64:
		return strconv.FormatUint(v, 10), nil
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64), nil
	case bool:
		if v {
			return "1", nil
		}
		return "0", nil
	case encoding.BinaryMarshaler:
		b, err := v.MarshalBinary()
		if err != nil {
			return "", err
		}
		return string(b), nil
	}
	return "", fmt.Errorf("backend: cannot encode an argument of type %T", a)
}

// StringArgs is the command line with every argument written by ArgString.
func (c *Cmd) StringArgs() ([]string, error) {
	out := make([]string, len(c.args))
	for i, a := range c.args {
		s, err := ArgString(a)
		if err != nil {
			return nil, err
		}
		out[i] = s
	}
	return out, nil
}
