package faultproxy

import (
	"bufio"
	"net"
	"time"
)

// wireBuffer is how many values one direction of a link holds in flight;
// a reader that has filled it waits, as a sender does on a full TCP window.
const wireBuffer = 256

// A segment is one whole RESP value in flight on one direction of a link:
// a command on its way to the server, or a reply or push on its way to the
// client.
type segment struct {
	raw    []byte
	action Action    // what happens to it on arrival; always Forward for a command
	due    time.Time // when it arrives: read time + that direction's latency
}

// deliver is one direction of a link, a wire with a propagation delay: it
// writes each segment of in to dst, in order, no sooner than its due time.
// Segments sent together arrive together (a pipeline of N values is
// delayed once, not N times), and they leave in the order they came: one
// sent after the latency was lowered waits for those before it.
//
// Segments that are due are written through one buffer, flushed before
// waiting for the next one. deliver ends when in is closed and drained, on
// a write error or a reset action, or when the link closes; it closes the
// link on its way out, so that the end of one direction (the client or the
// server hung up) reaches the other side after what was in flight.
func (l *link) deliver(in <-chan segment, dst *net.TCPConn, clk *clock) {
	defer l.p.wg.Done()
	defer l.close(false)
	w := bufio.NewWriterSize(dst, 64<<10)
	for s := range in {
		if d := time.Until(s.due); d > 0 {
			if w.Flush() != nil || !clk.wait(d) {
				return
			}
		}
		switch s.action {
		case Drop:
			l.p.nDropped.Add(1)
		case ResetMidReply:
			_, _ = w.Write(s.raw[:len(s.raw)/2])
			_ = w.Flush()
			l.close(true)
			return
		default:
			if _, err := w.Write(s.raw); err != nil {
				return
			}
		}
		if len(in) == 0 && w.Flush() != nil {
			return
		}
	}
	_ = w.Flush()
}

// send puts s on the wire in, stamped with the latency (a time.Duration in
// nanoseconds) of that direction now. It reports false when the link has
// closed.
func (l *link) send(in chan<- segment, s segment, latency int64) bool {
	s.due = time.Now().Add(time.Duration(latency))
	select {
	case in <- s:
		return true
	case <-l.done:
		return false
	}
}
