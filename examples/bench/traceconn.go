package main

import (
	"bytes"
	"errors"
	"net"
	"strconv"
	"strings"
	"time"
)

// handoffPrefix begins the channel of every rlock hand-off message:
// rlock_handoff:{name}:<clientID> (see lockmw's docs, Waiting).
const handoffPrefix = "rlock_handoff"

// handoffRead is R: a Read of a worker's connection that returned a
// hand-off message. parsed tells whether the message could be read out of
// the bytes; then waiter is the owner field the lock was handed to and
// prev the releasing owner's field (the payload is
// "<field>|<token>|<prev field>|<meta>").
type handoffRead struct {
	t            time.Time
	parsed       bool
	waiter, prev string
}

// handoffConn is a net.Conn that reports each Read whose bytes carry a
// hand-off message, timed as soon as Read returns: the moment the waiting
// process has the message, before go-redis decodes it and lockmw's
// subscription goroutine passes it to the waiting Lock.
type handoffConn struct {
	net.Conn
	record func(handoffRead)
}

func (c *handoffConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if n > 0 && bytes.Contains(b[:n], []byte(handoffPrefix)) {
		t := time.Now()
		msgs, perr := parseHandoffs(b[:n])
		for _, m := range msgs {
			m.t = t
			c.record(m)
		}
		if perr != nil {
			// Cut short (or a frame's tail): the message is there, its
			// fields are not; it is attributed by time alone.
			c.record(handoffRead{t: t})
		}
	}
	return n, err
}

var errTruncated = errors.New("truncated RESP frame")

// parseHandoffs reads the RESP frames in b (RESP2 arrays or RESP3 pushes)
// and returns the hand-off messages among them: "message" or "smessage"
// pushes whose channel begins with handoffPrefix. Subscription replies are
// skipped. It returns errTruncated when a frame it cannot finish mentions
// handoffPrefix.
func parseHandoffs(b []byte) ([]handoffRead, error) {
	var out []handoffRead
	for len(b) > 0 {
		elems, rest, err := parseFrame(b)
		if err != nil {
			if bytes.Contains(b, []byte(handoffPrefix)) {
				return out, errTruncated
			}
			return out, nil
		}
		b = rest
		if len(elems) != 3 || (elems[0] != "message" && elems[0] != "smessage") || !strings.HasPrefix(elems[1], handoffPrefix+":") {
			continue
		}
		parts := strings.SplitN(elems[2], "|", 4)
		if len(parts) < 3 {
			continue
		}
		out = append(out, handoffRead{parsed: true, waiter: parts[0], prev: parts[2]})
	}
	return out, nil
}

// parseFrame parses one RESP frame at the start of b and returns, for an
// array or push, its bulk and simple string elements (nested aggregates
// are skipped), and what follows the frame.
func parseFrame(b []byte) ([]string, []byte, error) {
	line, rest, ok := bytes.Cut(b, []byte("\r\n"))
	if !ok || len(line) == 0 {
		return nil, nil, errTruncated
	}
	switch line[0] {
	case '*', '>', '~', '%':
		n, err := strconv.Atoi(string(line[1:]))
		if err != nil {
			return nil, nil, err
		}
		if line[0] == '%' {
			n *= 2
		}
		var elems []string
		for range max(n, 0) {
			var sub []string
			sub, rest, err = parseFrame(rest)
			if err != nil {
				return nil, nil, err
			}
			elems = append(elems, sub...)
		}
		return elems, rest, nil
	case '$', '=', '!':
		n, err := strconv.Atoi(string(line[1:]))
		if err != nil {
			return nil, nil, err
		}
		if n < 0 {
			return nil, rest, nil
		}
		if len(rest) < n+2 {
			return nil, nil, errTruncated
		}
		return []string{string(rest[:n])}, rest[n+2:], nil
	default: // +simple, -error, :int, _null, #bool, ,double, (bignum
		return []string{string(line[1:])}, rest, nil
	}
}
