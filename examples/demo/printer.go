package main

import (
	"fmt"
	"io"
	"sync"
	"time"
)

// printer writes the demo's report: section headers, one line per event
// with the time since the section began, and a summary line per section. It
// is safe for concurrent use, so that goroutines can report their events as
// they happen, and it keeps the first write error.
type printer struct {
	w io.Writer

	mu   sync.Mutex
	t0   time.Time // when the current section began
	werr error
}

// header starts section n.
func (p *printer) header(n int, title string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.t0 = time.Now()
	p.write("\n== %d. %s\n", n, title)
}

// event prints one event of the current section.
func (p *printer) event(format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.write("  %6.3fs  %s\n", time.Since(p.t0).Seconds(), fmt.Sprintf(format, args...))
}

// note prints a line of explanation, without a time.
func (p *printer) note(format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.write("  %s\n", fmt.Sprintf(format, args...))
}

// blank prints an empty line.
func (p *printer) blank() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.write("\n")
}

// summary prints the section's summary line.
func (p *printer) summary(format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.write("  => %s\n", fmt.Sprintf(format, args...))
}

// printf prints text as is.
func (p *printer) printf(format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.write(format, args...)
}

// err returns the first error writing the report.
func (p *printer) err() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.werr
}

func (p *printer) write(format string, args ...any) {
	if _, err := fmt.Fprintf(p.w, format, args...); err != nil && p.werr == nil {
		p.werr = fmt.Errorf("writing the report: %w", err)
	}
}
