package reliability

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Kind is the kind of a [Record].
type Kind byte

// The kinds of records a process writes about its holds.
const (
	// Hello opens a process's log: Note is its lockmw client ID, the
	// prefix of its holders' and waiters' fields in Redis.
	Hello Kind = 'P'
	// Call: Lock was called on Name; Time is when. A process killed before
	// the matching Start (or Fail) died waiting: its queue entry may yet be
	// handed the lock.
	Call Kind = 'C'
	// Start: a hold began. Time is when Lock returned, Begin when Lock was
	// called, Sent when the last Redis request Lock made was sent (the
	// hold's key got its TTL no earlier than Sent).
	Start Kind = 'S'
	// End: the critical section ended; written before Unlock is called.
	End Kind = 'E'
	// Renew: a watchdog renewal of the hold; Time is when it was sent (the
	// key's TTL runs from no earlier than that), Begin when the Renewal
	// hook ran (its reply was in, and lockmw had counted it). Note is
	// empty when it succeeded, RenewLostNote or RenewFailedNote when it
	// did not extend the hold.
	Renew Kind = 'R'
	// Lost: the hold context was cancelled with cause lockmw.ErrLockLost;
	// Time is when the process noticed. Note is the cause.
	Lost Kind = 'L'
	// Dropped: lockmw ended the hold as lost (its HoldEnd hook ran with a
	// Lost error, on the goroutine that ended it: a loss timer's, the
	// watchdog's); Time is when. Note is the cause.
	Dropped Kind = 'D'
	// Fail: a call failed unexpectedly (diagnostics); Note says what.
	Fail Kind = 'F'
	// Pause: the process did not run from Begin to Time (its pause watch,
	// a ticker, woke that late): a loaded machine, or a stopped process.
	// A hold whose key expired in such a pause was lost without the
	// process noticing in time; only fencing protects its writes.
	Pause Kind = 'Z'
)

// UnlockFailedNote starts the Note of a Fail record written when Unlock
// returned an error; the error follows.
const UnlockFailedNote = "unlock: "

// UnlockAfterLossNote starts the Note of a Fail record written when Unlock
// of a hold already lost did not return lockmw.ErrLockLost; the error
// follows.
const UnlockAfterLossNote = "unlock after loss: "

// The Notes of a Renew record whose renewal did not extend the hold: its
// script found the hold gone (lockmw.RenewalLost), or failed, Redis not
// answering (lockmw.RenewalFailed: it may have run).
const (
	RenewLostNote   = "renewal found the hold gone"
	RenewFailedNote = "renewal failed"
)

// Record is one line of a process's hold log.
type Record struct {
	Kind  Kind
	Pid   int
	Name  string
	Token int64
	Time  time.Time
	Begin time.Time // Start and Renew only
	Sent  time.Time // Start only
	Note  string
}

// String formats r as one log line without the newline:
//
//	<kind> <pid> <token> <time> <begin> <sent> <name> <note>
//
// with times in Unix nanoseconds (0 when unset) and name and note quoted.
func (r Record) String() string {
	return fmt.Sprintf("%c %d %d %d %d %d %s %s", r.Kind, r.Pid, r.Token,
		unixNano(r.Time), unixNano(r.Begin), unixNano(r.Sent), strconv.Quote(r.Name), strconv.Quote(r.Note))
}

func unixNano(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

func fromUnixNano(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n)
}

// ParseRecord parses a line written by [Record.String].
func ParseRecord(line string) (Record, error) {
	var r Record
	bad := func(why string) (Record, error) {
		return Record{}, fmt.Errorf("reliability: bad record %q: %s", line, why)
	}
	f := strings.SplitN(line, " ", 7)
	if len(f) != 7 || len(f[0]) != 1 {
		return bad("want 8 fields")
	}
	r.Kind = Kind(f[0][0])
	var nums [5]int64
	for i := range nums {
		n, err := strconv.ParseInt(f[i+1], 10, 64)
		if err != nil {
			return bad(err.Error())
		}
		nums[i] = n
	}
	r.Pid, r.Token = int(nums[0]), nums[1]
	r.Time, r.Begin, r.Sent = fromUnixNano(nums[2]), fromUnixNano(nums[3]), fromUnixNano(nums[4])
	rest := f[6]
	q, err := strconv.QuotedPrefix(rest)
	if err != nil {
		return bad("name: " + err.Error())
	}
	if r.Name, err = strconv.Unquote(q); err != nil {
		return bad("name: " + err.Error())
	}
	rest = strings.TrimPrefix(rest[len(q):], " ")
	if r.Note, err = strconv.Unquote(rest); err != nil {
		return bad("note: " + err.Error())
	}
	return r, nil
}

// Log writes records, one line per write call, so that a process killed at
// any moment leaves only whole lines behind when w is a file opened with
// O_APPEND. It is safe for concurrent use.
type Log struct {
	mu  sync.Mutex
	w   io.Writer
	pid int
	err error
}

// NewLog returns a Log writing to w with pid on every record.
func NewLog(w io.Writer, pid int) *Log { return &Log{w: w, pid: pid} }

// Write appends r, with the log's pid. The first write error is kept and
// returned by Err; later writes are dropped.
func (l *Log) Write(r Record) {
	r.Pid = l.pid
	line := []byte(r.String() + "\n")
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err != nil {
		return
	}
	if _, err := l.w.Write(line); err != nil {
		l.err = err
	}
}

// Err returns the first write error.
func (l *Log) Err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}
