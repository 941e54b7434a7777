package main

import (
	"fmt"
	"io"
	"text/tabwriter"
)

// rowWriter prints results as text lines, the lines of one scenario as a
// table (each fragment a column, aligned), written when the next scenario
// begins; with -json it prints nothing.
type rowWriter struct {
	out      io.Writer
	quiet    bool
	tw       *tabwriter.Writer
	scenario string
}

func newRowWriter(out io.Writer, quiet bool) *rowWriter {
	return &rowWriter{out: out, quiet: quiet}
}

// add queues r's line, first writing the previous scenario's table.
func (w *rowWriter) add(r *result) error {
	if w.quiet {
		return nil
	}
	if w.tw != nil && r.Scenario != w.scenario {
		if err := w.flush(); err != nil {
			return err
		}
	}
	if w.tw == nil {
		w.tw = tabwriter.NewWriter(w.out, 0, 0, 1, ' ', 0)
		w.scenario = r.Scenario
	}
	_, err := fmt.Fprintln(w.tw, r.text())
	return err
}

// flush writes the table of the lines queued so far.
func (w *rowWriter) flush() error {
	if w.tw == nil {
		return nil
	}
	err := w.tw.Flush()
	w.tw = nil
	return err
}
