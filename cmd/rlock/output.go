package main

import (
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"
	"time"
)

// printer writes a command's output: text for people, or JSON Lines (one
// compact object per line) with -json.
type printer struct {
	w    io.Writer
	json bool
	err  error // the first write error
}

// printer returns the invocation's printer.
func (c *cli) printer() *printer { return &printer{w: c.stdout, json: c.json} }

// object writes v as one JSON line.
func (p *printer) object(v any) {
	b, err := json.Marshal(v)
	if err == nil {
		b = append(b, '\n')
		_, err = p.w.Write(b)
	}
	p.keep(err)
}

// textf writes a line of text.
func (p *printer) textf(format string, args ...any) {
	_, err := fmt.Fprintf(p.w, format+"\n", args...)
	p.keep(err)
}

// table returns a tabwriter for aligned columns; flush it when done.
func (p *printer) table() *tabwriter.Writer {
	return tabwriter.NewWriter(p.w, 0, 0, 2, ' ', 0)
}

// keep remembers the first error.
func (p *printer) keep(err error) {
	if p.err == nil {
		p.err = err
	}
}

// msTime is a time in the server's clock (ms since the epoch) as RFC 3339
// in UTC with milliseconds; "" for never (-1) or unknown (0).
func msTime(ms int64) string {
	if ms <= 0 {
		return ""
	}
	return time.UnixMilli(ms).UTC().Format("2006-01-02T15:04:05.000Z07:00")
}

// msDur formats ms as a duration for people: "29.1s", "never" for -1.
func msDur(ms int64) string {
	switch {
	case ms == -1:
		return "never"
	case ms < 0:
		return "-"
	}
	return (time.Duration(ms) * time.Millisecond).Round(100 * time.Millisecond).String()
}

// orDash is s, or "-" when empty.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
